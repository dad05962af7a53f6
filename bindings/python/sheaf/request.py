"""Single requests: any method, a body, headers and query, through the client's policies."""

from __future__ import annotations

import ctypes
import json as _json
import os
import threading
from ctypes import byref
from typing import Any, Callable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from . import _ffi
from ._ffi import lib
from .errors import HTTPError, Result, UsageError, encode, error_for

#: A download's progress callback: (bytes written, bytes expected or None).
Progress = Callable[[int, Optional[int]], None]

#: Headers: a mapping, or (name, value) pairs (a name may repeat).
Headers = Union[Mapping[str, str], Sequence[Tuple[str, str]]]


class ApiKey:
    """An API key credential for :class:`sheaf.Client`'s ``auth=``: sent in the header `name`
    (``where="header"``) or the query parameter `name` (``where="query"``), only to the base URL's
    origin, and hidden in every message."""

    def __init__(self, name: str, value: str, where: str = "header") -> None:
        if where not in ("header", "query"):
            raise UsageError(Result.INVALID_ARGUMENT, f'where must be "header" or "query", not {where!r}')
        self.name, self.value, self.where = name, value, where

    def __repr__(self) -> str:
        return f"ApiKey({self.name!r}, <redacted>, where={self.where!r})"   # never the key


class Response:
    """The answer to a single request.

    Attributes:
        status: the HTTP status code.
        headers: the response headers as (name, value) pairs, in the order received; see
            :meth:`header` for a lookup by name.
        content: the body as bytes.
        url: the URL that answered, after redirects (secret query values redacted).
    """

    def __init__(self, status: int, headers: List[Tuple[str, str]], content: bytes, url: str) -> None:
        self.status = status
        self.headers = headers
        self.content = content
        self.url = url

    @property
    def ok(self) -> bool:
        """True for a 2xx status."""
        return 200 <= self.status < 300

    @property
    def text(self) -> str:
        """The body decoded as UTF-8 (invalid bytes replaced)."""
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        """The body decoded from JSON.

        Raises:
            ValueError: the body is not JSON.
        """
        return _json.loads(self.content)

    def header(self, name: str, default: Optional[str] = None) -> Optional[str]:
        """The first header named `name` (case-insensitive), or `default`."""
        wanted = name.lower()
        return next((value for key, value in self.headers if key.lower() == wanted), default)

    def __repr__(self) -> str:
        return f"<sheaf.Response {self.status} {len(self.content)} bytes>"


def named_pairs(given: Any, what: str) -> Iterator[Tuple[Any, Any]]:
    """(name, value) of a mapping or of a sequence of pairs; `what` names the argument in errors."""
    if given is None:
        return
    for pair in given.items() if isinstance(given, Mapping) else given:
        try:
            name, value = pair
        except (TypeError, ValueError):
            raise UsageError(Result.INVALID_ARGUMENT,
                             f"{what} must be a mapping or (name, value) pairs, not {pair!r}") from None
        yield name, value


def header_pairs(headers: Optional[Headers]) -> List[Tuple[str, str]]:
    """Every header as (name, value) text."""
    out = []
    for name, value in named_pairs(headers, "headers"):
        if not isinstance(name, str) or not isinstance(value, str):
            raise UsageError(Result.INVALID_ARGUMENT, f"a header's name and value must be str, not {(name, value)!r}")
        out.append((name, value))
    return out


def send(client_handle: _ffi.ClientHandle, method: str, path: Union[str, Sequence[Any]], *,
         query: List[Tuple[str, str]], headers: Optional[Headers], json: Any, data: Any, content: Optional[bytes],
         content_type: Optional[str], retry: bool, check: bool, output: Union[None, str, os.PathLike] = None,
         progress: Optional[Progress] = None) -> Response:
    """One request through the library; see :meth:`sheaf.Client.request`."""
    handle = prepare(client_handle, method, path, query=query, headers=headers, json=json, data=data,
                     content=content, content_type=content_type, retry=retry, output=output)
    try:
        return outcome(handle, _run(handle, progress), check)
    finally:
        lib.sheaf_request_free(handle)


