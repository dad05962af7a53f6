"""Endpoints for single requests, under /req/ of the test API server (any method).

  /req/echo[/...][?status=S]    answers S (default 200) with what it received, as JSON:
                                {"method", "path", "query": [[name, value]...], "headers":
                                {lower-cased name: [values]}, "body": text, "body_length",
                                "content_type", "form": {...} for a urlencoded body,
                                "json": value for a JSON body}
  /req/flaky?key=K&fails=N[&status=503]
                                the first N requests with key K answer S (with Retry-After: 0);
                                later ones echo; the count is shared across methods
  /req/redirect?code=C&to=URL   answers C with Location: URL (any method)
  /req/drop[?...]               reads the request, then closes the connection without answering
                                (a server that died after reading it: the request may have
                                taken effect); the request log says how often it arrived
  /req/error/<shape>[?status=S] a failure in the error shape of a public API (ERROR_SHAPES),
                                status S (default: the shape's own)
  GET /req/download?size=N[&key=K&cut=C][&etag=0][&ranges=0][&lie=L]
                                N bytes of a fixed pattern (byte i is i % 251), streamed, with
                                Content-Length, Accept-Ranges: bytes and an ETag; a Range
                                "bytes=S-" (with a matching If-Range, when given) answers 206
                                from S. cut=C: the first request with key K sends C bytes of
                                the body, then closes the connection. lie=L announces L bytes
                                more than it sends. etag=0: no validator; ranges=0: Range ignored.
                                Misbehaving servers: part=P answers a request without Range
                                206 with the first P bytes (Content-Range: bytes 0-(P-1)/N);
                                changes=1 (with key) makes every request after the first serve
                                version 2 (ETag "sheaf-N-v2", byte i is (i + 1) % 251), and
                                ifrange=0 ignores If-Range (a 206 of whatever version is current).
  GET /req/gzip-bomb?size=N     N zero bytes gzip-compressed (about N / 1000 bytes on the wire),
                                sent with Content-Encoding: gzip whether asked for or not
  GET /req/download-stats?key=K {"requests": n, "bytes": body bytes sent} for key K
"""

from __future__ import annotations

import json
import threading
from urllib.parse import parse_qs, parse_qsl

MAX_BODY = 16 << 20

#: (status, content type, body) of each API's documented error answer.
ERROR_SHAPES = {
    # Slack: 200-style envelopes, but as an HTTP failure here.
    "plain": (400, "application/json", {"error": "invalid_cursor"}),
    "reason": (401, "application/json", {"reason": "token expired"}),
    # Django REST framework.
    "drf": (403, "application/json", {"detail": "You do not have permission to perform this action."}),
    # FastAPI / pydantic validation.
    "fastapi": (422, "application/json", {"detail": [
        {"type": "missing", "loc": ["body", "name"], "msg": "Field required", "input": {}},
        {"type": "int_parsing", "loc": ["query", "limit"], "msg": "Input should be a valid integer", "input": "x"}]}),
    # Stripe.
    "stripe": (400, "application/json", {"error": {
        "type": "invalid_request_error", "code": "parameter_missing", "param": "amount",
        "message": "Missing required param: amount."}}),
    # Google APIs.
    "google": (404, "application/json", {"error": {
        "code": 404, "message": "Requested entity was not found.", "status": "NOT_FOUND"}}),
    # GitHub.
    "github": (401, "application/json", {
        "message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"}),
    # JSON:API.
    "jsonapi": (422, "application/vnd.api+json", {"errors": [
        {"status": "422", "title": "Invalid Attribute", "detail": "First name must contain at least two characters.",
         "source": {"pointer": "/data/attributes/firstName"}}]}),
    # RFC 9457 problem details.
    "problem": (403, "application/problem+json", {
        "type": "https://example.com/probs/out-of-credit", "title": "You do not have enough credit.",
        "status": 403, "detail": "Your current balance is 30, but that costs 50.", "instance": "/account/12345/msgs/abc"}),
    # OData.
    "odata": (400, "application/json", {"error": {"code": "BadArgument", "message": "Invalid $top value."}}),
    # Not JSON at all.
    "html": (502, "text/html", "<html><body><h1>502 Bad Gateway</h1></body></html>"),
}

_flaky_lock = threading.Lock()
_flaky_counts: dict = {}
_download_stats: dict = {}


def reset() -> None:
    with _flaky_lock:
        _flaky_counts.clear()
        _download_stats.clear()


