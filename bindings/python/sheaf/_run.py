"""One run of one C list, and the two C callbacks that reach Python.

The C callbacks are two module-level ctypes function objects, created once and never released, so
no thunk can be freed while a library thread is still inside it (a late transport answer can
outlive its list). Which run a call belongs to travels as ``user_data``: a small integer token,
looked up in ``_runs``. A run is in that registry exactly while C may call back for it.

Threads: the thread that calls ``fetch_all`` or iterates a stream describes, starts, cancels and
frees the list; a waiter thread blocks in ``sheaf_list_wait`` (so the caller's own wait stays
interruptible by Ctrl-C) and is joined before the list is read or freed, which keeps the
header's "one thread at a time" rule. ``sheaf_list_cancel`` is the only call made from elsewhere
(callbacks, other threads), and always under ``ListRun.lock`` so it never meets a freed list.
"""

from __future__ import annotations

import atexit
import ctypes
import itertools
import json
import queue
import threading
from ctypes import byref, c_size_t, c_void_p
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from . import _ffi
from ._ffi import lib
from .errors import Error, error_for
from .snapshot import Snapshot
from .transport import Transport, serve

if TYPE_CHECKING:
    from .client import Client

#: Snapshots waiting for the consumer of a stream; the library thread blocks when it is full.
STREAM_QUEUE_SIZE = 64
_POLL_SECONDS = 0.05

_END = object()  # put on a stream's queue after the last snapshot
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


