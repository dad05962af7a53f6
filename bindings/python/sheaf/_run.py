"""One run of one C list, and the C callback that reaches Python (a Python transport).

Every list pulls its snapshots (``sheaf_list_start_pull`` + ``sheaf_list_next``) on the caller's
thread: no library thread enters Python per snapshot, ``sheaf_list_next`` waits with the GIL
released (a quarter of a second at a time, so Ctrl-C is seen), and ``fetch_all`` decodes each
delta while the library fetches the next pages. Only a Python transport is called
from library threads: through one module-level ctypes function object, created once and never
released, so no thunk can be freed while a library thread is still inside it (a late transport
answer can outlive its list). Which run a call belongs to travels as ``user_data``: a small
integer token, looked up in ``_runs``. A run is in that registry exactly while C may call back
for it.

Threads: the thread that calls ``fetch_all`` or iterates a stream describes, starts, pulls,
cancels and frees the list, which keeps the header's "one thread at a time" rule.
``sheaf_list_cancel`` is the only call made from elsewhere (a transport callback, other threads),
and always under ``ListRun.lock`` so it never meets a freed list.
"""

from __future__ import annotations

import atexit
import ctypes
import dataclasses
import decimal
import itertools
import json
import os
import select
import sys
import threading
from ctypes import POINTER, byref
from typing import Any, Callable, Dict, List, Optional, Protocol, Tuple

from . import _ffi
from ._ffi import lib
from .description import loads_exact
from .errors import Error, ItemDecodeError, Result, UsageError, error_for
from .snapshot import Items, Snapshot, StopReason
from .transport import Transport, serve

try:
    import orjson as _orjson
except ImportError:   # optional: json does the same, slower
    _orjson = None
_DIGITS_AS_ZERO = bytes(b"0"[0] if b"0"[0] <= byte <= b"9"[0] else b" "[0] for byte in range(256))
_NINETEEN_DIGITS = b"0" * 19

#: How long one sheaf_list_next call may wait: Ctrl-C is seen between two calls.
_PULL_MILLISECONDS = 250

_END = object()  # what next_snapshot returns after the last snapshot
PENDING = object()  # what take returns when no snapshot came in time
_tokens = itertools.count(1)
_runs: Dict[int, "ListRun"] = {}
_runs_lock = threading.Lock()


def live_runs() -> int:
    """How many runs C may still call back for (for tests: it returns to 0 after every list)."""
    with _runs_lock:
        return len(_runs)


def _lookup(token: Optional[int]) -> Optional["ListRun"]:
    if token is None:
        return None
    with _runs_lock:
        return _runs.get(token)


class OwningClient(Protocol):
    """What a run reads of the client whose list it runs (a :class:`sheaf.Client`): its Python
    transport, and whether it was closed before the start. Named here, so that this module needs
    nothing of client, which imports it."""

    transport: Optional[Transport]

    @property
    def closed(self) -> bool: ...


def pull(next_fn: Any, handle: Any, milliseconds: int, pointer: Any, version: int, what: str) -> Any:
    """One pull of `next_fn` (sheaf_list_next, sheaf_group_next) into `pointer`: the struct it
    handed out, None once the run has ended, or PENDING when none came within `milliseconds`."""
    result = next_fn(handle, milliseconds, byref(pointer))
    if result == _ffi.SHEAF_PENDING:
        return PENDING
    if result != _ffi.SHEAF_OK:
        raise error_for(result, **_ffi.last_error_detail())
    if not pointer:
        return None
    taken = pointer.contents
    if taken.version < version:
        raise Error(_ffi.SHEAF_E_INTERNAL, f"{what} version {taken.version} is older than this package reads")
    return taken


