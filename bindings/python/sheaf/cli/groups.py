"""`sheaf get` with many lists as one job: several URLs, `--urls FILE`, or a fan-out
(`sheaf get PARENT_URL --each TEMPLATE`). Every list's items are written as they arrive (one
client, one window per origin for all of them), optionally tagged with their list; at the end a
summary on stderr, and with `--failed FILE` the lists that failed, which `--urls FILE` fetches
again from where they stopped."""

from __future__ import annotations

import argparse
import errno
import json
import sys
from typing import Any, Dict, List, NamedTuple, Optional, Tuple
from urllib.parse import urlsplit

from .connection import _split_url, _with_query, connect, open_client
from .exits import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, Interrupt, error_message, exit_status, report
from .output import AtomicFile, FieldWriter, silence, write_whole

class Entry(NamedTuple):
    """One list to fetch: its URL, and from a --failed file its tag, resume token and, for a
    fan-out's parent, its templates."""

    url: str
    tag: Optional[str] = None
    resume_token: Optional[str] = None
    each: Tuple[str, ...] = ()


def read_urls(parser: argparse.ArgumentParser, source: str) -> List[Entry]:
    """--urls FILE (- for stdin): a URL a line, blank lines and "#" comments skipped; a line
    starting with "{" is one that --failed wrote (url, tag, resume_token; each for a parent)."""
    try:
        if source == "-":
            text = sys.stdin.buffer.read().decode("utf-8")
        else:
            with open(source, "rb") as file:
                text = file.read().decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        parser.error(f"--urls: cannot read {source}: {getattr(e, 'strerror', None) or e}")
    entries = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if not line.startswith("{"):
            entries.append(Entry(line))
            continue
        try:
            fields = json.loads(line)
        except ValueError:
            fields = None
        if not isinstance(fields, dict) or not isinstance(fields.get("url"), str) \
                or not all(isinstance(fields.get(name), (str, type(None))) for name in ("tag", "resume_token")) \
                or not isinstance(fields.get("each", []), list) \
                or not all(isinstance(template, str) for template in fields.get("each", [])):
            parser.error(f"--urls: {source}, line {number}: not a URL, nor a line that --failed writes "
                         '({"url": ..., "tag": ..., "resume_token": ...})')
        entries.append(Entry(fields["url"], fields.get("tag"), fields.get("resume_token"), tuple(fields.get("each", []))))
    return entries


def _tagged(items: List[Any], name: str, tag: str) -> List[Any]:
    """Each item with its list's tag under `name`: an object gets the field (replacing one of that
    name); anything else is wrapped as {name: tag, "item": item}."""
    return [dict(item, **{name: tag}) if isinstance(item, dict) else {name: tag, "item": item} for item in items]


