"""Watching a list: polls of what is new since an offset, each item once (``Client.watch``).

A watch polls a list that syncs (``until=`` for a newest-first list, ``since=`` for a server-side
filter that includes its value) and has an identity (``id=``). Each poll is one call of the
library's ``sheaf_list_poll``: what is new since the offset, and the offset after it: the
greatest value of the sync field delivered, with the identities of the items at that value, so
an item added later in the same second is new and one delivered is never delivered again.

Delivery: iterating a watch yields the items of each poll, in the list's order (newest first for
``until``), and commits the poll's offset (to ``state=``, atomically) once the caller asks for the
item after its last: a caller that dies while handling a poll's items gets that poll again (at
least once into the caller; exactly once into the file of ``sheaf watch -o``, which records the
output's length with the offset). :meth:`Watch.polls` hands out whole polls for a caller that
commits them itself.
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import os
import tempfile
import threading
import time
from ctypes import byref
from typing import Any, AsyncIterator, Callable, Dict, Iterator, List, Optional

from . import _ffi
from ._ffi import lib
from ._run import ListRun, decode_items
from .errors import (
    DeadlineError,
    Error,
    HTTPError,
    RateLimitedError,
    Result,
    TransportError,
    UsageError,
    encode,
)

#: The state file's format version.
STATE_VERSION = 1


class Poll:
    """One poll: the new items (decoded, in the list's order), their bytes as the library wrote
    them, and the offset after them (JSON text: ``{"list", "field", "value", "seen"}``)."""

    def __init__(self, raw: bytes, offset: str, lines: bool) -> None:
        self.raw = raw
        self.offset = offset
        self._lines = lines
        self._items: Optional[List[Any]] = None

    @property
    def items(self) -> List[Any]:
        """The new items, decoded from JSON (once, when first asked for)."""
        if self._items is None:
            if self._lines:
                self._items = decode_items(b"[" + b",".join(self.raw.splitlines()) + b"]") if self.raw else []
            else:
                self._items = decode_items(self.raw) if self.raw else []
        return self._items

    def __len__(self) -> int:
        return self.raw.count(b"\n") if self._lines else len(self.items)

    def __repr__(self) -> str:
        return f"<sheaf.Poll {len(self)} items>"


def read_state(path: str) -> Dict[str, Any]:
    """The state file at `path` ({} when there is none). UsageError naming the file when it is not one."""
    try:
        with open(path, "rb") as file:
            text = file.read()
    except FileNotFoundError:
        return {}
    except IsADirectoryError:
        raise UsageError(Result.INVALID_ARGUMENT, f"the watch state {path} is a folder, not a file") from None
    try:
        state = json.loads(text)
    except ValueError as error:
        raise UsageError(Result.INVALID_ARGUMENT, f"the watch state {path} is not JSON ({error}): "
                                                  "it was not written by a watch; give another file") from None
    if not isinstance(state, dict) or state.get("version") != STATE_VERSION or not isinstance(state.get("offset"), dict):
        raise UsageError(Result.INVALID_ARGUMENT, f"the watch state {path} is not a watch's state "
                                                  f"(version {STATE_VERSION}, an offset): give another file")
    return state


def write_state(path: str, state: Dict[str, Any]) -> None:
    """Writes `state` to `path` atomically and durably: a file beside it, flushed to the disk,
    renamed over it, and the folder flushed, so that after a crash or a power loss the file holds
    this state or the one before, never a part."""
    folder = os.path.dirname(os.path.abspath(path))
    descriptor, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".part", dir=folder)
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write((json.dumps(dict(state, version=STATE_VERSION), sort_keys=True) + "\n").encode())
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise
    sync_folder(folder)


def sync_folder(folder: str) -> None:
    """Flushes a folder's entries (a rename in it) to the disk, where the system allows it."""
    try:
        descriptor = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def waits_out(error: BaseException) -> bool:
    """Whether a poll that failed so is tried again after a wait (the server's load or a spent
    limit, the network), rather than ending the watch (a refused credential, a bad description,
    a page that is not what the description says)."""
    if isinstance(error, (RateLimitedError, TransportError, DeadlineError)):
        return True
    return isinstance(error, HTTPError) and (error.status in (408, 425, 429) or error.status >= 500)


class Watch:
    """A list polled every `every` seconds for what is new (made by :meth:`sheaf.Client.watch`).

    Iterate it (``for item in watch``, or ``async for``) for the items, each once; or take whole
    polls with :meth:`polls`. :meth:`stop` (from another thread, a signal handler, or the loop)
    ends the iteration after the poll in progress. A poll that fails with a transient error (a
    5xx or a 429 after the client's retries, the network, a spent rate limit) is tried again after
    `every`, doubling up to `max_every`; any other failure is raised, with the offset left where
    the last whole poll put it.

    Attributes:
        offset: the offset (JSON text) after the items handed out and committed; None before the
            first poll of a watch with no state.
        polls_made, requests: how many polls were made; failed polls waited out.
    """

    def __init__(self, run: ListRun, *, every: float, max_every: float, state: Optional[str],
                 offset: Optional[str], on_wait: Optional[Callable[[BaseException, float], None]] = None) -> None:
        self._run = run
        self.every = every
        self.max_every = max_every
        self.state_path = state
        self.offset = offset
        self.on_wait = on_wait
        self.polls_made = 0
        self.waits = 0
        self._stopped = threading.Event()
        self._lock = threading.Lock()

    # ---- one poll ---------------------------------------------------------------------------

    def poll(self, offset: Optional[str] = None, *, through: Optional[str] = None, lines: bool = False) -> Poll:
        """One poll now, from `offset` (None: the watch's own offset): what is new, and the offset
        after it. Does not commit it. `through`: an offset a later poll gave; nothing after it
        is delivered (a range read again). `lines`: the raw bytes are JSON lines, not an array."""
        with self._lock:
            run = self._run
            if run is None or run.handle is None:
                raise UsageError(Result.STATE, "the watch is closed")
            start = self.offset if offset is None else offset
            items, length, after = ctypes.c_void_p(), ctypes.c_size_t(), ctypes.c_void_p()
            form = _ffi.SHEAF_FORMAT_JSON_LINES if lines else _ffi.SHEAF_FORMAT_JSON
            try:
                lib.sheaf_list_poll(run.handle, encode(start, "the offset"), encode(through, "the end (through)"), form,
                                    byref(items), byref(length), byref(after))
            except Error:
                if run.error is not None:   # a Python transport's own exception comes first
                    error, run.error = run.error, None
                    raise error from None
                raise
            self.polls_made += 1
            return Poll(_ffi.take_string(items, length.value), _ffi.take_string(after).decode(), lines)

    def commit(self, poll: Poll) -> None:
        """Takes `poll`'s offset as the watch's, and writes it to the state file (atomically)."""
        self.offset = poll.offset
        if self.state_path is not None:
            write_state(self.state_path, {"offset": json.loads(poll.offset)})

    # ---- the loop ---------------------------------------------------------------------------

    def polls(self, *, lines: bool = False) -> Iterator[Poll]:
        """Polls until :meth:`stop`: each poll from the offset after the one before (committed or
        not: commit them to keep them across runs), then a wait of `every` seconds. Transient
        failures are waited out (see the class)."""
        offset = self.offset
        while not self._stopped.is_set():   # bounded by stop(): a watch runs until told
            poll = self._poll_waiting_out(offset, lines)
            if poll is None:
                return
            offset = poll.offset
            yield poll
            if self._stopped.wait(self.every):
                return

    def _poll_waiting_out(self, offset: Optional[str], lines: bool) -> Optional[Poll]:
        """A poll from `offset`, tried again after each transient failure; None once stopped."""
        wait = self.every
        while True:
            try:
                return self.poll(offset, lines=lines)
            except Error as error:
                if not waits_out(error):
                    raise
                self.waits += 1
                wait = min(self.max_every, max(wait, self.every) * 2)
                if self.on_wait is not None:
                    self.on_wait(error, wait)
                if self._stopped.wait(wait):
                    return None

    def __iter__(self) -> Iterator[Any]:
        for poll in self.polls():
            yield from poll.items
            self.commit(poll)   # the caller asked for the item after the poll's last

    async def __aiter__(self) -> AsyncIterator[Any]:
        loop = asyncio.get_running_loop()
        offset = self.offset
        while not self._stopped.is_set():
            poll = await loop.run_in_executor(None, self._poll_waiting_out, offset, False)
            if poll is None:
                return
            offset = poll.offset
            for item in poll.items:
                yield item
            self.commit(poll)
            deadline = time.monotonic() + self.every
            while not self._stopped.is_set() and time.monotonic() < deadline:   # bounded by `every`
                await asyncio.sleep(min(0.05, max(0.0, deadline - time.monotonic())))

    def stop(self) -> None:
        """Ends the watch after the poll in progress (thread-safe; callable from a signal handler)."""
        self._stopped.set()

    @property
    def stopped(self) -> bool:
        """Whether :meth:`stop` was called."""
        return self._stopped.is_set()

    def close(self) -> None:
        """Stops the watch and frees its list."""
        self.stop()
        with self._lock:
            run, self._run = self._run, None
        if run is not None:
            run.close()

    def __enter__(self) -> "Watch":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<sheaf.Watch every {self.every:g} s, {self.polls_made} polls>"


__all__ = ["Poll", "Watch", "read_state", "write_state", "STATE_VERSION"]
