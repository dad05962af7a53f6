"""`sheaf get URL`: every item of a paginated list, written in order as it arrives (to stdout or
to a file replaced only on success), with a progress line on a terminal and, after a stop or a
failure, the token that goes on. `--explain` prints what was detected instead."""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
from typing import List, Optional, Tuple
from urllib.parse import parse_qsl, unquote, urlsplit

from sheaf.description import loads_exact

from . import groups
from .connection import _split_url, connect, open_client, split_pair
from .exits import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, Interrupt, error_message, exit_status, report
from .output import AtomicFile, FieldWriter, isatty, silence, write_whole
from .parser import TOKEN_ENV, unrecognized_message
from .progress import Progress
from .request import _read_argument
from .state import StateFile, StateFileError

#: The options of a run of a list, not of its description (``--explain`` and ``--partitions``
#: refuse them: they read page one only).
RUN_OPTIONS = ("max_items", "max_pages", "max_requests", "deadline", "resume")
#: The incremental sync's parts of the description (``--explain`` refuses them too).
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
    if args.page_size is not None and args.size_param is None and args.preset is None and described is None \
            and args.graphql is None:
        parser.error("--page-size needs --size-param (the query parameter that carries it) or a preset")
    for name in RUN_OPTIONS:
        if getattr(args, name) is not None:
            options[name] = getattr(args, name)
    if options.get("deadline") == 0:
        parser.error("--deadline needs a positive number of seconds")
    options.update(_sync_options(parser, args))
    options.update(_body_options(parser, args))
    return {name: value for name, value in options.items() if value is not None}


def _body_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict:
    """-X, --json, --data, --graphql and their company as the description's method and body."""
    options: dict = {"method": args.method and args.method.upper(), "read_only": args.read_only,
                     "allow_partial": args.allow_partial}
    bodies = [flag for flag, value in (("--json", args.json), ("--data", args.data), ("--graphql", args.graphql))
              if value is not None]
    if len(bodies) > 1:
        parser.error(f"give one body, not {' and '.join(bodies)}")
    if args.content_type is not None and args.data is None:
        parser.error("--content-type is the type of --data's body")
    if args.json is not None:
        try:
            options["body"] = loads_exact(_read_argument(parser, args.json, "--json"))
        except ValueError as e:
            parser.error(f"--json is not JSON: {e}")
    elif args.data is not None:
        options["body"] = _read_argument(parser, args.data, "--data")
        options["content_type"] = args.content_type
    if (args.graphql is None) != (args.connection is None):
        parser.error("--graphql and --connection go together: the query and where its connection is in the answer")
    if (args.var or args.allow_partial or args.nested) and args.graphql is None:
        parser.error("--var, --nested and --allow-partial go with --graphql")
    if args.graphql is not None:
        try:
            options["graphql"] = sys.stdin.read() if args.graphql == "-" else open(args.graphql, encoding="utf-8").read()
        except OSError as e:
            parser.error(f"--graphql: cannot read {args.graphql}: {e.strerror or e}")
        options["connection"] = args.connection
        variables = {}
        for pair in args.var:
            name, found, text = pair.partition("=")
            if not found or not name:
                parser.error(f"--var expects NAME=VALUE, not {pair!r}")
            try:
                variables[name] = loads_exact(text)
            except ValueError:
                variables[name] = text
        options["variables"] = variables
        nested = {}
        for pair in args.nested:
            pointer, found, path = pair.partition("=")
            if not found or not pointer.startswith("/") or not path:
                parser.error(f"--nested expects PTR=FILE, the connection inside each node and its query (/comments=comments.graphql), not {pair!r}")
            try:
                nested[pointer] = open(path, encoding="utf-8").read()
            except OSError as e:
                parser.error(f"--nested: cannot read {path}: {e.strerror or e}")
        if nested:
            options["nested"] = nested
    return options


