"""The client: a base URL, credentials, a transport and policies; lists are fetched through it."""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import inspect
import json
import math
import os
import threading
from ctypes import byref
from typing import (TYPE_CHECKING, Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple,
                    TypeVar, Union)

from . import _ffi, hooks
from .arrow import GatheredRows, SchemaError, SnapshotBatches
from .hooks import Event
from ._closing import Closing
from ._ffi import lib
from ._run import _END, ListRun, Wakeups, decoder_for
from .description import Description
from .group import GroupResult, GroupRun, GroupStream, ListOutcome, fetch_group, placeholders
from .pager import Pager
from .partition import Partition
from .errors import Error, ItemDecodeError, Result, UsageError, encode
from .request import ApiKey, Headers, Response, header_pairs, named_pairs, send
from .snapshot import Items, Progress, Snapshot, StopReason, Written
from .stream import SnapshotStream
from .transport import Transport
from .watch import Watch, read_state

if TYPE_CHECKING:  # pragma: no cover - importing sheaf imports no pyarrow
    import pyarrow

#: Query parameters: a mapping (a list or tuple value repeats the parameter) or (name, value) pairs.
Query = Union[Mapping[str, Any], Sequence[Tuple[str, Any]]]


@dataclasses.dataclass(frozen=True, repr=False)
class ListOptions:
    """How a list is run, as one value: the keywords that the list calls of :class:`Client` and
    :class:`AsyncClient` share besides the list's description, for ``options=`` of any of them.

        run = sheaf.ListOptions(max_items=500, deadline=30, headers={"X-Team": "a"})
        items = client.fetch_all("/v1/things", options=run)
        client.fetch_to("/v1/things", out, options=run)

    Each field means what the keyword of the same name means (see :meth:`Client.fetch_all`);
    None, the default, leaves it unset. A call may take some of them as keywords and the others
    from ``options``; one given both ways is refused with :class:`UsageError` (a ValueError),
    whatever the two values, and so is a field the call has no keyword for (a budget given to
    :meth:`Client.fetch_each` or :meth:`Client.partitions`, which take none; a ``resume`` given
    to :meth:`Client.fetch_many`, whose ``resume=`` holds a token per path).
    ``dataclasses.replace(run, max_items=10)`` makes a changed copy. Its repr shows the names of
    the headers and query parameters, not their values (a header may carry a credential).
    """

    query: Optional[Query] = None
    headers: Optional[Headers] = None
    max_items: Optional[int] = None
    max_pages: Optional[int] = None
    max_requests: Optional[int] = None
    deadline: Optional[float] = None
    resume: Optional[str] = None
    # (A field added later goes after these: one in the middle would move the positional ones.)

    def __repr__(self) -> str:
        shown = []
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if value is None:
                continue
            if field.name in ("query", "headers"):
                shown.append(f"{field.name}=<{', '.join(_names_of(value))}>")
            else:
                shown.append(f"{field.name}={value!r}")
        return f"ListOptions({', '.join(shown)})"


def _names_of(pairs: Any) -> List[str]:
    """The names of a mapping or of (name, value) pairs, for a repr (nothing else is read)."""
    if isinstance(pairs, Mapping):
        return [str(name) for name in pairs]
    if isinstance(pairs, (list, tuple)):
        return [str(pair[0]) if isinstance(pair, (list, tuple)) and pair else "?" for pair in pairs]
    return ["..."]


#: The fields of ListOptions, in order.
_LIST_OPTIONS = tuple(field.name for field in dataclasses.fields(ListOptions))
_NO_OPTIONS = ListOptions()


class _Takes(NamedTuple):
    """What a list call takes of ListOptions: the fields it has keywords for, and why it has no
    others (a phrase for the message)."""

    call: str
    names: Tuple[str, ...]
    why: str = ""

    def resolve(self, options: Optional[ListOptions], keywords: Dict[str, Any]) -> ListOptions:
        """The run's settings, from `options` and the call's keywords: the one place they are
        put together. Pops the call's run keywords (those of `names`) out of `keywords`; a
        keyword left at None is not given. Once per call, before anything is made."""
        given = {}
        for name in self.names:
            if name in keywords:
                value = keywords.pop(name)
                if value is not None:
                    given[name] = value
        if options is None:
            return ListOptions(**given) if given else _NO_OPTIONS
        if not isinstance(options, ListOptions):
            raise UsageError(Result.INVALID_ARGUMENT,
                             f"{self.call}(): options must be a sheaf.ListOptions, not {type(options).__name__}")
        in_options = [name for name in _LIST_OPTIONS if getattr(options, name) is not None]
        refused = [name for name in in_options if name not in self.names]
        if refused:
            raise UsageError(Result.INVALID_ARGUMENT,
                             f"{self.call}() takes no {', '.join(refused)}, which options= sets{self.why}")
        twice = [name for name in given if name in in_options]
        if twice:
            raise UsageError(Result.INVALID_ARGUMENT,
                             f"{self.call}() got {', '.join(twice)} both as a keyword and in options=: "
                             "give each in one place")
        return dataclasses.replace(options, **given) if given else options


_Method = TypeVar("_Method", bound=Callable[..., Any])


def _list_call(method: Optional[_Method] = None, *, per_path: Tuple[str, ...] = ()) -> Any:
    """Makes `method`, a list call of Client, take ``options=``: its run keywords (those of
    ListOptions its signature has, but `per_path`: keywords of the same name that mean something
    else there) and ``options`` become one ListOptions, given to the body as ``options``; the
    body reads only that (its own run keywords arrive at their defaults). The signature, as
    inspect and help() show it, stays the method's own."""
    def decorate(method: _Method) -> _Method:
        parameters = inspect.signature(method).parameters
        names = tuple(name for name in _LIST_OPTIONS if name in parameters and name not in per_path)
        if "options" not in parameters or any(parameters[name].kind is not inspect.Parameter.KEYWORD_ONLY
                                              for name in names + ("options",)):
            raise TypeError(f"{method.__qualname__}: its run keywords and options= must be keyword-only")
        why = "".join(f" (its {name}= is a value per path)" for name in per_path)
        takes = _Takes(method.__name__, names, why)

        @functools.wraps(method)
        def call(self: "Client", *args: Any, options: Optional[ListOptions] = None, **keywords: Any) -> Any:
            return method(self, *args, options=takes.resolve(options, keywords), **keywords)

        call._takes = takes   # type: ignore[attr-defined] - for the asyncio client, which takes **keywords
        return call   # type: ignore[return-value]
    return decorate if method is None else decorate(method)