def prepare(client_handle: _ffi.ClientHandle, method: str, path: Union[str, Sequence[Any]], *,
            query: List[Tuple[str, str]], headers: Optional[Headers], json: Any, data: Any, content: Optional[bytes],
            content_type: Optional[str], retry: bool, output: Union[None, str, os.PathLike] = None) -> _ffi.RequestHandle:
    """A request made and described, not started; the caller frees it (sheaf_request_free)."""
    if not isinstance(method, str):
        raise UsageError(Result.INVALID_ARGUMENT, f"method must be a str, not {type(method).__name__}")
    if isinstance(path, str):
        base, segments = path, []
    elif isinstance(path, (list, tuple)):
        base, segments = "", [str(segment) for segment in path]
    else:
        raise UsageError(Result.INVALID_ARGUMENT, f"path must be a str or a sequence of segments, not {type(path).__name__}")
    if sum(x is not None for x in (json, data, content)) > 1:
        raise UsageError(Result.INVALID_ARGUMENT, "give at most one of json=, data= and content=")
    handle = _ffi.RequestHandle()
    lib.sheaf_request_new(byref(handle), client_handle, encode(method.upper()), encode(base))
    try:
        for segment in segments:
            lib.sheaf_request_add_segment(handle, encode(segment))
        for name, value in query:
            lib.sheaf_request_add_query(handle, encode(name), encode(value))
        for name, value in header_pairs(headers):
            lib.sheaf_request_add_header(handle, encode(name, "a header name"),
                                         encode(value, f"the value of the header {name}"))
        if json is not None:
            body = _json.dumps(json, separators=(",", ":"), ensure_ascii=False).encode()
            lib.sheaf_request_set_body(handle, encode(content_type or "application/json"), body, len(body))
        elif data is not None:
            fields = data.items() if isinstance(data, Mapping) else data
            for name, value in fields:
                for one in value if isinstance(value, (list, tuple)) else [value]:
                    lib.sheaf_request_add_form(handle, encode(str(name)), encode(str(one)))
        elif content is not None:
            if isinstance(content, str):
                content = content.encode()
            if not isinstance(content, (bytes, bytearray, memoryview)):
                raise UsageError(Result.INVALID_ARGUMENT, f"content must be bytes, not {type(content).__name__}")
            raw = bytes(content)
            lib.sheaf_request_set_body(handle, encode(content_type or "application/octet-stream"), raw, len(raw))
        if retry:
            lib.sheaf_request_set_retry(handle, 1)
        if output is not None:
            lib.sheaf_request_set_output_file(handle, encode(os.fspath(output)))
    except BaseException:
        lib.sheaf_request_free(handle)
        raise
    return handle


def outcome(handle: _ffi.RequestHandle, result: int, check: bool) -> Response:
    """The response of a finished request, or the error that `result` and `check` call for."""
    response = _response(handle)
    if result != _ffi.SHEAF_OK and (check or response is None):
        error = error_for(result, **_ffi.error_detail(lib.sheaf_request_error(handle)))
        if isinstance(error, HTTPError):
            error.response = response
        raise error
    assert response is not None
    return response


def _run(handle: _ffi.RequestHandle, progress: Optional[Progress] = None) -> int:
    """Starts the request and waits for it in slices, so Ctrl-C interrupts it (and cancels it),
    reporting a download's progress after each."""
    done = threading.Event()
    callback = _ffi.REQUEST_DONE_FN(lambda _request, _result, _user: done.set())
    lib.sheaf_request_start(handle, callback, None, None)
    written, expected = ctypes.c_int64(), ctypes.c_int64()
    try:
        while True:   # bounded by the request's own timeouts
            finished = done.wait(0.1)
            if progress is not None:
                lib.sheaf_request_progress(handle, byref(written), byref(expected))
                progress(written.value, expected.value if expected.value >= 0 else None)
            if finished:
                break
    except BaseException:
        lib.sheaf_request_cancel(handle)
        raise
    finally:
        result = lib.sheaf_request_wait(handle)   # the callback has returned: `callback` may go
    return result


def _response(handle: _ffi.RequestHandle) -> Optional[Response]:
    status = lib.sheaf_request_status(handle)
    if status == 0:
        return None
    headers = []
    name, value = ctypes.c_char_p(), ctypes.c_char_p()
    for index in range(lib.sheaf_request_header_count(handle)):
        if lib.sheaf_request_header(handle, index, byref(name), byref(value)) == _ffi.SHEAF_OK:
            headers.append((_ffi.decode(name.value), _ffi.decode(value.value)))
    length = ctypes.c_size_t()
    pointer = lib.sheaf_request_body(handle, byref(length))
    content = ctypes.string_at(pointer, length.value) if pointer else b""
    return Response(status, headers, content, _ffi.decode(lib.sheaf_request_url(handle)))


__all__ = ["ApiKey", "Response", "Headers"]
