"""`sheaf watch URL --state FILE [-o OUT]`: polls a list and writes each new item once, until
SIGTERM or Ctrl-C.

Exactly once into OUT: the state records the list's offset and the length of OUT it vouches for,
written together atomically after the poll's items are on the disk. A restart cuts OUT back to
that length (what a poll wrote before a crash, without its state) and polls from that offset.
Into stdout it is at least once: a poll's items may be written again after a crash."""

from __future__ import annotations

import argparse
import errno
import json
import os
import signal
import sys
from typing import Any, Dict, Optional

from .connection import connect, open_client
from .exits import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, error_message, exit_status, report
from .get import _list_options


def _output(parser: argparse.ArgumentParser, path: str, state: Dict[str, Any]) -> int:
    """OUT opened for appending, cut back to what `state` vouches for; its descriptor."""
    vouched = state.get("output")
    absolute = os.path.abspath(path)
    if state and not isinstance(vouched, dict):
        parser.error(f"--state {state['_path']} is of a watch that wrote to stdout, not to {path}: give another state file")
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError as error:
        report(f"cannot write {path}: {error.strerror or error}")
        raise SystemExit(EXIT_FAILURE)
    size = os.fstat(descriptor).st_size
    if not state:
        if size:
            os.close(descriptor)
            parser.error(f"{path} already holds {size} bytes that no watch state vouches for: "
                         "give a new file, or the --state that was written with it")
        return descriptor
    if vouched.get("path") != absolute:
        os.close(descriptor)
        parser.error(f"--state {state['_path']} vouches for {vouched.get('path')}, not for {absolute}")
    length = vouched.get("bytes")
    if not isinstance(length, int) or isinstance(length, bool) or length < 0:
        os.close(descriptor)
        parser.error(f"--state {state['_path']}: its output length is not a count of bytes ({length!r})")
    if size < length:
        os.close(descriptor)
        report(f"{path} holds {size} bytes, fewer than the {length} its state vouches for: it was cut or replaced "
               "since the watch wrote it, and items would be missing; give a new file and state")
        raise SystemExit(EXIT_FAILURE)
    if size > length:
        # What a poll wrote before it could record its state (a crash): the next poll writes it again.
        os.ftruncate(descriptor, length)
        os.fsync(descriptor)
    return descriptor


def _write(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:   # bounded by the data: each write takes at least one byte or raises
        written = os.write(descriptor, view)
        view = view[written:]


def run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from sheaf.watch import read_state, write_state

    if args.until is None and args.since_param is None:
        parser.error("a watch polls a list that syncs: --until PTR=START for a newest-first list (/created=0), or "
                     "--since-param NAME --since-field PTR for a filter that includes its value")
    list_options = _list_options(parser, args)
    if args.description is None:
        list_options.setdefault("id", "/id")
    try:
        state = read_state(args.state)
    except Exception as error:   # a UsageError naming the file
        parser.error(f"--state: {error}")
    if state:
        state["_path"] = args.state
    descriptor: Optional[int] = None
    if args.output not in (None, "-"):
        descriptor = _output(parser, args.output, state)
    elif state.get("output"):
        parser.error(f"--state {args.state} vouches for the file {state['output'].get('path')}: give it with -o")
    connection = connect(parser, args)
    if connection is None:
        return EXIT_FAILURE
    api, base, path, client_options, token = connection
    offset = json.dumps(state["offset"]) if state else None
    length = os.fstat(descriptor).st_size if descriptor is not None else 0
    status = EXIT_OK
    try:
        with open_client(api, base, client_options) as client:
            def waited(error: BaseException, seconds: float) -> None:
                report(f"{error_message(api, error, token)}; polling again in {seconds:g} s")

            watch = client.watch(path, every=args.every, max_every=args.max_every, offset=offset, on_wait=waited,
                                 **list_options)
            previous = {signal.SIGTERM: signal.getsignal(signal.SIGTERM), signal.SIGINT: signal.getsignal(signal.SIGINT)}

            def stop(signum, frame):
                watch.stop()
                signal.signal(signum, signal.SIG_DFL)   # a second one ends the process at once

            for number in previous:
                signal.signal(number, stop)
            try:
                with watch:
                    for poll in watch.polls(lines=True):
                        if poll.raw:
                            if descriptor is not None:
                                _write(descriptor, poll.raw)
                                os.fsync(descriptor)
                                length += len(poll.raw)
                            else:
                                sys.stdout.buffer.write(poll.raw)
                                sys.stdout.buffer.flush()
                            if not args.quiet:
                                report(f"{len(poll)} new items")
                        if poll.raw or poll.offset != offset:
                            record: Dict[str, Any] = {"offset": json.loads(poll.offset)}
                            if descriptor is not None:
                                record["output"] = {"path": os.path.abspath(args.output), "bytes": length}
                            write_state(args.state, record)
                            offset = poll.offset
            finally:
                for number, handler in previous.items():
                    signal.signal(number, handler)
    except BrokenPipeError:
        return EXIT_OK
    except OSError as error:
        if error.errno == errno.EPIPE:
            return EXIT_OK
        report(f"cannot write: {error.strerror or error}")
        status = EXIT_FAILURE
    except api.UsageError as error:
        report(error_message(api, error, token))
        status = EXIT_USAGE
    except api.Error as error:
        report(error_message(api, error, token))
        status = exit_status(api, error)
    finally:
        if descriptor is not None:
            os.close(descriptor)
    return status