class ListRun:
    """A described C list, then one run of it: start, pull its snapshots to the end, free."""

    def __init__(self, handle: _ffi.ListHandle, client: OwningClient) -> None:
        self.handle: Optional[_ffi.ListHandle] = handle
        self.lock = threading.Lock()          # guards `handle` against a cancel racing the free
        self.token = next(_tokens)
        self.client: Optional[OwningClient] = client   # to check, at the start, that it is still open
        self.transport: Optional[Transport] = client.transport
        self.error: Optional[BaseException] = None   # raised in a callback; re-raised by the caller
        self.started = False
        self.cancel_requested = False
        self.outcome = _ffi.SHEAF_OK
        self.stop_reason = StopReason.NONE     # why it ended, read with the outcome
        self.detail: Dict[str, Any] = {}       # the fields of the outcome's error
        self.resume_token: Optional[str] = None   # read when the list ends or is closed
        #: For a list that syncs (``until``/``since``): what it got to, read with the resume token.
        self.sync_state: Optional[Dict[str, Any]] = None
        self.ended = False                           # the outcome was read
        self._pulled = POINTER(_ffi.SnapshotStruct)()   # where sheaf_list_next puts its answer
        #: Where sheaf_list_delta_has_long_digits answers (see items_of).
        self._long_digits = ctypes.c_int(1)
        self.decode: Optional[Callable[[Any], Any]] = None   # decode= of fetch_all / stream, per item
        self.items_seen = 0                                # items pulled so far (an item's index)
        if self.transport is not None:   # the list's own transport, with this run as user_data
            lib.sheaf_list_set_transport(handle, _TRANSPORT_BRIDGE, self.token, None)

    # ---- running ----------------------------------------------------------------------------

    def start(self, look_ahead: Optional[int] = None, output: Optional[Tuple[int, int]] = None,
              notify_fd: Optional[int] = None) -> None:
        """Registers the run and starts the list in the background: pulled (with `notify_fd`,
        written to when a snapshot or the end is ready: an event loop's wake-up); with
        `look_ahead`, in load-more mode (nothing is fetched until asked); with `output` (a file
        descriptor and a ``SHEAF_FORMAT_*``), writing its items there."""
        client, self.client = self.client, None   # the C list keeps the C client alive
        assert client is not None, "a list runs once"
        if client.closed:
            raise UsageError(Result.STATE, "the client was closed before the list started")
        with _runs_lock:
            _runs[self.token] = self
        if notify_fd is not None:
            lib.sheaf_list_set_notify_fd(self.handle, notify_fd)
        if output is not None:
            result = lib.sheaf_list_start_write_fd(self.handle, *output)
        elif look_ahead is None:
            result = lib.sheaf_list_start_pull(self.handle)
        else:
            result = lib.sheaf_list_start_load_more(self.handle, look_ahead)
        if result != _ffi.SHEAF_OK:
            raise error_for(result, **_ffi.last_error_detail())
        with self.lock:
            self.started = True
            if self.cancel_requested:   # cancel() came before the start
                lib.sheaf_list_cancel(self.handle)

    def _pull(self) -> Optional[_ffi.SnapshotStruct]:
        """The next snapshot as the library hands it (valid until the next pull), or None once
        the list has ended (its outcome is then read). Interruptible by Ctrl-C between waits."""
        while True:
            taken = self.take(_PULL_MILLISECONDS)
            if taken is not PENDING:
                return taken

    def take(self, milliseconds: int) -> Any:
        """The next snapshot (valid until the next take), None once the list has ended (its
        outcome is then read), or PENDING when none came within `milliseconds` (0: no wait)."""
        snapshot = pull(lib.sheaf_list_next, self.handle, milliseconds, self._pulled, _ffi.SNAPSHOT_VERSION, "snapshot")
        if snapshot is None:
            self._read_outcome()
        return snapshot

    def status(self) -> _ffi.ListStatusStruct:
        """Where the list stands (counts, and whether it has ended)."""
        status = _ffi.ListStatusStruct(version=_ffi.LIST_STATUS_VERSION)
        with self.lock:
            if self.handle is not None:
                lib.sheaf_list_get_status(self.handle, byref(status))
        return status

    def wait_output(self, wakeups: "Wakeups") -> _ffi.ListStatusStruct:
        """For a list writing its output, started with `wakeups.write_fd` as its notify fd:
        its status after the next snapshot written, or once it has ended (its outcome then read).
        Waits on the fd, a quarter of a second at a time, so that Ctrl-C is seen; never polls
        the status."""
        poller = select.poll()
        poller.register(wakeups.read_fd, select.POLLIN)
        while not poller.poll(_PULL_MILLISECONDS):
            pass
        wakeups.drain()   # before the status is read: no wake-up is lost
        status = self.status()
        if status.state == _ffi.SHEAF_LIST_ENDED:
            self._read_outcome()
        return status

    def next_items(self) -> Optional[List[Any]]:
        """The items the next snapshot added (through `decode`, when set), or None after the
        last snapshot."""
        snapshot = self._pull()
        return None if snapshot is None else self.items_of(snapshot)

    def items_of(self, snapshot: _ffi.SnapshotStruct) -> List[Any]:
        """The items `snapshot` (the one taken last) added, through `decode` when set. Asks the
        library whether they hold 19 digits in a row only here: a reader of the delta's bytes
        (fetch_arrow, fetch_to) leaves that scan undone."""
        if snapshot.delta_length:
            lib.sheaf_list_delta_has_long_digits(self.handle, byref(self._long_digits))
        return self._decoded(delta_items(snapshot.delta_json, snapshot.delta_length, bool(self._long_digits.value)))

    def _decoded(self, items: List[Any]) -> List[Any]:
        """`items` through the run's `decode`; raises ItemDecodeError (with the items of this
        batch decoded before it) for the first one it refuses."""
        first = self.items_seen
        self.items_seen += len(items)
        if self.decode is None:
            return items
        decoded = []
        for offset, item in enumerate(items):
            try:
                decoded.append(self.decode(item))
            except Exception as error:   # the caller's decoder: whatever it raises
                raise ItemDecodeError(first + offset, item, _name_of(self.decode), error, decoded) from error
        return decoded

    def next_snapshot(self, convert: Optional[Callable[[_ffi.SnapshotStruct], Any]] = None) -> Any:
        """The next snapshot (a :class:`Snapshot`, or what `convert` makes of the library's),
        or _END after the last one."""
        snapshot = self._pull()
        return _END if snapshot is None else (convert or self.snapshot_of)(snapshot)

    def snapshot_of(self, snapshot: _ffi.SnapshotStruct) -> Snapshot:
        """`snapshot` as a :class:`Snapshot`, its items through `decode` when set."""
        status = _ffi.ListStatusStruct(version=_ffi.LIST_STATUS_VERSION)
        lib.sheaf_list_get_status(self.handle, byref(status))
        return Snapshot(
            items=self.items_of(snapshot),
            item_count=snapshot.items,
            page_count=snapshot.pages,
            expected_items=None if snapshot.expected_items < 0 else snapshot.expected_items,
            expected_pages=None if snapshot.expected_pages < 0 else snapshot.expected_pages,
            requests_in_flight=status.requests_in_flight,
            requests_made=status.requests_made,
            resume_token=self.current_resume_token(),
            window=status.window,
            requests_revalidated=status.requests_revalidated,
            quota_remaining=None if status.quota_remaining < 0 else status.quota_remaining,
            quota_reset=None if status.quota_remaining < 0 else status.quota_reset_ms / 1000.0,
        )

    def _read_outcome(self) -> None:
        handle = self.handle
        self.outcome = lib.sheaf_list_wait(handle)   # at once: every snapshot was taken
        status = _ffi.ListStatusStruct(version=_ffi.LIST_STATUS_VERSION)
        lib.sheaf_list_get_status(handle, byref(status))
        self.stop_reason = StopReason(status.stop_reason)
        self.ended = True
        self.detail = _ffi.list_error_detail(handle) if self.outcome not in _ffi.SUCCESSES else {}
        self.resume_token = self.current_resume_token()
        self.sync_state = self.current_sync_state()

    def current_sync_state(self) -> Optional[Dict[str, Any]]:
        """For a list that syncs, the library's ``sync_state`` through the snapshots taken so far:
        ``{"list": redacted first URL, "field": pointer, "value": greatest value seen, or the
        stored one}``; None for a list that does not sync."""
        with self.lock:
            if self.handle is None:
                return self.sync_state
            pointer, length = ctypes.c_void_p(), ctypes.c_size_t()
            lib.sheaf_list_description(self.handle, byref(pointer), byref(length))
            # Exactly as the library wrote it: a value that is no int is a JSONNumber, whose
            # text goes back to the library as it came (a float would move the next run's bound).
            state = loads_exact(_ffi.take_string(pointer, length.value)).get("sync_state")
            return state if isinstance(state, dict) else None

    def current_resume_token(self) -> Optional[str]:
        """The token that goes on after the snapshots taken so far (None once the list completed
        or after it was freed)."""
        with self.lock:
            if self.handle is None:
                return self.resume_token
            pointer = ctypes.c_void_p()
            lib.sheaf_list_resume_token(self.handle, byref(pointer))
            return _ffi.take_string(pointer).decode("ascii") if pointer.value else None

    def cancel(self) -> None:
        """Asks the running list to stop (any thread, any time; a no-op once it is freed)."""
        with self.lock:
            self.cancel_requested = True
            if self.handle is not None and self.started:
                lib.sheaf_list_cancel(self.handle)

    def fail_with(self, error: BaseException) -> None:
        """Records an exception raised in a callback (the first one wins) and stops the list."""
        if self.error is None:
            self.error = error
        try:
            self.cancel()
        except BaseException:  # noqa: B902 - called from callbacks, which must not raise
            pass

    # ---- ending -----------------------------------------------------------------------------

    def raise_outcome(self, items: List[Any]) -> None:
        """Raises what ended the run, if it did not succeed: first an exception raised in a
        callback (the caller's own, with its traceback), else the library's failure."""
        error = self.error
        if error is not None:
            self.error = None  # no cycle through the traceback's frames
            raise error
        if self.outcome not in _ffi.SUCCESSES:
            raise error_for(self.outcome, items=items, resume_token=self.resume_token, **self.detail)

    def items(self, delivered: List[Any]) -> Items:
        """After the last snapshot: every item delivered, with how the list ended; or the
        failure that ended it, raised with them."""
        self.raise_outcome(delivered)
        return Items(delivered, self.stop_reason, self.resume_token, self.sync_state)

    def close(self) -> None:
        """Stops the list if it runs and frees it (the library lets go of the snapshots not
        taken and waits out the list's threads). Idempotent."""
        if self.handle is None:
            return
        if self.started and not self.ended:
            self.cancel()
            self.resume_token = self.current_resume_token()   # after the snapshots taken
            self.sync_state = self.current_sync_state()
        with self.lock:
            handle, self.handle = self.handle, None
        lib.sheaf_list_free(handle)
        with _runs_lock:
            _runs.pop(self.token, None)


