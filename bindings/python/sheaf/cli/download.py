"""`sheaf download URL -o FILE`: a file streamed to disk by the library and renamed into place
when complete, with a progress line of the bytes on a terminal."""

from __future__ import annotations

import argparse
import sys
from typing import Optional

from .connection import connect, open_client
from .exits import EXIT_FAILURE, EXIT_OK, error_message, exit_status, report
from .output import isatty


def _size(count: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if count < 1000 or unit == "GB":
            return f"{count:,.0f} {unit}" if unit == "B" else f"{count:,.1f} {unit}"
        count /= 1000
    return f"{count:,.1f} TB"


def run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    import time

    if args.output == "-":
        parser.error("download writes a file (-o FILE); for the body on stdout: sheaf request URL")
    connection = connect(parser, args)
    if connection is None:
        return EXIT_FAILURE
    api, base, path, client_options, secret = connection
    shows = not args.quiet and isatty(sys.stderr)
    started = time.monotonic()

    def progress(done: int, expected: Optional[int]) -> None:
        if not shows:
            return
        rate = done / max(time.monotonic() - started, 1e-3)
        of = f" of {_size(expected)} ({100 * done // expected}%)" if expected else ""
        sys.stderr.write(f"\r\x1b[K{_size(done)}{of}  {_size(rate)}/s")
        sys.stderr.flush()

    try:
        with open_client(api, base, client_options) as client:
            client.download(path, args.output, progress=progress)
    except api.Error as e:
        if shows:
            sys.stderr.write("\n")
        report(error_message(api, e, secret))
        return exit_status(api, e)
    if shows:
        sys.stderr.write("\n")
    return EXIT_OK
