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
from typing import Any, BinaryIO, Iterable, List, Optional, Sequence
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

# --shape presets: the list options they fill in. Explicit flags override them.
SHAPES = {
    "anchor": {"items": "/items", "next": "/next_page", "total": "/total",
               "page_param": "page", "size_param": "per_page"},
    "drf": {"items": "/results", "next": "/next", "total": "/count",
            "page_param": "page", "size_param": "page_size"},
    "array": {"items": "", "page_param": "page", "size_param": "per_page"},
}

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
       the items disagree with the server's total; a next link loops, leaves the URL's origin,
       or the walk exceeds --max-pages; a body exceeds the size cap
  130  interrupted (Ctrl-C); the list is cancelled
  On a failure, the items that arrived before it have already been written (with --format
  json the array is still closed, so the output stays valid JSON); one line
  "sheaf: <message>" goes to stderr. The token never appears in any message."""

GET_EPILOG = """\
describing a list:
  A list endpoint returns its items in pages. Sheaf needs to know where the items are in a page,
  how page k is asked for, and where the next link and the total are. Locations are JSON
  pointers (RFC 6901): "/items", "/data/results"; "" means the body itself is the array.

    --items PTR         the array of items in each page (default "": the body is the array)
    --next PTR          the next page's URL, absolute or relative; null or missing at the end
    --total PTR         the total number of items, as the server reports it
    --id PTR            an identity inside each item ("/id"); repeated items are dropped, the
                        first one wins (pages that shift while they are read repeat items)
    --page-param NAME   page k is asked for as ?NAME=k, counting from --first-page (default 1)
    --size-param NAME   with --page-size N: ask for N items per page as ?NAME=N (servers may
                        send fewer; Sheaf plans with the size the server actually returned)
    --shape anchor|drf|array
                        fill in the options above for a common shape (below); explicit flags
                        override it

  With --page-param, the pages are fetched --concurrency at a time and written in order as they
  complete: with --total the first page tells Sheaf how many there are; without it, pages are
  asked for ahead and the first that says it is the last (no next link, or without --next a page
  shorter than the first, empty or 404) ends the list. With only --next the links are walked one
  page at a time, with a loop guard and a page cap (--max-pages).
  Items are written as they arrive: one compact JSON value per line (--format jsonl, the
  default) or one JSON array (--format json). The URL's own query parameters are kept on every
  page. A bearer token comes from --token or, better (other users cannot see it in the process
  list), from the SHEAF_TOKEN environment variable; it is sent only to the URL's own origin.

examples:
  1. Pages like {"items": [...], "next_page": "https://.../things?page=2", "total": 1234},
     asked for with ?page=N&per_page=S:

       sheaf get 'https://api.example.com/v1/things' --items /items --next /next_page \\
           --total /total --page-param page --size-param per_page --page-size 100 --id /id

     or, the same with the preset:   sheaf get URL --shape anchor --page-size 100 --id /id

  2. Django REST framework: {"count": 1234, "next": "...?page=2", "previous": null,
     "results": [...]}, asked for with ?page=N&page_size=S:

       sheaf get 'https://api.example.com/v1/things/' --items /results --next /next \\
           --total /count --page-param page --size-param page_size --page-size 100

     or:   sheaf get URL --shape drf --page-size 100

  3. Each page is a bare JSON array, asked for with ?page=N (0-based here); there is no total,
     so pages are read a window ahead until one comes back empty or shorter than the first:

       sheaf get 'https://api.example.com/v1/things?sort=id' --page-param page --first-page 0

  4. Only a next link (a cursor API): {"data": [...], "links": {"next": "/v1/things?after=X"}}

       sheaf get 'https://api.example.com/v1/things' --items /data --next /links/next

  5. The first 500 items, as one JSON array in a file, with a token, no progress line:

       SHEAF_TOKEN=... sheaf get URL --shape anchor --max-items 500 --format json \\
           -o things.json --quiet

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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
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

    shape = get.add_argument_group("pagination (see 'describing a list' below)")
    shape.add_argument("--shape", choices=sorted(SHAPES),
                       help="preset for a common shape: anchor = --items /items --next /next_page "
                            "--total /total --page-param page --size-param per_page; drf = "
                            "--items /results --next /next --total /count --page-param page "
                            "--size-param page_size; array = --page-param page --size-param "
                            "per_page (the size parameters only with --page-size)")
    shape.add_argument("--items", metavar="PTR",
                       help='JSON pointer to the array of items in a page (default "": the '
                            "body is the array)")
    shape.add_argument("--next", metavar="PTR",
                       help="JSON pointer to the next page's URL (null at the end)")
    shape.add_argument("--total", metavar="PTR",
                       help="JSON pointer to the total item count")
    shape.add_argument("--id", metavar="PTR",
                       help="JSON pointer to each item's identity; repeats are dropped")
    shape.add_argument("--page-param", metavar="NAME",
                       help="query parameter carrying the page number (e.g. page)")
    shape.add_argument("--first-page", metavar="N", type=_non_negative,
                       help="number of the first page (default 1)")
    shape.add_argument("--size-param", metavar="NAME",
                       help="query parameter carrying the page size (e.g. per_page, page_size)")
    shape.add_argument("--page-size", metavar="N", type=_positive,
                       help="items per page to ask for (with --size-param or --shape)")

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
    preset = dict(SHAPES.get(args.shape or "", {}))
    explicit = {name: getattr(args, name) for name in
                ("items", "next", "total", "id", "page_param", "size_param")}
    if args.size_param is not None and args.page_size is None:
        parser.error("--size-param needs --page-size")
    if args.page_size is not None and args.size_param is None and "size_param" not in preset:
        parser.error("--page-size needs --size-param (the query parameter that carries it) "
                     "or --shape")
    if args.page_size is None:
        preset.pop("size_param", None)  # the server's default page size
    options = {**preset, **{k: v for k, v in explicit.items() if v is not None}}
    if options.get("page_param") is None:
        for flag, value in (("--first-page", args.first_page), ("--size-param", args.size_param),
                            ("--page-size", args.page_size)):
            if value is not None:
                parser.error(f"{flag} needs --page-param (or --shape)")
        options.pop("size_param", None)
    if args.first_page is not None:
        options["first_page"] = args.first_page
    if options.get("size_param") is not None:
        options["page_size"] = args.page_size
    if args.max_items is not None:
        options["max_items"] = args.max_items
    options.setdefault("items", "")
    return options


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
    elif (getattr(error, "code", None) == getattr(getattr(api, "Result", None), "BAD_PAGE", -1)
          and "not valid JSON" not in message):
        # The page is JSON, but the items / next / total are not where the options say.
        message += " (check --items / --next / --total, or --shape)"
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


def _get(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    base, path = _split_url(parser, args.url)
    list_options = _list_options(parser, args)
    client_options = _client_options(args)
    token = args.token if args.token is not None else os.environ.get(TOKEN_ENV)
    token = token or None

    try:
        import sheaf as api
        api.Client  # the library loads here at the latest
    except (ImportError, OSError, AttributeError) as e:
        _error(f"cannot load the Sheaf library: {_one_line(str(e), token)} "
               "(set SHEAF_LIBRARY_PATH to libsheaf.so.0)")
        return EXIT_FAILURE

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
