#!/usr/bin/env python3
"""Loopback test API server for Sheaf's tests and benchmarks.

Run:    python3 Tests/server/api_server.py [--port 0] [--host 127.0.0.1] [--latency-ms 0]
                                            [--quiet] [--verbose] [--exit-on-stdin-eof]
                                            [--cache-pages] [--tls CERT KEY]
Import: server, thread = start_server(port=0, latency_ms=0); ...; server.shutdown_and_close()

--cache-pages (opt-in, for benchmarks; cache_pages=True in start_server) memoizes the 200 answers
of the list endpoints per request target (path + query string), so a page asked for again is
sent without being generated again and the Python server is less of a bottleneck at zero
latency. Latency still applies; requests with fail= are never cached; the cache holds at most
CACHE_LIMIT_BYTES of bodies (later pages are generated every time). Off by default.

Once listening, the script prints exactly one line "PORT <n>" on stdout and flushes. It stops
on SIGTERM / SIGINT and, with --exit-on-stdin-eof, when its stdin reaches end of file.

Every list item i (0-based) is {"id":i,"name":"item-<i>"} (compact JSON).

Query parameters common to the list endpoints (/anchor, /drf, /array):
  n=1000          items in the list
  latency_ms=X    sleep added to each request (overrides the server's --latency-ms)
  cap=100         largest page size honoured; larger requested sizes are silently capped
  pad=B           each item gets "pad": B 'x' characters
  fail=K:C:S      (repeatable, or comma separated) the first C requests for page K answer S
                  with {"error":"injected","status":S} (+ "Retry-After: 0" for 429 and 503)
  garbage=K       page K answers 200 with the body "this is not json"
  short=K         (/anchor, /drf) the list really has n-K items but still claims n
  indent=1        (/anchor) the page pretty-printed, two spaces a level (items span lines)
  bearer=T        (any endpoint) answer 401 {"error":"bad credentials"} unless the request
                  carries "Authorization: Bearer T" (an expired token gets the same answer)
  bearer_from=K   with bearer=: only requests for page K and later (?page=, from 1) need it, as
                  when a token expires in the middle of a list
  capacity=C      at most C requests (of all that carry capacity=C) are served at once; the
                  others wait their turn, so latency rises above C in flight
  limit=C         a request arriving while C others (carrying limit=C) are served is answered
                  429 {"error":"too many requests"} at once (with Retry-After: X when
                  limit_retry_after=X); /_stats counts them as "refused"
  ratelimit=R:W   R requests per W-second window (all that carry the same R:W): every answer
                  has RateLimit-Policy: "default";q=R;w=W and RateLimit: "default";r=LEFT;t=RESET,
                  and past R a 429 with Retry-After: RESET ("refused" in /_stats)
  quota=R:W       GitHub's primary rate limit: R points per W-second window per credential (the
                  Authorization header; requests without one share a window): every answer has
                  X-RateLimit-Limit: R, -Remaining, -Used, -Reset (a Unix time) and -Resource
                  (quota_resource=NAME, default core), and past R a 403 {"message": "API rate
                  limit exceeded ..."} with X-RateLimit-Remaining: 0 and no Retry-After, as GitHub
                  answers ("refused" in /_stats); quota_status=429 answers 429 instead
  mbps=M          the answers of every request that carries mbps=M share one link of M megabits
                  a second: each is sent when the link has carried the answers before it
                  (latency_ms is the round trip on top), as a client's downlink would
  etag=1          GitHub's conditional requests: every 200 answer carries a weak ETag of its
                  body, a Last-Modified (the time of the last /_edit) and Cache-Control: private;
                  a request whose If-None-Match names the current tag (or, without one, whose
                  If-Modified-Since is that time) is answered 304 with the same headers and no
                  body, and costs no point of quota= ("not_modified" in /_stats). etag=huge
                  sends a 4 KiB tag; etag=nostore adds Cache-Control: no-store; etag=always
                  answers 304 to any request with an If-None-Match, whatever it names, and
                  etag=unasked answers 304 to every request of page 2 and later (hostile servers)

Endpoints:
  GET /anchor?page=N&per_page=S   {"items":[...],"next_page":url|null,"total":n}
        extra: loop=1 endless=1 nototal=1 nonext=1 dup=1 next_base=URL
  GET /drf?page=N&page_size=S     {"count":n,"next":url|null,"previous":url|null,"results":[...]}
  GET /array?page=N&per_page=S    [...]
  GET /conv/<name>                the pagination of public APIs: github, gitlab, json-server,
                                  hand-written (json-server's shape without its Link header),
                                  drf-limit, drf-cursor, jsonapi, odata, hal, stripe, slack,
                                  google, zendesk, fastapi-page, fastapi-limit-offset,
                                  content-range, jira, elastic (conventions.py documents each)
  GET /range/<name>               cursor lists with a range filter: stripe, slack, shopify, with
                                  bursts, inserts during a run and a filter ignored (ranges.py)
  GET /feed/<name>                lists that grow while they are watched: stripe (newest first),
                                  events (oldest first, since=), items added by /_feed/insert
                                  (feeds.py)
  ANY /req/...                    single requests: echo, flaky, redirect, error shapes
  POST /post/...                  lists behind a POST: Notion's database query, Elasticsearch's
                                  search_after, a GitHub-shaped GraphQL connection (post_api.py)
                                  (requests_api.py documents each)
  GET /orgs/<org>/repos, /repos/<org>/<repo>/issues
                                  an org of 300 repositories and their issues, 0 to 12 pages
                                  each in mixed conventions, for fan-out (org_api.py documents
                                  them and their /_orgs/ control endpoints)
  GET /redirect?to=URL[&code=302] redirect (no latency)
  GET /status?code=S[&retry_after=X]   {"error":"status","status":S}
  GET /_stats                     {"requests":..,"max_in_flight":..,"in_flight":..,"not_modified":..,
                                   "bytes_sent":.. (heads and bodies, the /_ endpoints' not counted),"log":[..]}
  GET|POST /_reset                {"ok":true}
  GET|POST /_edit?ids=I,J,...     items I, J, ... are named "item-<i>-edited" from now on (in
                                  every list), and Last-Modified moves; /_reset undoes it
  GET /_timeline                  {"arrivals":[t..],"failures":[{"at":t,"in_flight":k}..]}: when each
                                  request arrived and each fail= answer went out (monotonic seconds)
"""

