"""`sheaf get --state FILE`: where incremental runs of lists got to, one entry per list.

The file is JSON: ``{"version": 1, "lists": {LIST: {"field": "/id", "value": 12345}}}``, LIST
being the library's name for the list (the redacted URL of its first page, before any since
parameter: no credential or secret query value is ever written). A run reads its entry at the
start (the value becomes its --until bound or --since-param value) and, only when it succeeds,
writes the value it got to. Values are kept as the library wrote them: a number is its JSON
text (a Python float would round 1.00000000000000012 to 1.0000000000000002, and the next
run's bound would skip an item), so the file is read with `sheaf.description.loads_exact` and
written with `dumps_exact`.

Writing takes a lock (`flock` on ``.FILE.lock`` beside it, removed after), reads the file again,
puts this list's entry in and renames a temporary file over it: runs of other lists that share
the file, at the same time, keep each other's entries, and a failed or interrupted run leaves
the file as it was. Only a regular file is read (a FIFO would block before anything is sent, a
device would never end).
"""

from __future__ import annotations

import contextlib
import os
import stat
from typing import Any, Dict, Iterator, List, Optional

from sheaf.description import JSONNumber, dumps_exact, loads_exact

from .output import AtomicFile

try:
    import fcntl
except ImportError:   # not POSIX: no lock (runs sharing a file may then drop each other's entries)
    fcntl = None   # type: ignore[assignment]

VERSION = 1


class StateFileError(Exception):
    """The state file cannot be used: its message names the file and what is wrong."""


class _NotJSON:
    """NaN, Infinity or -Infinity in the file: Python's json reads them, JSON has no such value."""

    def __init__(self, name: str) -> None:
        self.name = name


def _shown(value: Any) -> str:
    """A value of the file as its JSON text, as the message names it."""
    if isinstance(value, _NotJSON):
        return value.name
    try:
        return dumps_exact(value, default=lambda part: part.name if isinstance(part, _NotJSON) else str(part))
    except (TypeError, ValueError):
        return repr(value)


def _bad_value(value: Any) -> bool:
    """Whether `value` cannot be a sync value: a number (an int, a JSON number's text), a
    string the library can be sent (UTF-8: no lone surrogate), or null (nothing stored yet)."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, JSONNumber):
        return False
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return False
        except UnicodeEncodeError:
            return True
    return True


def _read(path: str) -> Optional[bytes]:
    """The file's bytes, None when there is none. Opened without blocking, and refused unless it
    is a regular file (a FIFO would wait for a writer, /dev/zero never ends)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None   # a first run
    except OSError as e:
        raise StateFileError(f"cannot read the state file {path}: {e.strerror or e}") from None
    with os.fdopen(descriptor, "rb") as file:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            kind = ("a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                    else "a socket" if stat.S_ISSOCK(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                    else "not a file")
            raise StateFileError(f"the state file {path} is {kind}, not a regular file: name a file")
        try:
            return file.read()
        except OSError as e:
            raise StateFileError(f"cannot read the state file {path}: {e.strerror or e}") from None


def _parse(path: str, text: Optional[bytes]) -> Dict[str, Dict[str, Any]]:
    """The entries of the file's text, each checked: the message of a bad one names the file, the
    list and what is wrong with it."""
    if text is None:
        return {}
    try:
        data = loads_exact(text.decode("utf-8"), parse_constant=_NotJSON)
    except (UnicodeDecodeError, ValueError) as e:
        raise StateFileError(f"the state file {path} is not JSON ({e}): fix it, or remove it to fetch everything again") from None
    lists = data.get("lists") if isinstance(data, dict) else None
    if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(lists, dict):
        raise StateFileError(f"the state file {path} is not a sheaf state file "
                             f"({{\"version\": {VERSION}, \"lists\": {{...}}}}): fix it, or remove it")
    for name, entry in lists.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("field"), str):
            raise StateFileError(f"the state file {path} has a bad entry for {name}: {_shown(entry)}, not "
                                 "{\"field\": POINTER, \"value\": a number, a string or null}: fix it, or remove the entry")
        seen = entry.get("seen")
        if seen is not None and (not isinstance(seen, list) or any(item is None or _bad_value(item) for item in seen)):
            raise StateFileError(f"the state file {path} has a bad seen for {name}: {_shown(seen)}, not a list of the "
                                 "identities (numbers or strings) delivered at its value: fix it, or remove the entry")
        if _bad_value(entry.get("value")):
            raise StateFileError(f"the state file {path} has a bad value for {name}: {_shown(entry.get('value'))}, "
                                 "not a number, a string or null: fix it, or remove the entry (its list is then "
                                 "fetched whole)")
    return lists


class StateFile:
    """The entries of a state file, read once; a missing file has none."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lists: Dict[str, Dict[str, Any]] = _parse(path, _read(path))

    def value_for(self, list_name: str, field: str) -> Any:
        """The stored value of `list_name` (None when it has none); an entry of another field is
        refused: its value means nothing for this one. See `seen_for`."""
        entry = self.lists.get(list_name)
        if entry is None:
            return None
        if entry["field"] != field:
            raise StateFileError(f"the state file {self.path} records {entry['field']} for {list_name}, not {field}: "
                                 "use the same field as the runs that wrote it, or another state file")
        return entry.get("value")

    def seen_for(self, list_name: str) -> Optional[List[Any]]:
        """The identities of the items delivered at the stored value (None when not recorded)."""
        return self.lists.get(list_name, {}).get("seen")

    def save(self, list_name: str, field: str, value: Optional[Any], seen: Optional[List[Any]] = None) -> None:
        """Records where `list_name` got to: under the lock, the file as it is now (other runs
        may have written other lists meanwhile) with this entry replaced, renamed over it.
        OSError when it cannot be written, StateFileError when it is no longer a state file."""
        with self._locked():
            lists = _parse(self.path, _read(self.path))
            lists[list_name] = {"field": field, "value": value}
            if seen is not None:
                lists[list_name]["seen"] = seen
            target = AtomicFile(self.path)
            try:
                text = dumps_exact({"version": VERSION, "lists": lists}, indent=2, sort_keys=True) + "\n"
                target.file.write(text.encode())
                target.file.flush()
                os.fsync(target.file.fileno())
                target.commit()
            except BaseException:
                target.discard()
                raise
            self.lists = lists

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Holds ``.FILE.lock`` (an flock) beside the file; removed when done. A run that waited
        for a lock file another one has removed meanwhile takes the new one instead."""
        if fcntl is None:
            yield
            return
        folder, name = os.path.split(os.path.abspath(self.path))
        lock_path = os.path.join(folder, f".{name}.lock")
        while True:
            descriptor = os.open(lock_path, os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX)
                held, there = os.fstat(descriptor), os.stat(lock_path)
                if (held.st_dev, held.st_ino) == (there.st_dev, there.st_ino):
                    break
            except FileNotFoundError:
                pass   # removed by the run that held it: take a new one
            except BaseException:
                os.close(descriptor)
                raise
            os.close(descriptor)
        try:
            yield
        finally:
            try:
                os.unlink(lock_path)   # while still held: a waiter then sees it is gone
            except FileNotFoundError:
                pass
            finally:
                os.close(descriptor)


__all__ = ["StateFile", "StateFileError", "VERSION"]
