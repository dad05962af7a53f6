"""How a `sheaf` command ends: its exit status (listed in the help's "exit status" text), the one
line "sheaf: <message>" on stderr, and Ctrl-C, which cancels a list cleanly and never cuts the
items written apart from the token that goes on after them."""

from __future__ import annotations

import contextlib
import signal
import sys
from typing import Optional

from .parser import PROG, TOKEN_ENV

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_HTTP = 3
EXIT_NETWORK = 4
EXIT_BAD_PAGE = 5
EXIT_DEADLINE = 6
EXIT_RATE_LIMITED = 7
EXIT_INTERRUPTED = 130


def one_line(text: str, token: Optional[str]) -> str:
    """`text` on one line, with the credential's secret replaced by ***."""
    if token:
        text = text.replace(token, "***")
    return " ".join(str(text).split()) or "unknown error"


def exit_status(api, error: BaseException) -> int:
    def isa(*names: str) -> bool:
        classes = tuple(c for c in (getattr(api, n, None) for n in names) if isinstance(c, type))
        return bool(classes) and isinstance(error, classes)

    if isa("HTTPError"):
        return EXIT_HTTP
    if isa("TransportError"):
        return EXIT_NETWORK
    if isa("DecodingError", "IncompleteError", "PolicyError"):
        return EXIT_BAD_PAGE
    if isa("UsageError"):
        return EXIT_USAGE
    if isa("DeadlineError"):
        return EXIT_DEADLINE
    if isa("APIError"):
        return EXIT_HTTP
    if isa("RateLimitedError"):
        return EXIT_RATE_LIMITED
    return EXIT_FAILURE


def error_message(api, error: BaseException, token: Optional[str]) -> str:
    message = getattr(error, "message", None) or str(error) or type(error).__name__
    status = getattr(error, "status", None)
    if isinstance(error, getattr(api, "HTTPError", ())) and status in (401, 403):
        if token:
            message += " (the server refused the token: check --token / $%s)" % TOKEN_ENV
        else:
            message += " (no token was given: use --token or $%s)" % TOKEN_ENV
    elif getattr(error, "hint", ""):
        message += f" (try: {error.hint})"
    elif (getattr(error, "code", None) == getattr(getattr(api, "Result", None), "BAD_PAGE", -1)
          and "not valid JSON" not in message):
        # The page is JSON, but the items / next / total are not where the options say.
        message += " (check --items / --next / --total, or try --explain)"
    return one_line(message, token)


class Interrupt:
    """Where Ctrl-C stands: inside `held_back()` the KeyboardInterrupt waits for the block's end."""

    held = False
    pending = False

    @staticmethod
    @contextlib.contextmanager
    def held_back():
        """A block Ctrl-C does not cut in two: items written and the token that goes on after them
        must change together, or a resumed run would write them twice."""
        Interrupt.held = True
        try:
            yield
        finally:
            Interrupt.held = False
        if Interrupt.pending:
            Interrupt.pending = False
            raise KeyboardInterrupt


def install_sigint() -> None:
    """Ctrl-C raises KeyboardInterrupt once (to cancel the list cleanly); a second one kills."""
    def on_sigint(signum, frame):
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if Interrupt.held:
            Interrupt.pending = True
        else:
            raise KeyboardInterrupt

    try:
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, on_sigint)
    except (ValueError, OSError):  # not the main thread
        pass


def report(text: str) -> None:
    """One line "sheaf: TEXT" on stderr: a failure, or a note such as the token that goes on."""
    try:
        sys.stderr.write(f"{PROG}: {text}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
