"""The `sheaf` command-line tool: fetch a whole paginated list, item by item, as it arrives,
or make one request.

    sheaf get URL [options]          (also: python3 -m sheaf get URL ...)
    sheaf watch URL --state FILE [-o OUT] [options]
    sheaf request [-X METHOD | METHOD] URL [--json JSON|@FILE] [--form NAME=VALUE ...] [options]
    sheaf download URL -o FILE [options]
    sheaf presets
    sheaf completion bash|zsh        (a script for the shell to source)

`sheaf get --help` explains the options, with worked examples. The console-script entry point
is `sheaf.cli:main`.

The path of a command through this package: `parser` reads the arguments; `main` runs the command's
module (`get`, `watch`, `request`, `download`, `presets`, `completion`: each has a `run(parser, args)` that
returns the exit status; `get` hands several lists to `groups`); the commands that connect take
their client from `connection`, write through `output` (and `progress`, the line on stderr), and
end through `exits` (the statuses, the message on stderr, Ctrl-C). Like any other user of Sheaf,
these modules use the public API of `sheaf` alone.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Optional, Sequence

from . import completion, download, get, presets, request, watch
from .exits import (
    EXIT_BAD_PAGE,
    EXIT_DEADLINE,
    EXIT_FAILURE,
    EXIT_HTTP,
    EXIT_INTERRUPTED,
    EXIT_NETWORK,
    EXIT_OK,
    EXIT_USAGE,
    install_sigint,
    report,
)
from .output import silence
from .parser import LOG_ENV, Parser, build_parser, probable_secrets, unrecognized_message

# Reached through sheaf.cli by the tests, as when this package was one module.
from .get import _list_options  # noqa: F401
from .output import FieldWriter  # noqa: F401
from .parser import _fields  # noqa: F401

__all__ = ["main", "build_parser", "EXIT_OK", "EXIT_FAILURE", "EXIT_USAGE", "EXIT_HTTP",
           "EXIT_NETWORK", "EXIT_BAD_PAGE", "EXIT_DEADLINE", "EXIT_INTERRUPTED"]

#: The function that runs each command, by its name on the command line.
COMMANDS = {"get": get.run, "watch": watch.run, "request": request.run, "download": download.run,
            "presets": presets.run, "completion": completion.run}

# A method named before the URL (`sheaf request PATCH URL`): a token, never a URL.
_HTTP_METHOD = re.compile(r"[A-Za-z]+")


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
        silence(sys.stdout)
        return EXIT_OK


def _run_command(argv: Optional[Sequence[str]]) -> int:
    Parser.secrets = probable_secrets(list(sys.argv[1:] if argv is None else argv))
    parser = build_parser()
    args, unrecognized = parser.parse_known_args(argv)
    if args.command == "request" and len(unrecognized) == 1 and _HTTP_METHOD.fullmatch(args.url) \
            and not unrecognized[0].startswith("-"):
        # `sheaf request POST URL`, as HTTPie has it: the method first, then the URL.
        if args.method is not None and args.method.upper() != args.url.upper():
            args.subparser.error(f"two methods: -X {args.method} and {args.url}")
        args.method, args.url, unrecognized = args.url, unrecognized[0], []
    if unrecognized:
        # argparse reports them at the top level, with the top-level usage; the subcommand's
        # usage is the one that shows what could have been meant.
        args.subparser.error(unrecognized_message(unrecognized))
    _start_logging(getattr(args, "verbose", 0))
    install_sigint()
    try:
        return COMMANDS[args.command](args.subparser, args)
    except KeyboardInterrupt:
        report("interrupted")
        return EXIT_INTERRUPTED