class ListRun:
    """A described C list, then one run of it: start, wait (on a waiter thread), read, free."""

    def __init__(self, handle: _ffi.ListHandle, client: "Client", streaming: bool) -> None:
        self.handle: Optional[_ffi.ListHandle] = handle
        self.lock = threading.Lock()          # guards `handle` against a cancel racing the free
        self.token = next(_tokens)
        self.client: Optional["Client"] = client   # kept alive (and open) until the list starts
        self.transport: Optional[Transport] = client.transport
        self.streaming = streaming
        self.queue: "Optional[queue.Queue[Any]]" = queue.Queue(STREAM_QUEUE_SIZE) if streaming else None
        self.closing = False                  # set once the consumer has gone: callbacks stop
        self.error: Optional[BaseException] = None   # raised in a callback; re-raised by the caller
        self.started = False
        self.cancel_requested = False
        self.finished = threading.Event()
        self.outcome = _ffi.SHEAF_OK
        self.message = ""
        self.http_status = 0
        self.http_body = ""
        self._waiter: Optional[threading.Thread] = None

    # ---- running ----------------------------------------------------------------------------

    def start(self) -> None:
        """Registers the run and starts the list in the background (through its client)."""
        with _runs_lock:
            _runs[self.token] = self
        assert self.client is not None, "a list runs once"
        self.client._start(self)
        self.client = None   # the C list keeps the C client alive from here on

    def start_locked(self, client_handle: _ffi.ClientHandle, transport: Optional[Transport]) -> None:
        """The start itself; the client holds its lock, so the two calls below are one step."""
        callback = _SNAPSHOT_BRIDGE if self.streaming else _NO_SNAPSHOT
        # In C the transport's user_data belongs to the client, but a list keeps the transport
        # and user_data it was started with: setting them just before the start, under the
        # client's lock, makes user_data name this run.
        if transport is not None:
            lib.sheaf_client_set_transport(client_handle, _TRANSPORT_BRIDGE, self.token)
        result = lib.sheaf_list_start(self.handle, callback, self.token)
        if result != _ffi.SHEAF_OK:
            message = _ffi.decode(lib.sheaf_list_errmsg(self.handle))
            raise error_for(result, message)
        with self.lock:
            self.started = True
            if self.cancel_requested:   # cancel() came before the start
                lib.sheaf_list_cancel(self.handle)
        self._waiter = threading.Thread(target=self._wait, name=f"sheaf-list-{self.token}", daemon=True)
        self._waiter.start()

    def _wait(self) -> None:
        handle = self.handle
        result = lib.sheaf_list_wait(handle)
        # Read the detail here: the list's messages are valid until its next call.
        self.outcome = result
        self.message = _ffi.decode(lib.sheaf_list_errmsg(handle))
        self.http_status = lib.sheaf_list_http_status(handle)
        self.http_body = _ffi.decode(lib.sheaf_list_http_body(handle))
        self.finished.set()
        if self.queue is not None:
            self._put(_END)

    def wait(self) -> None:
        """Waits for the end of the list; interruptible (Ctrl-C) in the main thread."""
        while not self.finished.wait(0.25):
            pass
        if self._waiter is not None:
            self._waiter.join()

    def next_snapshot(self) -> Any:
        """The next snapshot of a stream, or _END after the last one."""
        assert self.queue is not None
        while True:
            try:
                return self.queue.get(timeout=0.25)
            except queue.Empty:
                continue

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

    # ---- reading and ending -----------------------------------------------------------------

    def prefix(self) -> List[Any]:
        """Every item delivered, in order (the run must be finished and keep its items)."""
        pointer, length = c_void_p(), c_size_t(0)
        result = lib.sheaf_list_prefix(self.handle, byref(pointer), byref(length))
        text = _ffi.take_string(pointer, length.value)
        if result != _ffi.SHEAF_OK:
            raise error_for(result, _ffi.decode(lib.sheaf_list_errmsg(self.handle)))
        return json.loads(text) if text else []

    def raise_outcome(self, items: List[Any]) -> None:
        """Raises what ended the run, if it did not succeed: first an exception raised in a
        callback (the caller's own, with its traceback), else the library's failure."""
        error = self.error
        if error is not None:
            self.error = None  # no cycle through the traceback's frames
            raise error
        if self.outcome not in (_ffi.SHEAF_OK, _ffi.SHEAF_LIMIT_REACHED):
            raise error_for(self.outcome, self.message, items=items,
                            status=self.http_status, body=self.http_body)

    def close(self) -> None:
        """Stops the list if it runs, waits out its callbacks, frees it. Idempotent."""
        self.closing = True
        if self.handle is None:
            return
        if self.started:
            self.cancel()
            waiter = self._waiter
            while waiter is not None and waiter.is_alive():
                self._drain()           # a snapshot callback may be blocked on a full queue
                waiter.join(_POLL_SECONDS)
            self._drain()
        with self.lock:
            handle, self.handle = self.handle, None
        lib.sheaf_list_free(handle)
        with _runs_lock:
            _runs.pop(self.token, None)

    # ---- the stream queue -------------------------------------------------------------------

    def _put(self, value: Any) -> bool:
        """Puts on the stream queue, blocking while it is full, until the consumer has gone."""
        assert self.queue is not None
        while not self.closing:
            try:
                self.queue.put(value, timeout=_POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False

    def _drain(self) -> None:
        if self.queue is None:
            return
        try:
            while True:
                self.queue.get_nowait()
        except queue.Empty:
            pass

    def deliver(self, list_handle: _ffi.ListHandle, snapshot: _ffi.SnapshotStruct) -> int:
        """The snapshot callback's work: decode the delta, queue it. Returns non-zero to stop."""
        if self.closing:
            return 1
        if snapshot.version < _ffi.SNAPSHOT_VERSION:
            raise Error(_ffi.SHEAF_E_INTERNAL, f"snapshot version {snapshot.version} is older than this package reads")
        raw = ctypes.string_at(snapshot.delta_json, snapshot.delta_length) if snapshot.delta_length else b"[]"
        value = Snapshot(
            items=json.loads(raw),
            item_count=snapshot.items,
            page_count=snapshot.pages,
            expected_items=None if snapshot.expected_items < 0 else snapshot.expected_items,
            expected_pages=None if snapshot.expected_pages < 0 else snapshot.expected_pages,
            requests_in_flight=lib.sheaf_list_requests_in_flight(list_handle),
            requests_made=lib.sheaf_list_requests_made(list_handle),
        )
        return 0 if self._put(value) else 1


# ---- the two C callbacks ----------------------------------------------------------------------

def _on_snapshot(list_handle: _ffi.ListHandle, snapshot: Any, user_data: Optional[int]) -> int:
    run = _lookup(user_data)
    if run is None:
        return 1
    try:
        return run.deliver(list_handle, snapshot.contents)
    except BaseException as error:  # noqa: B902 - stored, then re-raised by the stream's consumer
        if run.error is None:
            run.error = error
        return 1


def _on_request(request: _ffi.RequestHandle, user_data: Optional[int]) -> None:
    serve(_lookup(user_data), request)


_SNAPSHOT_BRIDGE = _ffi.SNAPSHOT_FN(_on_snapshot)
_TRANSPORT_BRIDGE = _ffi.TRANSPORT_FN(_on_request)
_NO_SNAPSHOT = _ffi.SNAPSHOT_FN()  # a NULL sheaf_snapshot_fn


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
