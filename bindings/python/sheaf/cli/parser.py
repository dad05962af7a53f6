"""The `sheaf` command's arguments: the parser, its help texts (epilogs with worked examples, the
exit statuses), the types that check option values, and the guard that keeps secrets out of
argparse's error messages. Which function runs a command is `sheaf.cli.COMMANDS`' business."""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Any, List, Sequence, Tuple

from .output import Field

PROG = "sheaf"
TOKEN_ENV = "SHEAF_TOKEN"
CACHE_ENV = "SHEAF_CACHE"
LOG_ENV = "SHEAF_LOG"

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
  7    the server's rate limit is spent until after --max-wait (default 60 s): nothing more was
       sent; the message names the limit and when it resets
  130  interrupted (Ctrl-C); the list is cancelled
  With several lists (several URLs, --urls, --each), the status is that of the first list that
  failed (3 for a 404, ...); the other lists were written whole, stderr ends with how many
  lists succeeded and failed, and --failed FILE names the failed ones to fetch again.
  On a failure, the items that arrived before it have already been written to stdout (with
  --format json the array is still closed, so the output stays valid JSON), and stderr says
  how to go on after them: "sheaf: to go on: --resume TOKEN" (the same command with that
  option writes the rest, no item twice or missing). A file named with -o is replaced only by a
  run that succeeds (written under a temporary name, then renamed), so a failed run leaves the
  old file as it was; the items it paid for are kept in FILE.partial, and the same command with
  --resume TOKEN appends the rest to them and writes FILE (jsonl and csv). One line "sheaf: <message>" goes to stderr, with
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

