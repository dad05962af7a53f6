"""`sheaf request [-X METHOD | METHOD] URL`: one request, any method, with a JSON, form or raw
body; the response body to stdout or to a file replaced only on success."""

from __future__ import annotations

import argparse
import json
import sys

from .connection import connect, open_client, split_pair
from .exits import EXIT_FAILURE, EXIT_OK, error_message, exit_status, report
from .output import AtomicFile


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


def run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    bodies = [flag for flag, given in (("--json", args.json is not None), ("--form", bool(args.form)),
                                       ("--data", args.data is not None)) if given]
    if len(bodies) > 1:
        parser.error(f"give one body, not {' and '.join(bodies)}")
    if args.content_type is not None and args.data is None:
        # --json and --form have their own type; dropping the one given would be silent.
        parser.error(f"--content-type is the type of --data's body: not with {bodies[0] if bodies else 'no body'} "
                     "(a JSON body of another type is --data JSON|@FILE --content-type TYPE)")
    options: dict = {"retry": args.retry}
    if args.json is not None:
        raw = _read_argument(parser, args.json, "--json")
        try:
            options["json"] = json.loads(raw)
        except ValueError as e:
            parser.error(f"--json is not JSON: {e}")
    elif args.form:
        options["data"] = [split_pair(parser, field, "=", "--form") for field in args.form]
    elif args.data is not None:
        options["content"] = _read_argument(parser, args.data, "--data")
        options["content_type"] = args.content_type
    method = (args.method or ("POST" if bodies else "GET")).upper()
    if args.output == "-":
        args.output = None   # stdout
    connection = connect(parser, args)
    if connection is None:
        return EXIT_FAILURE
    api, base, path, client_options, secret = connection
    failure = None
    try:
        with open_client(api, base, client_options) as client:
            response = client.request(method, path, **options)
    except api.HTTPError as e:
        response, failure = e.response, e   # the body is still written
    except api.Error as e:
        report(error_message(api, e, secret))
        return exit_status(api, e)
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
        report(f"cannot write the body: {e.strerror or e}")
        return EXIT_FAILURE
    if failure is not None:
        report(error_message(api, failure, secret))
        return exit_status(api, failure)
    return EXIT_OK