def _sync_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict:
    """--until, --since-param and --since-field as the description's until and since."""
    options: dict = {}
    if args.until is not None:
        pointer, found, text = args.until.partition("=")
        if not found or not pointer.startswith("/"):
            parser.error(f"--until expects PTR=VALUE, a JSON pointer inside each item and the bound (/id=12345), not {args.until!r}")
        try:
            # A number exactly as typed (a float would move 1.00000000000000012, and make 1e999
            # infinity); NaN and Infinity are not JSON, so they are strings.
            value = loads_exact(text)
        except ValueError:
            value = text   # not JSON: the string itself (a timestamp, say)
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            parser.error(f"--until's VALUE must be a number or a string, not {text!r}")
        options["until"] = (pointer, value)
    if (args.since_param is None) != (args.since_field is None):
        parser.error("--since-param and --since-field go together: the query parameter and the field it filters by")
    if args.since_param is not None:
        if args.state is None:
            parser.error("--since-param sends the value that --state recorded: without --state there is none, "
                         "and the whole list would be fetched: give --state FILE")
        options["since"] = (args.since_param, args.since_field, None)
    if args.state is not None and not options:
        parser.error("--state records where --until or --since-field got to: give one of them")
    return options


def _refuse_what_is_not_run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """--explain and --partitions read page one and print: the options of a run of the list (its
    budgets, --resume, the sync, how items are written) would be dropped, so they are refused."""
    mode = "--explain" if args.explain else "--partitions" if args.partitions is not None else None
    if mode is None:
        return
    given = [flag for flag, value in (("--max-items", args.max_items), ("--max-pages", args.max_pages),
                                      ("--max-requests", args.max_requests), ("--deadline", args.deadline),
                                      ("--resume", args.resume), ("--fields", args.fields)) if value is not None]
    if mode == "--explain":
        given += [flag for flag, value in (("--until", args.until), ("--since-param", args.since_param),
                                           ("--since-field", args.since_field), ("--state", args.state))
                  if value is not None]
        what = "fetches page one only and prints how the list paginates"
    else:
        if args.format != "jsonl":
            given.append(f"--format {args.format}")
        what = "prints the plan (a partition a line, as JSON) from page one; the budgets and --resume go with each --partition run"
    if given:
        parser.error(f"{mode} {what}: not with {', '.join(given)}, which it would not honour")


def _origin(parts) -> Tuple[str, str, int]:
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or (443 if scheme == "https" else 80)


def _origin_text(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc}"


def _refuse_secrets_for_a_partition(parser: argparse.ArgumentParser, args: argparse.Namespace,
                                    partition_url: str) -> None:
    """--partition without URL: the partition alone names where its requests go, and a partition
    is data (a line of a plan, from a queue or a file), not the user's word on where a credential
    may be sent. So nothing secret goes with it: a credential, a header, a query value."""
    given = [flag for flag, value in (("--token", args.token), ("$" + TOKEN_ENV, os.environ.get(TOKEN_ENV) or None),
                                      ("--basic", args.basic), ("--api-key", args.api_key),
                                      ("--api-key-param", args.api_key_param), ("--cert", args.cert),
                                      ("-H", args.header or None), ("--query", args.query or None))
             if value is not None]
    if args.token is not None:
        given = [flag for flag in given if flag != "$" + TOKEN_ENV]   # --token wins over it
    if given:
        origin = _origin_text(partition_url)
        parser.error(f"--partition names {origin} as its list's origin, and {' and '.join(given)} would be sent "
                     f"there: a partition is no word of yours on where a credential goes. Give the list's URL (or its "
                     f"origin) with it, as: sheaf get {origin} --partition ...; nothing was sent")


def _partition_on_url(parser: argparse.ArgumentParser, url: str, partition_url: str) -> List[Tuple[str, str]]:
    """URL given with --partition fixes the origin the credential goes to: the partition's list
    must be on it (else nothing is sent). URL is the list's (the one the plan was made from) or
    its origin alone; its query parameters that the partition does not hold (the secret ones,
    which a plan leaves out) are sent with every page, and one that differs from the
    partition's is refused, as is another path: that is a plan of another list."""
    _split_url(parser, url)   # a usage error for a bad URL
    given, theirs = urlsplit(url), urlsplit(partition_url)
    if _origin(given) != _origin(theirs):
        parser.error(f"--partition: its list is on {_origin_text(partition_url)}, not on {_origin_text(url)} (the "
                     "URL given, the only origin the credential goes to); nothing was sent")
    if given.path not in ("", "/") and unquote(given.path) != unquote(theirs.path):
        parser.error(f"--partition: the partition is of {theirs.path}, not of {given.path} (the URL given): "
                     "a plan of another list")
    held: dict = {}
    for name, value in parse_qsl(theirs.query, keep_blank_values=True):
        held.setdefault(name, []).append(value)
    extra = []
    for name, value in parse_qsl(given.query, keep_blank_values=True):
        if name not in held:
            extra.append((name, value))
        elif value not in held[name]:
            parser.error(f"--partition: the URL given has {name}={value}, the partition's list {name}={held[name][0]}: "
                         "a plan of another list")
    return extra


