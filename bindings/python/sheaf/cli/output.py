"""Where the `sheaf` command writes: files replaced only when complete (`AtomicFile`), items as
rows or objects of chosen fields (`FieldWriter`: csv, and jsonl or json with --fields), and a
stdout whose reader left."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
from typing import Any, List, NamedTuple, Optional, Tuple


class Field(NamedTuple):
    """One of --fields: its name (the pointer without its leading "/") and the pointer's keys."""

    name: str
    keys: Tuple[str, ...]


def check_replaceable(path: str) -> Optional[int]:
    """Refuses to replace what is not a regular file (a device, a FIFO, a socket, a directory):
    as root, `-o /dev/null` would otherwise replace /dev/null. A symbolic link is replaced itself,
    unless it leads to one of those (the library's download follows the same rule). Returns the
    permission bits of the regular file there, which the new one takes, or None."""
    import stat

    try:
        status = os.lstat(path)
    except OSError:
        return None   # nothing there, or no way to tell: creating the file will say
    through = ""
    if stat.S_ISLNK(status.st_mode):
        try:
            status = os.stat(path)
        except OSError:
            return None   # a dangling link: replaced
        if stat.S_ISREG(status.st_mode):
            return None
        through = " (through a symbolic link)"
    if stat.S_ISREG(status.st_mode):
        return status.st_mode & 0o777
    kind = ("directory" if stat.S_ISDIR(status.st_mode) else "character device" if stat.S_ISCHR(status.st_mode)
            else "block device" if stat.S_ISBLK(status.st_mode) else "FIFO" if stat.S_ISFIFO(status.st_mode)
            else "socket" if stat.S_ISSOCK(status.st_mode) else "special file")
    message = f"it is a {kind}{through}, not a regular file (-o - writes to stdout)"
    if kind == "directory":
        raise IsADirectoryError(21, message, path)
    raise OSError(0, message, path)


class AtomicFile:
    """A file written under a temporary name beside `path` and renamed over it by `commit`;
    `discard` (or a run that never commits) leaves whatever was at `path` untouched."""

    def __init__(self, path: str) -> None:
        import tempfile

        self.path = path
        folder = os.path.dirname(os.path.abspath(path))
        mode = check_replaceable(path)
        descriptor, self.temporary = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".part", dir=folder)
        if mode is None:   # a new file: 0666 less the umask, not mkstemp's 0600
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.fchmod(descriptor, mode)
        self.file = os.fdopen(descriptor, "wb")

    def commit(self) -> None:
        self.file.close()
        check_replaceable(self.path)   # again: whatever came to stand there meanwhile
        os.replace(self.temporary, self.path)

    def carry(self, path: str) -> bool:
        """Writes the bytes of the file at `path` first (the items a failed run kept), when there
        is one; whether there was."""
        try:
            source = open(path, "rb")
        except FileNotFoundError:
            return False
        with source:
            shutil.copyfileobj(source, self.file)
        self.file.flush()   # before the library writes to the descriptor
        return True

    def commit_as(self, path: str) -> None:
        """Renames what was written over `path` instead (the file of -o is left as it was)."""
        self.file.close()
        check_replaceable(path)
        os.replace(self.temporary, path)

    def discard(self) -> None:
        try:
            self.file.close()
        finally:
            try:
                os.unlink(self.temporary)
            except FileNotFoundError:
                pass


def write_whole(path: str, data: bytes) -> Optional[str]:
    """Replaces the file at `path` with `data` only once all of it is written (AtomicFile); the
    reason it could not be, or None."""
    target = None
    try:
        target = AtomicFile(path)
        target.file.write(data)
        target.commit()
    except OSError as e:
        if target is not None:
            target.discard()
        return f"cannot write {path}: {e.strerror or e}"
    return None


class FieldWriter:
    """Items written from Python, decoded: a csv row per item, or with jsonl or json an object of
    --fields per item (the library's own writer only copies whole items), or without fields
    (None) each whole item, compact (the lists of a group, whose items come decoded)."""

    def __init__(self, out, format: str, fields: Optional[List[Field]], header: bool) -> None:
        self.out = out
        self.format = format
        self.fields = fields
        self.header = header
        self.count = 0

    def start(self) -> None:
        if self.format == "csv" and self.header:
            self._write_rows([[field.name for field in self.fields]])
        elif self.format == "json":
            self._write("[")

    def add(self, items: List[Any]) -> None:
        if not items:
            return
        if self.format == "csv":
            self._write_rows([[_cell(_lookup(item, field.keys)) for field in self.fields] for item in items])
        else:
            objects = [_compact(item if self.fields is None else {field.name: _lookup(item, field.keys)
                                                                  for field in self.fields}) for item in items]
            if self.format == "json":
                self._write((",\n" if self.count else "\n") + ",\n".join(objects))
            else:
                self._write("".join(line + "\n" for line in objects))
        self.count += len(items)

    def finish(self) -> None:
        if self.format == "json":
            self._write("\n]\n" if self.count else "]\n")

    def _write_rows(self, rows: List[List[str]]) -> None:
        text = io.StringIO()
        csv.writer(text).writerows(rows)
        self._write(text.getvalue())

    def _write(self, text: str) -> None:
        self.out.write(text.encode("utf-8"))
        self.out.flush()   # each snapshot's items go out as they arrive, as the library's do


def _lookup(item: Any, keys: Tuple[str, ...]) -> Any:
    """The value at a JSON pointer's keys in `item`, None where it leads nowhere."""
    for key in keys:
        if isinstance(item, dict):
            item = item.get(key)
        elif isinstance(item, list) and re.fullmatch("0|[1-9][0-9]*", key) and int(key) < len(item):
            item = item[int(key)]
        else:
            return None
    return item


def _cell(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else _compact(value)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def silence(out) -> None:
    """Points `out` at /dev/null: its reader left, and nothing may fail writing to it at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, out.fileno())
    except (OSError, ValueError):
        pass