class Wakeups:
    """What the library writes to when a snapshot or the end is ready (sheaf_list_set_notify_fd):
    an eventfd, or a non-blocking pipe where there is none (Python before 3.10)."""

    def __init__(self) -> None:
        if hasattr(os, "eventfd"):
            self.read_fd = self.write_fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        else:
            self.read_fd, self.write_fd = os.pipe()
            os.set_blocking(self.read_fd, False)
            os.set_blocking(self.write_fd, False)

    def drain(self) -> None:
        """Takes the wake-ups written so far (an eventfd resets to 0; a pipe empties)."""
        try:
            os.read(self.read_fd, 4096)
        except BlockingIOError:
            pass

    def close(self) -> None:
        """Once the list is freed: it writes no more."""
        os.close(self.read_fd)
        if self.write_fd != self.read_fd:
            os.close(self.write_fd)


def decoder_for(decode: Any) -> Optional[Callable[[Any], Any]]:
    """``decode=`` as a function of one item: a pydantic model validates it (``model_validate``,
    or v1's ``parse_obj``); a dataclass or a NamedTuple takes an object's fields as keywords; any
    other callable (a class, a function) is called with the item."""
    if decode is None:
        return None
    if not callable(decode):
        raise UsageError(Result.INVALID_ARGUMENT, f"decode must be a class or a callable, not {type(decode).__name__}")
    if isinstance(decode, type):
        validate = getattr(decode, "model_validate", None) or getattr(decode, "parse_obj", None)
        if validate is not None:
            return validate
        if dataclasses.is_dataclass(decode) or (issubclass(decode, tuple) and hasattr(decode, "_fields")):
            def with_fields(item: Any) -> Any:
                return decode(**item) if isinstance(item, dict) else decode(item)
            with_fields.__qualname__ = decode.__qualname__   # errors name the class
            return with_fields
    return decode


