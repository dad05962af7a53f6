"""What the commands that connect (get, request, download) share: URL and the connection flags
turned into a base URL, a path and a client's options; the library loaded, or the reason it was
not; a client opened. The credential's secret is kept apart, for messages to hide."""

from __future__ import annotations

import argparse
import contextlib
import os
from typing import List, Optional, Tuple
from urllib.parse import urlsplit

from .exits import one_line, report
from .parser import CACHE_ENV, TOKEN_ENV


def split_pair(parser: argparse.ArgumentParser, text: str, separator: str, flag: str) -> Tuple[str, str]:
    """NAME, separator, VALUE as (name, value), or a usage error that names `flag`."""
    name, found, value = text.partition(separator)
    if not found or not name.strip():
        parser.error(f"{flag} expects NAME{separator.strip() or separator}VALUE, not {text!r}")
    return name.strip(), value.strip() if separator == ":" else value


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


def _client_options(parser: argparse.ArgumentParser, args: argparse.Namespace, api) -> dict:
    options: dict = {}
    for name in ("concurrency", "max_concurrency", "timeout", "max_attempts", "max_wait"):
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
        options["auth"] = split_pair(parser, args.basic, ":", "--basic")
    elif args.api_key is not None:
        options["auth"] = api.ApiKey(*split_pair(parser, args.api_key, "=", "--api-key"))
    elif args.api_key_param is not None:
        options["auth"] = api.ApiKey(*split_pair(parser, args.api_key_param, "=", "--api-key-param"), where="query")
    else:
        token = args.token if args.token is not None else os.environ.get(TOKEN_ENV)
        if token:
            options["auth"] = token
    options["headers"] = [split_pair(parser, header, ":", "-H") for header in args.header]
    if args.http_version is not None:
        options["http_version"] = args.http_version
    cache = args.cache if getattr(args, "cache", None) is not None else os.environ.get(CACHE_ENV)
    if cache:
        options["cache"] = cache
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

    extra = [split_pair(parser, pair, "=", "--query") for pair in pairs]
    if not extra:
        return path
    joined = "&".join(f"{quote(name, safe='')}={quote(value, safe='')}" for name, value in extra)
    return path + ("&" if "?" in path else "?") + joined


def load_api(token: Optional[str]):
    """The sheaf package, or None (the reason printed) when the library cannot be loaded."""
    try:
        import sheaf as api
        api.Client  # the library loads here at the latest
        return api
    except (ImportError, OSError, AttributeError) as e:
        report(f"cannot load the Sheaf library: {one_line(str(e), token)} "
               "(set SHEAF_LIBRARY_PATH to libsheaf.so.1)")
        return None


@contextlib.contextmanager
def open_client(api, base: str, client_options: dict):
    """A client whose log lines and events all come out before it closes (closing drops those
    still queued)."""
    with api.Client(base, **client_options) as client:
        try:
            yield client
        finally:
            client.flush_hooks()


def connect(parser: argparse.ArgumentParser, args: argparse.Namespace):
    """What every command that connects starts with: URL split into the base URL and the path
    (with --query added), the library, the client's options and the credential's secret (for
    messages to hide). None when the library did not load (the reason is already printed)."""
    base, path = _split_url(parser, args.url)
    path = _with_query(parser, path, args.query)
    api = load_api(args.token)
    if api is None:
        return None
    client_options = _client_options(parser, args, api)
    return api, base, path, client_options, _credential_text(client_options)
