"""A list loaded page by page as its caller asks ("load more"): what ``Client.pager`` returns."""

from __future__ import annotations

import threading
from ctypes import byref, c_size_t, c_void_p
from typing import Any, Iterator, List, Optional, Tuple

from . import _ffi
from ._closing import Closing
from ._ffi import lib
from ._run import _PULL_MILLISECONDS, ListRun, decode_items
from .errors import Result, UsageError, error_for
from .snapshot import StopReason

_STATES = {_ffi.SHEAF_LIST_NEW: "idle", _ffi.SHEAF_LIST_IDLE: "idle", _ffi.SHEAF_LIST_LOADING: "loading",
           _ffi.SHEAF_LIST_ENDED: "ended"}


class Pager(Iterator[List[Any]], Closing):
    """A list loaded one page per call, the way an infinite-scroll view loads it.

    Nothing is fetched until :meth:`more`; each call fetches one page more (or takes one of the
    ``look_ahead`` pages fetched ahead) and returns its items. Calls made while a page is on its
    way, from any number of threads, join it: they all return that page, and the server sees one
    request for it. :meth:`reset` starts over from the first page (a pull-to-refresh).

    Iterating yields the pages in turn until the list ends. ``with`` or :meth:`close` ends it.
    """

    def __init__(self, run: ListRun, look_ahead: int) -> None:
        self._run: Optional[ListRun] = run
        self._calls = threading.Condition()
        self._inside = 0              # more() calls inside the library now
        self._closing = False
        self._cache: Tuple[int, List[Any]] = (0, [])   # the items through so many pages
        self._token: Optional[str] = None               # the resume token, once closed
        run.start(look_ahead)

    # ---- loading -----------------------------------------------------------------------------

    def more(self) -> Optional[List[Any]]:
        """The items of the next page, waiting for it as long as it takes (Ctrl-C still works);
        None once the list has ended and every page was handed out (complete, or stopped at
        ``max_items``/``max_pages``/``max_requests``).

        Raises:
            Error: the subclass for the failure that ended the list, after the pages before it
                were handed out (``resume_token`` goes on after them); :class:`StoppedError`
                when it was cancelled, reset or closed meanwhile.
        """
        run = self._enter()
        try:
            pointer, length = c_void_p(), c_size_t()
            while True:   # each call while the page is on its way joins it: no second request
                result = lib.sheaf_list_more(run.handle, _PULL_MILLISECONDS, byref(pointer), byref(length))
                if result != _ffi.SHEAF_PENDING:
                    break
            if result == _ffi.SHEAF_OK and pointer.value:
                return decode_items(_ffi.take_string(pointer, length.value))
            if result in _ffi.SUCCESSES:
                return None
            detail = _ffi.last_error_detail()   # before any other call replaces this thread's last error
            raise error_for(result, items=[], resume_token=run.current_resume_token(), **detail)
        finally:
            self._leave()

    def first(self) -> Optional[List[Any]]:
        """Starts over (:meth:`reset`) and returns the first page's items."""
        self.reset()
        return self.more()

    def reset(self) -> None:
        """Starts over: what is in flight is cancelled, the pages handed out are forgotten, and
        the next :meth:`more` fetches the first page again. Calls of :meth:`more` waiting on other
        threads raise :class:`StoppedError`. Also brings back a pager that ended or was cancelled."""
        run = self._enter()
        try:
            lib.sheaf_list_reset(run.handle)
            self._cache = (0, [])
        finally:
            self._leave()

    def cancel(self) -> None:
        """Ends the list now (any thread): calls of :meth:`more` raise :class:`StoppedError`
        (code CANCELLED) until :meth:`reset`."""
        run = self._run
        if run is not None:
            run.cancel()

    def __iter__(self) -> "Pager":
        return self

    def __next__(self) -> List[Any]:
        items = self.more()
        if items is None:
            raise StopIteration
        return items

    # ---- where it stands ----------------------------------------------------------------------

    def _status(self) -> _ffi.ListStatusStruct:
        run = self._enter()
        try:
            return run.status()
        finally:
            self._leave()

    @property
    def status(self) -> str:
        """``"idle"`` (nothing asked for, or every page asked for is in), ``"loading"`` (a page
        is on its way) or ``"ended"`` (every page was handed out: :attr:`outcome` says how)."""
        return _STATES.get(self._status().state, "loading")

    @property
    def done(self) -> bool:
        """Whether the list has ended and every page was handed out."""
        return self.status == "ended"

    @property
    def pages(self) -> int:
        """Pages handed out so far."""
        return self._status().pages

    @property
    def pages_ready(self) -> int:
        """Pages fetched ahead and not handed out yet."""
        return self._status().pages_ready

    @property
    def expected_total(self) -> Optional[int]:
        """The server's total, once a page told it; else None."""
        total = self._status().expected_items
        return None if total < 0 else total

    @property
    def items(self) -> List[Any]:
        """Every item handed out so far, in order (a new list each time)."""
        pages = self.pages
        cached_pages, cached = self._cache
        if pages != cached_pages:
            run = self._enter()
            try:
                pointer, length = c_void_p(), c_size_t()
                result = lib.sheaf_list_prefix(run.handle, byref(pointer), byref(length))
                if result != _ffi.SHEAF_OK:
                    raise error_for(result, **_ffi.last_error_detail())
                cached = decode_items(_ffi.take_string(pointer, length.value))
            finally:
                self._leave()
            self._cache = (pages, cached)
        return list(cached)

    @property
    def stop_reason(self) -> StopReason:
        """Why the list ended once :attr:`done` (``COMPLETE``, ``ITEM_LIMIT``, ``PAGE_BUDGET``,
        ``REQUEST_BUDGET``, or ``FAILED``: :attr:`outcome` says how); ``NONE`` before."""
        return StopReason(self._status().stop_reason)

    @property
    def outcome(self) -> Optional[Result]:
        """How the list ended once :attr:`done` (``Result.OK`` when complete); None before."""
        if not self.done:
            return None
        run = self._enter()
        try:
            return Result(lib.sheaf_list_wait(run.handle))   # at once: it has ended
        finally:
            self._leave()

    @property
    def resume_token(self) -> Optional[str]:
        """The token that goes on after the pages handed out (``resume=`` of ``fetch_all``,
        ``stream`` or ``pager``); None when nothing is left."""
        run = self._run
        return self._token if run is None else run.current_resume_token()

    # ---- lifetime -----------------------------------------------------------------------------

    def _enter(self) -> ListRun:
        with self._calls:
            run = self._run
            if run is None or self._closing:
                raise UsageError(Result.STATE, "the pager is closed")
            self._inside += 1
            return run

    def _leave(self) -> None:
        with self._calls:
            self._inside -= 1
            self._calls.notify_all()

    def close(self) -> None:
        """Ends the list, cancels what is in flight and frees it, once the calls of :meth:`more`
        on other threads have returned (they raise :class:`StoppedError`). Idempotent."""
        with self._calls:
            run = self._run
            if run is None or self._closing:
                return
            self._closing = True
        run.cancel()
        with self._calls:
            while self._inside:
                self._calls.wait()
        self._token = run.current_resume_token()
        self._run = None
        run.close()

    def __repr__(self) -> str:
        if self._run is None:
            return "<sheaf.Pager closed>"
        return f"<sheaf.Pager {self.status}, {self.pages} pages>"


__all__ = ["Pager"]
