"""Python transports: any callable that performs one HTTP exchange can replace libcurl.

A transport is called as ``transport(method, url, headers, body)`` with

- ``method``: ``"GET"``;
- ``url``: the absolute request URL;
- ``headers``: the request headers as a list of ``(name, value)`` pairs (the Authorization header
  among them when the URL is on the base URL's origin);
- ``body``: the request body, ``b""`` for a GET;

and returns ``(status, headers, body)``: the HTTP status (an int, failing statuses included: they
are answers, not exceptions), the response headers (a mapping such as ``http.client.HTTPMessage``,
or a sequence of ``(name, value)`` pairs) and the body as bytes. Redirects are the library's job:
return a 3xx with its ``Location`` header rather than following it.

It runs on threads owned by the library, up to the client's ``concurrency`` at once, each on a
thread of its own, so it may simply block (``http.client``, ``urllib``, ``requests``...) and still
keep the whole window in flight. It should apply a timeout of its own.

Exceptions it raises are answers too:

======================================  ============================================================
raised                                  becomes
======================================  ============================================================
``TimeoutError`` (``socket.timeout``)   a timeout; retried by the library, then TransportError
``ConnectionError``                     a refused or reset connection; retried, then TransportError
``socket.gaierror``                     a name that did not resolve; TransportError, not retried
``ssl.SSLError``                        a TLS failure; TransportError, not retried
anything else                           the list is stopped, and that very exception (with its
                                        traceback) is re-raised by the ``fetch_all`` or ``stream``
                                        call that started the list
======================================  ============================================================

Every request is answered exactly once, whatever the callable does.

``urllib.request.urlopen`` raises ``urllib.error.HTTPError`` for a failing status; a transport
built on it should catch that and return ``(error.code, error.headers, error.read())``, or the
list stops with that exception.
"""

from __future__ import annotations

import ctypes
import socket
import ssl
from ctypes import byref, c_char_p, c_size_t
from typing import Any, Callable, Iterable, List, Mapping, Optional, Protocol, Sequence, Tuple, Union

from . import _ffi
from ._ffi import lib

#: What a transport returns for response headers.
ResponseHeaders = Union[Mapping[str, str], Iterable[Tuple[str, str]]]
#: A transport: ``(method, url, headers, body) -> (status, headers, body)``.
Transport = Callable[[str, str, List[Tuple[str, str]], bytes], Tuple[int, ResponseHeaders, bytes]]

#: Exceptions a transport may raise to report a failure below HTTP, and what the library is told.
TRANSPORT_FAILURES: Sequence[Tuple[type, int]] = (
    (socket.timeout, _ffi.SHEAF_TRANSPORT_TIMEOUT),   # an alias of TimeoutError from 3.10 on
    (TimeoutError, _ffi.SHEAF_TRANSPORT_TIMEOUT),
    (ConnectionError, _ffi.SHEAF_TRANSPORT_CONNECT),
    (socket.gaierror, _ffi.SHEAF_TRANSPORT_DNS),
    (ssl.SSLError, _ffi.SHEAF_TRANSPORT_TLS),
)

_MESSAGE_LIMIT = 512


class ServedRun(Protocol):
    """What `serve` needs of the list run a request belongs to (a ``sheaf._run.ListRun``): the
    list's transport, and a way to stop the list with an exception. Named here, so that this
    module needs nothing of _run, which imports it."""

    transport: Optional[Transport]

    def fail_with(self, error: BaseException) -> None: ...


