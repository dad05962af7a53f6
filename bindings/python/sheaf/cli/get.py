"""`sheaf get URL`: every item of a paginated list, written in order as it arrives (to stdout or
to a file replaced only on success), with a progress line on a terminal and, after a stop or a
failure, the token that goes on. `--explain` prints what was detected instead."""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
from typing import Optional

from . import groups
from .connection import connect, open_client, split_pair
from .exits import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, Interrupt, error_message, exit_status, report
from .output import AtomicFile, FieldWriter, isatty, silence
from .parser import unrecognized_message
from .progress import Progress
from .state import StateFile, StateFileError

#: The options of a run of a list, not of its description (``--explain`` ignores them).
RUN_OPTIONS = ("max_items", "max_pages", "max_requests", "deadline", "resume")
#: The incremental sync's parts of the description (``--explain`` ignores them too).
SYNC_OPTIONS = ("until", "since")


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
               "is_last": args.is_last, "id": args.id, "split": args.split}
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
    options.update(_sync_options(parser, args))
    return {name: value for name, value in options.items() if value is not None}


def _sync_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict:
    """--until, --since-param and --since-field as the description's until and since."""
    options: dict = {}
    if args.until is not None:
        pointer, found, text = args.until.partition("=")
        if not found or not pointer.startswith("/"):
            parser.error(f"--until expects PTR=VALUE, a JSON pointer inside each item and the bound (/id=12345), not {args.until!r}")
        try:
            value = json.loads(text)
        except ValueError:
            value = text   # not JSON: the string itself (a timestamp, say)
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            parser.error(f"--until's VALUE must be a number or a string, not {text!r}")
        options["until"] = (pointer, value)
    if (args.since_param is None) != (args.since_field is None):
        parser.error("--since-param and --since-field go together: the query parameter and the field it filters by")
    if args.since_param is not None:
        options["since"] = (args.since_param, args.since_field, None)
    if args.state is not None and not options:
        parser.error("--state records where --until or --since-field got to: give one of them")
    return options


def _sync_field(list_options: dict) -> str:
    """The field a syncing run records (until's and since's are the same one)."""
    return list_options["until"][0] if "until" in list_options else list_options["since"][1]


def _with_stored_value(list_options: dict, value) -> dict:
    """The list's options with `value` (from the state file) as the bound and the since value."""
    options = dict(list_options)
    if "until" in options:
        options["until"] = (options["until"][0], value)
    if "since" in options:
        options["since"] = options["since"][:2] + (value,)
    return options


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


def _explain(api, args: argparse.Namespace, base: str, path: str, token: Optional[str],
             list_options: dict, client_options: dict) -> int:
    list_options = {name: value for name, value in list_options.items() if name not in RUN_OPTIONS + SYNC_OPTIONS}
    try:
        with open_client(api, base, client_options) as client:
            explained = client.explain(path, **list_options)
    except api.Error as e:
        report(error_message(api, e, token))
        return exit_status(api, e)
    if args.format == "json":   # the description itself, for --description
        sys.stdout.write((explained.json or "{}") + "\n")
        return EXIT_OK
    sys.stdout.write(explained.command_line(args.url) + "\n")
    detected = ", ".join(explained.detected) or "nothing"
    sys.stdout.write(f"plan: {explained.plan or 'unknown'}; detected: {detected}\n")
    return EXIT_OK


def _partition_text(parser: argparse.ArgumentParser, value: str) -> str:
    """--partition: inline JSON when it starts with "{", else the contents of that file (- for
    stdin), which must hold one partition (one line of what --partitions prints)."""
    text = value
    if not value.lstrip().startswith("{"):
        try:
            if value == "-":
                text = sys.stdin.buffer.read().decode("utf-8")
            else:
                with open(value, "rb") as file:
                    text = file.read().decode("utf-8")
        except (OSError, UnicodeDecodeError) as e:
            parser.error(f"--partition: cannot read {value}: {getattr(e, 'strerror', None) or e}")
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) > 1 and all(line.lstrip().startswith("{") and line.rstrip().endswith("}") for line in lines):
        parser.error(f"--partition: {value} holds {len(lines)} partitions; give one (a line of what --partitions printed)")
    try:
        url = json.loads(text).get("url")
    except (ValueError, AttributeError):
        url = None
    if not isinstance(url, str):
        parser.error(f"--partition: {value if value != text else 'the text'} is not a partition "
                     "(one line of what sheaf get URL --partitions N prints)")
    return text


