"""Watching a client: the library's log records go to the standard logger ``"sheaf"``, and its
events (credential refused, offline, server unavailable, rate limited, retrying) to a callable.

Records are made by the library only when the ``"sheaf"`` logger is enabled for their level when
the client is created (``logging.getLogger("sheaf").setLevel(logging.DEBUG)``, or a level set on
the root logger): otherwise nothing is formatted at all. Each record carries its fields as
attributes (``sheaf_kind``, ``sheaf_method``, ``sheaf_url``, ``sheaf_status``, ``sheaf_attempt``,
``sheaf_duration_ms``, ``sheaf_bytes``, ``sheaf_delay_ms``). No record or event ever holds a
credential or a secret query value.

Both arrive on a library thread, one at a time per client, in order, and never after the
client is closed.
"""

from __future__ import annotations

import itertools
import logging
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional

from . import _ffi
from ._ffi import lib
from .errors import UsageError, encode

logger = logging.getLogger("sheaf")

_LEVELS = ((_ffi.SHEAF_LOG_DEBUG, logging.DEBUG), (_ffi.SHEAF_LOG_INFO, logging.INFO),
           (_ffi.SHEAF_LOG_WARNING, logging.WARNING), (_ffi.SHEAF_LOG_ERROR, logging.ERROR))
_PYTHON_LEVEL = dict(_LEVELS)
_KINDS = {_ffi.SHEAF_LOG_REQUEST: "request", _ffi.SHEAF_LOG_RETRY: "retry", _ffi.SHEAF_LOG_REDIRECT: "redirect",
          _ffi.SHEAF_LOG_PLAN: "plan", _ffi.SHEAF_LOG_WINDOW: "window"}
_EVENTS = {_ffi.SHEAF_EVENT_AUTH_REFUSED: "auth_refused", _ffi.SHEAF_EVENT_OFFLINE: "offline",
           _ffi.SHEAF_EVENT_SERVER_UNAVAILABLE: "server_unavailable", _ffi.SHEAF_EVENT_RATE_LIMITED: "rate_limited",
           _ffi.SHEAF_EVENT_RETRYING: "retrying"}
_TRANSPORT_ERRORS = {_ffi.SHEAF_TRANSPORT_OTHER: "other", _ffi.SHEAF_TRANSPORT_TIMEOUT: "timeout",
                     _ffi.SHEAF_TRANSPORT_CONNECT: "connect", _ffi.SHEAF_TRANSPORT_DNS: "dns",
                     _ffi.SHEAF_TRANSPORT_TLS: "tls", _ffi.SHEAF_TRANSPORT_TOO_LARGE: "too_large"}


@dataclass(frozen=True)
class Event:
    """Something a caller may act on.

    Attributes:
        kind: ``"auth_refused"`` (a final 401 or 403), ``"offline"`` (the host did not resolve or
            refused the connection on the last attempt), ``"server_unavailable"`` (a 5xx or no
            answer in time on the last attempt), ``"rate_limited"`` (a 429, or a 503 with
            Retry-After), ``"retrying"`` (a transient failure, tried again after ``wait``).
        status: the answer's HTTP status; 0 for a failure below HTTP.
        transport_error: ``"timeout"``, ``"connect"``, ``"dns"``, ... for a failure below HTTP.
        wait: seconds before the next attempt; None when there is none.
    """

    kind: str
    method: str
    url: str
    status: int
    transport_error: Optional[str]
    attempt: int
    wait: Optional[float]
    message: str


def _text(value: Optional[bytes]) -> Optional[str]:
    return None if value is None else value.decode("utf-8", "replace")


def _on_log(record: Any, _user_data: Any) -> None:
    r = record.contents
    level = _PYTHON_LEVEL.get(r.level, logging.INFO)
    logger.log(level, "%s", _text(r.message), extra={
        "sheaf_kind": _KINDS.get(r.kind, str(r.kind)), "sheaf_method": _text(r.method), "sheaf_url": _text(r.url),
        "sheaf_status": r.http_status, "sheaf_attempt": r.attempt, "sheaf_duration_ms": r.duration_ms,
        "sheaf_bytes": r.bytes, "sheaf_delay_ms": r.delay_ms})


#: One log hook serves every client: it only forwards to the logger.
_LOG_FN = _ffi.LOG_FN(_on_log)