def _sync_field(list_options: dict) -> str:
    """The field a syncing run records (until's and since's are the same one)."""
    return list_options["until"][0] if "until" in list_options else list_options["since"][1]


def _with_stored_value(list_options: dict, value, seen=None) -> dict:
    """The list's options with `value` (from the state file) as the bound and the since value,
    and `seen`, the items delivered at it (so that one added since in the same second is new)."""
    options = dict(list_options)
    kept = () if seen is None else (seen,)
    if "until" in options:
        options["until"] = (options["until"][0], value) + kept
    if "since" in options:
        options["since"] = options["since"][:2] + (value,) + kept
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
    try:
        with open_client(api, base, client_options) as client:
            explained = client.explain(path, **list_options)
    except api.Error as e:
        report(error_message(api, e, token))
        return exit_status(api, e)
    if args.format == "json":   # the description itself, for --description
        text = (explained.json or "{}") + "\n"
    else:
        detected = ", ".join(explained.detected) or "nothing"
        text = explained.command_line(args.url) + "\n" + f"plan: {explained.plan or 'unknown'}; detected: {detected}\n"
    return _print(args, text.encode("utf-8"))


def _print(args: argparse.Namespace, text: bytes) -> int:
    """What --explain or --partitions prints: to stdout, or to the file of -o (replaced only
    when all of it is written)."""
    if args.output and args.output != "-":
        failure = write_whole(args.output, text)
        if failure is not None:
            report(failure)
            return EXIT_FAILURE
    else:
        sys.stdout.buffer.write(text)
        sys.stdout.flush()
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
    try:
        with open_client(api, base, client_options) as client:
            partitions = client.partitions(path, args.partitions, at_once=args.at_once, **list_options)
    except api.Error as e:
        report(error_message(api, e, token))
        return exit_status(api, e)
    return _print(args, "".join(partition.json + "\n" for partition in partitions).encode("utf-8"))