class Client(Closing):
    """A client of one REST API: its base URL, credentials, headers, transport and policies.

    Args:
        base_url: absolute http(s) URL, a prefix of every path: ``https://h/api`` + ``items``
            or ``/items`` is ``https://h/api/items``; an absolute URL is used as it is.
        token: bearer token, sent as ``Authorization: Bearer <token>`` only to the base URL's
            origin (scheme, host, port); None sends no Authorization header.
        auth: other credentials instead of `token`: ``(user, password)`` for Basic,
            :class:`sheaf.ApiKey` for a key in a header or query parameter, or a str for a
            bearer token. Like the token, sent only to the base URL's origin, never in messages.
        headers: default headers of every request and list page.
        verify: True (the system's CAs, or ``$SSL_CERT_FILE``), False (no verification: tests
            against self-signed servers only), or the path of a CA bundle file or directory.
        cert: a client certificate for mutual TLS: a PEM path holding both, or ``(cert, key)``.
        cache: a folder (``~`` expanded; made if missing, private to the user) for a response
            cache: every GET answered 200 with an ``ETag`` or ``Last-Modified`` is stored there
            and asked for again with ``If-None-Match``/``If-Modified-Since``; a 304 answers with
            the stored page, so a
            re-sync pays only for the pages that changed (GitHub charges no quota for a 304).
            Nothing is served without asking the server. Entries are keyed by an HMAC of the
            URL and every request header, the credential's included: no URL, token or header
            value is written to disk, and one credential's pages never answer another's.
            Several processes may share the folder. None (the default): no cache.
        cache_max_bytes: the cache's size (64 KiB and up); past it the least recently used
            entries go. Default 512 MiB.
        follow_cross_origin: follow next links, redirects and absolute URLs to other origins
            without credentials (never https to http), instead of failing with PolicyError.
        secret_params: query parameters whose values messages hide, besides the built-in
            ``api_key``, ``access_token``, ``token``, ``key``, ``signature``, ``sig``...
        concurrency: requests in flight at once to one origin, 1..64 (the window), shared by
            every list, request and download the client runs there: where an adaptive window starts, or the window
            when ``adaptive_window`` is False.
        adaptive_window: let the window find what the server takes, and keep it for the
            client's next lists to that origin: it grows while
            latency holds, up to ``max_concurrency``, and shrinks when latency rises (not below
            ``concurrency``) or on 429, 503, 504 and timeouts. Either way, ``Retry-After`` and
            rate-limit headers hold requests back.
        max_concurrency: the most requests an adaptive window lets in flight to one origin, 1..64.
        max_pages: page cap per list; a longer walk fails with PolicyError.
        max_body_bytes: body cap per response; a larger body fails with DecodingError.
        max_attempts: attempts per request including the first, 1..100.
        retry_base: backoff base in seconds (exponential with full jitter).
        retry_max: cap of a backoff or of a server's Retry-After, in seconds.
        max_wait: the longest, in seconds, a request waits for a spent rate limit to reset (the
            server's ``X-RateLimit-Remaining``/``-Reset`` or ``RateLimit`` said nothing is left);
            one that resets later fails the list with :class:`RateLimitedError` before anything
            more is sent, its items and resume token kept. 0: never waits. The client never has
            more requests in flight to an origin than the server said are left.
        timeout: whole-request timeout in seconds; None for none.
        connect_timeout: connect timeout in seconds; None for the transport's default.
        max_redirects: redirects followed per request, 0..50.
        http_version: ``"auto"``: HTTP/2 where TLS negotiates it, else HTTP/1.1, with a list's
            requests sharing one HTTP/2 connection; ``"1.1"``: HTTP/1.1 only; ``"2"``: HTTP/2 on
            cleartext ``http://`` too, by prior knowledge (h2c), for servers known to speak it.
        transport: a Python callable performing the HTTP exchanges instead of libcurl (see
            :mod:`sheaf.transport`); None for libcurl.
        on_event: called with a :class:`sheaf.Event` when a credential is refused, the server
            cannot be reached or is unavailable, a request is rate limited or retried; on a
            library thread, never after :meth:`close` (which drops those still queued). Log records go to the ``"sheaf"`` logger
            when it is enabled at creation (see :mod:`sheaf.hooks`).
        token_provider: instead of ``token``, a callable ``provider(refresh) -> str`` giving the
            bearer token: called (on a library thread, one call at a time, so it may block) for
            the first request with ``refresh=False``, and with ``refresh=True`` once a request is
            refused with 401 (that request is then sent once more with the new token; requests
            refused together share one call). An exception it raises fails the requests waiting
            with :class:`CredentialError`, as does no answer within ``timeout`` (a late answer
            serves the requests that follow).

    Raises:
        UsageError: a malformed base URL or an option out of range.

    A client may be shared by threads and run several lists at once. Use it as a context manager
    or call :meth:`close`; lists already running keep what they need.
    """

    def __init__(self, base_url: str, token: Optional[str] = None, *, concurrency: int = 8,
                 adaptive_window: bool = True, max_concurrency: int = 64,
                 max_pages: int = 10000, max_body_bytes: int = 64 << 20, max_attempts: int = 4,
                 retry_base: float = 0.1, retry_max: float = 30.0, timeout: Optional[float] = 30.0,
                 connect_timeout: Optional[float] = 10.0, max_redirects: int = 10,
                 transport: Optional[Transport] = None, auth: Any = None, headers: Optional[Headers] = None,
                 verify: Union[bool, str] = True, cert: Union[None, str, Tuple[str, str]] = None,
                 follow_cross_origin: bool = False, secret_params: Sequence[str] = (),
                 on_event: Optional[Callable[[Event], Any]] = None,
                 token_provider: Optional[Callable[[bool], str]] = None, http_version: str = "auto",
                 max_wait: float = 60.0, cache: Union[None, str, "os.PathLike[str]"] = None,
                 cache_max_bytes: int = 512 << 20) -> None:
        self._handle: Optional[_ffi.ClientHandle] = None
        self._lock = threading.Lock()   # one close frees the handle, whichever thread calls it
        if not isinstance(base_url, str):
            raise UsageError(Result.INVALID_ARGUMENT, f"base_url must be a str, not {type(base_url).__name__}")
        if token is not None and not isinstance(token, str):
            raise UsageError(Result.INVALID_ARGUMENT, "token must be a str or None")
        if http_version not in _HTTP_VERSIONS:
            raise UsageError(Result.INVALID_ARGUMENT, f"http_version must be one of {', '.join(map(repr, _HTTP_VERSIONS))}, "
                                                      f"not {http_version!r}")
        if transport is not None and not callable(transport):
            raise UsageError(Result.INVALID_ARGUMENT, "transport must be a callable (see sheaf.transport)")
        self.base_url = base_url
        self.transport = transport
        handle = _ffi.ClientHandle()
        lib.sheaf_client_new(byref(handle), encode(base_url))
        self._handle = handle
        try:
            if token is not None and auth is not None:
                raise UsageError(Result.INVALID_ARGUMENT, "give token or auth, not both")
            _set_auth(handle, token if auth is None else auth)
            if token_provider is not None:
                if token is not None or auth is not None or not callable(token_provider):
                    raise UsageError(Result.INVALID_ARGUMENT, "token_provider must be a callable, given without token or auth")
                hooks.set_token_provider(handle, token_provider)
            for name, value in header_pairs(headers):
                lib.sheaf_client_add_header(handle, encode(name, "a header name"),
                                            encode(value, f"the value of the header {name}"))
            for name in secret_params:
                lib.sheaf_client_add_secret_param(handle, encode(name))
            _set_tls(handle, verify, cert)
            if cache is not None:
                lib.sheaf_client_set_cache(handle, encode(os.path.expanduser(os.fspath(cache)), "the cache folder"),
                                           _whole(cache_max_bytes, "cache_max_bytes"))
            if on_event is not None and not callable(on_event):
                raise UsageError(Result.INVALID_ARGUMENT, "on_event must be a callable")
            hooks.install(handle, on_event)
            options = (
                (_ffi.SHEAF_OPT_WINDOW, "concurrency", _whole(concurrency, "concurrency")),
                (_ffi.SHEAF_OPT_ADAPTIVE_WINDOW, "adaptive_window", 1 if adaptive_window else 0),
                (_ffi.SHEAF_OPT_MAX_WINDOW, "max_concurrency", _whole(max_concurrency, "max_concurrency")),
                (_ffi.SHEAF_OPT_MAX_PAGES, "max_pages", _whole(max_pages, "max_pages")),
                (_ffi.SHEAF_OPT_MAX_BODY_BYTES, "max_body_bytes", _whole(max_body_bytes, "max_body_bytes")),
                (_ffi.SHEAF_OPT_MAX_ATTEMPTS, "max_attempts", _whole(max_attempts, "max_attempts")),
                (_ffi.SHEAF_OPT_RETRY_BASE_MS, "retry_base", _milliseconds(retry_base, "retry_base")),
                (_ffi.SHEAF_OPT_RETRY_MAX_MS, "retry_max", _milliseconds(retry_max, "retry_max")),
                (_ffi.SHEAF_OPT_TIMEOUT_MS, "timeout", _milliseconds(timeout, "timeout")),
                (_ffi.SHEAF_OPT_CONNECT_TIMEOUT_MS, "connect_timeout",
                 _milliseconds(connect_timeout, "connect_timeout")),
                (_ffi.SHEAF_OPT_MAX_REDIRECTS, "max_redirects", _whole(max_redirects, "max_redirects")),
                (_ffi.SHEAF_OPT_CROSS_ORIGIN, "follow_cross_origin", 1 if follow_cross_origin else 0),
                (_ffi.SHEAF_OPT_TLS_INSECURE, "verify", 1 if verify is False else 0),
                (_ffi.SHEAF_OPT_HTTP_VERSION, "http_version", _HTTP_VERSIONS[http_version]),
                (_ffi.SHEAF_OPT_MAX_WAIT_MS, "max_wait", _milliseconds(max_wait, "max_wait")),
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
        """Frees the client. Idempotent; lists already running finish unaffected.

        No hook (``on_event``, the log) is called after this returns: it waits for a hook call
        running now, and drops the events and log records still queued."""
        with self._lock:
            handle, self._handle = self._handle, None
        if handle is not None:
            lib.sheaf_client_free(handle)   # no hook is called after this returns

    def flush_hooks(self) -> None:
        """Waits until every event and log record made so far has been handed over (to
        ``on_event`` and the ``"sheaf"`` logger): :meth:`close` drops those still queued."""
        handle = self._handle
        if handle is None:
            raise UsageError(Result.STATE, "the client is closed")
        lib.sheaf_client_flush_hooks(handle)

    @property
    def closed(self) -> bool:
        """True once :meth:`close` has been called."""
        return self._handle is None

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<sheaf.Client {self.base_url!r} {state}>"  # never the token

    # ---- single requests --------------------------------------------------------------------

    def request(self, method: str, path: Union[str, Sequence[Any]] = "", *, params: Optional[Query] = None,
                headers: Optional[Headers] = None, json: Any = None, data: Any = None,
                content: Optional[bytes] = None, content_type: Optional[str] = None, retry: bool = False,
                check: bool = True) -> Response:
        """Sends one request and returns its response.

        Args:
            method: "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS" or any token.
            path: joined to the base URL (may carry a query), or a sequence of segments, each
                percent-encoded whole (``("users", "a/b")`` is ``users/a%2Fb``).
            params: query parameters, as for lists.
            headers: request headers, replacing the client's of the same name.
            json: a value sent as JSON (``Content-Type: application/json``).
            data: form fields (a mapping or pairs) sent as application/x-www-form-urlencoded.
            content: raw bytes, sent with `content_type` (default application/octet-stream).
            retry: retry transient failures even for POST and PATCH (idempotent methods, and
                requests with an ``Idempotency-Key`` header, are retried anyway).
            check: raise HTTPError for a status outside 2xx (its ``response`` holds the answer);
                False returns the response whatever its status.

        Raises:
            HTTPError: a failing status (with ``check``): ``status``, ``server_message`` (the
                server's own error fields), ``body`` and ``response``.
            TransportError, PolicyError, UsageError: no response (connection, TLS, timeout;
                another origin; a malformed request).
        """
        handle = self._handle
        if handle is None:
            raise UsageError(Result.STATE, "the client is closed")
        return send(handle, method, path, query=_query_pairs(params), headers=headers, json=json, data=data,
                    content=content, content_type=content_type, retry=retry, check=check)

    def download(self, path: Union[str, Sequence[Any]], destination: Union[str, "os.PathLike[str]"], *,
                 params: Optional[Query] = None, headers: Optional[Headers] = None,
                 progress: Optional[Callable[[int, Optional[int]], None]] = None) -> Response:
        """Downloads `path` (a GET) into the file `destination` without holding the body in memory.

        The body is written to a file of its own beside `destination`, ``.<name>.sheaf-XXXXXX``
        (created exclusively; folders created as needed), and renamed over
        `destination` only once all of it has arrived, so a failure leaves an existing file as it
        was. A transfer that breaks is resumed with ``Range`` where the server allows it.

        Args:
            progress: called about ten times a second and at the end with (bytes written, bytes
                expected or None), on the calling thread.

        Returns:
            The response, its ``content`` empty (the body is in the file).

        Raises:
            FileError: the destination is not writable, or the disk is full.
            HTTPError, TransportError, ...: as :meth:`request`.
        """
        handle = self._handle
        if handle is None:
            raise UsageError(Result.STATE, "the client is closed")
        return send(handle, "GET", path, query=_query_pairs(params), headers=headers, json=None, data=None,
                    content=None, content_type=None, retry=False, check=True, output=destination, progress=progress)

    def get(self, path: Union[str, Sequence[Any]] = "", **options: Any) -> Response:
        """:meth:`request` with GET."""
        return self.request("GET", path, **options)

    def head(self, path: Union[str, Sequence[Any]] = "", **options: Any) -> Response:
        """:meth:`request` with HEAD."""
        return self.request("HEAD", path, **options)

    def post(self, path: Union[str, Sequence[Any]] = "", **options: Any) -> Response:
        """:meth:`request` with POST."""
        return self.request("POST", path, **options)

    def put(self, path: Union[str, Sequence[Any]] = "", **options: Any) -> Response:
        """:meth:`request` with PUT."""
        return self.request("PUT", path, **options)

    def patch(self, path: Union[str, Sequence[Any]] = "", **options: Any) -> Response:
        """:meth:`request` with PATCH."""
        return self.request("PATCH", path, **options)

    def delete(self, path: Union[str, Sequence[Any]] = "", **options: Any) -> Response:
        """:meth:`request` with DELETE."""
        return self.request("DELETE", path, **options)

    # ---- lists ------------------------------------------------------------------------------

    @_list_call
    def fetch_all(self, path: str, description: Optional[Description] = None, *, query: Optional[Query] = None,
                  max_items: Optional[int] = None, max_pages: Optional[int] = None, max_requests: Optional[int] = None,
                  deadline: Optional[float] = None, resume: Optional[str] = None, headers: Optional[Headers] = None,
                  decode: Any = None, options: Optional[ListOptions] = None, **parts: Any) -> Items:
        """Fetches every item of the list at `path`, in order; with ``id=POINTER``, an item seen
        before (by that identity) is dropped.

        Args:
            path: the list's path (joined to the base URL, see Client; may carry a query).
            description: how the list paginates (:class:`sheaf.Description`); None, and no
                `parts`, leaves everything to detection from the first page.
            query: extra query parameters for every page request.
            headers: extra headers for every page request (replacing the client's of the same name).
            max_items: stop after this many items (None or 0: no limit); not a failure.
            max_pages: stop after this many pages when more follow; not a failure.
            max_requests: stop before sending more requests than this, retries included; the
                items end with the last page that arrived whole; not a failure.
            deadline: seconds the whole list may take; past it, :class:`DeadlineError`.
            resume: a ``resume_token`` of an earlier run of this same list (same path, query and
                description): go on where it stopped, inside a page an item limit cut.
            decode: what each item becomes, as it arrives: a pydantic model (validated), a
                dataclass or NamedTuple (an object's fields as keywords), or any callable taking
                the item. The first item it refuses stops the list with :class:`ItemDecodeError`.
            options: a :class:`ListOptions`: `query`, `headers`, the budgets and `resume` as one
                value (the same for several calls); a keyword given here as well is refused.
            **parts: fields of :class:`sheaf.Description` (``preset="github"``,
                ``items="/data"``, ``paging="offset:offset"``, ``total="header:X-Total-Count"``,
                ``id="/id"``...), replacing those of `description`.

        Returns:
            Every item, decoded from JSON, as :class:`Items`: a list that also tells how the list
            ended (``stop_reason``) and, when it stopped early, the ``resume_token`` to go on.

        Raises:
            Error: a subclass for the failure, whose ``items`` holds the items delivered before
                it and ``resume_token`` goes on after them (:class:`NotFollowedError` when the
                last page signals more than the description follows); or the exception a Python
                transport raised.
        """
        return self._fetch(self._new_run(path, description, parts, options, decode=decode))

    def _fetch(self, run: ListRun) -> Items:
        """Runs `run` to its end, taking its items (fetch_all's loop)."""
        delivered: List[Any] = []
        try:
            run.start()
            while True:   # bounded by the list: each pull is a snapshot or the end
                items_added = run.next_items()
                if items_added is None:
                    break
                delivered.extend(items_added)
        except ItemDecodeError as error:
            error.items = delivered + error.items
            raise
        finally:
            run.close()   # also on Ctrl-C and a refused item: cancels what is in flight
        return run.items(delivered)

    @_list_call
    def stream(self, path: str, description: Optional[Description] = None, *, query: Optional[Query] = None,
               max_items: Optional[int] = None, max_pages: Optional[int] = None, max_requests: Optional[int] = None,
               deadline: Optional[float] = None, resume: Optional[str] = None, headers: Optional[Headers] = None,
               decode: Any = None, options: Optional[ListOptions] = None, **parts: Any) -> SnapshotStream[Snapshot]:
        """Streams the list at `path` as snapshots: growing, ordered prefixes, one delta each.

        Takes the same arguments as :meth:`fetch_all` (checked now: a bad option raises
        UsageError here). The list starts at the first ``next()``; the items are not kept.

        Returns:
            A :class:`SnapshotStream` of :class:`Snapshot`. Breaking out of the loop, ``close()``
            or leaving its ``with`` block stops the list and cancels what is in flight; at the
            end the failure, if any, is raised as in :meth:`fetch_all` (``items`` then empty);
            its ``resume_token`` goes on after the snapshots taken.
        """
        return SnapshotStream(self._new_run(path, description, parts, options, decode=decode))

    @_list_call
    def fetch_to(self, path: str, out: Union[int, Any], description: Optional[Description] = None, *,
                 format: str = "json", progress: Optional[Callable[[Progress], None]] = None,
                 query: Optional[Query] = None, max_items: Optional[int] = None, max_pages: Optional[int] = None,
                 max_requests: Optional[int] = None, deadline: Optional[float] = None, resume: Optional[str] = None,
                 headers: Optional[Headers] = None, options: Optional[ListOptions] = None, **parts: Any) -> Written:
        """Writes every item of the list at `path` to `out` as it arrives, in order (de-duplicated
        with ``id=``), without decoding it: the library writes the bytes the pages brought from
        its own threads, and nothing is kept (memory stays flat however long the list).

        Takes the same arguments as :meth:`fetch_all`, and:
            out: a file descriptor, or a binary file with ``fileno()`` (flushed first; it stays
                open). What was written before a failure stays written.
            format: ``"json"``: one array, an item per line (closed also after a failure, so
                the output is well-formed); ``"jsonl"``: an item per line.
            progress: called on this thread about ten times a second with a :class:`Progress`.

        Returns:
            :class:`Written`: the count of items written, the outcome and the resume token.

        Raises:
            Error: as :meth:`fetch_all` (its ``items`` empty: they were written);
                :class:`FileError` (``Result.IO``) when `out` cannot be written, with the
                system's reason. Ctrl-C stops the list: the ``KeyboardInterrupt`` then carries
                ``resume_token``, which goes on after the items written.
        """
        descriptor, code = _output(out, format)
        return self._write(self._new_run(path, description, parts, options), descriptor, code, progress)

    def _write(self, run: ListRun, descriptor: int, format: int, progress: Optional[Callable[[Progress], None]]) -> Written:
        """Runs `run` writing its items to `descriptor` (fetch_to's loop)."""
        wakeups = Wakeups()   # written by the library after each snapshot and at the end
        try:
            try:
                run.start(output=(descriptor, format), notify_fd=wakeups.write_fd)
                while True:
                    status = run.wait_output(wakeups)
                    if status.state == _ffi.SHEAF_LIST_ENDED:
                        break
                    if progress is not None:
                        progress(_progress(status))
            finally:
                final = run.status()
                run.close()   # cancels if it still runs; the token goes on after the items written
                wakeups.close()   # after the free: the library writes no more
                if progress is not None:
                    progress(_progress(final))
        except KeyboardInterrupt as interrupt:
            interrupt.resume_token = run.resume_token   # type: ignore[attr-defined]
            raise
        run.raise_outcome([])
        return Written(final.items, run.stop_reason, run.resume_token, run.sync_state)

    @_list_call
    def fetch_arrow(self, path: str, description: Optional[Description] = None, *, schema: Optional[pyarrow.Schema] = None,
                    query: Optional[Query] = None, max_items: Optional[int] = None, max_pages: Optional[int] = None,
                    max_requests: Optional[int] = None, deadline: Optional[float] = None, resume: Optional[str] = None,
                    headers: Optional[Headers] = None, options: Optional[ListOptions] = None,
                    **parts: Any) -> pyarrow.Table:
        """Fetches every item of the list at `path` as a ``pyarrow.Table``, a row per item, in
        order. The library reads each snapshot's bytes into Arrow columns in one pass, by the
        rules of pyarrow's JSON reader, and pyarrow takes them without a copy: no item becomes a
        Python object. Needs pyarrow (``pip install sheaf[arrow]``).

        Takes the same arguments as :meth:`fetch_all` (but ``decode``), and:
            schema: a ``pyarrow.Schema`` for some or all fields: their values are converted to
                it (a timestamp from an ISO string, a double from an int...). Fields it does not
                name are inferred: nested objects and arrays become struct and list columns,
                strings stay strings, and the first page that shows a field fixes its type.

        Returns:
            The table, a chunk per snapshot. Its schema's metadata says how the list ended, as
            :class:`Items` does: ``b"sheaf.stop_reason"`` (a :class:`StopReason` name, such as
            ``b"ITEM_LIMIT"``) and, when it stopped early, ``b"sheaf.resume_token"``. A field
            missing from some items is null in their rows; an integer past 64 bits is a double.

        Raises:
            ImportError: pyarrow is not installed.
            SchemaError: a field changes type from one page to another (or a value does not
                convert to `schema`); it names the field and the pages, and its ``items`` is a
                table of the rows before them, ``resume_token`` going on after those.
            Error: as :meth:`fetch_all`, its ``items`` a table of the rows before the failure.
        """
        batches_of = SnapshotBatches(schema)   # imports pyarrow: an ImportError before anything is made
        return self._fetch_arrow(self._new_run(path, description, parts, options), batches_of)

    def _fetch_arrow(self, run: ListRun, batches_of: SnapshotBatches) -> pyarrow.Table:
        """Runs `run` to its end, its snapshots read as record batches (fetch_arrow's loop)."""
        rows = GatheredRows(batches_of)
        try:
            run.start()
            while True:   # bounded by the list: each pull is a snapshot or the end
                resume_before = run.current_resume_token()   # a SchemaError goes on from here
                line = run.next_snapshot(batches_of.take)
                if line is _END:
                    break
                rows.add(line, resume_before)
            rows.flush()
        except SchemaError as error:
            error.items = batches_of.table(rows.batches, StopReason.FAILED, error.resume_token)
            raise
        finally:
            run.close()
        table = batches_of.table(rows.batches, run.stop_reason, run.resume_token)
        run.raise_outcome(table)
        return table

    @_list_call
    def stream_batches(self, path: str, description: Optional[Description] = None, *,
                       schema: Optional[pyarrow.Schema] = None, query: Optional[Query] = None,
                       max_items: Optional[int] = None, max_pages: Optional[int] = None,
                       max_requests: Optional[int] = None, deadline: Optional[float] = None,
                       resume: Optional[str] = None, headers: Optional[Headers] = None,
                       options: Optional[ListOptions] = None, **parts: Any) -> SnapshotStream[pyarrow.RecordBatch]:
        """Streams the list at `path` as ``pyarrow.RecordBatch`` es, one per snapshot, in order
        (a snapshot that adds no item yields none). Takes the arguments of :meth:`fetch_arrow`
        and behaves as :meth:`stream`: the same stream object, with ``stop_reason``,
        ``resume_token``, ``cancel()`` and ``close()``. Rows and types are those of
        :meth:`fetch_arrow`, whose table is these batches concatenated
        (``pyarrow.concat_tables(..., promote_options="default")``: a batch from before a field
        appeared lacks its column). Nothing is kept.

        Raises:
            ImportError: pyarrow is not installed (raised here, not at the first ``next()``).
            SchemaError, Error: as :meth:`fetch_arrow`, at the ``next()`` that meets them (their
                ``items`` empty; the stream's ``resume_token`` goes on after the batches yielded).
        """
        batches_of = SnapshotBatches(schema)
        return SnapshotStream(self._new_run(path, description, parts, options), batches_of.batch_of)

    @_list_call
    def pager(self, path: str, description: Optional[Description] = None, *, look_ahead: int = 0,
              query: Optional[Query] = None, max_items: Optional[int] = None, max_pages: Optional[int] = None,
              max_requests: Optional[int] = None, deadline: Optional[float] = None, resume: Optional[str] = None,
              headers: Optional[Headers] = None, options: Optional[ListOptions] = None, **parts: Any) -> Pager:
        """The list at `path`, loaded one page per :meth:`Pager.more` call ("load more").

        Takes the same arguments as :meth:`fetch_all` (checked now), and `look_ahead`: how many
        pages (0 to the client's ``concurrency``) to fetch ahead of the ones asked for, held back
        until asked, so the next ``more()`` returns at once. Nothing is fetched before the first
        ``more()``.

        Returns:
            A :class:`Pager`; close it (or use ``with``) to end the list.
        """
        run = self._new_run(path, description, parts, options, keep_items=True)
        try:
            return Pager(run, _whole(look_ahead, "look_ahead"))
        except BaseException:
            run.close()
            raise

    # ---- groups: many lists as one job -------------------------------------------------------

    @_list_call(per_path=("resume",))
    def fetch_many(self, paths: Sequence[Union[str, ListOutcome]], description: Optional[Description] = None, *,
                   tags: Optional[Sequence[Optional[str]]] = None, resume: Optional[Sequence[Optional[str]]] = None,
                   ordered: bool = False, fail_fast: bool = False, check: bool = True, query: Optional[Query] = None,
                   headers: Optional[Headers] = None, max_items: Optional[int] = None, max_pages: Optional[int] = None,
                   max_requests: Optional[int] = None, deadline: Optional[float] = None,
                   options: Optional[ListOptions] = None, **parts: Any) -> GroupResult:
        """Fetches every item of several lists as one job: they share the client's window for
        each origin (300 lists send what one list would) and a rate limit one meets slows all.

        Args:
            paths: the lists' paths (as for :meth:`fetch_all`), or the :class:`ListOutcome` of
                lists that failed in an earlier group (``result.failed``): each goes on from its
                resume token, keeping its tag.
            description, query, headers, max_items, max_pages, max_requests, deadline, **parts:
                as for :meth:`fetch_all`, for every list (budgets and the deadline per list).
            options: a :class:`ListOptions` for every list, as for :meth:`fetch_all` (without
                ``resume``: the tokens are per path, given as `resume`).
            tags: a tag for each path (None: the path), found again on each list's outcome.
            resume: a resume token for each path (None: from the start), from an earlier run
                of the same list (``ListOutcome.resume_token``).
            ordered: deliver the lists one after another, in the order of `paths` (a list
                waiting its turn stops asking once a window of its pages waits; with the pages
                kept ahead of a slow one, it holds three windows at most); otherwise as they come.
            fail_fast: the first list that fails cancels the others.
            check: raise when a list failed (below); False returns the result whatever happened,
                to be read with ``result.ok`` and ``result.failed``.

        Returns:
            A :class:`GroupResult`: per list, in order, its tag, path, items, error and resume token.

        Raises:
            PartialError: (with `check`) some lists failed, the others ended whole; nothing is
                lost: its ``result`` is the :class:`GroupResult`, the items of every list
                included. With `fail_fast`, the first failure's own error, its ``result`` set
                the same way (the lists it cancelled have a :class:`StoppedError`).
            UsageError: a bad argument; the client has a Python transport (groups run on the
                library's own).
        """
        return fetch_group(self._many_run(paths, description, parts, tags, resume, ordered, fail_fast, options), check)

    @_list_call(per_path=("resume",))
    def stream_many(self, paths: Sequence[Union[str, ListOutcome]], description: Optional[Description] = None, *,
                    tags: Optional[Sequence[Optional[str]]] = None, resume: Optional[Sequence[Optional[str]]] = None,
                    ordered: bool = False, fail_fast: bool = False, check: bool = True, query: Optional[Query] = None,
                    headers: Optional[Headers] = None, max_items: Optional[int] = None, max_pages: Optional[int] = None,
                    max_requests: Optional[int] = None, deadline: Optional[float] = None,
                    options: Optional[ListOptions] = None, **parts: Any) -> GroupStream:
        """As :meth:`fetch_many`, as a :class:`GroupStream` of :class:`GroupDelta` (list index,
        tag, the items it gained, whether it finished, its error on its last delta), pulled on
        this thread; nothing is kept. Leaving the loop stops every list."""
        return GroupStream(self._many_run(paths, description, parts, tags, resume, ordered, fail_fast, options), check)

    @_list_call
    def fetch_each(self, parent_path: str, templates: Union[str, Sequence[str]],
                   description: Optional[Description] = None, *, child_description: Optional[Description] = None,
                   missing: str = "skip", ordered: bool = False, fail_fast: bool = False, check: bool = True,
                   query: Optional[Query] = None, headers: Optional[Headers] = None,
                   resume: Optional[str] = None, options: Optional[ListOptions] = None) -> GroupResult:
        """Fetches a fan-out: each item of the list at `parent_path` names a child list, and
        every child's items are fetched, as one job (one window per origin for all of them).

        Args:
            parent_path: the parent list (described by `description`, `query`, `headers`).
            templates: how an item makes its child's URL: ``"/repos/{/full_name}/issues"``
                fills each {JSON pointer} with the item's value there, percent-encoded for where
                it stands ("/" kept in the path); a template starting with "/" is joined to the
                parent's origin. Several templates are levels: the second makes a grandchild's
                URL from a child's item, and so on.
            child_description: how the children (of the last level) paginate; None: detected.
            missing: ``"skip"`` an item without a value its template needs (a warning in the
                log), or ``"fail"`` the parent list for it.
            ordered, fail_fast, check: as for :meth:`fetch_many` (ordered: in the parent's item order).
            resume: the parent's resume token from an earlier run that failed: the parent goes
                on from there, and only the children of its pages from there on are fetched.
            options: a :class:`ListOptions` with the parent's `query`, `headers` and `resume`
                (a fan-out has no budgets: one given there is refused).

        Returns:
            A :class:`GroupResult`: the parent first (``parent=True``, no items: its outcome
            only), then each child as the parent's pages brought it, once per URL (an item that
            repeats is fetched once), tagged with the value that filled its template.

        Raises:
            As :meth:`fetch_many`.
        """
        return fetch_group(self._each_run(parent_path, templates, description, child_description, missing, ordered,
                                          fail_fast, options), check)

    @_list_call
    def stream_each(self, parent_path: str, templates: Union[str, Sequence[str]],
                    description: Optional[Description] = None, *, child_description: Optional[Description] = None,
                    missing: str = "skip", ordered: bool = False, fail_fast: bool = False, check: bool = True,
                    query: Optional[Query] = None, headers: Optional[Headers] = None,
                    resume: Optional[str] = None, options: Optional[ListOptions] = None) -> GroupStream:
        """As :meth:`fetch_each`, as a :class:`GroupStream` (see :meth:`stream_many`): the
        children's deltas, and the parent's last delta (its outcome)."""
        return GroupStream(self._each_run(parent_path, templates, description, child_description, missing, ordered,
                                          fail_fast, options), check)

    def _many_run(self, paths: Sequence[Union[str, ListOutcome]], description: Optional[Description],
                  parts: Dict[str, Any], tags: Optional[Sequence[Optional[str]]],
                  resume: Optional[Sequence[Optional[str]]], ordered: bool, fail_fast: bool,
                  options: ListOptions) -> GroupRun:
        if isinstance(paths, (str, bytes)) or not isinstance(paths, Sequence):
            raise UsageError(Result.INVALID_ARGUMENT, "paths must be a sequence of paths (a list of str)")
        if tags is not None and (isinstance(tags, str) or len(tags) != len(paths)):
            raise UsageError(Result.INVALID_ARGUMENT, f"tags must be a sequence of {len(paths)} tags, one per path")
        if resume is not None and (isinstance(resume, str) or len(resume) != len(paths)):
            raise UsageError(Result.INVALID_ARGUMENT, f"resume must be a sequence of {len(paths)} tokens (or None), "
                                                      "one per path")
        group = GroupRun(self)
        try:
            group.set_options(ordered, fail_fast)
            for position, path in enumerate(paths):
                tag = None if tags is None else tags[position]
                token = None if resume is None else resume[position]
                if isinstance(path, ListOutcome):   # a list of an earlier group, fetched again
                    outcome = path
                    if outcome.url is None:
                        raise UsageError(Result.INVALID_ARGUMENT, f"list {outcome.index} ({outcome.tag!r}) has no URL "
                                                                  "to fetch it again from")
                    path = outcome.url
                    tag = outcome.tag if tag is None else tag
                    token = outcome.resume_token if token is None else token
                run = self._new_run(path, description, parts,
                                    options if token is None else dataclasses.replace(options, resume=token))
                group.add(run, path, tag)
        except BaseException:
            group.close()
            raise
        return group

    def _each_run(self, parent_path: str, templates: Union[str, Sequence[str]], description: Optional[Description],
                  child_description: Optional[Description], missing: str, ordered: bool, fail_fast: bool,
                  options: ListOptions) -> GroupRun:
        levels = [templates] if isinstance(templates, str) else list(templates)
        if not levels or not all(isinstance(template, str) and placeholders(template) for template in levels):
            raise UsageError(Result.INVALID_ARGUMENT, "templates must be one or more URL templates, each with a "
                                                      "{JSON pointer}: '/repos/{/full_name}/issues'")
        group = GroupRun(self)
        try:
            group.set_options(ordered, fail_fast, missing)
            parent = self._new_run(parent_path, description, {}, options)
            try:
                child = self._new_run("", child_description, {}, None)
            except BaseException:
                parent.close()
                raise
            group.add_each(parent, parent_path, levels, child)
        except BaseException:
            group.close()
            raise
        return group

    def _many_run_of(self, paths: Sequence[Union[str, ListOutcome]], description: Optional[Description],
                     options: Optional[ListOptions], keywords: Dict[str, Any]) -> GroupRun:
        """_many_run from stream_many's keyword arguments (for the asyncio client)."""
        settings = Client.stream_many._takes.resolve(options, keywords)   # type: ignore[attr-defined]
        tags, resume = keywords.pop("tags", None), keywords.pop("resume", None)
        ordered, fail_fast = bool(keywords.pop("ordered", False)), bool(keywords.pop("fail_fast", False))
        return self._many_run(paths, description, keywords, tags, resume, ordered, fail_fast, settings)

    def _each_run_of(self, parent_path: str, templates: Union[str, Sequence[str]],
                     description: Optional[Description], options: Optional[ListOptions],
                     keywords: Dict[str, Any]) -> GroupRun:
        """_each_run from stream_each's keyword arguments (for the asyncio client)."""
        settings = Client.stream_each._takes.resolve(options, keywords)   # type: ignore[attr-defined]
        names = ("child_description", "missing", "ordered", "fail_fast")
        unknown = sorted(set(keywords) - set(names))
        if unknown:
            raise UsageError(Result.INVALID_ARGUMENT, f"fetch_each takes no {', '.join(unknown)}")
        return self._each_run(parent_path, templates, description, keywords.get("child_description"),
                              keywords.get("missing", "skip"), bool(keywords.get("ordered", False)),
                              bool(keywords.get("fail_fast", False)), settings)

    # ---- partitions -------------------------------------------------------------------------

    @_list_call
    def partitions(self, path: str, n: int, description: Optional[Description] = None, *,
                   query: Optional[Query] = None, headers: Optional[Headers] = None, at_once: Optional[int] = None,
                   options: Optional[ListOptions] = None, **parts: Any) -> List[Partition]:
        """Splits the list at `path` into up to `n` partitions, for several processes or machines
        to read it: reads its first page (once; partition 0 fetches it again) and plans contiguous
        ranges of pages, the last one open-ended (it reads on to the list's end, pages added
        meanwhile included). A list whose pages are not addressed (next links, cursors) or whose
        page count page one does not tell is one partition, its ``why`` saying so.

        Each partition's ``window`` is this client's ``max_concurrency`` shared among the
        partitions that run at the same time: all of them, or `at_once` when given (the
        workers or task slots that read them), so that eight partitions read two at a time
        send what one process would, not a quarter of it. More than `at_once` running together
        would send more.

        Takes the description arguments of :meth:`fetch_all` (`description`, `query`, `headers`
        and the parts such as ``preset=`` or ``items=``, and ``options`` with `query` and
        `headers` only); budgets belong to a run, not to a plan: give them to :meth:`fetch_partition`.

        Returns:
            The :class:`Partition` list: picklable, no credential in it.

        Raises:
            UsageError: `n` or `at_once` below 1; Error: as :meth:`fetch_all`, when the first page fails.
        """
        count = _whole(n, "n")
        if count < 1:
            raise UsageError(Result.INVALID_ARGUMENT, f"n must be 1 or more, not {n!r}")
        together = count if at_once is None else _whole(at_once, "at_once")
        if together < 1:
            raise UsageError(Result.INVALID_ARGUMENT, f"at_once must be 1 or more, not {at_once!r}")
        run = self._new_run(path, description, parts, options)
        try:
            pointer, length = ctypes.c_void_p(), ctypes.c_size_t()
            lib.sheaf_list_partitions_at_once(run.handle, count, min(together, count), byref(pointer), byref(length))
            planned = json.loads(_ffi.take_string(pointer, length.value))
        finally:
            run.close()
        return [Partition(fields) for fields in planned]

    @_list_call
    def fetch_partition(self, partition: Union[Partition, str], *, headers: Optional[Headers] = None,
                        query: Optional[Query] = None, max_items: Optional[int] = None,
                        max_pages: Optional[int] = None, max_requests: Optional[int] = None,
                        deadline: Optional[float] = None, resume: Optional[str] = None, decode: Any = None,
                        options: Optional[ListOptions] = None) -> Items:
        """Fetches exactly the items of `partition` (a :class:`Partition` or its JSON text), in
        order, on this client: its token and secret query values (`query` may give the list's
        own, such as an API key in the query) are sent, the partition carries none. Ends with
        ``stop_reason`` COMPLETE when the range is done; a failure's ``resume_token``, given back
        as `resume` with the same partition, goes on inside the range. Takes ``options`` as
        :meth:`fetch_all` does.

        Raises:
            UsageError: a malformed partition (the message names the field), or one whose URL is
                not on this client's origin; Error: as :meth:`fetch_all`.
        """
        return self._fetch(self._partition_run(partition, options, decode))

    @_list_call
    def stream_partition(self, partition: Union[Partition, str], *, headers: Optional[Headers] = None,
                         query: Optional[Query] = None, max_items: Optional[int] = None,
                         max_pages: Optional[int] = None, max_requests: Optional[int] = None,
                         deadline: Optional[float] = None, resume: Optional[str] = None,
                         decode: Any = None, options: Optional[ListOptions] = None) -> SnapshotStream[Snapshot]:
        """As :meth:`fetch_partition`, as a :class:`SnapshotStream` (see :meth:`stream`)."""
        return SnapshotStream(self._partition_run(partition, options, decode))

    @_list_call
    def fetch_partition_arrow(self, partition: Union[Partition, str], *, schema: Optional[pyarrow.Schema] = None,
                              headers: Optional[Headers] = None, query: Optional[Query] = None,
                              max_items: Optional[int] = None, max_pages: Optional[int] = None,
                              max_requests: Optional[int] = None, deadline: Optional[float] = None,
                              resume: Optional[str] = None, options: Optional[ListOptions] = None) -> pyarrow.Table:
        """As :meth:`fetch_partition`, as a ``pyarrow.Table`` read the way :meth:`fetch_arrow`
        reads a list (`schema` as there; its metadata says how the range ended). The tables of a
        plan's partitions, concatenated, are the list's rows. Needs pyarrow
        (``pip install sheaf[arrow]``).

        Raises:
            ImportError: pyarrow is not installed. SchemaError, UsageError, Error: as
                :meth:`fetch_arrow` and :meth:`fetch_partition`.
        """
        batches_of = SnapshotBatches(schema)
        return self._fetch_arrow(self._partition_run(partition, options, None), batches_of)

    @_list_call
    def stream_partition_batches(self, partition: Union[Partition, str], *, schema: Optional[pyarrow.Schema] = None,
                                 headers: Optional[Headers] = None, query: Optional[Query] = None,
                                 max_items: Optional[int] = None, max_pages: Optional[int] = None,
                                 max_requests: Optional[int] = None, deadline: Optional[float] = None,
                                 resume: Optional[str] = None,
                                 options: Optional[ListOptions] = None) -> SnapshotStream[pyarrow.RecordBatch]:
        """As :meth:`fetch_partition_arrow`, as ``pyarrow.RecordBatch`` es, one per snapshot, in
        a :class:`SnapshotStream` (see :meth:`stream_batches`). Nothing is kept.

        Raises:
            ImportError: pyarrow is not installed (raised here, not at the first ``next()``).
        """
        batches_of = SnapshotBatches(schema)
        return SnapshotStream(self._partition_run(partition, options, None), batches_of.batch_of)

    @_list_call
    def fetch_partition_to(self, partition: Union[Partition, str], out: Union[int, Any], *, format: str = "json",
                           progress: Optional[Callable[[Progress], None]] = None, headers: Optional[Headers] = None,
                           query: Optional[Query] = None, max_items: Optional[int] = None,
                           max_pages: Optional[int] = None, max_requests: Optional[int] = None,
                           deadline: Optional[float] = None, resume: Optional[str] = None,
                           options: Optional[ListOptions] = None) -> Written:
        """Writes exactly the items of `partition` to `out` as they arrive, in order, without
        decoding them: :meth:`fetch_to` for a partition (`out`, `format` and `progress` as
        there; the other arguments as for :meth:`fetch_partition`). What ``sheaf get
        --partition`` runs.

        Returns:
            :class:`Written`: the count of items written, the outcome and the resume token (given
            back as `resume` with the same partition, it goes on inside the range).

        Raises:
            As :meth:`fetch_to` and :meth:`fetch_partition`.
        """
        descriptor, code = _output(out, format)
        return self._write(self._partition_run(partition, options, None), descriptor, code, progress)

    def _partition_run(self, partition: Union[Partition, str], options: Optional[ListOptions], decode: Any) -> ListRun:
        if not isinstance(partition, Partition):
            partition = Partition(partition)
        run = self._new_run(partition.url, None, {}, options, decode=decode)
        try:
            lib.sheaf_list_set_partition(run.handle, encode(partition.json))
        except BaseException:
            run.close()
            raise
        return run

    @_list_call
    def explain(self, path: str, description: Optional[Description] = None, *, query: Optional[Query] = None,
                options: Optional[ListOptions] = None, **parts: Any) -> Description:
        """What the library makes of the list at `path` from its first page: every part, detected
        or given, and the plan (``.plan``: "parallel", "speculative", "sequential" or "single";
        ``.detected``: the parts detection decided). Fetches the first page only (a few more
        requests may already be on their way when it returns; they are cancelled). Of
        ``options``, takes `query` only.

        Raises:
            Error: as :meth:`fetch_all`, when the first page fails or detection cannot decide.
        """
        run = self._new_run(path, description, parts, options)
        try:
            run.start()
            run.next_items()   # the first snapshot, or the end: the description is resolved
            pointer, length = ctypes.c_void_p(), ctypes.c_size_t()
            lib.sheaf_list_description(run.handle, byref(pointer), byref(length))
            explained = Description.from_json(_ffi.take_string(pointer, length.value))
        finally:
            run.close()
        if run.outcome not in (_ffi.SHEAF_OK, _ffi.SHEAF_E_STOPPED, _ffi.SHEAF_E_CANCELLED):
            run.raise_outcome([])
        return explained

    @_list_call
    def watch(self, path: str, description: Optional[Description] = None, *, every: float = 5.0,
              max_every: Optional[float] = None, state: Optional[str] = None, offset: Optional[str] = None,
              query: Optional[Query] = None, headers: Optional[Headers] = None, deadline: Optional[float] = None,
              on_wait: Optional[Callable[[BaseException, float], None]] = None,
              options: Optional[ListOptions] = None, **parts: Any) -> "Watch":
        """Watches the list at `path`: polls it every `every` seconds for what is new, each item
        once. The list must sync (``until=("/created", 0)`` for a newest-first list, or
        ``since=("created[gte]", "/created")`` for a filter that includes its value) and have an
        identity (``id="/id"``): the offset after a poll is the greatest value delivered with the
        identities of the items at it, so an item added in the same second as the last one is
        delivered, and none twice. An idle poll costs one request (revalidated with ``cache=``).

        Args:
            every: seconds between polls (above 0).
            max_every: the longest wait after transient failures (default: 60 x `every`, at most
                an hour): a 5xx or 429 after the retries, the network, a spent rate limit, each
                doubling the wait from `every`; other failures are raised.
            state: a file the offset is kept in, written atomically (with a folder flush) after
                each poll whose items were all taken; read at the start to go on from there.
            offset: the offset to start from instead (a :attr:`Watch.offset`); not with `state`.
            on_wait: called with the failure and the seconds waited, before each wait.
            deadline: seconds each poll may take.
            query, headers, options, **parts: as :meth:`fetch_all` (no budgets: a poll cut short
                would leave a gap).

        Returns:
            A :class:`sheaf.Watch`: iterate it (``for item in watch``, ``async for``), or take
            whole polls (``watch.polls()``); ``watch.stop()`` ends it after the poll in progress.
            At least once into the caller: a poll's offset is committed when the item after its
            last is asked for (see :mod:`sheaf.watch`).

        Raises:
            UsageError: a list that does not sync, has no identity, a bad `every`, or a state file
                that is not a watch's; Error: as :meth:`fetch_all`, raised by the iteration.
        """
        for name, value in (("every", every), ("max_every", max_every)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1e9):
                raise UsageError(Result.INVALID_ARGUMENT, f"{name} must be a positive number of seconds, not {value!r}")
        if state is not None and offset is not None:
            raise UsageError(Result.INVALID_ARGUMENT, "give the offset or the state file it is kept in, not both")
        if state is not None:
            stored = read_state(state).get("offset")
            offset = None if stored is None else json.dumps(stored)
        run = self._new_run(path, description, parts, options)
        try:
            if run.current_sync_state() is None:
                raise UsageError(Result.INVALID_ARGUMENT, "a watch polls a list that syncs: give until=(pointer, start) for a "
                                                          "newest-first list or since=(param, pointer) for a filter")
        except BaseException:
            run.close()
            raise
        longest = max_every if max_every is not None else min(3600.0, every * 60)
        return Watch(run, every=float(every), max_every=max(float(longest), float(every)), state=state, offset=offset,
                     on_wait=on_wait)

    @_list_call
    def sync_key(self, path: str, description: Optional[Description] = None, *, query: Optional[Query] = None,
                 max_items: Optional[int] = None, max_pages: Optional[int] = None, max_requests: Optional[int] = None,
                 deadline: Optional[float] = None, resume: Optional[str] = None, headers: Optional[Headers] = None,
                 options: Optional[ListOptions] = None, **parts: Any) -> Optional[str]:
        """The key that the sync state of the list at `path` is stored under: the ``"list"`` of
        the ``sync_state`` that a run of it with these arguments reports (the redacted URL of its
        first page, before any ``since`` parameter), known before the run, so that the value
        stored by an earlier run can be looked up and given to this one (``sheaf get --state``
        does). None for a list that does not sync (no ``until=`` or ``since=``). Sends nothing.

        Takes the arguments of :meth:`fetch_all` (but `decode`), so that a call can pass on the
        ones it runs the list with; the budgets and `resume` do not change the key.

        Raises:
            UsageError: as :meth:`fetch_all`, for a bad argument.
        """
        run = self._new_run(path, description, parts, options)
        try:
            state = run.current_sync_state()
        finally:
            run.close()
        return state.get("list") if state else None

    def _new_run(self, path: str, description: Optional[Description], parts: Dict[str, Any],
                 options: Optional[ListOptions] = None, *, keep_items: bool = False, decode: Any = None) -> ListRun:
        """A list, made and set up as `description`, `parts` and `options` (the run's settings,
        from _Takes.resolve) say; not started."""
        decoder = decoder_for(decode)   # checked before anything is made
        settings = _NO_OPTIONS if options is None else options
        handle_of_client = self._handle
        if handle_of_client is None:
            raise UsageError(Result.STATE, "the client is closed")
        if not isinstance(path, str):
            raise UsageError(Result.INVALID_ARGUMENT, f"path must be a str, not {type(path).__name__}")
        if description is not None and not isinstance(description, Description):
            raise UsageError(Result.INVALID_ARGUMENT, "description must be a sheaf.Description")
        described = (description or Description()).merged(parts)
        handle = _ffi.ListHandle()
        lib.sheaf_list_new(byref(handle), handle_of_client, encode(path))
        run = ListRun(handle, self)
        run.decode = decoder
        try:
            for key, value in _query_pairs(settings.query):
                lib.sheaf_list_add_query(handle, encode(key), encode(value))
            for name, value in header_pairs(settings.headers):
                lib.sheaf_list_add_header(handle, encode(name, "a header name"),
                                          encode(value, f"the value of the header {name}"))
            described.apply(handle)
            for budget, name in ((_ffi.SHEAF_BUDGET_ITEMS, "max_items"), (_ffi.SHEAF_BUDGET_PAGES, "max_pages"),
                                 (_ffi.SHEAF_BUDGET_REQUESTS, "max_requests")):
                value = getattr(settings, name)
                if value is not None:
                    lib.sheaf_list_set_budget(handle, budget, _whole(value, name))
            deadline, resume = settings.deadline, settings.resume
            if deadline is not None:
                milliseconds = _milliseconds(deadline, "deadline")
                if milliseconds <= 0:
                    raise UsageError(Result.INVALID_ARGUMENT, f"deadline must be a positive number of seconds, not {deadline!r}")
                lib.sheaf_list_set_budget(handle, _ffi.SHEAF_BUDGET_DEADLINE_MS, milliseconds)
            if resume is not None:
                if not isinstance(resume, str):
                    raise UsageError(Result.INVALID_ARGUMENT, f"resume must be a str, not {type(resume).__name__}")
                lib.sheaf_list_set_resume(handle, encode(resume))
            # Items are kept, if at all, in Python; a pager's by the library (Pager.items reads them back).
            lib.sheaf_list_set_keep_items(handle, int(keep_items))
        except BaseException:
            run.close()
            raise
        return run


# ---- credentials and TLS -----------------------------------------------------------------------

def _output(out: Union[int, Any], format: str) -> Tuple[int, int]:
    """fetch_to's `out` and `format`: the file descriptor (a file flushed first) and the format's code."""
    formats = {"json": _ffi.SHEAF_FORMAT_JSON, "jsonl": _ffi.SHEAF_FORMAT_JSON_LINES}
    if format not in formats:
        raise UsageError(Result.INVALID_ARGUMENT, f"format must be one of {', '.join(formats)}, not {format!r}")
    if isinstance(out, int):
        return out, formats[format]
    out.flush()
    return out.fileno(), formats[format]


def _set_auth(handle: _ffi.ClientHandle, auth: Any) -> None:
    """Sets the client's credential from ``token``/``auth`` (None: none)."""
    if auth is None:
        return
    if isinstance(auth, str):
        lib.sheaf_client_set_auth(handle, _ffi.SHEAF_AUTH_BEARER, encode(auth, "the token"))
    elif isinstance(auth, ApiKey):
        kind = _ffi.SHEAF_AUTH_API_KEY_HEADER if auth.where == "header" else _ffi.SHEAF_AUTH_API_KEY_QUERY
        lib.sheaf_client_set_credential(handle, kind, encode(auth.name, "the API key's name"),
                                        encode(auth.value, "the API key"))
    elif isinstance(auth, tuple) and len(auth) == 2 and all(isinstance(part, str) for part in auth):
        lib.sheaf_client_set_credential(handle, _ffi.SHEAF_AUTH_BASIC, encode(auth[0], "the user name"),
                                        encode(auth[1], "the password"))
    else:
        raise UsageError(Result.INVALID_ARGUMENT,
                         "auth must be a bearer token (str), (user, password) or sheaf.ApiKey, "
                         f"not {type(auth).__name__}")


def _set_tls(handle: _ffi.ClientHandle, verify: Union[bool, str], cert: Union[None, str, Tuple[str, str]]) -> None:
    if isinstance(verify, str):
        which = _ffi.SHEAF_TLS_CA_DIRECTORY if os.path.isdir(verify) else _ffi.SHEAF_TLS_CA_FILE
        lib.sheaf_client_set_tls_file(handle, which, encode(verify))
    elif not isinstance(verify, bool):
        raise UsageError(Result.INVALID_ARGUMENT, f"verify must be True, False or a path, not {verify!r}")
    if cert is None:
        return
    certificate, key = (cert, None) if isinstance(cert, str) else cert
    lib.sheaf_client_set_tls_file(handle, _ffi.SHEAF_TLS_CERT, encode(certificate))
    if key is not None:
        lib.sheaf_client_set_tls_file(handle, _ffi.SHEAF_TLS_KEY, encode(key))


# ---- describing a list ------------------------------------------------------------------------

def _progress(status: _ffi.ListStatusStruct) -> Progress:
    return Progress(status.items, status.pages, None if status.expected_items < 0 else status.expected_items,
                    None if status.expected_pages < 0 else status.expected_pages, status.requests_in_flight,
                    status.requests_made, status.window, status.requests_revalidated, *_quota(status))


def _quota(status: _ffi.ListStatusStruct) -> Tuple[Optional[int], Optional[float]]:
    """The origin's rate limit in a status: points left and seconds to its reset, or Nones."""
    if status.quota_remaining < 0:
        return None, None
    return status.quota_remaining, status.quota_reset_ms / 1000.0


def _query_pairs(query: Optional[Query]) -> List[Tuple[str, str]]:
    """Every query parameter as (name, value) text; a list or tuple value repeats the name."""
    out: List[Tuple[str, str]] = []
    for key, value in named_pairs(query, "query"):
        for one in value if isinstance(value, (list, tuple)) else [value]:
            out.append((str(key), _query_text(one)))
    return out


def _query_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


#: Client(http_version=...) and the sheaf_http_version each stands for.
_HTTP_VERSIONS = {"auto": _ffi.SHEAF_HTTP_AUTO, "1.1": _ffi.SHEAF_HTTP_1_1, "2": _ffi.SHEAF_HTTP_2_PRIOR_KNOWLEDGE}


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


__all__ = ["Client", "ListOptions", "Query"]
