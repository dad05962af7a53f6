"""The `sheaf` command-line tool: fetch a whole paginated list, item by item, as it arrives,
or make one request.

    sheaf get URL [options]          (also: python3 -m sheaf get URL ...)
    sheaf request [-X METHOD | METHOD] URL [--json JSON|@FILE] [--form NAME=VALUE ...] [options]
    sheaf download URL -o FILE [options]
    sheaf completion bash|zsh        (a script for the shell to source)

`sheaf get --help` explains the options, with worked examples. The console-script entry point
is `sheaf.cli:main`.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import errno
import io
import json
import os
import re
import shlex
import signal
import sys
from typing import Any, List, NamedTuple, Optional, Sequence, Tuple
from urllib.parse import urlsplit

from ._progress import Progress

__all__ = ["main", "build_parser", "EXIT_OK", "EXIT_FAILURE", "EXIT_USAGE", "EXIT_HTTP",
           "EXIT_NETWORK", "EXIT_BAD_PAGE", "EXIT_DEADLINE", "EXIT_INTERRUPTED"]

PROG = "sheaf"
TOKEN_ENV = "SHEAF_TOKEN"
LOG_ENV = "SHEAF_LOG"

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_HTTP = 3
EXIT_NETWORK = 4
EXIT_BAD_PAGE = 5
EXIT_DEADLINE = 6

#: The options of a run of a list, not of its description (``--explain`` ignores them).
RUN_OPTIONS = ("max_items", "max_pages", "max_requests", "deadline", "resume")
EXIT_INTERRUPTED = 130

EXIT_STATUS_TEXT = """\
exit status:
  0    the whole list was written, or the part --max-items, --max-pages or --max-requests
       asked for (then "sheaf: to go on: --resume TOKEN" on stderr)
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
       a next link loops, leaves the URL's origin, or the walk exceeds the page cap (10,000);
       pages repeat; a body exceeds the size cap
  6    the list did not end within --deadline
  130  interrupted (Ctrl-C); the list is cancelled
  On a failure, the items that arrived before it have already been written to stdout (with
  --format json the array is still closed, so the output stays valid JSON), and stderr says
  how to go on after them: "sheaf: to go on: --resume TOKEN" (the same command with that
  option writes the rest, no item twice or missing). A file named with -o is replaced only by a
  run that succeeds (written under a temporary name, then renamed), so a failed run leaves the
  old file as it was, and prints no token. One line "sheaf: <message>" goes to stderr, with
  the server's own error text when it gave one. No credential ever appears in any message."""

REQUEST_EPILOG = """\
examples:
  sheaf request https://api.example.com/v1/things/42
  sheaf request -X POST https://api.example.com/v1/things --json '{"name": "x"}'
  sheaf request -X POST https://api.example.com/v1/things --json @thing.json
  sheaf request -X PUT https://api.example.com/v1/form --form name=x --form tag=a --form tag=b
  sheaf request -X DELETE https://api.example.com/v1/things/42 -H 'If-Match: "abc"'
  sheaf request PATCH https://api.example.com/v1/things/42 --json '{"name": "y"}'   (the method
                                                 may come first, as in HTTPie, instead of -X)

  The response body goes to stdout (or -o FILE, replaced only on success); -i also prints the
  status line and headers to stderr. A failing status prints the body too, and exits 3 with
  the server's own error fields in the message. POST and PATCH are not retried unless --retry
  is given or the request carries an Idempotency-Key header.

""" + EXIT_STATUS_TEXT

COMPLETION_EPILOG = """\
examples:
  source <(sheaf completion bash)                 in ~/.bashrc
  sheaf completion bash > ~/.local/share/bash-completion/completions/sheaf
  source <(sheaf completion zsh)                  in ~/.zshrc, after compinit
  sheaf completion zsh > ~/.zfunc/_sheaf          with ~/.zfunc in $fpath, before compinit

  The script is made from the command's own options, so it is as new as the sheaf that wrote
  it: write it again after an upgrade. The presets it offers are the library's."""

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

  Or all of it at once, in the JSON form the library prints (include/sheaf/description.schema.json),
  from a FILE or inline when it starts with "{"; the flags above override its parts (--paging
  its whole paging, as "kind" does in the JSON). --explain
  --format json prints the description of what was detected in that form, to save and reuse:

    sheaf get 'https://api.example.com/v1/things' --explain --format json > things.json
    sheaf get 'https://api.example.com/v1/things' --description things.json
    sheaf get 'https://api.example.com/v1/things' --description '{"preset": "github"}' --page-size 50