def run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.format == "csv" and not args.fields:
        parser.error("--format csv needs --fields, the JSON pointers of its columns (e.g. --fields /id,/user/login)")
    urls = list(args.url or [])
    others = [url for url in urls[1:] if not url.lower().startswith(("http://", "https://"))]
    if others:
        # A second value that is no URL is more often a secret typed in the wrong place.
        parser.error(unrecognized_message(others))
    if args.at_once is not None and args.partitions is None:
        parser.error("--at-once says how many of the partitions run at the same time: give it with --partitions")
    if len(urls) > 1 or args.urls is not None or args.each:
        return groups.run(parser, args, urls, _list_options(parser, args))
    for flag, given in (("--tag", args.tag is not None), ("--ordered", args.ordered), ("--fail-fast", args.fail_fast),
                        ("--missing", args.missing is not None), ("--failed", args.failed is not None)):
        if given:
            parser.error(f"{flag} is for several lists: give several URLs, --urls or --each")
    args.url = urls[0] if urls else None
    partition = None
    partition_query: List[Tuple[str, str]] = []
    if args.partition is not None:
        if args.partitions is not None or args.explain:
            parser.error("--partition runs a partition: not with --partitions or --explain")
        partition = _partition_text(parser, args.partition)
        partition_url = json.loads(partition)["url"]
        if args.url is None:
            # Only what is no secret goes where the partition alone says.
            _refuse_secrets_for_a_partition(parser, args, partition_url)
            args.url = partition_url
        else:
            # The URL, not the partition, says where the credential goes.
            partition_query = _partition_on_url(parser, args.url, partition_url)
    elif args.url is None:
        parser.error("the following arguments are required: URL (or --partition)")
    _refuse_what_is_not_run(parser, args)
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
    if args.state is not None:
        try:
            state_file = StateFile(args.state)
        except StateFileError as e:
            parser.error(f"--state: {e}")
    if partition is not None:
        described = sorted(name for name in list_options if name not in RUN_OPTIONS)
        if described:
            parser.error("--partition holds the list's description: not with "
                         + ", ".join("--" + name.replace("_", "-") for name in described))
        # The query given with --query (an API key, say) goes with every page, and so do the
        # URL's parameters the partition does not hold (its secret ones); the partition's own
        # query is in its URL.
        list_options["query"] = partition_query + [split_pair(parser, pair, "=", "--query") for pair in args.query]
    if args.partitions is not None:
        if args.explain:
            parser.error("--partitions prints the plan: not with --explain")
        return _plan(api, args, base, path, token, list_options, client_options)
    if args.explain:
        return _explain(api, args, base, path, token, list_options, client_options)

    if args.output == "-":
        args.output = None   # stdout
    target = None
    carried = False   # the items of FILE.partial, written first (a run resumed after a failure)
    if args.output:
        try:
            target = AtomicFile(args.output)
            carried = args.resume is not None and args.format in APPENDABLE and target.carry(partial_path(args.output))
        except OSError as e:
            if target is not None:
                target.discard()
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
                        list_options = _with_stored_value(list_options, stored, state_file.seen_for(state_key))
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
            quiet_ends = (api.StopReason.COMPLETE, api.StopReason.NONE, api.StopReason.BOUND, api.StopReason.UNCONFIRMED)
            if stop_reason not in quiet_ends:   # UNCONFIRMED is a warning below, not a note
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
        kept = None   # where the items of a failed run went (FILE.partial)
        if target is not None:
            try:
                if status == EXIT_OK:
                    target.commit()
                    if carried:
                        os.unlink(partial_path(args.output))
                elif resume is not None and (carried or _written(progress) > 0):
                    # What was paid for is kept beside FILE, for --resume to append the rest to.
                    kept = partial_path(args.output)
                    target.commit_as(kept)
                else:
                    target.discard()
            except OSError as e:
                target.discard()
                report(f"cannot write {kept or args.output}: {e.strerror or e}")
                status, kept = status or EXIT_FAILURE, None
    if state_file is not None and status == EXIT_OK and sync_state is not None:
        # Only a list read to its end or to its bound: one stopped early by a limit has items
        # between what it wrote and what an earlier run saw, which the next run must still fetch.
        if stop_reason in (api.StopReason.COMPLETE, api.StopReason.BOUND):
            try:
                state_file.save(state_key or sync_state.get("list"), sync_state["field"], sync_state.get("value"),
                                    sync_state.get("seen"))
            except OSError as e:
                message, status = f"cannot write the state file {args.state}: {e.strerror or e}", EXIT_FAILURE
        else:
            report(f"--state: {args.state} is left as it was: the list stopped early ({stop_reason.note})")
    items_written = _written(progress)
    progress.finish(note)
    if message is not None:
        report(message)
    if stop_reason == api.StopReason.UNCONFIRMED and status == EXIT_OK:   # not a note: a warning
        # Said even with --quiet: exit 0 with every item the server showed, and maybe not all.
        report(f"warning: {items_written} items in one full page, and nothing said it was the last: the server "
               "may page by a parameter it was not told of; describe the paging (--paging, --description) "
               "to read the rest, or --paging single to say the list is one response")
    # After a failure, a token is worth printing when items were written (a failure before any
    # is re-run as it was): to stdout, or with -o to FILE.partial.
    if status == EXIT_OK and note:
        report(note)   # why the list stopped where asked (exit status 0)
    if kept is not None:
        how = ("the same command with --resume TOKEN appends the rest to them and writes the whole list to "
               f"{args.output}" if args.format in APPENDABLE else
               f"a run with --resume TOKEN writes the rest (to join to them: --format {args.format} is one document)")
        report(f"the items that arrived are kept in {kept} ({args.output} is left as it was); {how}")
        report(f"to go on: --resume {resume}")
    elif resume is not None and (status == EXIT_OK or (items_written > 0 and target is None)):
        report(f"to go on: --resume {resume}")
    return status


#: Formats whose output of a resumed run appends to the items before it (csv has no header row
#: with --resume); a json array is one document.
APPENDABLE = ("jsonl", "csv")


def partial_path(output: str) -> str:
    """Where a failed run's items are kept: beside the file of -o."""
    return output + ".partial"


def _written(progress: Progress) -> int:
    return progress.snapshot.item_count if progress.snapshot is not None else 0


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
