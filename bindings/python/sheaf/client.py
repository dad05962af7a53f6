"""The client: a base URL, credentials, a transport and policies; lists are fetched through it."""

from __future__ import annotations

import ctypes
import math
import threading
from ctypes import byref
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _ffi
from ._closing import Closing
from ._ffi import lib
from ._run import ListRun
from .description import Description
from .errors import Error, Result, UsageError
from .stream import SnapshotStream
from .transport import Transport

#: Query parameters: a mapping (a list or tuple value repeats the parameter) or (name, value) pairs.
Query = Union[Mapping[str, Any], Sequence[Tuple[str, Any]]]

class Client(Closing):
    """A client of one paginated REST API: its base URL, bearer token, transport and policies.

    Args:
        base_url: absolute http(s) URL; list paths are resolved against it.
        token: bearer token, sent as ``Authorization: Bearer <token>`` only to the base URL's
            origin (scheme, host, port); None sends no Authorization header.
        concurrency: pages in flight at once, 1..64 (the window).
        max_pages: page cap per list; a longer walk fails with PolicyError.
        max_body_bytes: body cap per response; a larger body fails with DecodingError.
        max_attempts: attempts per request including the first, 1..100.
        retry_base: backoff base in seconds (exponential with full jitter).
        retry_max: cap of a backoff or of a server's Retry-After, in seconds.
        timeout: whole-request timeout in seconds; None for none.
        connect_timeout: connect timeout in seconds; None for the transport's default.
        max_redirects: redirects followed per request, 0..50.
        transport: a Python callable performing the HTTP exchanges instead of libcurl (see
            :mod:`sheaf.transport`); None for libcurl.

    Raises:
        UsageError: a malformed base URL or an option out of range.

    A client may be shared by threads and run several lists at once. Use it as a context manager
    or call :meth:`close`; lists already running keep what they need.
    """

    def __init__(self, base_url: str, token: Optional[str] = None, *, concurrency: int = 8,
                 max_pages: int = 10000, max_body_bytes: int = 64 << 20, max_attempts: int = 4,
                 retry_base: float = 0.1, retry_max: float = 30.0, timeout: Optional[float] = 30.0,
                 connect_timeout: Optional[float] = 10.0, max_redirects: int = 10,
                 transport: Optional[Transport] = None) -> None:
        self._handle: Optional[_ffi.ClientHandle] = None
        self._lock = threading.Lock()   # one close frees the handle, whichever thread calls it
        if not isinstance(base_url, str):
            raise UsageError(Result.INVALID_ARGUMENT, f"base_url must be a str, not {type(base_url).__name__}")
        if token is not None and not isinstance(token, str):
            raise UsageError(Result.INVALID_ARGUMENT, "token must be a str or None")
        if transport is not None and not callable(transport):
            raise UsageError(Result.INVALID_ARGUMENT, "transport must be a callable (see sheaf.transport)")
        self.base_url = base_url
        self.transport = transport
        handle = _ffi.ClientHandle()
        lib.sheaf_client_new(byref(handle), _ffi.encode(base_url))
        self._handle = handle
        try:
            if token is not None:
                lib.sheaf_client_set_auth(handle, _ffi.SHEAF_AUTH_BEARER, _ffi.encode(token))
            options = (
                (_ffi.SHEAF_OPT_WINDOW, "concurrency", _whole(concurrency, "concurrency")),
                (_ffi.SHEAF_OPT_MAX_PAGES, "max_pages", _whole(max_pages, "max_pages")),
                (_ffi.SHEAF_OPT_MAX_BODY_BYTES, "max_body_bytes", _whole(max_body_bytes, "max_body_bytes")),
                (_ffi.SHEAF_OPT_MAX_ATTEMPTS, "max_attempts", _whole(max_attempts, "max_attempts")),
                (_ffi.SHEAF_OPT_RETRY_BASE_MS, "retry_base", _milliseconds(retry_base, "retry_base")),
                (_ffi.SHEAF_OPT_RETRY_MAX_MS, "retry_max", _milliseconds(retry_max, "retry_max")),
                (_ffi.SHEAF_OPT_TIMEOUT_MS, "timeout", _milliseconds(timeout, "timeout")),
                (_ffi.SHEAF_OPT_CONNECT_TIMEOUT_MS, "connect_timeout",
                 _milliseconds(connect_timeout, "connect_timeout")),
                (_ffi.SHEAF_OPT_MAX_REDIRECTS, "max_redirects", _whole(max_redirects, "max_redirects")),
            )
            for option, name, value in options:
                try:
                    lib.sheaf_client_set_option(handle, option, value)
                except Error as error:
                    error.message = f"{name}={value!r}: {error.message}"
                    error.args = (error.message,)
                    raise
        except BaseException:
            self.close()
            raise

    # ---- lifetime ---------------------------------------------------------------------------

    def close(self) -> None:
        """Frees the client. Idempotent; lists already running finish unaffected."""
        with self._lock:
            handle, self._handle = self._handle, None
        if handle is not None:
            lib.sheaf_client_free(handle)

    @property
    def closed(self) -> bool:
        """True once :meth:`close` has been called."""
        return self._handle is None

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<sheaf.Client {self.base_url!r} {state}>"  # never the token

    # ---- lists ------------------------------------------------------------------------------

    def fetch_all(self, path: str, description: Optional[Description] = None, *, query: Optional[Query] = None,
                  max_items: Optional[int] = None, **parts: Any) -> List[Any]:
        """Fetches every item of the list at `path`, in order, de-duplicated by ``id``.

        Args:
            path: the list's path (resolved against the base URL; may carry a query).
            description: how the list paginates (:class:`sheaf.Description`); None, and no
                `parts`, leaves everything to detection from the first page.
            query: extra query parameters for every page request.
            max_items: stop after this many items (None or 0: no limit); not a failure.
            **parts: fields of :class:`sheaf.Description` (``preset="github"``,
                ``items="/data"``, ``paging="offset:offset"``, ``total="header:X-Total-Count"``,
                ``id="/id"``...), replacing those of `description`.

        Returns:
            Every item, decoded from JSON.

        Raises:
            Error: a subclass for the failure, whose ``items`` holds the items delivered before
                it (:class:`NotFollowedError` when the last page signals more than the
                description follows); or the exception a Python transport raised.
        """
        run = self._new_run(path, description, parts, query, max_items)
        delivered: List[Any] = []
        try:
            run.start()
            while True:   # bounded by the list: each pull is a snapshot or the end
                items_added = run.next_items()
                if items_added is None:
                    break
                delivered.extend(items_added)
        finally:
            run.close()   # also on Ctrl-C: cancels what is in flight
        run.raise_outcome(delivered)
        return delivered

    def stream(self, path: str, description: Optional[Description] = None, *, query: Optional[Query] = None,
               max_items: Optional[int] = None, **parts: Any) -> SnapshotStream:
        """Streams the list at `path` as snapshots: growing, ordered prefixes, one delta each.

        Takes the same arguments as :meth:`fetch_all` (checked now: a bad option raises
        UsageError here). The list starts at the first ``next()``; the items are not kept.

        Returns:
            A :class:`SnapshotStream` of :class:`Snapshot`. Breaking out of the loop, ``close()``
            or leaving its ``with`` block stops the list and cancels what is in flight; at the
            end the failure, if any, is raised as in :meth:`fetch_all` (``items`` then empty).
        """
        return SnapshotStream(self._new_run(path, description, parts, query, max_items))

    def explain(self, path: str, description: Optional[Description] = None, *, query: Optional[Query] = None,
                **parts: Any) -> Description:
        """What the library makes of the list at `path` from its first page: every part, detected
        or given, and the plan (``.plan``: "parallel", "speculative", "sequential" or "single";
        ``.detected``: the parts detection decided). Fetches the first page only (a few more
        requests may already be on their way when it returns; they are cancelled).

        Raises:
            Error: as :meth:`fetch_all`, when the first page fails or detection cannot decide.
        """
        run = self._new_run(path, description, parts, query, None)
        try:
            run.start()
            run.next_items()   # the first snapshot, or the end: the description is resolved
            pointer, length = ctypes.c_void_p(), ctypes.c_size_t()
            lib.sheaf_list_description(run.handle, byref(pointer), byref(length))
            explained = Description.from_json(_ffi.take_string(pointer, length.value))
        finally:
            run.close()
        if run.outcome not in (_ffi.SHEAF_OK, _ffi.SHEAF_LIMIT_REACHED, _ffi.SHEAF_E_STOPPED, _ffi.SHEAF_E_CANCELLED):
            run.raise_outcome([])
        return explained

    def _new_run(self, path: str, description: Optional[Description], parts: Dict[str, Any],
                 query: Optional[Query], max_items: Optional[int]) -> ListRun:
        handle_of_client = self._handle
        if handle_of_client is None:
            raise UsageError(Result.STATE, "the client is closed")
        if not isinstance(path, str):
            raise UsageError(Result.INVALID_ARGUMENT, f"path must be a str, not {type(path).__name__}")
        if description is not None and not isinstance(description, Description):
            raise UsageError(Result.INVALID_ARGUMENT, "description must be a sheaf.Description")
        described = (description or Description()).merged(parts)
        handle = _ffi.ListHandle()
        lib.sheaf_list_new(byref(handle), handle_of_client, _ffi.encode(path))
        run = ListRun(handle, self)
        try:
            for key, value in _query_pairs(query):
                lib.sheaf_list_add_query(handle, _ffi.encode(key), _ffi.encode(value))
            described.apply(handle)
            if max_items is not None:
                lib.sheaf_list_set_max_items(handle, _whole(max_items, "max_items"))
            lib.sheaf_list_set_keep_items(handle, 0)   # the items are kept, if at all, in Python
        except BaseException:
            run.close()
            raise
        return run


