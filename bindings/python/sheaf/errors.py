"""Sheaf's exceptions: one base class, one subclass per family of result codes.

Every failure of the C library is an :class:`Error` carrying the result code (``code``), the
library's message for it (``message``) and, for a list, the items that arrived before the failure
(``items``) and the token that goes on from there (``resume_token``). The families:

============================  =======================================================
class                         result codes
============================  =======================================================
:class:`HTTPError`            SHEAF_E_HTTP (after retries); ``status`` and ``body``
:class:`TransportError`       SHEAF_E_TRANSPORT: timeout, connect, DNS, TLS (after retries)
:class:`DecodingError`        SHEAF_E_BAD_PAGE, SHEAF_E_BODY_TOO_LARGE
:class:`IncompleteError`      SHEAF_E_INCOMPLETE (a :class:`DecodingError`, see there)
:class:`NotFollowedError`     SHEAF_E_NOT_FOLLOWED (a :class:`DecodingError`): the last page
                              signals more than the description follows; ``signal``, ``hint``
:class:`DetectionError`       SHEAF_E_UNDETECTED (a :class:`DecodingError`): the list's shape
                              could not be detected; ``hint`` names the options that choose
:class:`PolicyError`          SHEAF_E_CROSS_ORIGIN, SHEAF_E_LOOP, SHEAF_E_PAGE_LIMIT,
                              SHEAF_E_REPEATED_PAGE
:class:`StoppedError`         SHEAF_E_STOPPED, SHEAF_E_CANCELLED
:class:`UsageError`           SHEAF_E_INVALID_ARGUMENT, SHEAF_E_UNSUPPORTED, SHEAF_E_STATE,
                              SHEAF_E_REENTRANT (also a :class:`ValueError`)
:class:`FileError`            SHEAF_E_IO: a download's file could not be written
:class:`DeadlineError`        SHEAF_E_DEADLINE: a list did not end within its deadline (also
                              a :class:`TimeoutError`)
:class:`CredentialError`      SHEAF_E_CREDENTIAL: the token provider gave no token
:class:`InternalError`        SHEAF_E_INTERNAL (a bug in Sheaf)
:class:`PartialError`         SHEAF_E_PARTIAL: some lists of a group failed, the others are
                              whole; ``result`` holds every list's items and outcome
:class:`RateLimitedError`     SHEAF_E_RATE_LIMITED: the server's rate limit is spent until
                              after ``Client(max_wait=...)``; ``items`` and ``resume_token``
:class:`APIError`             SHEAF_E_API: a 2xx answer with errors in its body (a GraphQL
                              answer's ``errors``): the first one's message and path
============================  =======================================================
"""

from __future__ import annotations

import enum
from typing import Any, Dict, List, Optional, Tuple, Type

from . import _ffi


