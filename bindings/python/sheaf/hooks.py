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

import logging
from dataclasses import dataclass
from typing import Any, Callable, Optional, Tuple

from . import _ffi
from ._ffi import lib

logger = logging.getLogger("sheaf")

_LEVELS = ((_ffi.SHEAF_LOG_DEBUG, logging.DEBUG), (_ffi.SHEAF_LOG_INFO, logging.INFO),
           (_ffi.SHEAF_LOG_WARNING, logging.WARNING), (_ffi.SHEAF_LOG_ERROR, logging.ERROR))
_PYTHON_LEVEL = dict(_LEVELS)
_KINDS = {_ffi.SHEAF_LOG_REQUEST: "request", _ffi.SHEAF_LOG_RETRY: "retry", _ffi.SHEAF_LOG_REDIRECT: "redirect",
          _ffi.SHEAF_LOG_PLAN: "plan"}
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


def install(handle: _ffi.ClientHandle, on_event: Optional[Callable[[Event], Any]]) -> Tuple[Any, ...]:
    """Sets the client's hooks: the log when the ``"sheaf"`` logger listens, the events when
    `on_event` is given. Returns the ctypes callbacks, to keep for as long as the client lives."""
    keep: Tuple[Any, ...] = ()
    level = next((ours for ours, theirs in _LEVELS if logger.isEnabledFor(theirs)), None)
    if level is not None:
        lib.sheaf_client_set_log(handle, level, _LOG_FN, None, None)
    if on_event is not None:
        def deliver(struct: Any, _user_data: Any) -> None:
            try:
                on_event(_event(struct))
            except Exception:   # a hook has nobody to raise to: say so in the log
                logger.exception("the on_event callback raised")

        event_fn = _ffi.EVENT_FN(deliver)
        lib.sheaf_client_set_event_handler(handle, event_fn, None, None)
        keep += (event_fn,)
    return keep
