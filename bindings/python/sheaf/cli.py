"""The `sheaf` command-line tool: fetch a whole paginated list, item by item, as it arrives.

    sheaf get URL [options]          (also: python3 -m sheaf get URL ...)

`sheaf get --help` explains the options, with worked examples. The console-script entry point
is `sheaf.cli:main`.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from typing import Any, BinaryIO, Iterable, List, Optional, Sequence, Tuple
from urllib.parse import urlsplit

from ._progress import Progress

__all__ = ["main", "build_parser", "EXIT_OK", "EXIT_FAILURE", "EXIT_USAGE", "EXIT_HTTP",
           "EXIT_NETWORK", "EXIT_BAD_PAGE", "EXIT_INTERRUPTED"]

PROG = "sheaf"
TOKEN_ENV = "SHEAF_TOKEN"

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_HTTP = 3
EXIT_NETWORK = 4
EXIT_BAD_PAGE = 5
EXIT_INTERRUPTED = 130

EXIT_STATUS_TEXT = """\
exit status:
  0    the whole list was written (or --max-items items of it)
  1    any other failure (the library could not be loaded, an output file could not be written,
       the list was stopped, a bug)
  2    usage error: a bad option, URL or JSON pointer
  3    HTTP failure: the server answered with an error status after retries, e.g. 401 or 403
       (the token is missing, wrong or expired: --token / SHEAF_TOKEN), 404, 500
  4    network failure: connection refused, DNS, TLS, timeout (after retries)
  5    bad page: a page is not JSON or the items / next / total are not where the options say;
       the items disagree with the server's total; the last page signals more than the list's
       description follows (never silently short: the message says which flag follows it);
       detection could not decide the list's shape (the message names the flags that choose);
       a next link loops, leaves the URL's origin, or the walk exceeds --max-pages; pages
       repeat; a body exceeds the size cap
  130  interrupted (Ctrl-C); the list is cancelled
  On a failure, the items that arrived before it have already been written (with --format
  json the array is still closed, so the output stays valid JSON); one line
  "sheaf: <message>" goes to stderr. The token never appears in any message."""

GET_EPILOG = """\
describing a list:
  Nothing, usually: Sheaf reads the first page and detects where the items are (the body array,
  or the one array under "results", "items", "data", "value", "_embedded", ...), how the next
  page is found (a next link in the body, the Link header, X-Next-Page, a cursor such as
  Slack's next_cursor or Google's nextPageToken, Stripe's has_more), how many items there are
  (a total in the body, X-Total-Count, X-Total, Content-Range) and whether page k can be asked
  for directly (a next link that differs from its request in one page or offset parameter):
  then pages go out --concurrency at a time. --explain prints what it detected as the flags
  that pin it.

    sheaf get 'https://api.example.com/v1/things'
    sheaf get 'https://api.example.com/v1/things' --explain

  A list never ends silently short: if its last page still signals more than the description
  follows (a Link rel="next", has_more, a next field, a total above what arrived), the command
  fails (exit 5) naming the flag that would follow it.

  Second, a preset pins the shape of a known API ('sheaf presets' lists them):

    sheaf get 'https://api.github.com/repos/OWNER/REPO/issues' --preset github --page-size 100
    sheaf get 'https://api.stripe.com/v1/charges' --preset stripe --id /id

  Third, any part can be pinned (the rest is still detected). A signal SRC is a JSON pointer
  ("/items", "/data/results"; "" for a body that is the array), header:NAME, link:REL,
  last-item:/POINTER (in the page's last item), or none (the list has no such signal):

    --paging KIND       detect (default), single (one response), next (follow the next signal),
                        page:NAME (page k is ?NAME=first+k), offset:NAME (?NAME=first+k*served),
                        cursor:NAME (?NAME=<the page's cursor>); --page-param NAME = page:NAME
    --first N           the first page number (default 1) or offset (default 0)
    --size-param NAME   with --page-size N: ask for N items per page as ?NAME=N (servers may
                        send fewer; Sheaf plans with the size the server actually returned)
    --items SRC         the array of items
    --next SRC          the next page: a URL (absolute or relative), or a page number in a header
    --cursor SRC        the cursor sent back with --paging cursor:NAME
    --total SRC         the total number of items
    --page-count SRC    the number of pages (link:last reads the last page's number)
    --has-more SRC      a boolean, true while more pages follow
    --is-last SRC       a boolean, true on the last page
    --id PTR            an identity inside each item; repeated items are dropped, the first
                        one wins (pages that shift while they are read repeat items)

examples:
  1. GitHub-style: a bare array, Link: <...&page=2>; rel="next", <...&page=34>; rel="last":

       sheaf get 'https://api.example.com/v1/things'            (detected)

  2. Pages like {"items": [...], "next_page": "...?page=2", "total": 1234}, asked for with
     ?page=N&per_page=S, pinned:

       sheaf get 'https://api.example.com/v1/things' --items /items --next /next_page \\
           --total /total --paging page:page --first 1 --size-param per_page --page-size 100

  3. Offsets with a total in a header:

       sheaf get 'https://api.example.com/v1/things?limit=100' --paging offset:offset \\
           --total header:X-Total-Count

  4. The first 500 items, as one JSON array in a file, with a token, no progress line:

       SHEAF_TOKEN=... sheaf get URL --max-items 500 --format json -o things.json --quiet

  On a terminal a progress line on stderr shows the items and pages so far (of the expected
  totals, when known), the requests in flight, the rate and an ETA. It is left out when stderr
  is not a terminal, and with --quiet.

""" + EXIT_STATUS_TEXT


# ---- argument parsing ----------------------------------------------------------------------

def _int_at_least(low: int, what: str):
    def parse(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"expected {what}, got {value}")
        return value
    return parse


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds >= 0, got {text!r}")
    return value


_positive = _int_at_least(1, "a positive integer")
_non_negative = _int_at_least(0, "a non-negative integer")


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose error messages never repeat a secret: a mistyped flag
    (``--tokn T``) made argparse print its value in "unrecognized arguments"."""

    secrets: Tuple[str, ...] = ()

    def error(self, message: str):  # type: ignore[override]
        for secret in sorted(_Parser.secrets, key=len, reverse=True):
            message = message.replace(secret, "***")
        super().error(message)


def _probable_secrets(argv: Sequence[str]) -> Tuple[str, ...]:
    """The values of the arguments whose names look like a credential (--token, --tokn, --api-key,
    --password=...), and $SHEAF_TOKEN: what an error message must not repeat."""
    words = ("tok", "key", "pass", "secret", "auth")
    found = [os.environ.get(TOKEN_ENV, "")]
    for index, argument in enumerate(argv):
        if not argument.startswith("-"):
            continue
        name, equals, value = argument.lstrip("-").partition("=")
        if any(word in name.lower() for word in words):
            found.append(value if equals else (argv[index + 1] if index + 1 < len(argv) else ""))
    return tuple(secret for secret in found if len(secret) >= 3)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Fetch a whole paginated REST list, pages in parallel where the API allows,\n"
                    "and write its items in order as they arrive.",
        epilog="Run 'sheaf get --help' for the options and worked examples.\n\n"
               + EXIT_STATUS_TEXT,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    try:
        from . import __version__ as version  # type: ignore[attr-defined]
    except ImportError:
        version = None
    if isinstance(version, str):
        parser.add_argument("--version", action="version", version=f"%(prog)s {version}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True

    get = commands.add_parser(
        "get", help="fetch every item of a paginated list",
        description="Fetch every item of the paginated list at URL and write them in order, as\n"
                    "they arrive: to stdout, or to FILE with -o.",
        epilog=GET_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    get.add_argument("url", metavar="URL",
                     help="the list's full URL, query included: "
                          "'https://api.example.com/v1/things?state=open'")

    auth = get.add_argument_group("authentication")
    auth.add_argument("--token", metavar="T",
                      help=f"bearer token, sent only to URL's origin (default: ${TOKEN_ENV}, "
                           "which keeps it out of the process list)")

    shape = get.add_argument_group("pagination (detected when not given: see 'describing a list' below)")
    shape.add_argument("--explain", action="store_true",
                       help="fetch the first page only and print what was detected, as the flags "
                            "that pin it, and the plan")
    shape.add_argument("--preset", metavar="NAME",
                       help="the shape of a known API (sheaf presets lists them)")
    shape.add_argument("--paging", metavar="KIND",
                       help="detect, single, next, page:NAME, offset:NAME or cursor:NAME")
    shape.add_argument("--page-param", metavar="NAME", help="the same as --paging page:NAME")
    shape.add_argument("--first", "--first-page", dest="first", metavar="N", type=_non_negative,
                       help="the first page number or offset")
    shape.add_argument("--size-param", metavar="NAME",
                       help="query parameter carrying the page size (e.g. per_page, limit)")
    shape.add_argument("--page-size", metavar="N", type=_positive,
                       help="items per page to ask for (with --size-param, or a preset that names one)")
    for flag, what in (("--items", "the array of items"), ("--next", "the next page"),
                       ("--cursor", "the cursor (with --paging cursor:NAME)"), ("--total", "the total item count"),
                       ("--page-count", "the number of pages"), ("--has-more", "true while more pages follow"),
                       ("--is-last", "true on the last page")):
        shape.add_argument(flag, metavar="SRC", help=what + ": /POINTER, header:NAME, link:REL, last-item:/POINTER or none")
    shape.add_argument("--id", metavar="PTR",
                       help="JSON pointer to each item's identity; repeats are dropped")

    limits = get.add_argument_group("fetching")
    limits.add_argument("--concurrency", metavar="N", type=_positive,
                        help="pages in flight at once, 1-64 (default 8)")
    limits.add_argument("--max-items", metavar="N", type=_positive,
                        help="stop after N items (exit status 0)")
    limits.add_argument("--max-pages", metavar="N", type=_positive,
                        help="fail when the list needs more than N pages (default 10000)")
    limits.add_argument("--timeout", metavar="S", type=_seconds,
                        help="seconds allowed per request, 0 for no limit (default 30)")
    limits.add_argument("--max-attempts", metavar="N", type=_positive,
                        help="attempts per request, retries of 5xx, 429, timeouts and "
                             "connection failures included (default 4; 1 = no retries)")

    output = get.add_argument_group("output")
    output.add_argument("--format", choices=("jsonl", "json"), default="jsonl",
                        help="jsonl: one compact JSON item per line (default); json: one array")
    output.add_argument("-o", "--output", metavar="FILE",
                        help="write the items to FILE instead of stdout")
    output.add_argument("--quiet", "-q", action="store_true",
                        help="no progress line (errors are still reported)")
    get.set_defaults(handler=_get, subparser=get)

    presets = commands.add_parser("presets", help="list the presets (known APIs' shapes)",
                                  description="List the presets: each pins the shape of a known API's lists.")
    presets.set_defaults(handler=_presets, subparser=presets)
    return parser


# ---- output --------------------------------------------------------------------------------

def _dump(item: Any) -> bytes:
    try:
        return json.dumps(item, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (a legal \\ud800 escape): keep it escaped
        return json.dumps(item, separators=(",", ":")).encode("ascii")


class ItemWriter:
    """Writes items as JSON lines or as one JSON array, flushing after every batch."""

    def __init__(self, out: BinaryIO, fmt: str) -> None:
        self.out = out
        self.fmt = fmt
        self.count = 0
        self.opened = False
        self.closed = False

    def write(self, items: Iterable[Any]) -> None:
        chunks: List[bytes] = []
        if self.fmt == "jsonl":
            for item in items:
                chunks.append(_dump(item))
                chunks.append(b"\n")
                self.count += 1
        else:
            for item in items:
                chunks.append(b",\n" if self.opened else b"[\n")
                self.opened = True
                chunks.append(_dump(item))
                self.count += 1
        if chunks:
            self.out.write(b"".join(chunks))
            self.out.flush()

    def close(self) -> None:
        """Ends the output (closes the JSON array); idempotent."""
        if self.closed:
            return
        self.closed = True
        if self.fmt == "json":
            self.out.write(b"\n]\n" if self.opened else b"[]\n")
        self.out.flush()


# ---- running -------------------------------------------------------------------------------

def _split_url(parser: argparse.ArgumentParser, url: str):
    try:
        parts = urlsplit(url)
        parts.port  # raises ValueError for a bad port
    except ValueError as e:
        parser.error(f"bad URL {url!r}: {e}")
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        parser.error(f"bad URL {url!r}: expected http(s)://host[:port]/path[?query]")
    if parts.username is not None or parts.password is not None:
        parser.error("credentials in the URL are not supported: use --token or $" + TOKEN_ENV)
    base = f"{parts.scheme.lower()}://{parts.netloc}"
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return base, path


def _list_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict:
    """The description's parts and the other list options given on the command line."""
    paging = args.paging
    if args.page_param is not None:
        if paging is not None:
            parser.error("--page-param and --paging are the same option: give one")
        paging = "page:" + args.page_param
    options = {"preset": args.preset, "paging": paging, "first": args.first, "size_param": args.size_param,
               "page_size": args.page_size, "items": args.items, "next": args.next, "cursor": args.cursor,
               "total": args.total, "page_count": args.page_count, "has_more": args.has_more,
               "is_last": args.is_last, "id": args.id}
    if args.size_param is not None and args.page_size is None:
        parser.error("--size-param needs --page-size")
    if args.first is not None and paging is None and args.preset is None:
        parser.error("--first needs --paging (or --page-param, or a preset)")
    if args.page_size is not None and args.size_param is None and args.preset is None:
        parser.error("--page-size needs --size-param (the query parameter that carries it) or a preset")
    if args.max_items is not None:
        options["max_items"] = args.max_items
    return {name: value for name, value in options.items() if value is not None}


def _client_options(args: argparse.Namespace) -> dict:
    options = {}
    for name in ("concurrency", "max_pages", "timeout", "max_attempts"):
        value = getattr(args, name)
        if value is not None:
            options[name] = value
    if options.get("timeout") == 0:
        options["timeout"] = None  # no limit
    return options


def _one_line(text: str, token: Optional[str]) -> str:
    if token:
        text = text.replace(token, "***")
    return " ".join(str(text).split()) or "unknown error"


def _exit_status(api, error: BaseException) -> int:
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
    return EXIT_FAILURE


def _error_message(api, error: BaseException, token: Optional[str]) -> str:
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
    return _one_line(message, token)


def _install_sigint() -> None:
    """Ctrl-C raises KeyboardInterrupt once (to cancel the list cleanly); a second one kills."""
    def on_sigint(signum, frame):
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        raise KeyboardInterrupt

    try:
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, on_sigint)
    except (ValueError, OSError):  # not the main thread
        pass


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _error(text: str) -> None:
    try:
        sys.stderr.write(f"{PROG}: {text}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _load_api(token: Optional[str]):
    """The sheaf package, or None (the reason printed) when the library cannot be loaded."""
    try:
        import sheaf as api
        api.Client  # the library loads here at the latest
        return api
    except (ImportError, OSError, AttributeError) as e:
        _error(f"cannot load the Sheaf library: {_one_line(str(e), token)} "
               "(set SHEAF_LIBRARY_PATH to libsheaf.so.0)")
        return None


def _presets(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    api = _load_api(None)
    if api is None:
        return EXIT_FAILURE
    known = api.presets()
    width = max(map(len, known), default=0)
    for name, (summary, description) in known.items():
        sys.stdout.write(f"{name:<{width}}  {summary}\n{'':<{width}}  {' '.join(description.flags())}\n")
    return EXIT_OK


def _explain(api, args: argparse.Namespace, base: str, path: str, token: Optional[str],
             list_options: dict, client_options: dict) -> int:
    list_options = {name: value for name, value in list_options.items() if name != "max_items"}
    try:
        with api.Client(base, token, **client_options) as client:
            explained = client.explain(path, **list_options)
    except api.Error as e:
        _error(_error_message(api, e, token))
        return _exit_status(api, e)
    sys.stdout.write(explained.command_line(args.url) + "\n")
    detected = ", ".join(explained.detected) or "nothing"
    sys.stdout.write(f"plan: {explained.plan or 'unknown'}; detected: {detected}\n")
    return EXIT_OK


def _get(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    base, path = _split_url(parser, args.url)
    client_options = _client_options(args)
    token = args.token if args.token is not None else os.environ.get(TOKEN_ENV)
    token = token or None
    api = _load_api(token)
    if api is None:
        return EXIT_FAILURE
    list_options = _list_options(parser, args)
    if args.explain:
        return _explain(api, args, base, path, token, list_options, client_options)

    if args.output:
        try:
            out = open(args.output, "wb")
        except OSError as e:
            _error(f"cannot write {args.output}: {e.strerror or e}")
            return EXIT_FAILURE
    else:
        out = sys.stdout.buffer
    writer = ItemWriter(out, args.format)
    progress = Progress(sys.stderr, enabled=not args.quiet and _isatty(sys.stderr))
    shares_terminal = progress.enabled and not args.output and _isatty(sys.stdout)

    def emit(items) -> None:
        if items:
            if shares_terminal:
                progress.clear()
            writer.write(items)

    status, message, note = EXIT_OK, None, ""
    try:
        try:
            with api.Client(base, token, **client_options) as client:
                progress.start_waiting()
                snapshots = client.stream(path, **list_options)
                try:
                    for snapshot in snapshots:
                        emit(snapshot.items)
                        progress.update(snapshot, force=shares_terminal and bool(snapshot.items))
                finally:
                    close = getattr(snapshots, "close", None)
                    if close is not None:
                        close()
            if args.max_items is not None and writer.count >= args.max_items:
                note = "--max-items reached"
        except api.Error as e:
            # A stream's error carries no items (they were all yielded already); should it ever
            # carry the delivered prefix, write the part not written yet.
            delivered = list(getattr(e, "items", None) or ())
            if len(delivered) > writer.count:
                emit(delivered[writer.count:])
            status, message = _exit_status(api, e), _error_message(api, e, token)
            note = "failed"
        except KeyboardInterrupt:
            status, message, note = EXIT_INTERRUPTED, "interrupted", "interrupted"
        finally:
            writer.close()
    except BrokenPipeError:
        # The reader went away (`sheaf get ... | head`): stop quietly; nothing more to write.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, out.fileno())
        except (OSError, ValueError):
            pass
        progress.clear()
        return EXIT_OK
    except OSError as e:
        progress.finish("failed")
        _error(f"cannot write the items: {e.strerror or e}")
        return EXIT_FAILURE
    finally:
        if args.output:
            try:
                out.close()
            except OSError:
                pass

    progress.finish(note)
    if message is not None:
        _error(message)
    return status


def main(argv: Optional[Sequence[str]] = None) -> int:
    _Parser.secrets = _probable_secrets(list(sys.argv[1:] if argv is None else argv))
    parser = build_parser()
    args = parser.parse_args(argv)
    _install_sigint()
    try:
        return args.handler(args.subparser, args)
    except KeyboardInterrupt:
        _error("interrupted")
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