from __future__ import annotations

import argparse
import array
import collections
import json
import email.utils
import fcntl
import hashlib
import math
import os
import signal
import socket
import ssl
import sys
import termios
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote_plus, urlsplit

DEFAULT_N = 1000
DEFAULT_PAGE_SIZE = 50
DEFAULT_CAP = 100
LOG_LIMIT = 20000
MAX_LATENCY_MS = 120_000          # a single request never sleeps longer than this
MAX_PAD = 10_000_000              # bytes of padding per item, to keep mistakes bounded
IDLE_TIMEOUT_S = 120              # an idle keep-alive connection is closed after this
CACHE_LIMIT_BYTES = 512 * 1024 * 1024   # --cache-pages keeps at most this much page body
JSON_TYPE = "application/json"
GARBAGE_BODY = b"this is not json"


class BadParam(Exception):
    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


# ---- shared state ------------------------------------------------------------------------------

class ServerState:
    """Counters, the request log and the fail counts; every access holds the lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.log: collections.deque = collections.deque(maxlen=LOG_LIMIT)
        self.fail_counts: dict = {}
        self.refused = 0                 # 429s answered by limit= and ratelimit=
        self.capacities: dict = {}       # capacity=C -> a semaphore of C
        self.limited: dict = {}          # limit=C -> requests being served under it
        self.windows: dict = {}          # ratelimit=R:W -> [window start, requests in it]
        self.arrivals: collections.deque = collections.deque(maxlen=LOG_LIMIT)   # monotonic times
        self.failures: list = []         # fail= answers: when, and how many were in flight then
        self.not_modified = 0            # 304s answered by etag=
        self.bytes_sent = 0              # every answer's status line, headers and body
        self.links: dict = {}            # mbps=M -> when its link is free (monotonic seconds)

    def begin(self, path: str, authorization: str | None) -> None:
        with self.lock:
            self.requests += 1
            self.in_flight += 1
            if self.in_flight > self.max_in_flight:
                self.max_in_flight = self.in_flight
            self.log.append({"path": path, "authorization": authorization})
            self.arrivals.append(time.monotonic())

    def end(self) -> None:
        with self.lock:
            self.in_flight -= 1

    def reset(self) -> None:
        with self.lock:
            self.requests = 0
            # Requests still being handled stay in flight; the maximum restarts from them.
            self.max_in_flight = self.in_flight
            self.log.clear()
            self.arrivals.clear()
            self.failures.clear()
            self.fail_counts.clear()
            self.refused = 0
            self.not_modified = 0
            self.bytes_sent = 0
            self.windows.clear()
            EDITED.clear()
            EDITED_AT[0] = SERVER_START

    def snapshot(self) -> dict:
        with self.lock:
            return {
                "requests": self.requests,
                "max_in_flight": self.max_in_flight,
                "in_flight": self.in_flight,
                "refused": self.refused,
                "not_modified": self.not_modified,
                "bytes_sent": self.bytes_sent,
                "log": list(self.log),
            }

    def timeline(self) -> dict:
        with self.lock:
            return {"arrivals": list(self.arrivals), "failures": list(self.failures)}

    def note_failure(self) -> None:
        with self.lock:
            self.failures.append({"at": time.monotonic(), "in_flight": self.in_flight})

    def capacity(self, size: int) -> threading.Semaphore:
        with self.lock:
            return self.capacities.setdefault(size, threading.Semaphore(size))

    def enter_limit(self, size: int) -> bool:
        """True (and counts it in) while fewer than `size` requests are served under limit=size."""
        with self.lock:
            if self.limited.get(size, 0) >= size:
                self.refused += 1
                return False
            self.limited[size] = self.limited.get(size, 0) + 1
            return True

    def leave_limit(self, size: int) -> None:
        with self.lock:
            self.limited[size] -= 1

    def take_quota(self, key: tuple, allowed: int, seconds: int) -> tuple:
        """quota=R:W: counts a request of one credential in its window; returns (admitted,
        points left, points used, the window's reset as a Unix time)."""
        with self.lock:
            now = time.time()
            window = self.windows.get(key)
            if window is None or now >= window[0] + seconds:
                window = self.windows[key] = [now, 0]
            reset = math.ceil(window[0] + seconds)
            if window[1] >= allowed:
                self.refused += 1
                return False, 0, window[1], reset
            window[1] += 1
            return True, allowed - window[1], window[1], reset

    def refund_quota(self, key: tuple) -> tuple:
        """A 304 costs no point (GitHub): gives back what take_quota counted; returns (points
        left, points used)."""
        with self.lock:
            self.not_modified += 1
            window = self.windows.get(key)
            if window is None:
                return None
            window[1] = max(0, window[1] - 1)
            return window[1]

    def take_link(self, mbps: int, count: int) -> float:
        """mbps=M: `count` bytes on the link M shares; returns the seconds until they are through."""
        with self.lock:
            now = time.monotonic()
            free = max(now, self.links.get(mbps, 0.0)) + count * 8 / (mbps * 1e6)
            self.links[mbps] = free
            return free - now

    def note_sent(self, count: int) -> None:
        with self.lock:
            self.bytes_sent += count

    def note_not_modified(self) -> None:
        with self.lock:
            self.not_modified += 1

    def take_rate(self, allowed: int, seconds: int) -> tuple:
        """ratelimit=R:W: counts a request in the current W-second window; returns (admitted,
        requests left, seconds until the window resets)."""
        with self.lock:
            now = time.monotonic()
            window = self.windows.get((allowed, seconds))
            if window is None or now - window[0] >= seconds:
                window = self.windows[(allowed, seconds)] = [now, 0]
            reset = max(1, math.ceil(window[0] + seconds - now))
            if window[1] >= allowed:
                self.refused += 1
                return False, 0, reset
            window[1] += 1
            return True, allowed - window[1], reset

    def take_failure(self, key: tuple, limit: int) -> bool:
        """True (and counts it) while fewer than `limit` failures were injected for `key`."""
        with self.lock:
            used = self.fail_counts.get(key, 0)
            if used >= limit:
                return False
            self.fail_counts[key] = used + 1
            return True


# ---- query helpers -----------------------------------------------------------------------------

class Query:
    def __init__(self, raw: str):
        self.raw = raw
        self.values = parse_qs(raw, keep_blank_values=True)

    def has(self, name: str) -> bool:
        return name in self.values

    def text(self, name: str, default: str | None = None) -> str | None:
        v = self.values.get(name)
        return v[0] if v else default

    def every(self, name: str) -> list:
        return self.values.get(name, [])

    def integer(self, name: str, default: int | None, lo: int | None = None, hi: int | None = None):
        v = self.values.get(name)
        if not v:
            return default
        try:
            x = int(v[0].strip())
        except ValueError:
            raise BadParam(name) from None
        if (lo is not None and x < lo) or (hi is not None and x > hi):
            raise BadParam(name)
        return x

    def flag(self, name: str) -> bool:
        v = self.values.get(name)
        return bool(v) and v[0] not in ("", "0", "false", "no")

    def names(self) -> list:
        """The parameters' names, in order, each once."""
        return list(self.values)

    def raw_value(self, name: str) -> str:
        """The first value of `name` as the query writes it (escapes kept)."""
        for seg in self.raw.split("&"):
            key, _, value = seg.partition("=")
            if unquote_plus(key) == name:
                return value
        return ""

    def with_param(self, name: str, value) -> str:
        """The raw query with `name` set to `value`: replaced in place (first occurrence, later
        ones dropped) or appended; every other parameter kept byte for byte."""
        out, done = [], False
        for seg in self.raw.split("&"):
            if not seg:
                continue
            key = unquote_plus(seg.split("=", 1)[0])
            if key == name:
                if not done:
                    out.append(f"{name}={value}")
                    done = True
                continue
            out.append(seg)
        if not done:
            out.append(f"{name}={value}")
        return "&".join(out)


def parse_fail_specs(q: Query) -> list:
    specs = []
    for value in q.every("fail"):
        for part in value.split(","):
            part = part.strip()
            if not part:
                continue
            bits = part.split(":")
            if len(bits) != 3:
                raise BadParam("fail")
            try:
                page, count, status = (int(b) for b in bits)
            except ValueError:
                raise BadParam("fail") from None
            if count < 0 or not 100 <= status <= 599:
                raise BadParam("fail")
            specs.append((page, count, status, f"{page}:{count}:{status}"))
    return specs


SERVER_START = time.time()
EDITED: set = set()            # /_edit: items named item-<i>-edited
EDITED_AT = [SERVER_START]     # Last-Modified of etag= answers: the last /_edit


def item_json(i: int, pad: str | None) -> str:
    name = "item-%d-edited" % i if i in EDITED else "item-%d" % i
    if pad is None:
        return '{"id":%d,"name":"%s"}' % (i, name)
    return '{"id":%d,"name":"%s","pad":"%s"}' % (i, name, pad)


def items_json(indices, pad: str | None) -> str:
    return "[" + ",".join(item_json(i, pad) for i in indices) + "]"


def dumps(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


# ---- request handler ---------------------------------------------------------------------------

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "sheaf-test-api"
    sys_version = ""
    timeout = IDLE_TIMEOUT_S

    # -- plumbing --

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.track(self.connection, False)

    def log_message(self, format, *args) -> None:  # noqa: A002 - signature from the base class
        if self.server.verbose:
            sys.stderr.write("%s - %s\n" % (self.address_string(), format % args))

    def send(self, status: int, body: bytes, content_type: str | None = JSON_TYPE,
             headers: list | None = None) -> None:
        """Writes the whole response (status line, headers, body) in one send."""
        etag = getattr(self, "_etag", None)
        if etag is not None and status == 200:
            status, headers = self.conditional(etag, body, headers)
        if status in (204, 304) or 100 <= status < 200:
            body = b""
        try:
            reason = self.responses[status][0]
        except KeyError:
            reason = "Status"
        lines = [f"HTTP/1.1 {status} {reason}", f"Server: {self.server_version}",
                 f"Date: {self.date_time_string()}"]
        if content_type and body:
            lines.append(f"Content-Type: {content_type}")
        lines.append(f"Content-Length: {len(body)}")
        for name, value in [*(headers or ()), *getattr(self, "_extra_headers", ())]:
            lines.append(f"{name}: {value}")
        if self.close_connection:
            lines.append("Connection: close")
        elif self.request_version == "HTTP/1.0":
            lines.append("Connection: keep-alive")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        self.log_request(status, len(body))
        capture = getattr(self, "_capture", None)
        if capture is not None:
            capture.append((status, body, content_type, headers))
        # Out of flight before the answer is written: a client that sends its next request as
        # soon as it has the answer must never be seen with two in flight.
        mbps = getattr(self, "_mbps", None)
        if mbps:
            wait = self.server.state.take_link(mbps, len(head) + len(body))
            time.sleep(min(wait, MAX_LATENCY_MS / 1000))
        self._answered()
        if not self.path.startswith("/_"):   # the control endpoints are not the API's answers
            self.server.state.note_sent(len(head) + len(body))
        self.wfile.write(head + body)

    def conditional(self, mode: str, body: bytes, headers: list | None) -> tuple:
        """etag=: the 200's validators, or a 304 in its place (see the module's docstring)."""
        tag = 'W/"%s"' % hashlib.sha256(body).hexdigest()[:24]
        if mode == "huge":
            tag = 'W/"%s"' % ("a" * 4096)
        modified = email.utils.formatdate(EDITED_AT[0], usegmt=True)
        control = "private, max-age=60, s-maxage=60" + (", no-store" if mode == "nostore" else "")
        added = [("ETag", tag), ("Last-Modified", modified), ("Cache-Control", control),
                 ("Vary", "Accept, Authorization, Cookie, Accept-Encoding")]
        asked = self.headers.get("If-None-Match")
        since = self.headers.get("If-Modified-Since")
        if asked is not None:
            names = [part.strip() for part in asked.split(",")]
            unchanged = mode == "always" or tag in names or "*" in names
        else:
            unchanged = since is not None and since == modified
        page = Query(urlsplit(self.path).query).integer("page", 1)
        if mode == "unasked" and page > 1:
            unchanged = True
        if not unchanged:
            return 200, [*(headers or ()), *added]
        quota = getattr(self, "_quota", None)
        if quota is None:
            self.server.state.note_not_modified()
        else:
            key, allowed = quota
            used = self.server.state.refund_quota(key)
            if used is not None:
                self._extra_headers = [(name, str(allowed - used) if name == "X-RateLimit-Remaining"
                                        else str(used) if name == "X-RateLimit-Used" else value)
                                       for name, value in self._extra_headers]
        return 304, added

    def _answered(self) -> None:
        """Ends this request's count in flight, once."""
        if getattr(self, "_in_flight", False):
            self._in_flight = False
            self.server.state.end()

    def send_json(self, status: int, obj, headers: list | None = None) -> None:
        self.send(status, dumps(obj), headers=headers)

    def discard_body(self) -> None:
        length = self.headers.get("Content-Length")
        if length:
            try:
                remaining = int(length)
            except ValueError:
                self.close_connection = True
                return
            while remaining > 0:  # bounded by Content-Length
                chunk = self.rfile.read(min(remaining, 65536))
                if not chunk:
                    break
                remaining -= len(chunk)
        elif self.headers.get("Transfer-Encoding"):
            self.close_connection = True  # not worth decoding; drop the connection afterwards

    # -- methods --

    def do_GET(self) -> None:
        self.dispatch("GET")

    def do_POST(self) -> None:
        self.dispatch("POST")

    def do_PUT(self) -> None:
        self.dispatch("PUT")

    def do_PATCH(self) -> None:
        self.dispatch("PATCH")

    def do_DELETE(self) -> None:
        self.dispatch("DELETE")

    def do_OPTIONS(self) -> None:
        self.dispatch("OPTIONS")

    def do_HEAD(self) -> None:
        if urlsplit(self.path).path.startswith("/req/"):
            self.dispatch("HEAD")
        else:
            self.send_json(405, {"error": "method not allowed"})

    def dispatch(self, method: str) -> None:
        self._extra_headers = ()  # one handler serves every request of its connection
        self._etag = None
        self._mbps = None
        self._quota = None
        split = urlsplit(self.path)
        path = split.path
        if path.startswith("/req/"):
            self.server.state.begin(self.path, self.headers.get("Authorization"))
            self._in_flight = True
            try:
                if self.refuses_credential(Query(split.query)):
                    self.discard_body()
                else:
                    requests_api.handle(self, method, path, split.query)
            finally:
                self._answered()
            return
        if path.startswith("/post/"):
            self.server.state.begin(self.path, self.headers.get("Authorization"))
            self._in_flight = True
            try:
                body = requests_api.read_body(self)
                q = Query(split.query)
                if self.work(q, self.latency(q)) and not self.refuses_credential(q):
                    self.post(method, path, q, body)
            except BadParam as e:
                self.send_json(400, {"error": "bad parameter", "param": e.name})
            finally:
                self._answered()
            return
        self.discard_body()
        if path.startswith("/_"):
            self.control(method, path, split.query)
            return
        route = ROUTES.get(path) or org_api.route(path)
        if method != "GET":
            self.send_json(405 if route is not None else 404,
                           {"error": "method not allowed" if route is not None else "not found"})
            return
        state = self.server.state
        state.begin(self.path, self.headers.get("Authorization"))
        self._in_flight = True
        try:
            if route is None:
                self.send_json(404, {"error": "not found"})
                return
            q = Query(split.query)
            self._etag = q.text("etag")
            self._mbps = q.integer("mbps", None, 1, 100_000)
            org = org_api.org_of(path)
            # An org's lists change when issues are added to it: never cached.
            cache = self.server.page_cache if org is None else None
            # An org's default options apply where the request sets none (its children's URLs
            # come from a template, without them).
            work_q = q if org is None else Query(self.server.orgs.with_options(org, split.query))
            if cache is not None and path != "/redirect" and "bearer=" not in self.path and "quota=" not in self.path \
                    and "etag=" not in self.path:
                hit = cache.get(self.path)
                if hit is not None:
                    latency, status, body, content_type, headers = hit
                    if self.work(q, latency):
                        self.send(status, body, content_type, headers)
                    return
            try:
                if path != "/redirect" and not self.work(work_q, self.latency(work_q)):
                    return
                if self.refuses_credential(work_q):
                    return
                if cache is not None and path != "/redirect" and not path.startswith("/feed/") and not q.has("fail") \
                        and not q.has("quota") and not q.has("etag"):
                    self._capture = []
                    try:
                        route(self, q)
                    finally:
                        captured, self._capture = self._capture, None
                    if len(captured) == 1 and captured[0][0] == 200:
                        latency = q.integer("latency_ms", None, 0, MAX_LATENCY_MS)
                        cache.put(self.path, (self.server.latency_ms if latency is None else latency,
                                              *captured[0]))
                else:
                    route(self, q)
            except BadParam as e:
                self.send_json(400, {"error": "bad parameter", "param": e.name})
        except (ConnectionError, socket.timeout):
            self.close_connection = True
        except Exception:  # a bug here must not kill the connection silently
            if not self.server.quiet:
                traceback.print_exc()
            self.close_connection = True
            try:
                self.send_json(500, {"error": "internal"})
            except OSError:
                pass
        finally:
            self._answered()

    def post(self, method: str, path: str, q: Query, body: bytes) -> None:
        """A list behind a POST (post_api.py); with --cache-pages, its answers are kept by target
        and body, as the GET lists' are (but those of the counted failures, which change)."""
        cache = self.server.page_cache
        key = None
        if cache is not None and not any(q.has(name) for name in ("fail", "rate_limited", "throttled", "key")):
            key = f"{method} {self.path} {hashlib.sha256(body).hexdigest()}"
            hit = cache.get(key)
            if hit is not None:
                post_api.record(path, body)
                self.send(*hit[1:])
                return
            self._capture = []
        try:
            post_api.handle(self, method, path, q, body)
        finally:
            captured, self._capture = getattr(self, "_capture", None), None
        if key is not None and captured is not None and len(captured) == 1 and captured[0][0] == 200:
            cache.put(key, (0, *captured[0]))

    def refuses_credential(self, q: Query) -> bool:
        """Answers 401 (and returns True) when bearer= asks for a token the request lacks."""
        if (q.has("bearer") and q.integer("page", 1) >= q.integer("bearer_from", 1)
                and self.headers.get("Authorization") != f"Bearer {q.text('bearer')}"):
            self.send_json(401, {"error": "bad credentials"})
            return True
        return False

    def control(self, method: str, path: str, query: str = "") -> None:
        if org_api.control(self, method, path, query) or feeds.control(self, method, path, Query(query)):
            return
        if path == "/_stats" and method == "GET":
            self.send_json(200, self.server.state.snapshot())
        elif path == "/_post/log" and method == "GET":
            self.send_json(200, post_api.log_json())
        elif path == "/_timeline" and method == "GET":
            self.send_json(200, self.server.state.timeline())
        elif path == "/_edit":
            ids = Query(query).text("ids", "")
            try:
                EDITED.update(int(part) for part in ids.split(",") if part)
            except ValueError:
                self.send_json(400, {"error": "bad parameter", "param": "ids"})
                return
            EDITED_AT[0] = max(time.time(), EDITED_AT[0] + 1)
            if self.server.page_cache is not None:
                self.server.page_cache = PageCache()  # its pages hold the old names
            self.send_json(200, {"ok": True, "edited": sorted(EDITED)})
        elif path == "/_reset":
            self.server.state.reset()
            requests_api.reset()
            ranges.reset()
            feeds.reset()
            post_api.reset()
            self.send_json(200, {"ok": True})
        else:
            self.send_json(404, {"error": "not found"})

    def latency(self, q: Query) -> int:
        ms = q.integer("latency_ms", None, 0, MAX_LATENCY_MS)
        return self.server.latency_ms if ms is None else ms

    def work(self, q: Query, latency_ms: int) -> bool:
        """The request's latency, served within capacity=, limit= and ratelimit=; False when it
        was answered 429 instead."""
        state = self.server.state
        rate = q.text("ratelimit")
        if rate is not None:
            try:
                allowed, seconds = (int(part) for part in rate.split(":"))
            except ValueError:
                raise BadParam("ratelimit")
            admitted, left, reset = state.take_rate(allowed, seconds)
            self._extra_headers = [("RateLimit-Policy", f'"default";q={allowed};w={seconds}'),
                                   ("RateLimit", f'"default";r={left};t={reset}')]
            if not admitted:
                self.send_json(429, {"error": "too many requests"}, headers=[("Retry-After", str(reset))])
                return False
        quota = q.text("quota")
        if quota is not None:
            try:
                allowed, seconds = (int(part) for part in quota.split(":"))
            except ValueError:
                raise BadParam("quota")
            resource = q.text("quota_resource", "core")
            key = ("quota", allowed, seconds, resource, self.headers.get("Authorization", ""))
            admitted, left, used, reset = state.take_quota(key, allowed, seconds)
            self._quota = (key, allowed) if admitted else None
            self._extra_headers = [("X-RateLimit-Limit", str(allowed)), ("X-RateLimit-Remaining", str(left)),
                                   ("X-RateLimit-Used", str(used)), ("X-RateLimit-Reset", str(reset)),
                                   ("X-RateLimit-Resource", resource)]
            if not admitted:
                status = 429 if q.text("quota_status") == "429" else 403
                self.send_json(status, {"message": "API rate limit exceeded for user ID 1.",
                                        "documentation_url": "https://docs.github.com/rest/overview/rate-limits"})
                return False
        # /range/ lists take limit as their page size (Stripe's, Slack's, Shopify's name for it).
        limit = None if self.path.startswith("/range/") else q.integer("limit", None, 1, 10000)
        if limit is not None and not state.enter_limit(limit):
            wait = q.integer("limit_retry_after", None, 0, 3600)
            self.send_json(429, {"error": "too many requests"},
                           headers=None if wait is None else [("Retry-After", str(wait))])
            return False
        capacity = q.integer("capacity", None, 1, 10000)
        gate = None if capacity is None else state.capacity(capacity)
        if gate is not None:
            gate.acquire()
        try:
            if latency_ms > 0:
                time.sleep(latency_ms / 1000.0)
        finally:
            if gate is not None:
                gate.release()
            if limit is not None:
                state.leave_limit(limit)
        return True

    # -- shared list logic --

    def list_params(self, q: Query, size_name: str):
        n = q.integer("n", DEFAULT_N, 0)
        cap = q.integer("cap", DEFAULT_CAP, 1)
        size = min(q.integer(size_name, DEFAULT_PAGE_SIZE, 1), cap)
        pad_len = q.integer("pad", None, 0, MAX_PAD)
        pad = None if pad_len is None else "x" * pad_len
        short = q.integer("short", 0, 0)
        return n, size, pad, short

    def injected(self, q: Query, path: str, page: int) -> bool:
        """Answers (and returns True) when a fail= or garbage= spec applies to this page."""
        for spec_page, count, status, text in parse_fail_specs(q):
            if spec_page == page and self.server.state.take_failure((path, page, text), count):
                headers = [("Retry-After", "0")] if status in (429, 503) else None
                self.server.state.note_failure()
                self.send_json(status, {"error": "injected", "status": status}, headers)
                return True
        garbage = q.integer("garbage", None)
        if garbage is not None and garbage == page:
            self.send(200, GARBAGE_BODY)
            return True
        return False

    def page_url(self, q: Query, path: str, page: int) -> str:
        base = q.text("next_base") or self.server.base_url
        return f"{base.rstrip('/')}{path}?{q.with_param('page', page)}"

    # -- endpoints --

    def anchor(self, q: Query) -> None:
        page = q.integer("page", 1, 1)
        n, size, pad, short = self.list_params(q, "per_page")
        if self.injected(q, "/anchor", page):
            return
        endless = q.flag("endless")
        real_n = max(n - short, 0)
        start = (page - 1) * size
        end = start + size
        if endless:
            indices = range(start, end)
            has_next = True
        else:
            if short and page > 1 and start >= real_n:
                self.send_json(404, {"error": "no such page"})
                return
            indices = range(start, min(end, real_n))
            has_next = end < n
        if q.flag("dup") and page > 1 and len(indices) > 0:
            indices = [start - 1, *indices]
        parts = ['{"items":', items_json(indices, pad)]
        if not q.flag("nonext"):
            if q.flag("loop") and page == 3:
                nxt = self.page_url(q, "/anchor", 2)
            elif has_next:
                nxt = self.page_url(q, "/anchor", page + 1)
            else:
                nxt = None
            parts += [',"next_page":', json.dumps(nxt)]
        if not endless and not q.flag("nototal"):
            parts.append(',"total":%d' % n)
        parts.append("}")
        body = "".join(parts)
        if q.flag("indent"):   # pretty-printed, as GitHub's API answers: line breaks inside items
            body = json.dumps(json.loads(body), indent=2)
        self.send(200, body.encode())

    def drf(self, q: Query) -> None:
        try:
            page = q.integer("page", 1, 1)
        except BadParam:
            self.send_json(404, {"detail": "Invalid page."})
            return
        n, size, pad, short = self.list_params(q, "page_size")
        if self.injected(q, "/drf", page):
            return
        real_n = max(n - short, 0)
        start = (page - 1) * size
        if page > 1 and start >= real_n:
            self.send_json(404, {"detail": "Invalid page."})
            return
        indices = range(start, min(start + size, real_n))
        nxt = self.page_url(q, "/drf", page + 1) if start + size < n else None
        prev = self.page_url(q, "/drf", page - 1) if page > 1 else None
        body = '{"count":%d,"next":%s,"previous":%s,"results":%s}' % (
            n, json.dumps(nxt), json.dumps(prev), items_json(indices, pad))
        self.send(200, body.encode())

    def array(self, q: Query) -> None:
        page = q.integer("page", 1, 1)
        n, size, pad, short = self.list_params(q, "per_page")
        if self.injected(q, "/array", page):
            return
        real_n = max(n - short, 0)
        start = (page - 1) * size
        self.send(200, items_json(range(start, min(start + size, real_n)), pad).encode())

    def redirect(self, q: Query) -> None:
        to = q.text("to")
        if not to:
            raise BadParam("to")
        code = q.integer("code", 302, 300, 399)
        self.send_json(code, {"location": to}, [("Location", to)])

    def status(self, q: Query) -> None:
        code = q.integer("code", None, 100, 599)
        if code is None:
            raise BadParam("code")
        retry_after = q.text("retry_after")
        headers = [("Retry-After", retry_after)] if retry_after is not None else None
        self.send_json(code, {"error": "status", "status": code}, headers)


ROUTES = {
    "/anchor": Handler.anchor,
    "/drf": Handler.drf,
    "/array": Handler.array,
    "/redirect": Handler.redirect,
    "/status": Handler.status,
}

# The public APIs' conventions, at /conv/<name> (see conventions.py).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conventions  # noqa: E402
import org_api  # noqa: E402
import post_api  # noqa: E402
import ranges  # noqa: E402
import feeds  # noqa: E402
import requests_api  # noqa: E402

conventions.register(ROUTES)
ranges.register(ROUTES)
feeds.register(ROUTES)


# ---- server ------------------------------------------------------------------------------------

class PageCache:
    """--cache-pages: answers of the list endpoints by request target, bounded in bytes."""

    def __init__(self, limit_bytes: int = CACHE_LIMIT_BYTES) -> None:
        self.lock = threading.Lock()
        self.entries: dict = {}
        self.bytes = 0
        self.limit = limit_bytes

    def get(self, key: str):
        return self.entries.get(key)  # a dict read is atomic; entries are never changed

    def put(self, key: str, entry: tuple) -> None:
        size = len(key) + len(entry[2])
        with self.lock:
            if key in self.entries or self.bytes + size > self.limit:
                return
            self.entries[key] = entry
            self.bytes += size


class APIServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False          # idle keep-alive connections must not block server_close
    request_queue_size = 256
    allow_reuse_address = True

    def __init__(self, host: str = "127.0.0.1", port: int = 0, latency_ms: int = 0,
                 quiet: bool = True, verbose: bool = False, cache_pages: bool = False):
        self.latency_ms = max(0, int(latency_ms))
        self.page_cache = PageCache() if cache_pages else None
        self.quiet = quiet
        self.verbose = verbose
        self.state = ServerState()
        self.orgs = org_api.Orgs()
        self._conns: set = set()
        self._conns_lock = threading.Lock()
        self._unstarted = 0             # connections accepted whose thread has not started
        self._serving = False
        self._closed = False
        super().__init__((host, port), Handler)
        self.port = self.server_address[1]
        url_host = host if ":" not in host else f"[{host}]"
        self.base_url = f"http://{url_host}:{self.port}"

    def get_request(self):
        sock, addr = super().get_request()
        with self._conns_lock:
            self._unstarted += 1
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        return sock, addr

    def process_request_thread(self, request, client_address) -> None:
        with self._conns_lock:
            self._unstarted -= 1
        super().process_request_thread(request, client_address)

    def track(self, conn, add: bool) -> None:
        with self._conns_lock:
            if add:
                self._conns.add(conn)
            else:
                self._conns.discard(conn)

    def unread(self) -> bool:
        """Whether a request may have reached the server and not yet begun: a connection accepted
        whose handler has not run, or bytes waiting in an open connection."""
        with self._conns_lock:
            if self._unstarted:
                return True
            conns = list(self._conns)
        waiting = array.array("i", [0])
        for conn in conns:
            try:
                fcntl.ioctl(conn.fileno(), termios.FIONREAD, waiting)
            except (OSError, ValueError):
                continue
            if waiting[0]:
                return True
        return False

    def handle_error(self, request, client_address) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, socket.timeout)) or self.quiet:
            return
        super().handle_error(request, client_address)

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        self._serving = True
        try:
            super().serve_forever(poll_interval)
        finally:
            self._serving = False

    def shutdown_and_close(self, thread: threading.Thread | None = None) -> None:
        """Stops serving, closes the listening socket and every open connection. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._serving:
            self.shutdown()
        self.server_close()
        with self._conns_lock:
            conns = list(self._conns)
            self._conns.clear()
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        thread = thread or getattr(self, "_thread", None)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)


def start_server(port: int = 0, latency_ms: int = 0, host: str = "127.0.0.1",
                 quiet: bool = True, verbose: bool = False, cache_pages: bool = False, tls=None):
    """Starts a server in this process on a background thread; returns (server, thread).
    `tls`, an ssl.SSLContext, makes it an https server."""
    server = APIServer(host, port, latency_ms, quiet=quiet, verbose=verbose, cache_pages=cache_pages)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
        server.base_url = server.base_url.replace("http://", "https://", 1)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                              name=f"api-server-{server.port}", daemon=True)
    server._thread = thread
    thread.start()
    return server, thread


# ---- command line ------------------------------------------------------------------------------

def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Sheaf loopback test API server")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--latency-ms", type=int, default=0)
    p.add_argument("--quiet", action="store_true", help="nothing on stderr, not even tracebacks")
    p.add_argument("--verbose", action="store_true", help="log every request to stderr")
    p.add_argument("--exit-on-stdin-eof", action="store_true")
    p.add_argument("--cache-pages", action="store_true",
                   help="memoize list pages per query string (benchmarks; off by default)")
    p.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"),
                   help="serve https with this certificate chain and its key (PEM files)")
    args = p.parse_args(argv)
    tls = None
    if args.tls:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(*args.tls)

    stop = threading.Event()

    def on_signal(signum, frame):
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    server, thread = start_server(args.port, args.latency_ms, args.host,
                                  quiet=args.quiet, verbose=args.verbose and not args.quiet,
                                  cache_pages=args.cache_pages, tls=tls)

    if args.exit_on_stdin_eof:
        def watch_stdin():
            fd = sys.stdin.fileno()
            try:
                while os.read(fd, 65536):  # ends at EOF (or on an error)
                    pass
            except OSError:
                pass
            stop.set()
        threading.Thread(target=watch_stdin, name="stdin-eof", daemon=True).start()

    sys.stdout.write(f"PORT {server.port}\n")
    sys.stdout.flush()

    while not stop.wait(0.5):  # until a signal or stdin EOF
        if not thread.is_alive():
            break
    server.shutdown_and_close(thread)
    return 0


if __name__ == "__main__":
    sys.exit(main())