output formats:
  jsonl  one item per line, the bytes the server sent (the default)
  json   one array, an item per line
  csv    with --fields: a header row of the fields' names (each pointer without its leading
         "/": number,user/login,labels/0/name), then a row per item: strings as they are,
         numbers and booleans as JSON text (42, true), null or missing as an empty cell,
         objects and arrays as compact JSON; rows end with CRLF (RFC 4180). With --resume there
         is no header row, so that the rest appends to the first part.
  --fields PTR,PTR,... (JSON pointers, RFC 6901: /id, /user/login, /labels/0/name, /a~1b for
  the key "a/b") with jsonl or json writes each item as an object of those fields instead,
  keyed by the same names: {"id":1,"owner/name":"x"}, null for a missing one.
  Without --fields, the library writes the items as the pages brought them, nothing decoded
  in Python; csv and --fields decode each item in Python, which is slower on long lists.

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

  5. A table of each issue's number, author and first label:

       sheaf get 'https://api.github.com/repos/OWNER/REPO/issues' --preset github \\
           --format csv --fields /number,/user/login,/labels/0/name -o issues.csv

  6. Only some fields of each item, still as JSON lines:

       sheaf get 'https://api.example.com/v1/things' --fields /id,/owner/name

  On a terminal a progress line on stderr shows the items and pages so far (of the expected
  totals, when known), the requests in flight, the rate and an ETA; on a narrow terminal the
  other parts give way first, the item count, the rate and the ETA last. It is left out when
  stderr is not a terminal, and with --quiet.

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

FORMATS = ("jsonl", "json", "csv")


class Field(NamedTuple):
    """One of --fields: its name (the pointer without its leading "/") and the pointer's keys."""

    name: str
    keys: Tuple[str, ...]


def _fields(text: str) -> List[Field]:
    """--fields: comma-separated JSON pointers (RFC 6901)."""
    fields: List[Field] = []
    for pointer in text.split(","):
        if not pointer.startswith("/"):
            raise argparse.ArgumentTypeError(
                f"{pointer!r} is not a JSON pointer: each field starts with '/' (/id, /user/login)")
        if re.search("~(?![01])", pointer):
            raise argparse.ArgumentTypeError(f"{pointer!r}: in a JSON pointer '~' is written ~0 and '/' in a key ~1")
        if any(field.name == pointer[1:] for field in fields):
            raise argparse.ArgumentTypeError(f"{pointer} is named twice")
        keys = tuple(key.replace("~1", "/").replace("~0", "~") for key in pointer[1:].split("/"))
        fields.append(Field(pointer[1:], keys))
    return fields