def _plan(api, args: argparse.Namespace, base: str, path: str, token: Optional[str], list_options: dict,
          client_options: dict) -> int:
    """--partitions N: the plan, one partition per line (to stdout, or to the file of -o)."""
    list_options = {name: value for name, value in list_options.items() if name not in RUN_OPTIONS}
    try:
        with open_client(api, base, client_options) as client:
            partitions = client.partitions(path, args.partitions, at_once=args.at_once, **list_options)
    except api.Error as e:
        report(error_message(api, e, token))
        return exit_status(api, e)
    text = "".join(partition.json + "\n" for partition in partitions).encode("utf-8")
    if args.output and args.output != "-":
        target = None
        try:
            target = AtomicFile(args.output)
            target.file.write(text)
            target.commit()
        except OSError as e:
            if target is not None:
                target.discard()
            report(f"cannot write {args.output}: {e.strerror or e}")
            return EXIT_FAILURE
    else:
        sys.stdout.buffer.write(text)
        sys.stdout.flush()
    return EXIT_OK


def run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.format == "csv" and not args.fields:
        parser.error("--format csv needs --fields, the JSON pointers of its columns (e.g. --fields /id,/user/login)")
    urls = list(args.url or [])
    others = [url for url in urls[1:] if not url.lower().startswith(("http://", "https://"))]
    if others:
        # A second value that is no URL is more often a secret typed in the wrong place.
        parser.error(unrecognized_message(others))
    if len(urls) > 1 or args.urls is not None or args.each:
        return groups.run(parser, args, urls, _list_options(parser, args))
    for flag, given in (("--tag", args.tag is not None), ("--ordered", args.ordered), ("--fail-fast", args.fail_fast),
                        ("--missing", args.missing is not None), ("--failed", args.failed is not None)):
        if given:
            parser.error(f"{flag} is for several lists: give several URLs, --urls or --each")
    args.url = urls[0] if urls else None
    if args.at_once is not None and args.partitions is None:
        parser.error("--at-once says how many of the partitions run at the same time: give it with --partitions")
    partition = None
    if args.partition is not None:
        if args.url is not None:
            parser.error("--partition holds the list's URL: give no URL with it")
        if args.partitions is not None or args.explain:
            parser.error("--partition runs a partition: not with --partitions or --explain")
        partition = _partition_text(parser, args.partition)
        args.url = json.loads(partition)["url"]
    elif args.url is None:
        parser.error("the following arguments are required: URL (or --partition)")
    connection = connect(parser, args)
    if connection is None:
        return EXIT_FAILURE
    api, base, path, client_options, token = connection
    list_options = _list_options(parser, args)
    syncs = any(name in list_options for name in SYNC_OPTIONS)
    if syncs and (partition is not None or args.partitions is not None):
        parser.error("--until, --since-param and --state fetch a whole list from where it got to: "
                     "not with --partition or --partitions")
    state_file = None
    if args.state is not None and not args.explain:
        try:
            state_file = StateFile(args.state)
        except StateFileError as e:
            parser.error(f"--state: {e}")
    if partition is not None:
        described = sorted(name for name in list_options if name not in RUN_OPTIONS)
        if described:
            parser.error("--partition holds the list's description: not with "
                         + ", ".join("--" + name.replace("_", "-") for name in described))
        # The query given with --query (an API key, say) goes with every page; the partition's
        # own query is in its URL.
        list_options["query"] = [split_pair(parser, pair, "=", "--query") for pair in args.query]
    if args.partitions is not None:
        if args.explain:
            parser.error("--partitions prints the plan: not with --explain")
        return _plan(api, args, base, path, token, list_options, client_options)
    if args.explain:
        return _explain(api, args, base, path, token, list_options, client_options)

    if args.output == "-":
        args.output = None   # stdout
    target = None
    if args.output:
        try:
            target = AtomicFile(args.output)
        except OSError as e:
            report(f"cannot write {args.output}: {e.strerror or e}")
            return EXIT_FAILURE
        out = target.file
    else:
        out = sys.stdout.buffer
    # Without --fields the library writes the items itself, from the bytes the pages brought
    # (nothing decoded in Python). When they go to the terminal the progress line is on, only its
    # final state is drawn, after them.
    shares_terminal = not args.output and isatty(sys.stdout)
    progress = Progress(sys.stderr, enabled=not args.quiet and isatty(sys.stderr), live=not shares_terminal)
    status, message, note = EXIT_OK, None, ""
    stop_reason = None
    resume = None   # the token after the items written
    sync_state = None   # where a syncing list got to, for --state
    state_key = None
    try:
        try:
            with open_client(api, base, client_options) as client:
                if state_file is not None:
                    # The stored value of this list (by the library's redacted name for it)
                    # becomes its bound, and the value sent with --since-param.
                    state_key = client.sync_key(path, **list_options)
                    stored = state_file.value_for(state_key, _sync_field(list_options))
                    if stored is not None:
                        list_options = _with_stored_value(list_options, stored)
                progress.start_waiting()
                if args.fields:
                    writer = FieldWriter(out, args.format, args.fields, header=args.resume is None)
                    if partition is not None:
                        stream = client.stream_partition(partition, **list_options)
                    else:
                        stream = client.stream(path, **list_options)
                    resume, stop_reason, sync_state = _write_decoded(stream, writer, progress)
                elif partition is not None:
                    written = client.fetch_partition_to(partition, out, format=args.format, progress=progress.update,
                                                        **list_options)
                    resume, stop_reason = written.resume_token, written.stop_reason
                else:
                    written = client.fetch_to(path, out, format=args.format, progress=progress.update, **list_options)
                    resume, stop_reason, sync_state = written.resume_token, written.stop_reason, written.sync_state
            if stop_reason not in (api.StopReason.COMPLETE, api.StopReason.NONE, api.StopReason.BOUND):
                note = stop_reason.note   # exit status 0: it stopped where asked
        except StateFileError as e:
            status, message = EXIT_USAGE, f"--state: {e}"
        except api.FileError as e:
            if target is None and os.strerror(errno.EPIPE) in e.message:
                return _reader_left(out, progress)
            status, message, note = EXIT_FAILURE, error_message(api, e, token), "failed"
        except api.Error as e:
            status, message = exit_status(api, e), error_message(api, e, token)
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
                report(f"cannot write {args.output}: {e.strerror or e}")
                status = status or EXIT_FAILURE
    if state_file is not None and status == EXIT_OK and sync_state is not None:
        # Only a list read to its end or to its bound: one stopped early by a limit has items
        # between what it wrote and what an earlier run saw, which the next run must still fetch.
        if stop_reason in (api.StopReason.COMPLETE, api.StopReason.BOUND):
            try:
                state_file.save(state_key or sync_state.get("list"), sync_state["field"], sync_state.get("value"))
            except OSError as e:
                message, status = f"cannot write the state file {args.state}: {e.strerror or e}", EXIT_FAILURE
        else:
            report(f"--state: {args.state} is left as it was: the list stopped early ({stop_reason.note})")
    items_written = progress.snapshot.item_count if progress.snapshot is not None else 0
    progress.finish(note)
    if message is not None:
        report(message)
    # After a failure, a token is worth printing when items were written (a failure before any
    # is re-run as it was), and not with -o: a failed run keeps nothing there.
    if status == EXIT_OK and note:
        report(note)   # why the list stopped where asked (exit status 0)
    if resume is not None and (status == EXIT_OK or (items_written > 0 and target is None)):
        report(f"to go on: --resume {resume}")
    return status


def _write_decoded(stream, writer: FieldWriter, progress: Progress):
    """What fetch_to does, through a stream (Client.stream or stream_partition) and `writer`:
    returns the token that goes on after the items written (None when the list is complete) and
    why the list stopped."""
    with stream:
        written_through = stream.resume_token
        writer.start()
        try:
            for snapshot in stream:
                progress.update(snapshot)
                with Interrupt.held_back():
                    writer.add(snapshot.items)
                    written_through = snapshot.resume_token
        except KeyboardInterrupt as interrupt:
            interrupt.resume_token = written_through   # type: ignore[attr-defined]
            raise
        finally:
            writer.finish()   # a JSON array is closed after a failure too
        return stream.resume_token, stream.stop_reason, stream.sync_state


def _reader_left(out, progress: Progress) -> int:
    """The reader went away (`sheaf get ... | head`): stop quietly."""
    silence(out)
    progress.clear()
    return EXIT_OK