class Result(enum.IntEnum):
    """The C library's ``sheaf_result`` codes (stable, append-only)."""

    OK = _ffi.SHEAF_OK
    LIMIT_REACHED = _ffi.SHEAF_LIMIT_REACHED
    INVALID_ARGUMENT = _ffi.SHEAF_E_INVALID_ARGUMENT
    UNSUPPORTED = _ffi.SHEAF_E_UNSUPPORTED
    STATE = _ffi.SHEAF_E_STATE
    REENTRANT = _ffi.SHEAF_E_REENTRANT
    HTTP = _ffi.SHEAF_E_HTTP
    TRANSPORT = _ffi.SHEAF_E_TRANSPORT
    BAD_PAGE = _ffi.SHEAF_E_BAD_PAGE
    INCOMPLETE = _ffi.SHEAF_E_INCOMPLETE
    LOOP = _ffi.SHEAF_E_LOOP
    PAGE_LIMIT = _ffi.SHEAF_E_PAGE_LIMIT
    BODY_TOO_LARGE = _ffi.SHEAF_E_BODY_TOO_LARGE
    CROSS_ORIGIN = _ffi.SHEAF_E_CROSS_ORIGIN
    STOPPED = _ffi.SHEAF_E_STOPPED
    CANCELLED = _ffi.SHEAF_E_CANCELLED
    INTERNAL = _ffi.SHEAF_E_INTERNAL
    PENDING = _ffi.SHEAF_PENDING
    NOT_FOLLOWED = _ffi.SHEAF_E_NOT_FOLLOWED
    UNDETECTED = _ffi.SHEAF_E_UNDETECTED
    REPEATED_PAGE = _ffi.SHEAF_E_REPEATED_PAGE
    IO = _ffi.SHEAF_E_IO
    PAGE_BUDGET_REACHED = _ffi.SHEAF_PAGE_BUDGET_REACHED
    REQUEST_BUDGET_REACHED = _ffi.SHEAF_REQUEST_BUDGET_REACHED
    DEADLINE = _ffi.SHEAF_E_DEADLINE
    CREDENTIAL = _ffi.SHEAF_E_CREDENTIAL
    PARTIAL = _ffi.SHEAF_E_PARTIAL
    RATE_LIMITED = _ffi.SHEAF_E_RATE_LIMITED
    API = _ffi.SHEAF_E_API

    @property
    def is_success(self) -> bool:
        """True for OK alone: a list that stopped at its item limit or a budget ended OK too
        (its :class:`StopReason` says why); LIMIT_REACHED and the BUDGET_REACHED codes are
        retired and never returned."""
        return int(self) in _ffi.SUCCESSES


class Error(Exception):
    """A failure reported by the Sheaf library.

    Attributes:
        code: the ``sheaf_result`` (a :class:`Result` when the code is known, else a plain int).
        message: the library's message (URL, status, JSON location...); never contains the token.
        items: for a failed list, the items delivered before the failure, in order (a list); empty
            for a stream, whose items were already yielded, and for failures outside a list run.
        url: the URL concerned, or "".
        server_message: the server's own error text (its "error", "message", "detail"... fields).
        json_pointer, json_offset: for a bad page, where in the page ("" and -1 otherwise).
        signal: for :class:`NotFollowedError`, the signal of more that was not followed.
        hint: the option or preset that would help, or "".
        resume_token: for a list, the token that goes on after ``items`` (pass it as
            ``resume=``), or None.
    """

    code: int
    message: str
    items: List[Any]

    def __init__(self, code: int, message: str = "", *, items: Optional[List[Any]] = None, url: str = "",
                 server_message: str = "", json_pointer: str = "", json_offset: int = -1, signal: str = "",
                 hint: str = "", resume_token: Optional[str] = None) -> None:
        try:
            code = Result(code)
        except ValueError:
            pass
        self.code = code
        self.message = message or _ffi.result_text(int(code))
        self.items = [] if items is None else items
        self.url = url
        self.server_message = server_message
        self.json_pointer = json_pointer
        self.json_offset = json_offset
        self.signal = signal
        self.hint = hint
        self.resume_token = resume_token
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        name = self.code.name if isinstance(self.code, Result) else str(int(self.code))
        return f"{type(self).__name__}({name}, {self.message!r}, items=<{len(self.items)} items>)"

    def __reduce__(self) -> Any:
        # The constructor takes more than Exception.args: pickle (multiprocessing) rebuilds it.
        return (_rebuild, (type(self), int(self.code), self.message, self.items, self.__dict__.copy()))


class HTTPError(Error):
    """The server answered with a failing HTTP status (after retries).

    Attributes:
        status: the HTTP status code.
        body: the start of the failing response body (at most 1 KiB of text).
    """

    status: int
    body: str

    def __init__(self, code: int, message: str = "", *, status: int = 0, body: str = "", **detail: Any) -> None:
        super().__init__(code, message, **detail)
        self.status = status
        #: The response, for a single request (None for a list page).
        self.response: Any = None
        self.body = body