# ---- describing a list ------------------------------------------------------------------------

def _query_pairs(query: Optional[Query]) -> List[Tuple[str, str]]:
    """Every query parameter as (name, value) text; a list or tuple value repeats the name."""
    if query is None:
        return []
    pairs: Iterable[Any] = query.items() if isinstance(query, Mapping) else query
    out: List[Tuple[str, str]] = []
    for pair in pairs:
        try:
            key, value = pair
        except (TypeError, ValueError):
            raise UsageError(Result.INVALID_ARGUMENT,
                             f"query must be a mapping or (name, value) pairs, not {pair!r}") from None
        for one in value if isinstance(value, (list, tuple)) else [value]:
            out.append((str(key), _query_text(one)))
    return out


def _query_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _whole(value: Any, name: str, bits: int = 64) -> int:
    """An int argument, checked to fit the C type (ctypes would silently wrap it)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(Result.INVALID_ARGUMENT, f"{name} must be an int, not {type(value).__name__}")
    if not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
        raise UsageError(Result.INVALID_ARGUMENT, f"{name} is out of range: {value}")
    return value


def _milliseconds(seconds: Optional[float], name: str) -> int:
    """Seconds (None: 0, meaning none or the default) as whole milliseconds, rounded up."""
    if seconds is None:
        return 0
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or math.isnan(seconds):
        raise UsageError(Result.INVALID_ARGUMENT, f"{name} must be a number of seconds, not {seconds!r}")
    if math.isinf(seconds) or seconds > 2**53 / 1000:
        raise UsageError(Result.INVALID_ARGUMENT, f"{name} is out of range: {seconds!r}")
    return math.ceil(seconds * 1000) if seconds > 0 else int(seconds * 1000)


__all__ = ["Client", "Query"]