WATCH_EPILOG = """\
examples:
  Stripe charges into a file, each once, polled every 5 seconds (newest first; ties in one
  second are told apart by the charge's id):
    sheaf watch 'https://api.stripe.com/v1/charges?limit=100' --preset stripe \\
        --until /created=0 --state charges.state -o charges.jsonl
  GitHub issues changed since the last poll (an update field: a changed issue comes again):
    sheaf watch 'https://api.github.com/repos/OWNER/REPO/issues?state=all&sort=updated&direction=asc' \\
        --since-param since --since-field /updated_at --state issues.state -o issues.jsonl

  Each poll asks for what is new since the state's offset: the greatest value of the field
  delivered and the ids of the items at that value (--id, default /id), so an item added later
  in the same second is new, and none comes twice. A poll that finds nothing new costs one
  request (a 304 with --cache). With -o, the state also records how much of FILE it vouches for,
  both written atomically after each poll; a restart after a crash (SIGKILL, a power loss) cuts
  FILE back to that length and goes on from the offset: every item once. To stdout it is at
  least once: a poll's items may come again after a crash. SIGTERM or Ctrl-C ends the watch
  after the poll in progress, exit status 0; a failure that will not pass (a refused
  credential, a list that is not what the description says) ends it with its exit status.

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
  then pages go out --concurrency at a time. A first page that promises more but names no next
  page (json-server's X-Total-Count without a Link) is probed: page=1 (new items: pages from 0,
  as Spring Data's), page=2 (pages from 1), the same for _page and p, then offset=N and skip=N
  (N: its items), one request each, until one answers with the next items.
  --explain prints what it detected as the flags that pin it.

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

lists behind a POST, and GraphQL connections:
  A list whose pages are POSTs (a query or a search endpoint) takes -X POST and a body; paging
  parameters named body:/POINTER are set inside the body page by page (the notion and
  elasticsearch presets name theirs). A POST is sent again after a failure only with --read-only
  (the presets set it): it says the endpoint only reads.

    sheaf get 'https://api.notion.com/v1/databases/DB/query' --preset notion -X POST \\
        --json '{"filter": {"property": "Done", "checkbox": {"equals": true}}}' -H 'Notion-Version: 2022-06-28'
    sheaf get 'http://localhost:9200/logs/_search' --preset elasticsearch --page-size 1000 \\
        --json '{"sort": [{"ts": "asc"}, {"_id": "asc"}]}'

  A GraphQL connection: the query (from FILE; - for stdin) taking $first and $after, the pointer
  to the connection in the answer, and its other variables; the items are its nodes (or each
  edge's node), walked by pageInfo.endCursor. An answer with errors fails (exit 3) naming the
  first one, unless --allow-partial and it has data; RATE_LIMITED and THROTTLED are waited out.

    sheaf get https://api.github.com/graphql --graphql issues.graphql \\
        --connection /data/repository/issues --var owner=octo --var name=repo --page-size 100

  A connection inside each node that has more pages than the query asks for (comments(first: 5)
  of an issue with 40) is completed with --nested /comments=comments.graphql, a query taking
  $id, $first and $after (node(id: $id) { ... on Issue { comments(...) } }): each node is written
  whole, all totalCount of its comments in it; those requests share the window with the list.

many lists (one job):
  Several URLs, or --urls FILE, fetch several lists together on one client: they share one
  window per origin (300 lists send what one list would), and every list's items are written
  as they arrive (with --ordered, list after list). --each fans out: each item of the list at
  PARENT_URL names a child list, made by a template from the item's values ({JSON pointer}),
  and the children's items are written (not the parent's). Repeat --each for another level.
  The description flags (--preset, --items, ...) describe every list, the parent's too. Every
  URL must be on the first one's origin (the credential goes there and nowhere else).

    sheaf get 'https://api.github.com/repos/OWNER/A/issues' 'https://api.github.com/repos/OWNER/B/issues'
    sheaf get --urls lists.txt --tag list --failed failed.jsonl
    sheaf get 'https://api.github.com/orgs/ORG/repos' --each '/repos/{/full_name}/issues' \
        --preset github --tag repository --failed failed.jsonl
    sheaf get --urls failed.jsonl --failed failed-again.jsonl     (the failed lists only, each
                                                 from where it stopped; the same flags again)

  --urls FILE holds a URL a line (- for stdin); blank lines and lines starting with # are
  skipped. It also takes the lines --failed writes, one JSON object a line ({"url": ...,
  "tag": ..., "error": ..., "resume_token": ...}; a fan-out's parent adds "each", its
  templates): each list goes on from its token, keeping its tag. Items are written decoded and
  compact (not byte for byte as the server sent them). With --tag NAME an object item gets the
  field NAME (replacing one of that name) holding its list's tag: the tag given in the --failed
  file, else the URL; a child's is the value that filled its template. An item that is not an
  object is written as {"NAME": TAG, "item": ITEM}. -o FILE is kept after lists failed too
  (it holds every item that arrived); only an interrupted run leaves the old file as it was.

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

  7. Only what is new since the last run, newest first by id (the first run fetches all):

       sheaf get 'https://api.example.com/v1/events' --until /id=0 --state events.state >> events.jsonl

     or, where the server filters (?since=...), recording each item's updated_at:

       sheaf get 'https://api.example.com/v1/issues' --since-param since \
           --since-field /updated_at --state issues.state

  On a terminal a progress line on stderr shows the items and pages so far (of the expected
  totals, when known), the requests in flight, the rate and an ETA; on a narrow terminal the
  other parts give way first, the item count, the rate and the ETA last. It is left out when
  stderr is not a terminal, and with --quiet.

""" + EXIT_STATUS_TEXT


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


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose error messages never repeat a secret: a mistyped flag
    (``--tokn T``) made argparse print its value in "unrecognized arguments"."""

    secrets: Tuple[str, ...] = ()

    def error(self, message: str):  # type: ignore[override]
        for secret in sorted(Parser.secrets, key=len, reverse=True):
            message = message.replace(secret, "***")
        super().error(message)


class _PrintVersions(argparse.Action):
    """--version: the package's version and the library's, which may differ (SHEAF_LIBRARY_PATH
    can name any build). Still answers when the library cannot be loaded: that is when the
    question gets asked."""

    def __init__(self, option_strings: Sequence[str], dest: str, **options: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **options)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from .. import __version__

        try:
            import sheaf as api
            library = f"libsheaf {api.library_version()} ({api.library_path})"
        except (ImportError, OSError, AttributeError):
            library = "libsheaf: not found (set SHEAF_LIBRARY_PATH to libsheaf.so.1)"
        sys.stdout.write(f"{PROG} {__version__}\n{library}\n")
        parser.exit()


def probable_secrets(argv: Sequence[str]) -> Tuple[str, ...]:
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


def unrecognized_message(arguments: Sequence[str]) -> str:
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
    parser = Parser(
        prog=PROG,
        description="Fetch a whole paginated REST list, pages in parallel where the API allows,\n"
                    "and write its items in order as they arrive.",
        epilog="Run 'sheaf get --help' for the options and worked examples.\n\n"
               + EXIT_STATUS_TEXT,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=_PrintVersions, help="print the versions of sheaf and libsheaf, and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    commands.required = True

    get = commands.add_parser(
        "get", help="fetch every item of a paginated list",
        description="Fetch every item of the paginated list at URL and write them in order, as\n"
                    "they arrive: to stdout, or to FILE with -o.",
        epilog=GET_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    get.add_argument("url", metavar="URL", nargs="*",
                     help="the list's full URL, query included: "
                          "'https://api.example.com/v1/things?state=open' (not with --partition: "
                          "the partition holds it); several URLs are fetched as one job (see 'many lists' below)")

    _add_connection_options(get)

    _add_shape_options(get)

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
    limits.add_argument("--partitions", metavar="N", type=_positive,
                        help="read the first page only and print the list split into up to N partitions, "
                             "one JSON per line, for several processes to run with --partition; then exit")
    limits.add_argument("--at-once", metavar="K", type=_positive, dest="at_once",
                        help="with --partitions: at most K of them run at the same time (parallel -j K), "
                             "so each gets the window divided by K rather than by N")
    limits.add_argument("--partition", metavar="FILE|JSON",
                        help="run one partition printed by --partitions (from FILE, - for stdin, or inline "
                             "starting with '{'): its items, written as for a list; no URL or description flags")
    _add_retry_options(limits)

    sync = get.add_argument_group("incremental sync (fetch only what is new since the last run)")
    sync.add_argument("--until", metavar="PTR=VALUE",
                      help="stop a newest-first list at the first item whose field PTR is at or below VALUE "
                           "(JSON if it parses, else a string; numbers compare as numbers, anything else as "
                           "strings, so ISO-8601 times work); it is not written, nor any after it (exit status 0)")
    sync.add_argument("--since-param", metavar="NAME",
                      help="ask the server only for what is new: the first request carries NAME=<stored value> "
                           "(with --since-field and --state)")
    sync.add_argument("--since-field", metavar="PTR",
                      help="the field inside each item whose greatest value is stored (with --since-param)")
    sync.add_argument("--state", metavar="FILE",
                      help="where each list got to, by list URL: read at the start (the stored value replaces "
                           "--until's, or is sent with --since-param), replaced only when the run succeeds")

    many = get.add_argument_group("many lists (see 'many lists' below)")
    many.add_argument("--urls", metavar="FILE",
                      help="fetch the lists of FILE too (- for stdin): a URL a line, blank lines and # comments "
                           "skipped, or the lines --failed wrote (each list goes on where it stopped)")
    many.add_argument("--each", metavar="TEMPLATE", action="append", default=[],
                      help="fetch the child list each item of URL names: TEMPLATE makes its URL from the item, "
                           "as '/repos/{/full_name}/issues'; repeat for another level")
    many.add_argument("--missing", choices=("skip", "fail"),
                      help="with --each: skip an item without a value its template needs (default, a warning "
                           "with -v), or fail the parent's list")
    many.add_argument("--tag", metavar="NAME",
                      help="add each list's tag to its items as the field NAME (an item that is not an object "
                           "is written as {NAME: tag, \"item\": item})")
    many.add_argument("--ordered", action="store_true",
                      help="write the lists one after another, in the order given (with --each: the parent's "
                           "item order), instead of as they arrive")
    many.add_argument("--fail-fast", action="store_true",
                      help="stop every list when one fails (otherwise the others go on to their end)")
    many.add_argument("--failed", metavar="FILE",
                      help="write the lists that failed to FILE, a JSON object a line (url, tag, error, "
                           "resume_token), for --urls FILE to fetch them again from where they stopped")

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
    get.set_defaults(subparser=get)

    watch = commands.add_parser(
        "watch", help="poll a list and write each new item once, until stopped",
        description="Poll the list at URL every --every seconds and write each item once, as it is\n"
                    "added: to FILE with -o (exactly once across kills and restarts), or to stdout\n"
                    "(at least once). Runs until SIGTERM or Ctrl-C, then exits 0 after the poll in\n"
                    "progress.",
        epilog=WATCH_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    watch.add_argument("url", metavar="URL", help="the list's full URL, query included")
    _add_connection_options(watch)
    _add_shape_options(watch, explain=False)
    polling = watch.add_argument_group("watching")
    polling.add_argument("--until", metavar="PTR=START",
                         help="a newest-first list: each poll reads down to what the last one delivered, by the "
                              "field PTR (/created); START is where the first poll stops (/created=0: the whole list)")
    polling.add_argument("--since-param", metavar="NAME",
                         help="a filter the server applies, including its value (created[gte], since): each poll "
                              "sends NAME=<the greatest PTR delivered> (with --since-field)")
    polling.add_argument("--since-field", metavar="PTR", help="the field --since-param filters by")
    polling.add_argument("--state", metavar="FILE", required=True,
                         help="where the watch is: the list's offset and, with -o, how much of FILE it vouches "
                              "for; written atomically after each poll, read at the start to go on")
    polling.add_argument("--every", metavar="S", type=_seconds, default=5.0,
                         help="seconds between polls (default 5)")
    polling.add_argument("--max-every", metavar="S", type=_seconds,
                         help="the longest wait between polls that failed for a passing reason (a 5xx or 429 "
                              "after retries, the network, a spent rate limit): the wait doubles from --every "
                              "up to it (default 60 x --every, at most an hour)")
    _add_retry_options(polling)
    polling.add_argument("-o", "--output", metavar="FILE",
                         help="append the items to FILE, a JSON line each (default: stdout)")
    polling.add_argument("--quiet", "-q", action="store_true", help="no line on stderr per poll that wrote items")
    # What the commands that read a list share reads these; a watch has none of them.
    watch.set_defaults(subparser=watch, max_items=None, max_pages=None, max_requests=None, deadline=None, resume=None)

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
    request.set_defaults(subparser=request)

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
    download.set_defaults(subparser=download)

    presets = commands.add_parser("presets", help="list the presets (known APIs' shapes)",
                                  description="List the presets: each pins the shape of a known API's lists.")
    presets.set_defaults(subparser=presets)

    completion = commands.add_parser(
        "completion", help="print a shell completion script (bash or zsh)",
        description="Print a script that makes the shell complete sheaf's commands, their flags and\n"
                    "the flags' values (formats, presets, files).",
        epilog=COMPLETION_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    completion.add_argument("shell", choices=("bash", "zsh"), help="the shell to complete in")
    completion.set_defaults(subparser=completion)
    return parser


def _add_shape_options(parser: argparse.ArgumentParser, explain: bool = True) -> None:
    """How a list paginates, and a list behind a POST: the options of every command that reads one."""
    shape = parser.add_argument_group("pagination (detected when not given: see 'describing a list' below)")
    if explain:
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
    shape.add_argument("--split", metavar="FIELD:LOWER,UPPER[:ORDER]",
                       help="a cursor list's range filter: the field it is ordered by and the query parameters "
                            "of the range's ends (/created:created[gte],created[lt]; :oldest_first for a list "
                            "served oldest first): read as pieces of the range side by side, each item once; "
                            "none: one page at a time (the stripe, slack and shopify presets carry theirs)")

    post = parser.add_argument_group("a list behind a POST, or a GraphQL connection (see below)")
    post.add_argument("-X", "--method", metavar="METHOD", help="the method of every page (POST with a body)")
    post.add_argument("--json", metavar="JSON|@FILE", help="the JSON body of every page, inline or read from FILE")
    post.add_argument("--data", metavar="TEXT|@FILE", help="a raw body, inline or read from FILE (with --content-type)")
    post.add_argument("--content-type", metavar="TYPE", help="--data's type (default application/json)")
    post.add_argument("--read-only", action="store_true", default=None,
                      help="the endpoint only reads: its POST pages may be sent again after a failure")
    post.add_argument("--graphql", metavar="FILE", help="the GraphQL query (from FILE, - for stdin), taking $first and $after")
    post.add_argument("--connection", metavar="PTR", help="the connection in the answer (/data/repository/issues)")
    post.add_argument("--var", metavar="NAME=VALUE", action="append", default=[],
                      help="a variable of the query (repeatable; VALUE is JSON if it parses, else a string)")
    post.add_argument("--nested", metavar="PTR=FILE", action="append", default=[],
                      help="complete the connection PTR inside each node (/comments) with the query in FILE, "
                           "which takes $id, $first and $after (repeatable)")
    post.add_argument("--allow-partial", action="store_true", default=None,
                      help="read an answer with both data and errors instead of failing")



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
    http.add_argument("--cache", metavar="DIR",
                      help=f"keep GET answers in DIR (made private if missing) and ask for each again with its "
                           f"ETag or Last-Modified: an unchanged page costs a 304 (default: ${CACHE_ENV}; "
                           f"--cache '' for none)")
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
    group.add_argument("--max-wait", metavar="S", type=_seconds,
                       help="the longest wait for a spent rate limit to reset (default 60); one that resets "
                            "later stops the list (exit 7) before anything more is sent")
    group.add_argument("--max-attempts", metavar="N", type=_positive,
                       help="attempts per request, retries of 5xx, 429, timeouts and "
                            "connection failures included (default 4; 1 = no retries)")