def _name_of(decode: Callable[[Any], Any]) -> str:
    owner = getattr(decode, "__self__", None)   # a bound model_validate: name the model
    return getattr(owner if isinstance(owner, type) else decode, "__qualname__", None) or repr(decode)


def delta_items(address: Any, length: int, long_digits: bool = True) -> List[Any]:
    """The items of a delta the library holds (a snapshot's, a group delta's: `length` bytes of
    JSON array at `address`). `long_digits`: whether the library found 19 digits in a row in
    them; when not, orjson reads the library's memory as it is (no copy, no pass)."""
    if not length:
        return []
    if _orjson is not None and not long_digits:
        try:
            return _orjson.loads(memoryview((ctypes.c_char * length).from_address(address)))
        except _orjson.JSONDecodeError:
            pass   # read by json below, as decode_items does
    return decode_items(ctypes.string_at(address, length))


def decode_items(raw: bytes) -> List[Any]:
    """A JSON array of items the library handed over, decoded (by orjson when it is installed:
    P5's 500 pages of small items take it 0.09 s against json's 0.14 s)."""
    # orjson reads an integer past 64 bits as a float, silently: a run of 19 digits anywhere
    # (strings included, to keep the check one pass over the bytes) goes to json, which keeps it.
    if _orjson is not None and _NINETEEN_DIGITS not in raw.translate(_DIGITS_AS_ZERO):
        try:
            return _orjson.loads(raw)
        except _orjson.JSONDecodeError:
            pass   # 1e400 (json reads inf) or a lone surrogate escape: json reads both
    try:
        return json.loads(raw)
    except ValueError as error:
        # A valid page may hold an integer past Python's limit on int-string conversion (4,300
        # digits): read again, each integer through _big_int.
        if "integer string conversion" not in str(error) and "Exceeds the limit" not in str(error):
            raise
        return json.loads(raw, parse_int=_big_int)


def _big_int(text: str) -> Any:
    """An integer of a page: an int, or past Python's limit on int-string conversion a
    decimal.Decimal of the same exact value. Decimal reads digits in linear time, where making
    an int of them is quadratic (0.4.0 spent 30 s on one 1 MB page of a million digits), and
    the limit is there to keep that cost out (it applies to str() of such an int too)."""
    digits = len(text) - text.startswith("-")
    limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 0
    return int(text) if limit == 0 or digits <= limit else decimal.Decimal(text)


# ---- the C callback ---------------------------------------------------------------------------

def _on_request(exchange: _ffi.ExchangeHandle, user_data: Optional[int]) -> None:
    serve(_lookup(user_data), exchange)


_TRANSPORT_BRIDGE = _ffi.TRANSPORT_FN(_on_request)


@atexit.register
def _close_all_runs() -> None:
    """Stops lists still running at exit, so no library thread calls into a finalising Python."""
    with _runs_lock:
        runs = list(_runs.values())
    for run in runs:
        try:
            run.close()
        except BaseException:  # noqa: B902 - best effort at exit
            pass