def read_body(handler) -> bytes:
    length = handler.headers.get("Content-Length")
    if not length:
        return b""
    remaining = min(int(length), MAX_BODY)
    chunks = []
    while remaining > 0:  # bounded by Content-Length (capped)
        chunk = handler.rfile.read(min(remaining, 65536))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def handle(handler, method: str, path: str, query: str) -> None:
    body = read_body(handler) if method not in ("GET", "HEAD") or handler.headers.get("Content-Length") else b""
    params = dict(parse_qsl(query, keep_blank_values=True))
    if path == "/req/echo" or path.startswith("/req/echo/"):
        echo(handler, method, path, query, body, int(params.get("status", "200")))
    elif path == "/req/flaky":
        key = params.get("key", "")
        with _flaky_lock:
            seen = _flaky_counts.get(key, 0)
            _flaky_counts[key] = seen + 1
        if seen < int(params.get("fails", "1")):
            status = int(params.get("status", "503"))
            handler.send_json(status, {"error": "flaky", "attempt": seen + 1}, [("Retry-After", "0")])
        else:
            echo(handler, method, path, query, body, 200)
    elif path == "/req/download":
        download(handler, params)
    elif path == "/req/gzip-bomb":
        gzip_bomb(handler, int(params.get("size", "0")))
    elif path == "/req/download-stats":
        with _flaky_lock:
            handler.send_json(200, _download_stats.get(params.get("key"), {"requests": 0, "bytes": 0}))
    elif path == "/req/drop":
        handler.close_connection = True   # nothing is sent: the connection just ends
    elif path == "/req/redirect":
        to = params.get("to", "/req/echo")
        handler.send_json(int(params.get("code", "302")), {"location": to}, [("Location", to)])
    elif path.startswith("/req/error/") and path[len("/req/error/"):] in ERROR_SHAPES:
        status, content_type, payload = ERROR_SHAPES[path[len("/req/error/"):]]
        data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
        handler.send(int(params.get("status", status)), data, content_type)
    else:
        handler.send_json(404, {"error": "not found"})


def echo(handler, method: str, path: str, query: str, body: bytes, status: int) -> None:
    headers: dict = {}
    for name, value in handler.headers.items():
        headers.setdefault(name.lower(), []).append(value)
    content_type = handler.headers.get("Content-Type", "")
    answer = {"method": method, "path": handler.path.split("?", 1)[0],
              "query": [list(pair) for pair in parse_qsl(query, keep_blank_values=True)],
              "headers": headers, "body": body.decode("utf-8", "replace"), "body_length": len(body),
              "content_type": content_type}
    if content_type.startswith("application/x-www-form-urlencoded"):
        answer["form"] = {k: v for k, v in parse_qs(body.decode(), keep_blank_values=True).items()}
    elif content_type.startswith("application/json") and body:
        try:
            answer["json"] = json.loads(body)
        except ValueError:
            answer["json_error"] = True
    if method == "HEAD":
        handler.send(status, b"", None, [("X-Echo-Method", method)])
    else:
        handler.send_json(status, answer, [("X-Echo-Method", method)])


PATTERN = bytes(i % 251 for i in range(251 * 1024))   # 251 KiB: a whole number of periods


def pattern_bytes(start: int, length: int):
    """Chunks of the pattern from byte `start`, `length` bytes in all."""
    offset = start % 251
    while length > 0:   # bounded by length
        chunk = PATTERN[offset:offset + min(length, len(PATTERN) - offset)]
        yield chunk
        length -= len(chunk)
        offset = 0


def download(handler, params: dict) -> None:
    size = int(params.get("size", "0"))
    key = params.get("key")
    first = True
    if key is not None and ("cut" in params or "changes" in params):
        with _flaky_lock:
            first = key not in _flaky_counts
            _flaky_counts[key] = _flaky_counts.get(key, 0) + 1
    version = 1 if first or params.get("changes") != "1" else 2
    etag = None
    if params.get("etag", "1") != "0":
        etag = f'"sheaf-{size}"' if version == 1 else f'"sheaf-{size}-v2"'
    start = 0
    ranged = handler.headers.get("Range", "")
    if params.get("ranges", "1") != "0" and ranged.startswith("bytes=") and ranged.endswith("-"):
        if_range = handler.headers.get("If-Range")
        if if_range is None or if_range == etag or params.get("ifrange") == "0":
            start = min(int(ranged[6:-1]), size)
    cut = int(params["cut"]) if first and key is not None and "cut" in params else None
    length = size - start
    end = size - 1
    if not ranged and "part" in params:
        length = min(int(params["part"]), size)
        end = length - 1
    handler.send_response(206 if start or end < size - 1 else 200)
    handler.send_header("Content-Type", "application/octet-stream")
    handler.send_header("Content-Length", str(length + int(params.get("lie", "0"))))
    handler.send_header("Accept-Ranges", "bytes")
    if etag:
        handler.send_header("ETag", etag)
    if start or end < size - 1:
        handler.send_header("Content-Range", f"bytes {start}-{end}/{size}")
    if cut is not None:
        handler.close_connection = True
    handler.end_headers()
    handler._answered()
    sent = 0
    try:
        for chunk in pattern_bytes(start + version - 1, length if cut is None else min(cut, length)):
            handler.wfile.write(chunk)
            sent += len(chunk)
    finally:
        if key is not None:
            with _flaky_lock:
                stats = _download_stats.setdefault(key, {"requests": 0, "bytes": 0})
                stats["requests"] += 1
                stats["bytes"] += sent
    if cut is not None or "lie" in params:
        handler.close_connection = True


def gzip_bomb(handler, size: int) -> None:
    import zlib

    packer = zlib.compressobj(9, zlib.DEFLATED, 31)   # 31: the gzip wrapper
    zeros = bytes(1 << 20)
    chunks = []
    for _ in range(size >> 20):   # bounded by size
        chunks.append(packer.compress(zeros))
    chunks.append(packer.compress(bytes(size & ((1 << 20) - 1))))
    chunks.append(packer.flush())
    handler.send(200, b"".join(chunks), "application/octet-stream", [("Content-Encoding", "gzip")])