def serve(run: Optional[ServedRun], request: _ffi.ExchangeHandle) -> None:
    """Performs `request` with the run's Python transport and answers it exactly once.

    Never raises: it runs inside a ctypes callback, where an exception would only be printed.
    """
    answered = False
    try:
        if run is None or run.transport is None:
            answered = True
            lib.sheaf_exchange_fail(request, _ffi.SHEAF_TRANSPORT_OTHER,
                                   b"no Python transport is registered for this request (its list has ended)")
            return
        method, url, headers, body = _read_request(request)
        max_body = lib.sheaf_exchange_max_body_bytes(request)
        try:
            status, response_headers, response_body = run.transport(method, url, headers, body)
            status, header_pairs, response_body = _check_response(status, response_headers, response_body)
        except BaseException as error:  # noqa: B902 - every exception must become an answer
            kind = _failure_kind(error)
            if kind is None:
                # Not a transport failure: a bug or a deliberate stop in the caller's code. Stop
                # the list first, so the failure below cannot be retried into something else.
                run.fail_with(error)
                kind = _ffi.SHEAF_TRANSPORT_OTHER
            answered = True
            lib.sheaf_exchange_fail(request, kind, _message(error))
            return
        if max_body > 0 and len(response_body) > max_body:
            answered = True
            lib.sheaf_exchange_fail(request, _ffi.SHEAF_TRANSPORT_TOO_LARGE,
                                   b"the response body exceeds the body cap")
            return
        for name, value in header_pairs:
            lib.sheaf_exchange_add_response_header(request, name, value)
        if lib.sheaf_exchange_respond(request, status, response_body, len(response_body)) != _ffi.SHEAF_OK:
            # Refused (a status outside 100..999): the exchange still waits for its one answer.
            lib.sheaf_exchange_fail(request, _ffi.SHEAF_TRANSPORT_OTHER,
                                    f"the transport returned HTTP status {status}, outside 100..999".encode())
        answered = True
    except BaseException as error:  # noqa: B902 - reading the request or answering failed
        if run is not None:
            run.fail_with(error)
        if not answered:
            try:
                lib.sheaf_exchange_fail(request, _ffi.SHEAF_TRANSPORT_OTHER, _message(error))
            except BaseException:  # noqa: B902 - nothing more can be done from a callback
                pass


def _read_request(request: _ffi.ExchangeHandle) -> Tuple[str, str, List[Tuple[str, str]], bytes]:
    method = _ffi.decode(lib.sheaf_exchange_method(request))
    url = _ffi.decode(lib.sheaf_exchange_url(request))
    headers: List[Tuple[str, str]] = []
    for index in range(lib.sheaf_exchange_header_count(request)):
        name, value = c_char_p(), c_char_p()
        if lib.sheaf_exchange_header(request, index, byref(name), byref(value)) == _ffi.SHEAF_OK:
            # Header bytes are latin-1 on the wire; this round-trips every byte.
            headers.append(((name.value or b"").decode("latin-1"), (value.value or b"").decode("latin-1")))
    length = c_size_t(0)
    pointer = lib.sheaf_exchange_body(request, byref(length))
    body = ctypes.string_at(pointer, length.value) if pointer and length.value else b""
    return method, url, headers, body


def _check_response(status: Any, headers: Any, body: Any) -> Tuple[int, List[Tuple[bytes, bytes]], bytes]:
    """Validates and normalises what a transport returned (a TypeError names what is wrong)."""
    if isinstance(status, bool) or not isinstance(status, int):
        raise TypeError(f"a Sheaf transport must return an int status, not {type(status).__name__}")
    if isinstance(body, (bytearray, memoryview)):
        body = bytes(body)
    if not isinstance(body, bytes):
        raise TypeError(f"a Sheaf transport must return the body as bytes, not {type(body).__name__}")
    items = headers.items() if hasattr(headers, "items") else headers
    pairs: List[Tuple[bytes, bytes]] = []
    for name, value in items:
        pairs.append((_header_bytes(name), _header_bytes(value)))
    return status, pairs, body


def _header_bytes(text: object) -> bytes:
    if isinstance(text, bytes):
        return text
    if not isinstance(text, str):
        raise TypeError(f"response header names and values must be str or bytes, not {type(text).__name__}")
    return text.encode("latin-1", "replace")


def _failure_kind(error: BaseException) -> Optional[int]:
    """The sheaf_transport_error for an exception a transport raised, or None for other errors."""
    reason = getattr(error, "reason", None)  # urllib.error.URLError wraps the socket error
    for candidate in (error, reason):
        for cls, kind in TRANSPORT_FAILURES:
            if isinstance(candidate, cls):
                return kind
    return None


def _message(error: BaseException) -> bytes:
    text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    return text[:_MESSAGE_LIMIT].encode("utf-8", "replace")


__all__ = ["Transport", "ResponseHeaders", "TRANSPORT_FAILURES"]