class TransportError(Error):
    """A request failed below HTTP (timeout, connection, DNS, TLS), after retries."""


class DecodingError(Error):
    """The server's pages do not form the list described: a page is not JSON, the items / next
    link / total are not where the list says, or a body exceeds the body cap."""


class ItemDecodeError(DecodingError):
    """An item the ``decode=`` of :meth:`Client.fetch_all` or :meth:`Client.stream` refused (it
    raised; that exception is the ``__cause__``). The list stops there.

    Attributes:
        index: the item's position in the list (counted from the first item of this run).
        item: the item as JSON gave it.
        items: for ``fetch_all``, every item decoded before it; for a stream, those of its
            snapshot before it (earlier snapshots were yielded).
    """

    def __init__(self, index: int, item: Any, decoder: str, error: BaseException, items: List[Any]) -> None:
        super().__init__(Result.BAD_PAGE, f"item {index} does not decode with {decoder}: {type(error).__name__}: {error}",
                         items=items)
        self.index = index
        self.item = item


class IncompleteError(DecodingError):
    """Every page arrived, but the items disagree with the server's total.

    A subclass of :class:`DecodingError` on purpose: both mean that what the server sent does not
    add up to the list it describes (as opposed to a failed exchange or a refusal by policy), and a
    caller catching "the server's data is wrong" wants both. ``items`` holds every item that did
    arrive.
    """


class NotFollowedError(DecodingError):
    """The last page signals more items (a ``Link rel="next"``, ``has_more``, a next field, a
    cursor, a total above what arrived) that the list's description does not follow: the list
    would have been silently short. ``signal`` names what was seen, ``hint`` the option or preset
    that follows it; ``items`` holds what arrived."""


class DetectionError(DecodingError):
    """Detection could not decide the list's shape from its first page (no items array, several
    candidates, or a total with no way to address pages that the page parameters tried on it
    found; the message names them); ``hint`` names the options that choose."""


class PolicyError(Error):
    """Sheaf refused to go on: a next link leaves the origin (or goes from https to http), repeats
    a URL already fetched, or the walk needs more pages than the page cap allows."""


class StoppedError(Error):
    """The list was stopped before its end: by a snapshot callback or by a cancel."""


class UsageError(Error, ValueError):
    """The call itself was wrong: a bad argument or option, an unsupported feature, a handle in
    the wrong state, or a blocking call from inside a callback."""


class FileError(Error):
    """A file could not be written: a download's (its folder cannot be created, it is not
    writable, the disk is full; the destination is left as it was), or the output of
    ``Client.fetch_to`` (the message has the system's reason)."""


class DeadlineError(Error, TimeoutError):
    """A list did not end within its deadline (``deadline=``); ``items`` holds what arrived
    before it and ``resume_token`` goes on from there."""


class CredentialError(Error):
    """The token provider (``Client(token_provider=...)``) raised or gave no token."""


class InternalError(Error):
    """A bug in Sheaf; the message says where."""


class PartialError(Error):
    """Some lists of a group (``Client.fetch_many``, ``Client.fetch_each``) failed and the others
    ended whole. Nothing that arrived is lost: ``result`` is the :class:`sheaf.GroupResult`, every
    list's items, error and resume token (``result.failed`` are the lists to fetch again). The
    message names how many lists failed and the first failure."""

    #: The group's lists and their outcomes (None when raised outside a group run).
    result: Any = None


class RateLimitedError(Error):
    """The server's rate limit is spent (its headers said nothing is left, or it refused a
    request saying so) until a reset further off than ``Client(max_wait=...)`` allows; nothing
    more was sent. The message names the limit, its size and when it resets; ``items`` are the
    items that arrived before, and ``resume_token`` goes on after them once the limit resets.
    Never an :class:`HTTPError` for a refused credential."""