def _event(struct: Any) -> Event:
    e = struct.contents
    return Event(kind=_EVENTS.get(e.kind, str(e.kind)), method=_text(e.method) or "", url=_text(e.url) or "",
                 status=e.http_status, transport_error=_TRANSPORT_ERRORS.get(e.transport_error),
                 attempt=e.attempt, wait=None if e.wait_ms < 0 else e.wait_ms / 1000, message=_text(e.message) or "")


class _Kept:
    """Python callables C may still call, by the integer handed to C as their user_data. One
    module-level ctypes function per kind serves them all and is never freed: a list may outlive
    its client, a hook may close its own client, and the library calls them from its threads until
    it destroys their user_data (`forget`, its destroy function)."""

    def __init__(self) -> None:
        self._kept: Dict[int, Any] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._forget_fn = _ffi.DESTROY_FN(self.forget)   # lives as long as this (the module)

    def keep(self, item: Any) -> int:
        with self._lock:
            key = next(self._ids)
            self._kept[key] = item
        return key

    def get(self, key: Optional[int]) -> Any:
        with self._lock:
            return self._kept.get(key or 0)

    def forget(self, key: Optional[int]) -> None:
        with self._lock:
            self._kept.pop(key or 0, None)

    def register(self, item: Any, call: Callable[[int, Any], None]) -> None:
        """Keeps `item` and hands its key to `call` (a registration with the library, given the
        destroy function); a refused call leaves nothing kept: the library never destroys it."""
        key = self.keep(item)
        try:
            call(key, self._forget_fn)
        except BaseException:
            self.forget(key)
            raise


# ---- token providers ----------------------------------------------------------------------------

_providers = _Kept()


def _provide(reply: Any, user_data: Optional[int]) -> None:
    provider = _providers.get(user_data)
    if provider is None:
        lib.sheaf_credential_reply_fail(reply, b"the client's token provider is gone")
        return
    try:
        token = provider(bool(lib.sheaf_credential_reply_is_refresh(reply)))
        if not isinstance(token, str) or not token:
            raise TypeError(f"the token provider returned {type(token).__name__}, not a non-empty str")
        lib.sheaf_credential_reply_set(reply, encode(token, "the token the provider returned"))
    except UsageError as error:   # a NUL in the token: the message names no secret
        lib.sheaf_credential_reply_fail(reply, error.message.encode())
    except Exception as error:   # the requests waiting fail with CredentialError, naming it
        logger.warning("the token provider raised %s", type(error).__name__, exc_info=True)
        lib.sheaf_credential_reply_fail(reply, f"the token provider raised {type(error).__name__}".encode())


_PROVIDE_FN = _ffi.CREDENTIAL_FN(_provide)


def set_token_provider(handle: _ffi.ClientHandle, provider: Callable[[bool], str]) -> None:
    """Makes the client's bearer token come from ``provider(refresh)``."""
    _providers.register(provider, lambda key, forget: lib.sheaf_client_set_credential_provider(
        handle, _ffi.SHEAF_AUTH_BEARER, None, _PROVIDE_FN, key, forget))


def install(handle: _ffi.ClientHandle, on_event: Optional[Callable[[Event], Any]]) -> None:
    """Sets the client's hooks: the log when the ``"sheaf"`` logger listens, the events when
    `on_event` is given. What C calls is kept here, not by the client (`_Kept`): Client.close()
    from inside on_event, or the client collected while a list runs, leaves the ctypes function
    alive under the call that is running."""
    level = next((ours for ours, theirs in _LEVELS if logger.isEnabledFor(theirs)), None)
    if level is not None:
        lib.sheaf_client_set_log(handle, level, _LOG_FN, None, None)
    if on_event is not None:
        _handlers.register(on_event, lambda key, forget: lib.sheaf_client_set_event_handler(handle, _EVENT_FN, key, forget))


_handlers = _Kept()


def _deliver_event(struct: Any, user_data: Optional[int]) -> None:
    on_event = _handlers.get(user_data)
    if on_event is None:
        return
    try:
        on_event(_event(struct))
    except Exception:   # a hook has nobody to raise to: say so in the log
        logger.exception("the on_event callback raised")


_EVENT_FN = _ffi.EVENT_FN(_deliver_event)