# A method named before the URL (`sheaf request PATCH URL`): a token, never a URL.
_HTTP_METHOD = re.compile(r"[A-Za-z]+")


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose error messages never repeat a secret: a mistyped flag
    (``--tokn T``) made argparse print its value in "unrecognized arguments"."""

    secrets: Tuple[str, ...] = ()

    def error(self, message: str):  # type: ignore[override]
        for secret in sorted(_Parser.secrets, key=len, reverse=True):
            message = message.replace(secret, "***")
        super().error(message)


class _PrintVersions(argparse.Action):
    """--version: the package's version and the library's, which may differ (SHEAF_LIBRARY_PATH
    can name any build). Still answers when the library cannot be loaded: that is when the
    question gets asked."""

    def __init__(self, option_strings: Sequence[str], dest: str, **options: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **options)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from . import __version__

        try:
            import sheaf as api
            library = f"libsheaf {api.library_version()} ({api.library_path})"
        except (ImportError, OSError, AttributeError):
            library = "libsheaf: not found (set SHEAF_LIBRARY_PATH to libsheaf.so.0)"
        sys.stdout.write(f"{PROG} {__version__}\n{library}\n")
        parser.exit()


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


def _unrecognized(arguments: Sequence[str]) -> str:
    """The error for arguments no option took: options by name, anything else only counted. A
    value where none was expected is often a secret (`sheaf get URL TOKEN`), and so is the value
    of an option mistyped with '=' (`--bearer=TOKEN`)."""
    names = [argument.split("=", 1)[0] + ("=***" if "=" in argument else "")
             for argument in arguments if argument.startswith("-") and argument != "-"]
    values = len(arguments) - len(names)
    if values:
        names.append(("one value" if values == 1 else f"{values} values") + " (not shown: it may be a secret)")
    return "unrecognized arguments: " + " and ".join(names)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Fetch a whole paginated REST list, pages in parallel where the API allows,\n"
                    "and write its items in order as they arrive.",
        epilog="Run 'sheaf get --help' for the options and worked examples.\n\n"
               + EXIT_STATUS_TEXT,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=_PrintVersions, help="print the versions of sheaf and libsheaf, and exit")
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

    _add_connection_options(get)

    shape = get.add_argument_group("pagination (detected when not given: see 'describing a list' below)")
    shape.add_argument("--explain", action="store_true",
                       help="fetch the first page only and print what was detected, as the flags "
                            "that pin it, and the plan (with --format json: as the description JSON "
                            "--description takes)")
    shape.add_argument("--description", metavar="FILE|JSON",
                       help="the whole description in the library's JSON form, from FILE or inline "
                            "(starting with '{'); the flags below override its parts")
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
                        help="pages in flight at once, 1-64 (default 8): where the window starts; it then "
                             "grows while the server keeps up and shrinks when it slows or refuses")
    limits.add_argument("--max-concurrency", metavar="N", type=_positive,
                        help="the most pages the window lets in flight, 1-64 (default 64)")
    limits.add_argument("--fixed-window", action="store_true",
                        help="keep --concurrency pages in flight; do not adapt")
    limits.add_argument("--max-items", metavar="N", type=_positive,
                        help="stop after N items (exit status 0)")
    limits.add_argument("--max-pages", metavar="N", type=_positive,
                        help="stop after N pages (exit status 0; stderr says how to go on)")
    limits.add_argument("--max-requests", metavar="N", type=_positive,
                        help="send at most N requests, retries included (exit status 0; stderr says how to go on)")
    limits.add_argument("--deadline", metavar="S", type=_seconds,
                        help="end the list after S seconds, whatever is in flight (exit status 6)")
    limits.add_argument("--resume", metavar="TOKEN",
                        help="go on where an earlier run of this same command stopped (its stderr gave TOKEN)")
    _add_retry_options(limits)

    output = get.add_argument_group("output")
    output.add_argument("--format", choices=FORMATS, default="jsonl",
                        help="jsonl: one JSON item per line, as the server sent it (default); json: one array; "
                             "csv: a row per item (needs --fields); see 'output formats' below")
    output.add_argument("--fields", metavar="PTR,PTR,...", type=_fields,
                        help="JSON pointers of the item's fields to write: the columns of csv; with jsonl "
                             "or json, objects of those fields instead of the whole items")
    output.add_argument("-o", "--output", metavar="FILE",
                        help="write the items to FILE instead of stdout (-: stdout)")
    output.add_argument("--quiet", "-q", action="store_true",
                        help="no progress line (errors are still reported)")
    get.set_defaults(handler=_get, subparser=get)

    request = commands.add_parser(
        "request", help="make one request (any method, a JSON or form body)",
        description="Make one HTTP request to URL and write the response body to stdout.",
        epilog=REQUEST_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    request.add_argument("url", metavar="URL", help="the full URL, query included")
    request.add_argument("-X", "--method", default=None, metavar="METHOD",
                         help="GET (default; POST with a body), POST, PUT, PATCH, DELETE, HEAD, OPTIONS, ...")
    body = request.add_argument_group("body (one of)")
    body.add_argument("--json", metavar="JSON|@FILE", help="a JSON body, given inline or read from FILE")
    body.add_argument("--form", metavar="NAME=VALUE", action="append", default=[],
                      help="a form field (repeatable): application/x-www-form-urlencoded")
    body.add_argument("--data", metavar="TEXT|@FILE", help="a raw body, inline or read from FILE")
    body.add_argument("--content-type", metavar="TYPE", help="the raw body's type (default application/octet-stream)")
    _add_connection_options(request)
    sending = request.add_argument_group("sending")
    sending.add_argument("--retry", action="store_true",
                         help="retry transient failures even for POST and PATCH")
    _add_retry_options(sending)
    out = request.add_argument_group("output")
    out.add_argument("-o", "--output", metavar="FILE", help="write the body to FILE (replaced only on success; -: stdout)")
    out.add_argument("-i", "--include", action="store_true", help="print the status line and headers to stderr")
    request.set_defaults(handler=_request, subparser=request)

    download = commands.add_parser(
        "download", help="download a file (streamed to disk, renamed into place when complete)",
        description="Download URL into FILE: the body is streamed to .FILE.sheaf-XXXXXX and renamed over\n"
                    "FILE only when all of it has arrived; a broken transfer resumes with Range\n"
                    "where the server allows it. On a terminal a progress line shows the bytes.",
        epilog=EXIT_STATUS_TEXT, formatter_class=argparse.RawDescriptionHelpFormatter)
    download.add_argument("url", metavar="URL", help="the file's full URL, query included")
    download.add_argument("-o", "--output", metavar="FILE", required=True,
                          help="where to write it (folders are created)")
    download.add_argument("--quiet", "-q", action="store_true", help="no progress line")
    _add_connection_options(download)
    _add_retry_options(download.add_argument_group("fetching"))
    download.set_defaults(handler=_download, subparser=download)

    presets = commands.add_parser("presets", help="list the presets (known APIs' shapes)",
                                  description="List the presets: each pins the shape of a known API's lists.")
    presets.set_defaults(handler=_presets, subparser=presets)

    completion = commands.add_parser(
        "completion", help="print a shell completion script (bash or zsh)",
        description="Print a script that makes the shell complete sheaf's commands, their flags and\n"
                    "the flags' values (formats, presets, files).",
        epilog=COMPLETION_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    completion.add_argument("shell", choices=("bash", "zsh"), help="the shell to complete in")
    completion.set_defaults(handler=_print_completion, subparser=completion)
    return parser


def _add_connection_options(parser: argparse.ArgumentParser) -> None:
    """Credentials, headers, query and TLS: the options every command that connects has."""
    auth = parser.add_argument_group("authentication (sent only to URL's origin, never shown in messages)")
    auth.add_argument("--token", metavar="T",
                      help=f"bearer token (default: ${TOKEN_ENV}, which keeps it out of the process list)")
    auth.add_argument("--basic", metavar="USER:PASSWORD", help="HTTP Basic credentials")
    auth.add_argument("--api-key", metavar="NAME=VALUE", help="an API key in the request header NAME")
    auth.add_argument("--api-key-param", metavar="NAME=VALUE", help="an API key in the query parameter NAME")
    http = parser.add_argument_group("headers, query and TLS")
    http.add_argument("-H", "--header", metavar="'NAME: VALUE'", action="append", default=[],
                      help="a request header (repeatable)")
    http.add_argument("--query", metavar="NAME=VALUE", action="append", default=[],
                      help="a query parameter added to URL (repeatable)")
    http.add_argument("--cacert", metavar="FILE|DIR", help="trust these CAs (PEM) instead of the system's")
    http.add_argument("--cert", metavar="FILE", help="client certificate (PEM) for mutual TLS")
    http.add_argument("--key", metavar="FILE", help="the client certificate's private key (PEM)")
    http.add_argument("--insecure", "-k", action="store_true",
                      help="do not verify the server's certificate (self-signed test servers only)")
    version = http.add_mutually_exclusive_group()
    version.add_argument("--http1.1", dest="http_version", action="store_const", const="1.1",
                         help="HTTP/1.1 only (default: HTTP/2 where TLS offers it, the window over one connection)")
    version.add_argument("--http2-prior-knowledge", dest="http_version", action="store_const", const="2",
                         help="HTTP/2 on http:// too, without asking first (h2c, for servers known to speak it)")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help=f"log to stderr: -v one line per request, retry and plan, -vv also redirects "
                             f"(default: ${LOG_ENV}: info or debug); credentials never appear")


def _add_retry_options(group) -> None:
    group.add_argument("--timeout", metavar="S", type=_seconds,
                       help="seconds allowed per request, 0 for no limit (default 30)")
    group.add_argument("--max-attempts", metavar="N", type=_positive,
                       help="attempts per request, retries of 5xx, 429, timeouts and "
                            "connection failures included (default 4; 1 = no retries)")


def _pair(parser: argparse.ArgumentParser, text: str, separator: str, flag: str) -> Tuple[str, str]:
    name, found, value = text.partition(separator)
    if not found or not name.strip():
        parser.error(f"{flag} expects NAME{separator.strip() or separator}VALUE, not {text!r}")
    return name.strip(), value.strip() if separator == ":" else value


# ---- output --------------------------------------------------------------------------------

def check_replaceable(path: str) -> Optional[int]:
    """Refuses to replace what is not a regular file (a device, a FIFO, a socket, a directory):
    as root, `-o /dev/null` would otherwise replace /dev/null. A symbolic link is replaced itself,
    unless it leads to one of those (the library's download follows the same rule). Returns the
    permission bits of the regular file there, which the new one takes, or None."""
    import stat

    try:
        status = os.lstat(path)
    except OSError:
        return None   # nothing there, or no way to tell: creating the file will say
    through = ""
    if stat.S_ISLNK(status.st_mode):
        try:
            status = os.stat(path)
        except OSError:
            return None   # a dangling link: replaced
        if stat.S_ISREG(status.st_mode):
            return None
        through = " (through a symbolic link)"
    if stat.S_ISREG(status.st_mode):
        return status.st_mode & 0o777
    kind = ("directory" if stat.S_ISDIR(status.st_mode) else "character device" if stat.S_ISCHR(status.st_mode)
            else "block device" if stat.S_ISBLK(status.st_mode) else "FIFO" if stat.S_ISFIFO(status.st_mode)
            else "socket" if stat.S_ISSOCK(status.st_mode) else "special file")
    message = f"it is a {kind}{through}, not a regular file (-o - writes to stdout)"
    if kind == "directory":
        raise IsADirectoryError(21, message, path)
    raise OSError(0, message, path)


class AtomicFile:
    """A file written under a temporary name beside `path` and renamed over it by `commit`;
    `discard` (or a run that never commits) leaves whatever was at `path` untouched."""

    def __init__(self, path: str) -> None:
        import tempfile

        self.path = path
        folder = os.path.dirname(os.path.abspath(path))
        mode = check_replaceable(path)
        descriptor, self.temporary = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".part", dir=folder)
        if mode is None:   # a new file: 0666 less the umask, not mkstemp's 0600
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.fchmod(descriptor, mode)
        self.file = os.fdopen(descriptor, "wb")

    def commit(self) -> None:
        self.file.close()
        check_replaceable(self.path)   # again: whatever came to stand there meanwhile
        os.replace(self.temporary, self.path)

    def discard(self) -> None:
        try:
            self.file.close()
        finally:
            try:
                os.unlink(self.temporary)
            except FileNotFoundError:
                pass


class FieldWriter:
    """Items written from Python, decoded: a csv row per item, or with jsonl or json an object of
    --fields per item (the library's own writer only copies whole items)."""

    def __init__(self, out, format: str, fields: List[Field], header: bool) -> None:
        self.out = out
        self.format = format
        self.fields = fields
        self.header = header
        self.count = 0

    def start(self) -> None:
        if self.format == "csv" and self.header:
            self._write_rows([[field.name for field in self.fields]])
        elif self.format == "json":
            self._write("[")

    def add(self, items: List[Any]) -> None:
        if not items:
            return
        if self.format == "csv":
            self._write_rows([[_cell(_lookup(item, field.keys)) for field in self.fields] for item in items])
        else:
            objects = [_compact({field.name: _lookup(item, field.keys) for field in self.fields}) for item in items]
            if self.format == "json":
                self._write((",\n" if self.count else "\n") + ",\n".join(objects))
            else:
                self._write("".join(line + "\n" for line in objects))
        self.count += len(items)

    def finish(self) -> None:
        if self.format == "json":
            self._write("\n]\n" if self.count else "]\n")

    def _write_rows(self, rows: List[List[str]]) -> None:
        text = io.StringIO()
        csv.writer(text).writerows(rows)
        self._write(text.getvalue())

    def _write(self, text: str) -> None:
        self.out.write(text.encode("utf-8"))
        self.out.flush()   # each snapshot's items go out as they arrive, as the library's do


def _lookup(item: Any, keys: Tuple[str, ...]) -> Any:
    """The value at a JSON pointer's keys in `item`, None where it leads nowhere."""
    for key in keys:
        if isinstance(item, dict):
            item = item.get(key)
        elif isinstance(item, list) and re.fullmatch("0|[1-9][0-9]*", key) and int(key) < len(item):
            item = item[int(key)]
        else:
            return None
    return item


def _cell(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else _compact(value)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


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
    described = _description_text(parser, args.description)
    options = {"json": described, "preset": args.preset, "paging": paging, "first": args.first, "size_param": args.size_param,
               "page_size": args.page_size, "items": args.items, "next": args.next, "cursor": args.cursor,
               "total": args.total, "page_count": args.page_count, "has_more": args.has_more,
               "is_last": args.is_last, "id": args.id}
    # Without --description the flags alone must make sense; with it, the library judges the whole.
    if args.first is not None and paging is None and args.preset is None and described is None:
        parser.error("--first needs --paging (or --page-param, or a preset)")
    if args.page_size is not None and args.size_param is None and args.preset is None and described is None:
        parser.error("--page-size needs --size-param (the query parameter that carries it) or a preset")
    for name in RUN_OPTIONS:
        if getattr(args, name) is not None:
            options[name] = getattr(args, name)
    if options.get("deadline") == 0:
        parser.error("--deadline needs a positive number of seconds")
    return {name: value for name, value in options.items() if value is not None}


def _description_text(parser: argparse.ArgumentParser, value: Optional[str]) -> Optional[str]:
    """--description: inline JSON when it starts with "{", else the contents of that file."""
    if value is None or value.lstrip().startswith("{"):
        return value
    try:
        with open(value, "rb") as file:
            return file.read().decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        parser.error(f"--description: cannot read {value}: {getattr(e, 'strerror', None) or e}")
        raise  # not reached: parser.error exits


def _client_options(parser: argparse.ArgumentParser, args: argparse.Namespace, api) -> dict:
    options: dict = {}
    for name in ("concurrency", "max_concurrency", "timeout", "max_attempts"):
        value = getattr(args, name, None)
        if value is not None:
            options[name] = value
    if getattr(args, "fixed_window", False):
        options["adaptive_window"] = False
    if options.get("timeout") == 0:
        options["timeout"] = None  # no limit
    given = [flag for flag, value in (("--token", args.token), ("--basic", args.basic), ("--api-key", args.api_key),
                                      ("--api-key-param", args.api_key_param)) if value is not None]
    if len(given) > 1:
        parser.error(f"give one credential, not {' and '.join(given)}")
    if args.basic is not None:
        options["auth"] = _pair(parser, args.basic, ":", "--basic")
    elif args.api_key is not None:
        options["auth"] = api.ApiKey(*_pair(parser, args.api_key, "=", "--api-key"))
    elif args.api_key_param is not None:
        options["auth"] = api.ApiKey(*_pair(parser, args.api_key_param, "=", "--api-key-param"), where="query")
    else:
        token = args.token if args.token is not None else os.environ.get(TOKEN_ENV)
        if token:
            options["auth"] = token
    options["headers"] = [_pair(parser, header, ":", "-H") for header in args.header]
    if args.http_version is not None:
        options["http_version"] = args.http_version
    if args.insecure:
        options["verify"] = False
    elif args.cacert is not None:
        options["verify"] = args.cacert
    if args.key is not None and args.cert is None:
        parser.error("--key needs --cert")
    if args.cert is not None:
        options["cert"] = (args.cert, args.key) if args.key is not None else args.cert
    return options


def _credential_text(options: dict) -> Optional[str]:
    """The secret part of the credential, for messages to hide."""
    auth = options.get("auth")
    if isinstance(auth, tuple):
        return auth[1]
    return getattr(auth, "value", auth)


def _with_query(parser: argparse.ArgumentParser, path: str, pairs: List[str]) -> str:
    from urllib.parse import quote

    extra = [_pair(parser, pair, "=", "--query") for pair in pairs]
    if not extra:
        return path
    joined = "&".join(f"{quote(name, safe='')}={quote(value, safe='')}" for name, value in extra)
    return path + ("&" if "?" in path else "?") + joined


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
    if isa("DeadlineError"):
        return EXIT_DEADLINE
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


class _Interrupt:
    """Where Ctrl-C stands: inside `held_back()` the KeyboardInterrupt waits for the block's end."""

    held = False
    pending = False

    @staticmethod
    @contextlib.contextmanager
    def held_back():
        """A block Ctrl-C does not cut in two: items written and the token that goes on after them
        must change together, or a resumed run would write them twice."""
        _Interrupt.held = True
        try:
            yield
        finally:
            _Interrupt.held = False
        if _Interrupt.pending:
            _Interrupt.pending = False
            raise KeyboardInterrupt


def _install_sigint() -> None:
    """Ctrl-C raises KeyboardInterrupt once (to cancel the list cleanly); a second one kills."""
    def on_sigint(signum, frame):
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if _Interrupt.held:
            _Interrupt.pending = True
        else:
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
        # Shell-quoted, so they paste back into `sheaf get`: a body that is the array is --items ''.
        flags = " ".join(shlex.quote(flag) for flag in description.flags())
        sys.stdout.write(f"{name:<{width}}  {summary}\n{'':<{width}}  {flags}\n")
    return EXIT_OK


def _print_completion(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from . import _completion as scripts

    try:
        import sheaf as api
        values = {"--preset": sorted(api.presets())}
    except (ImportError, OSError, AttributeError):
        values = {}   # the script still completes everything else
    write = scripts.bash if args.shell == "bash" else scripts.zsh
    sys.stdout.write(write(build_parser(), values))
    return EXIT_OK


@contextlib.contextmanager
def _client(api, base: str, client_options: dict):
    """A client whose log lines and events all come out before it closes (closing drops those
    still queued)."""
    with api.Client(base, **client_options) as client:
        try:
            yield client
        finally:
            client.flush_hooks()


def _explain(api, args: argparse.Namespace, base: str, path: str, token: Optional[str],
             list_options: dict, client_options: dict) -> int:
    list_options = {name: value for name, value in list_options.items() if name not in RUN_OPTIONS}
    try:
        with _client(api, base, client_options) as client:
            explained = client.explain(path, **list_options)
    except api.Error as e:
        _error(_error_message(api, e, token))
        return _exit_status(api, e)
    if args.format == "json":   # the description itself, for --description
        sys.stdout.write((explained.json or "{}") + "\n")
        return EXIT_OK
    sys.stdout.write(explained.command_line(args.url) + "\n")
    detected = ", ".join(explained.detected) or "nothing"
    sys.stdout.write(f"plan: {explained.plan or 'unknown'}; detected: {detected}\n")
    return EXIT_OK


def _connect(parser: argparse.ArgumentParser, args: argparse.Namespace):
    """What every command that connects starts with: URL split into the base URL and the path
    (with --query added), the library, the client's options and the credential's secret (for
    messages to hide). None when the library did not load (the reason is already printed)."""
    base, path = _split_url(parser, args.url)
    path = _with_query(parser, path, args.query)
    api = _load_api(args.token)
    if api is None:
        return None
    client_options = _client_options(parser, args, api)
    return api, base, path, client_options, _credential_text(client_options)


def _get(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.format == "csv" and not args.fields:
        parser.error("--format csv needs --fields, the JSON pointers of its columns (e.g. --fields /id,/user/login)")
    connection = _connect(parser, args)
    if connection is None:
        return EXIT_FAILURE
    api, base, path, client_options, token = connection
    list_options = _list_options(parser, args)
    if args.explain:
        return _explain(api, args, base, path, token, list_options, client_options)

    if args.output == "-":
        args.output = None   # stdout
    target = None
    if args.output:
        try:
            target = AtomicFile(args.output)
        except OSError as e:
            _error(f"cannot write {args.output}: {e.strerror or e}")
            return EXIT_FAILURE
        out = target.file
    else:
        out = sys.stdout.buffer
    # Without --fields the library writes the items itself, from the bytes the pages brought
    # (nothing decoded in Python). When they go to the terminal the progress line is on, only its
    # final state is drawn, after them.
    shares_terminal = not args.output and _isatty(sys.stdout)
    progress = Progress(sys.stderr, enabled=not args.quiet and _isatty(sys.stderr), live=not shares_terminal)
    status, message, note = EXIT_OK, None, ""
    stop_reason = None
    resume = None   # the token after the items written
    try:
        try:
            with _client(api, base, client_options) as client:
                progress.start_waiting()
                if args.fields:
                    writer = FieldWriter(out, args.format, args.fields, header=args.resume is None)
                    resume, stop_reason = _write_decoded(client, path, writer, progress, list_options)
                else:
                    written = client.fetch_to(path, out, format=args.format, progress=progress.update, **list_options)
                    resume, stop_reason = written.resume_token, written.stop_reason
            if stop_reason not in (api.StopReason.COMPLETE, api.StopReason.NONE):
                note = stop_reason.note   # exit status 0: it stopped where asked
        except api.FileError as e:
            if target is None and os.strerror(errno.EPIPE) in e.message:
                return _reader_left(out, progress)
            status, message, note = EXIT_FAILURE, _error_message(api, e, token), "failed"
        except api.Error as e:
            status, message = _exit_status(api, e), _error_message(api, e, token)
            resume, note = e.resume_token, "failed"
        except KeyboardInterrupt as e:
            status, message, note = EXIT_INTERRUPTED, "interrupted", "interrupted"
            resume = getattr(e, "resume_token", None)
        except OSError as e:   # a FieldWriter's write
            if target is None and e.errno == errno.EPIPE:
                return _reader_left(out, progress)
            status, message, note = EXIT_FAILURE, f"cannot write {args.output or 'the items'}: {e.strerror or e}", "failed"
    finally:
        if target is not None:
            try:
                if status == EXIT_OK:
                    target.commit()
                else:
                    target.discard()
            except OSError as e:
                target.discard()
                _error(f"cannot write {args.output}: {e.strerror or e}")
                status = status or EXIT_FAILURE
    items_written = progress.snapshot.item_count if progress.snapshot is not None else 0
    progress.finish(note)
    if message is not None:
        _error(message)
    # After a failure, a token is worth printing when items were written (a failure before any
    # is re-run as it was), and not with -o: a failed run keeps nothing there.
    if status == EXIT_OK and note:
        _error(note)   # why the list stopped where asked (exit status 0)
    if resume is not None and (status == EXIT_OK or (items_written > 0 and target is None)):
        _error(f"to go on: --resume {resume}")
    return status


def _write_decoded(client, path: str, writer: FieldWriter, progress: Progress, list_options: dict):
    """What fetch_to does, through Client.stream and `writer`: returns the token that goes on
    after the items written (None when the list is complete) and why the list stopped."""
    with client.stream(path, **list_options) as stream:
        written_through = stream.resume_token
        writer.start()
        try:
            for snapshot in stream:
                progress.update(snapshot)
                with _Interrupt.held_back():
                    writer.add(snapshot.items)
                    written_through = snapshot.resume_token
        except KeyboardInterrupt as interrupt:
            interrupt.resume_token = written_through   # type: ignore[attr-defined]
            raise
        finally:
            writer.finish()   # a JSON array is closed after a failure too
        return stream.resume_token, stream.stop_reason


def _reader_left(out, progress: Progress) -> int:
    """The reader went away (`sheaf get ... | head`): stop quietly."""
    _silence(out)
    progress.clear()
    return EXIT_OK


def _silence(out) -> None:
    """Points `out` at /dev/null: its reader left, and nothing may fail writing to it at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, out.fileno())
    except (OSError, ValueError):
        pass


def _read_argument(parser: argparse.ArgumentParser, text: str, flag: str) -> bytes:
    """An inline value, or the contents of FILE for @FILE."""
    if not text.startswith("@"):
        return text.encode()
    try:
        with open(text[1:], "rb") as file:
            return file.read()
    except OSError as e:
        parser.error(f"{flag}: cannot read {text[1:]}: {e.strerror or e}")
        raise  # not reached: parser.error exits


def _request(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    bodies = [flag for flag, given in (("--json", args.json is not None), ("--form", bool(args.form)),
                                       ("--data", args.data is not None)) if given]
    if len(bodies) > 1:
        parser.error(f"give one body, not {' and '.join(bodies)}")
    options: dict = {"retry": args.retry}
    if args.json is not None:
        raw = _read_argument(parser, args.json, "--json")
        try:
            options["json"] = json.loads(raw)
        except ValueError as e:
            parser.error(f"--json is not JSON: {e}")
    elif args.form:
        options["data"] = [_pair(parser, field, "=", "--form") for field in args.form]
    elif args.data is not None:
        options["content"] = _read_argument(parser, args.data, "--data")
        options["content_type"] = args.content_type
    method = (args.method or ("POST" if bodies else "GET")).upper()
    if args.output == "-":
        args.output = None   # stdout
    connection = _connect(parser, args)
    if connection is None:
        return EXIT_FAILURE
    api, base, path, client_options, secret = connection
    failure = None
    try:
        with _client(api, base, client_options) as client:
            response = client.request(method, path, **options)
    except api.HTTPError as e:
        response, failure = e.response, e   # the body is still written
    except api.Error as e:
        _error(_error_message(api, e, secret))
        return _exit_status(api, e)
    if args.include:
        sys.stderr.write(f"HTTP {response.status}\n" + "".join(f"{k}: {v}\n" for k, v in response.headers) + "\n")
    try:
        if args.output:
            target = AtomicFile(args.output)
            try:
                target.file.write(response.content)
            except BaseException:
                target.discard()
                raise
            if failure is None:
                target.commit()
            else:
                target.discard()
        else:
            sys.stdout.buffer.write(response.content)
            sys.stdout.buffer.flush()
    except OSError as e:
        _error(f"cannot write the body: {e.strerror or e}")
        return EXIT_FAILURE
    if failure is not None:
        _error(_error_message(api, failure, secret))
        return _exit_status(api, failure)
    return EXIT_OK


def _size(count: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if count < 1000 or unit == "GB":
            return f"{count:,.0f} {unit}" if unit == "B" else f"{count:,.1f} {unit}"
        count /= 1000
    return f"{count:,.1f} TB"


def _download(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    import time

    if args.output == "-":
        parser.error("download writes a file (-o FILE); for the body on stdout: sheaf request URL")
    connection = _connect(parser, args)
    if connection is None:
        return EXIT_FAILURE
    api, base, path, client_options, secret = connection
    shows = not args.quiet and _isatty(sys.stderr)
    started = time.monotonic()

    def progress(done: int, expected: Optional[int]) -> None:
        if not shows:
            return
        rate = done / max(time.monotonic() - started, 1e-3)
        of = f" of {_size(expected)} ({100 * done // expected}%)" if expected else ""
        sys.stderr.write(f"\r\x1b[K{_size(done)}{of}  {_size(rate)}/s")
        sys.stderr.flush()

    try:
        with _client(api, base, client_options) as client:
            client.download(path, args.output, progress=progress)
    except api.Error as e:
        if shows:
            sys.stderr.write("\n")
        _error(_error_message(api, e, secret))
        return _exit_status(api, e)
    if shows:
        sys.stderr.write("\n")
    return EXIT_OK


def _start_logging(verbosity: int) -> None:
    """-v / -vv, or $SHEAF_LOG (info, debug): the library's records to stderr, as "sheaf: ..."."""
    import logging

    if verbosity == 0:
        verbosity = {"info": 1, "debug": 2}.get(os.environ.get(LOG_ENV, "").strip().lower(), 0)
    if verbosity == 0:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("sheaf: %(message)s"))
    logger = logging.getLogger("sheaf")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if verbosity > 1 else logging.INFO)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs one command; a reader of stdout that leaves early (`sheaf presets | head -1`) ends
    it quietly, as it ends `sheaf get`, whichever command was writing."""
    try:
        try:
            return _run_command(argv)
        finally:
            if sys.stdout is not None:
                sys.stdout.flush()   # here, not at exit, where a failure would print a traceback
    except BrokenPipeError:
        _silence(sys.stdout)
        return EXIT_OK


def _run_command(argv: Optional[Sequence[str]]) -> int:
    _Parser.secrets = _probable_secrets(list(sys.argv[1:] if argv is None else argv))
    parser = build_parser()
    args, unrecognized = parser.parse_known_args(argv)
    if args.handler is _request and len(unrecognized) == 1 and _HTTP_METHOD.fullmatch(args.url) \
            and not unrecognized[0].startswith("-"):
        # `sheaf request POST URL`, as HTTPie has it: the method first, then the URL.
        if args.method is not None and args.method.upper() != args.url.upper():
            args.subparser.error(f"two methods: -X {args.method} and {args.url}")
        args.method, args.url, unrecognized = args.url, unrecognized[0], []
    if unrecognized:
        # argparse reports them at the top level, with the top-level usage; the subcommand's
        # usage is the one that shows what could have been meant.
        args.subparser.error(_unrecognized(unrecognized))
    _start_logging(getattr(args, "verbose", 0))
    _install_sigint()
    try:
        return args.handler(args.subparser, args)
    except KeyboardInterrupt:
        _error("interrupted")
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