def run(parser: argparse.ArgumentParser, args: argparse.Namespace, urls: List[str], options: Dict[str, Any]) -> int:
    """`sheaf get` for a group of lists: `urls` are those given on the command line, `options`
    the description flags and budgets, as for one list."""
    for flag, given in (("--explain", args.explain), ("--partitions", args.partitions is not None),
                        ("--partition", args.partition is not None), ("--resume", args.resume is not None)):
        if given:
            parser.error(f"{flag} is for one list: not with several URLs, --urls or --each "
                         "(--urls takes the lines --failed writes, each with its token)")
    which = "--each" if args.each else "--urls" if args.urls is not None else "several URLs"
    if args.state is not None:
        # A group reports no list's sync state: the file would be neither read nor written.
        parser.error(f"--state records where one list got to: not with {which} (run each list with a state "
                     "file of its own, or share one: its runs keep each other's entries)")
    if args.each:
        for flag, given in (("--until", args.until is not None), ("--since-param", args.since_param is not None)):
            if given:
                parser.error(f"--each does not bound its lists: not with {flag} (the bound would be the parent's "
                             "or every child's alike)")
    entries = [Entry(url) for url in urls]
    if args.urls is not None:
        entries += read_urls(parser, args.urls)
    if args.each:
        if len(entries) != 1 or entries[0].each:
            parser.error("--each fans out from one list: give one PARENT_URL")
        entries = [entries[0]._replace(each=tuple(args.each))]
        for flag, value in (("--max-items", args.max_items), ("--max-pages", args.max_pages),
                            ("--max-requests", args.max_requests), ("--deadline", args.deadline)):
            if value is not None:
                parser.error(f"{flag} is not taken with --each (it would stop the parent's list short)")
    elif args.missing is not None:
        parser.error("--missing is about --each's templates: give --each")
    if not entries:
        report("no URLs to fetch")
        return _write_failed(args.failed, "", []) or EXIT_OK
    # Every list goes to the first URL's origin: the credential is sent to it, and to no other.
    args.url = entries[0].url
    connection = connect(parser, args)
    if connection is None:
        return EXIT_FAILURE
    api, base, _path, client_options, token = connection
    origin = urlsplit(base)
    paths = []
    for entry in entries:
        entry_base, path = _split_url(parser, entry.url)
        if urlsplit(entry_base) != origin:
            parser.error(f"every URL must be on the first URL's origin ({base}); {entry.url!r} is not")
        paths.append(_with_query(parser, path, args.query) if entry.resume_token is None else path)
    # The description flags describe every list (a fan-out's parent and children alike); what
    # is left are the budgets, per list.
    described = api.Description().merged({name: options.pop(name) for name in list(options)
                                          if name in _DESCRIPTION_PARTS})

    target = None
    if args.output and args.output != "-":
        try:
            target = AtomicFile(args.output)
        except OSError as e:
            report(f"cannot write {args.output}: {e.strerror or e}")
            return EXIT_FAILURE
    out = target.file if target is not None else sys.stdout.buffer
    writer = FieldWriter(out, args.format, args.fields, header=True)
    outcomes: List[Any] = []
    status, message = EXIT_OK, None
    try:
        with open_client(api, base, client_options) as client:
            writer.start()
            try:
                plain = [(index, entry) for index, entry in enumerate(entries) if not entry.each]
                if plain:
                    stream = client.stream_many([paths[index] for index, _ in plain], described,
                                                tags=[entry.tag or entry.url for _, entry in plain],
                                                resume=[entry.resume_token for _, entry in plain],
                                                ordered=args.ordered, fail_fast=args.fail_fast, check=False,
                                                **options)
                    outcomes += _write_group(stream, writer, args.tag)
                for index, entry in enumerate(entries):
                    if entry.each:
                        stream = client.stream_each(paths[index], list(entry.each), described,
                                                    child_description=described, missing=args.missing or "skip",
                                                    ordered=args.ordered, fail_fast=args.fail_fast, check=False,
                                                    resume=entry.resume_token)
                        outcomes += _with_templates(_write_group(stream, writer, args.tag), entry.each)
            finally:
                writer.finish()   # a JSON array is closed after a failure too
    except api.Error as e:   # the group itself could not run
        status, message = exit_status(api, e), error_message(api, e, token)
    except KeyboardInterrupt:
        status, message = EXIT_INTERRUPTED, "interrupted"
    except OSError as e:
        if target is None and e.errno == errno.EPIPE:   # the reader left (`| head`): stop quietly
            silence(out)
            return EXIT_OK
        status, message = EXIT_FAILURE, f"cannot write {args.output or 'the items'}: {e.strerror or e}"
    finally:
        if target is not None:
            # Kept after lists failed too: it holds every item that arrived, and --failed names
            # the lists to fetch again. A run that could not go to its end is discarded.
            if message is None:
                try:
                    target.commit()
                except OSError as e:
                    target.discard()
                    report(f"cannot write {args.output}: {e.strerror or e}")
                    status = status or EXIT_FAILURE
            else:
                target.discard()
    if message is not None:
        report(message)
        return status
    failed = [outcome for outcome, _ in outcomes if not outcome.ok]
    for outcome, _ in outcomes:
        if not outcome.ok:
            report(f"{outcome.tag}: {error_message(api, outcome.error, token)}")
    succeeded = len(outcomes) - len(failed)
    report(f"{succeeded} list{'s' if succeeded != 1 else ''} succeeded, {len(failed)} failed"
           + (f" (written to {args.failed})" if failed and args.failed else ""))
    written = _write_failed(args.failed, base, [(outcome, each) for outcome, each in outcomes if not outcome.ok])
    if written:
        return written
    if not failed:
        return EXIT_OK
    # The status of the first failure itself, not of a list that fail-fast cancelled after it.
    first = next((outcome for outcome in failed if not isinstance(outcome.error, api.StoppedError)), failed[0])
    return exit_status(api, first.error)


#: The description flags (_list_options' keys) that describe how lists paginate.
_DESCRIPTION_PARTS = ("json", "preset", "paging", "first", "size_param", "page_size", "items", "next", "cursor",
                      "total", "page_count", "has_more", "is_last", "id", "split")


def _write_group(stream, writer: FieldWriter, tag_name: Optional[str]) -> List[Tuple[Any, Tuple[str, ...]]]:
    """Writes a group stream's items as they arrive; returns each list's outcome (without items)."""
    with stream:
        for delta in stream:
            if delta.items:
                with Interrupt.held_back():
                    writer.add(delta.items if tag_name is None else _tagged(delta.items, tag_name, delta.tag))
        result = stream.result
    return [(outcome, ()) for outcome in (result or [])]


def _with_templates(outcomes: List[Tuple[Any, Tuple[str, ...]]], each: Tuple[str, ...]) -> List[Tuple[Any, Tuple[str, ...]]]:
    """A fan-out's parent keeps its templates: fetched again, it fans out again from where it
    stopped. A list of a middle level (a fan-out of several templates) keeps the levels below it,
    as the library says (`ListOutcome.templates`)."""
    return [(outcome, tuple(outcome.templates) or (each if outcome.parent else ())) for outcome, _ in outcomes]


def _write_failed(path: Optional[str], base: str, failed: List[Tuple[Any, Tuple[str, ...]]]) -> int:
    """--failed FILE: one JSON object a line per failed list (url, tag, error, resume_token, and
    each for a fan-out's parent); replaced whole. Returns a failing status when it cannot be written."""
    if path is None:
        return EXIT_OK
    lines = []
    for outcome, each in failed:
        if outcome.url is None:
            report(f"{outcome.tag}: its URL cannot be told (a fan-out of several levels): not in {path}")
            continue
        url = outcome.url if "://" in outcome.url else base + outcome.url   # a path is on the first URL's origin
        fields: Dict[str, Any] = {"url": url, "tag": outcome.tag,
                                  "error": outcome.error.message if outcome.error is not None else None,
                                  "resume_token": outcome.resume_token}
        if each:
            fields["each"] = list(each)
        lines.append(json.dumps(fields, ensure_ascii=False) + "\n")
    failure = write_whole(path, "".join(lines).encode("utf-8"))
    if failure is not None:
        report(failure)
        return EXIT_FAILURE
    return EXIT_OK


__all__ = ["run", "read_urls"]