class APIError(Error):
    """The API answered with success and errors in its body: a GraphQL answer's ``errors``
    (partial data included, unless ``allow_partial=True``). The message names the first error's
    message and path, and how many more; ``server_message`` holds the first. ``items`` are the
    items of the pages before it, ``resume_token`` goes on from the page that failed."""


#: The one table from result codes to exception classes.
ERROR_CLASSES: Dict[int, Type[Error]] = {
    Result.INVALID_ARGUMENT: UsageError,
    Result.UNSUPPORTED: UsageError,
    Result.STATE: UsageError,
    Result.REENTRANT: UsageError,
    Result.HTTP: HTTPError,
    Result.TRANSPORT: TransportError,
    Result.BAD_PAGE: DecodingError,
    Result.BODY_TOO_LARGE: DecodingError,
    Result.INCOMPLETE: IncompleteError,
    Result.LOOP: PolicyError,
    Result.PAGE_LIMIT: PolicyError,
    Result.CROSS_ORIGIN: PolicyError,
    Result.REPEATED_PAGE: PolicyError,
    Result.NOT_FOLLOWED: NotFollowedError,
    Result.UNDETECTED: DetectionError,
    Result.STOPPED: StoppedError,
    Result.CANCELLED: StoppedError,
    Result.INTERNAL: InternalError,
    Result.IO: FileError,
    Result.DEADLINE: DeadlineError,
    Result.CREDENTIAL: CredentialError,
    Result.PARTIAL: PartialError,
    Result.RATE_LIMITED: RateLimitedError,
    Result.API: APIError,
}


def _rebuild(cls: Type[Error], code: int, message: str, items: List[Any], state: Dict[str, Any]) -> Error:
    error = cls.__new__(cls)
    Error.__init__(error, code, message, items=items)
    error.__dict__.update(state)
    return error


def error_for(code: int, message: str = "", *, status: int = 0, body: str = "", **detail: Any) -> Error:
    """The exception for a failing result code (unknown codes get the base class); `detail` are
    the fields of the library's error (see ``_ffi.error_detail``) and ``items``."""
    cls = ERROR_CLASSES.get(code, Error)
    if cls is HTTPError:
        return HTTPError(code, message, status=status, body=body, **detail)
    return cls(code, message, **detail)


# ---- where calls into the library raise them ----------------------------------------------------
# Here and not in _ffi: the classes above need _ffi's result codes and texts, so _ffi, below them,
# cannot raise them.

def check_result(result: int, function: Any, arguments: Tuple[Any, ...]) -> int:
    """The ``errcheck`` of the functions in ``_ffi.CHECKED``: raises the Error subclass for a
    failing result, with the detail of this thread's last error (the call just made, on this
    thread)."""
    if result in _ffi.SUCCESSES:
        return result
    raise error_for(result, **_ffi.last_error_detail())


# Set once, when this module loads: every module that calls the library imports this one.
if _ffi.library_path is not None:
    for _name in _ffi.CHECKED:
        getattr(_ffi.lib, _name).errcheck = check_result


def encode(text: Optional[str], what: str = "a text given to the library") -> Optional[bytes]:
    """Text for a `const char *` parameter (None stays NULL). A NUL character is refused: C would
    read the text only up to it (a token "abc\\0def" would be sent as "abc"). The message names
    `what`, never the text, which may be a secret."""
    if text is None:
        return None
    if "\0" in text:
        raise UsageError(Result.INVALID_ARGUMENT, f"{what} contains a NUL character, which C strings cannot carry")
    return text.encode("utf-8")


__all__ = [
    "Result", "Error", "HTTPError", "TransportError", "DecodingError", "IncompleteError",
    "NotFollowedError", "DetectionError", "PolicyError", "StoppedError", "UsageError", "FileError", "DeadlineError",
    "CredentialError", "InternalError", "PartialError", "RateLimitedError", "APIError", "ERROR_CLASSES", "error_for",
]
