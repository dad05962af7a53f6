"""Self-test of the loopback API server (python3 -m pytest Tests/server -q)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import api_server  # noqa: E402

TIMEOUT = 10


@pytest.fixture(scope="module")
def server():
    srv, thread = api_server.start_server(port=0)
    try:
        yield srv
    finally:
        srv.shutdown_and_close()
        assert not thread.is_alive()


@pytest.fixture(autouse=True)
def fresh(server):
    get(server, "/_reset")
    yield


class Response:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def json(self):
        return json.loads(self.body)


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


OPENER = urllib.request.build_opener(NoRedirect)


def fetch(url, headers=None, method="GET", data=None) -> Response:
    req = urllib.request.Request(url, headers=headers or {}, method=method, data=data)
    try:
        with OPENER.open(req, timeout=TIMEOUT) as r:
            return Response(r.status, r.headers, r.read())
    except urllib.error.HTTPError as e:
        with e:
            return Response(e.code, e.headers, e.read())


def get(server, path, **kw) -> Response:
    return fetch(server.base_url + path, **kw)


def ids(items):
    return [it["id"] for it in items]


def walk(server, first_path, key_items="items", key_next="next_page", limit=100):
    """Follows next links from first_path; returns the list of page bodies."""
    pages, url = [], server.base_url + first_path
    for _ in range(limit):
        r = fetch(url)
        assert r.status == 200, (url, r.status, r.body)
        body = r.json()
        pages.append(body)
        url = body[key_next]
        if url is None:
            return pages
    raise AssertionError("too many pages")


# ---- /anchor ---------------------------------------------------------------------------------

def test_anchor_first_page(server):
    r = get(server, "/anchor?page=1&per_page=10&n=25")
    assert r.status == 200
    assert r.headers["Content-Type"] == "application/json"
    assert int(r.headers["Content-Length"]) == len(r.body)
    body = r.json()
    assert body["total"] == 25
    assert body["items"] == [{"id": i, "name": f"item-{i}"} for i in range(10)]
    assert body["next_page"] == f"{server.base_url}/anchor?page=2&per_page=10&n=25"
    # Compact JSON for items.
    assert b'{"id":0,"name":"item-0"}' in r.body


def test_anchor_walk_and_defaults(server):
    pages = walk(server, "/anchor?n=120")
    assert [len(p["items"]) for p in pages] == [50, 50, 20]
    assert ids([it for p in pages for it in p["items"]]) == list(range(120))
    assert all(p["total"] == 120 for p in pages)
    # The default list has 1000 items; per_page is capped at 100 by default.
    body = get(server, "/anchor?per_page=500").json()
    assert body["total"] == 1000 and len(body["items"]) == 100
    body = get(server, "/anchor?per_page=500&cap=300").json()
    assert len(body["items"]) == 300
    body = get(server, "/anchor?per_page=500&cap=3&page=2").json()
    assert ids(body["items"]) == [3, 4, 5]


def test_anchor_past_end_and_last_page(server):
    body = get(server, "/anchor?page=3&per_page=10&n=25").json()
    assert ids(body["items"]) == list(range(20, 25)) and body["next_page"] is None
    r = get(server, "/anchor?page=9&per_page=10&n=25")
    assert r.status == 200 and r.json() == {"items": [], "next_page": None, "total": 25}
    body = get(server, "/anchor?n=0").json()
    assert body == {"items": [], "next_page": None, "total": 0}


def test_anchor_short(server):
    q = "per_page=10&n=30&short=15"
    b1 = get(server, f"/anchor?page=1&{q}").json()
    assert b1["total"] == 30 and len(b1["items"]) == 10
    b2 = get(server, f"/anchor?page=2&{q}").json()
    assert ids(b2["items"]) == list(range(10, 15)) and b2["total"] == 30
    assert b2["next_page"] is not None
    r = fetch(b2["next_page"])
    assert r.status == 404 and r.json() == {"error": "no such page"}


def test_anchor_loop(server):
    q = "per_page=5&n=100&loop=1"
    b1 = get(server, f"/anchor?page=1&{q}").json()
    b2 = fetch(b1["next_page"]).json()
    b3 = fetch(b2["next_page"]).json()
    assert ids(b3["items"]) == list(range(10, 15))
    assert b3["next_page"] == b1["next_page"]
    # The same holds when the first request has no page parameter at all.
    c1 = get(server, f"/anchor?{q}").json()
    c3 = fetch(fetch(c1["next_page"]).json()["next_page"]).json()
    assert c3["next_page"] == c1["next_page"]


def test_anchor_endless_nototal_nonext(server):
    b = get(server, "/anchor?page=30&per_page=10&n=5&endless=1").json()
    assert "total" not in b
    assert ids(b["items"]) == list(range(290, 300))
    assert b["next_page"].endswith("page=31&per_page=10&n=5&endless=1")
    b = get(server, "/anchor?n=10&nototal=1").json()
    assert "total" not in b and b["next_page"] is None and len(b["items"]) == 10
    b = get(server, "/anchor?n=100&nonext=1").json()
    assert "next_page" not in b and b["total"] == 100


def test_anchor_dup(server):
    q = "per_page=10&n=25&dup=1"
    b1 = get(server, f"/anchor?page=1&{q}").json()
    b2 = get(server, f"/anchor?page=2&{q}").json()
    b3 = get(server, f"/anchor?page=3&{q}").json()
    assert ids(b1["items"]) == list(range(10))
    assert ids(b2["items"]) == [9] + list(range(10, 20))
    assert ids(b3["items"]) == [19] + list(range(20, 25))
    assert b1["total"] == b2["total"] == b3["total"] == 25


def test_anchor_pad(server):
    b = get(server, "/anchor?n=3&pad=7").json()
    assert b["items"][2] == {"id": 2, "name": "item-2", "pad": "xxxxxxx"}


def test_anchor_fail_injection(server):
    q = "per_page=10&n=40&fail=2:2:503&fail=3:1:500&fail=4:1:429"
    assert get(server, f"/anchor?page=1&{q}").status == 200
    for _ in range(2):
        r = get(server, f"/anchor?page=2&{q}")
        assert r.status == 503 and r.json() == {"error": "injected", "status": 503}
        assert r.headers["Retry-After"] == "0"
    r = get(server, f"/anchor?page=2&{q}")
    assert r.status == 200 and ids(r.json()["items"]) == list(range(10, 20))
    r = get(server, f"/anchor?page=3&{q}")
    assert r.status == 500 and r.headers.get("Retry-After") is None
    assert get(server, f"/anchor?page=3&{q}").status == 200
    r = get(server, f"/anchor?page=4&{q}")
    assert r.status == 429 and r.headers["Retry-After"] == "0"
    assert get(server, f"/anchor?page=4&{q}").status == 200
    # Counts reset with /_reset.
    get(server, "/_reset")
    assert get(server, f"/anchor?page=3&{q}").status == 500
    # Counts are per path: /drf has its own.
    assert get(server, "/drf?page=3&page_size=10&n=40&fail=3:1:500").status == 500
    assert get(server, "/drf?page=3&page_size=10&n=40&fail=3:1:500").status == 200


def test_anchor_garbage(server):
    r = get(server, "/anchor?page=2&garbage=2")
    assert r.status == 200 and r.body == b"this is not json"
    assert r.headers["Content-Type"] == "application/json"
    assert get(server, "/anchor?page=1&garbage=2").status == 200


def test_anchor_next_base(server):
    other, _ = api_server.start_server(port=0)
    try:
        b = get(server, f"/anchor?per_page=10&n=30&next_base={other.base_url}").json()
        assert b["next_page"].startswith(other.base_url + "/anchor?")
        b2 = fetch(b["next_page"]).json()
        assert ids(b2["items"]) == list(range(10, 20))
        assert len(fetch(other.base_url + "/_stats").json()["log"]) == 1
    finally:
        other.shutdown_and_close()


def test_bad_parameters(server):
    r = get(server, "/anchor?page=0")
    assert r.status == 400 and r.json()["param"] == "page"
    assert get(server, "/anchor?per_page=abc").status == 400
    assert get(server, "/anchor?fail=1:2").status == 400


# ---- /drf ------------------------------------------------------------------------------------

def test_drf(server):
    b1 = get(server, "/drf?page_size=10&n=25").json()
    assert b1["count"] == 25 and b1["previous"] is None
    assert ids(b1["results"]) == list(range(10))
    assert b1["next"] == f"{server.base_url}/drf?page_size=10&n=25&page=2"
    pages = walk(server, "/drf?page_size=10&n=25", key_items="results", key_next="next")
    assert ids([it for p in pages for it in p["results"]]) == list(range(25))
    assert pages[-1]["next"] is None
    assert pages[-1]["previous"] == f"{server.base_url}/drf?page_size=10&n=25&page=2"
    r = get(server, "/drf?page=4&page_size=10&n=25")
    assert r.status == 404 and r.json() == {"detail": "Invalid page."}
    assert get(server, "/drf?page=0").status == 404
    assert len(get(server, "/drf?page_size=1000").json()["results"]) == 100
    assert len(get(server, "/drf").json()["results"]) == 50


def test_drf_short_fail_garbage(server):
    q = "page_size=10&n=30&short=15"
    b2 = get(server, f"/drf?page=2&{q}").json()
    assert b2["count"] == 30 and ids(b2["results"]) == list(range(10, 15))
    r = fetch(b2["next"])
    assert r.status == 404 and r.json() == {"detail": "Invalid page."}
    r = get(server, "/drf?page=1&fail=1:1:503")
    assert r.status == 503 and r.headers["Retry-After"] == "0"
    assert get(server, "/drf?page=1&fail=1:1:503").status == 200
    assert get(server, "/drf?page=1&garbage=1").body == b"this is not json"


# ---- /array, /redirect, /status, unknown -----------------------------------------------------

def test_array(server):
    r = get(server, "/array?page=2&per_page=4&n=10")
    assert r.status == 200 and r.json() == [{"id": i, "name": f"item-{i}"} for i in range(4, 8)]
    assert get(server, "/array?page=3&per_page=4&n=10").json() == [
        {"id": 8, "name": "item-8"}, {"id": 9, "name": "item-9"}]
    assert get(server, "/array?page=4&per_page=4&n=10").json() == []
    assert len(get(server, "/array").json()) == 50


def test_redirect_status_unknown(server):
    target = f"{server.base_url}/anchor?page=2"
    r = get(server, "/redirect?to=" + urllib.request.quote(target, safe=""))
    assert r.status == 302 and r.headers["Location"] == target
    t0 = time.monotonic()
    r = get(server, "/redirect?to=/x&latency_ms=2000")
    assert r.status == 302 and time.monotonic() - t0 < 1.5  # no latency on redirects
    r = get(server, "/status?code=418")
    assert r.status == 418 and r.json() == {"error": "status", "status": 418}
    r = get(server, "/status?code=503")
    assert r.status == 503 and r.headers.get("Retry-After") is None
    r = get(server, "/status?code=503&retry_after=2")
    assert r.headers["Retry-After"] == "2"
    r = get(server, "/nowhere")
    assert r.status == 404 and r.json() == {"error": "not found"}


# ---- latency, stats, log ---------------------------------------------------------------------

def test_latency(server):
    t0 = time.monotonic()
    assert get(server, "/anchor?latency_ms=150").status == 200
    assert time.monotonic() - t0 >= 0.15
    slow, _ = api_server.start_server(port=0, latency_ms=120)
    try:
        t0 = time.monotonic()
        fetch(slow.base_url + "/anchor")
        assert time.monotonic() - t0 >= 0.12
        t0 = time.monotonic()
        fetch(slow.base_url + "/anchor?latency_ms=0")  # the parameter overrides the default
        assert time.monotonic() - t0 < 0.1
    finally:
        slow.shutdown_and_close()


def test_max_in_flight(server):
    results, barrier = [], threading.Barrier(8, timeout=TIMEOUT)

    def worker(k):
        barrier.wait()
        results.append(get(server, f"/anchor?page={k + 1}&latency_ms=200").status)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    time.sleep(0.1)
    mid = get(server, "/_stats").json()
    for t in threads:
        t.join(timeout=TIMEOUT)
    assert results == [200] * 8
    assert mid["in_flight"] == 8
    stats = get(server, "/_stats").json()
    assert stats["max_in_flight"] == 8
    assert stats["in_flight"] == 0
    assert stats["requests"] == 8


def test_stats_log_and_reset(server):
    get(server, "/anchor?page=1&n=5", headers={"Authorization": "Bearer x"})
    get(server, "/drf?page=1&n=5")
    get(server, "/_stats")  # control endpoints are not counted
    stats = get(server, "/_stats").json()
    assert stats["requests"] == 2 and stats["in_flight"] == 0 and stats["max_in_flight"] == 1
    assert stats["log"] == [
        {"path": "/anchor?page=1&n=5", "authorization": "Bearer x"},
        {"path": "/drf?page=1&n=5", "authorization": None},
    ]
    r = get(server, "/_reset", method="POST", data=b"{}")
    assert r.status == 200 and r.json() == {"ok": True}
    stats = get(server, "/_stats").json()
    assert stats == {"requests": 0, "max_in_flight": 0, "in_flight": 0, "refused": 0, "not_modified": 0,
                     "bytes_sent": 0, "log": []}


def test_etag_answers_304_to_the_current_tag_free_of_quota_and_edit_changes_it(server):
    path = "/anchor?n=20&per_page=5&etag=1&quota=10:3600"
    first = get(server, path, headers={"Authorization": "Bearer e"})
    tag, modified = first.headers["ETag"], first.headers["Last-Modified"]
    assert first.status == 200 and tag.startswith('W/"') and first.headers["X-RateLimit-Remaining"] == "9"
    again = get(server, path, headers={"Authorization": "Bearer e", "If-None-Match": tag})
    assert again.status == 304 and again.body == b"" and again.headers["ETag"] == tag
    assert again.headers["X-RateLimit-Remaining"] == "9", "a 304 costs no point"
    since = get(server, path, headers={"Authorization": "Bearer e", "If-Modified-Since": modified})
    assert since.status == 304
    assert get(server, "/_edit?ids=2").json() == {"ok": True, "edited": [2]}
    changed = get(server, path, headers={"Authorization": "Bearer e", "If-None-Match": tag})
    assert changed.status == 200 and changed.headers["ETag"] != tag and changed.headers["Last-Modified"] != modified
    assert changed.json()["items"][2]["name"] == "item-2-edited"
    assert get(server, path, headers={"If-Modified-Since": modified}).status == 200, "edited since"
    stats = get(server, "/_stats").json()
    assert stats["not_modified"] == 2 and stats["bytes_sent"] > 0
    # The hostile ones.
    assert get(server, "/anchor?n=20&page=2&etag=unasked").status == 304
    assert get(server, "/anchor?n=20&etag=always", headers={"If-None-Match": '"made-up"'}).status == 304
    assert "no-store" in get(server, "/anchor?n=20&etag=nostore").headers["Cache-Control"]
    assert len(get(server, "/anchor?n=20&etag=huge").headers["ETag"]) > 4096
    get(server, "/_reset")
    assert get(server, "/anchor?n=20&per_page=5&page=1").json()["items"][2]["name"] == "item-2", "/_reset undoes edits"


def test_mbps_answers_share_one_link(server):
    start = time.monotonic()
    # 4 answers of ~60 KB on a link of 8 Mbit/s: ~0.24 s however they are sent.
    answers = concurrently(server, ["/anchor?n=10&per_page=10&pad=6000&mbps=8"] * 4)
    took = time.monotonic() - start
    assert all(answer.status == 200 for answer in answers)
    assert 0.2 < took < 2, took


def concurrently(server, paths):
    """GETs every path at once (a thread each); the responses in the order of `paths`."""
    answers = [None] * len(paths)

    def one(i, path):
        answers[i] = get(server, path)

    threads = [threading.Thread(target=one, args=(i, p)) for i, p in enumerate(paths)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=TIMEOUT)
    return answers


def test_limit_answers_429_past_its_requests_in_flight(server):
    answers = concurrently(server, [f"/anchor?page={k}&n=50&latency_ms=300&limit=2&limit_retry_after=7" for k in (1, 2, 3)])
    statuses = sorted(a.status for a in answers)
    assert statuses == [200, 200, 429]
    refused = next(a for a in answers if a.status == 429)
    assert refused.headers["Retry-After"] == "7" and refused.json() == {"error": "too many requests"}
    assert get(server, "/_stats").json()["refused"] == 1
    assert get(server, "/anchor?page=1&n=50&limit=2").status == 200  # the slots were given back


def test_capacity_makes_requests_past_it_wait_their_turn(server):
    start = time.monotonic()
    answers = concurrently(server, [f"/anchor?page={k}&n=50&latency_ms=150&capacity=1" for k in (1, 2)])
    assert [a.status for a in answers] == [200, 200]
    assert time.monotonic() - start >= 0.29  # one after the other: 2 x 150 ms
    assert get(server, "/_stats").json()["refused"] == 0


def test_ratelimit_counts_down_in_headers_then_refuses_until_the_reset(server):
    seen = [get(server, "/anchor?page=1&n=5&ratelimit=2:60") for _ in range(3)]
    assert [a.status for a in seen] == [200, 200, 429]
    assert all(a.headers["RateLimit-Policy"] == '"default";q=2;w=60' for a in seen)
    assert [a.headers["RateLimit"].split(";")[1] for a in seen] == ["r=1", "r=0", "r=0"]
    reset = int(seen[2].headers["RateLimit"].split("t=")[1])
    assert 1 <= reset <= 60 and seen[2].headers["Retry-After"] == str(reset)
    # Another connection's request without ratelimit= carries no such header.
    assert get(server, "/anchor?page=1&n=5").headers.get("RateLimit") is None


def test_keep_alive(server):
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=TIMEOUT)
    try:
        first_sock = None
        for page in (1, 2, 3):
            conn.request("GET", f"/anchor?page={page}&per_page=2&n=10")
            r = conn.getresponse()
            assert r.status == 200 and not r.will_close
            assert ids(json.loads(r.read())["items"]) == [2 * page - 2, 2 * page - 1]
            first_sock = first_sock or conn.sock
            assert conn.sock is first_sock  # one connection served all three
    finally:
        conn.close()


# ---- command line ----------------------------------------------------------------------------

def test_cli_port_line_and_stdin_eof():
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "api_server.py")
    proc = subprocess.Popen([sys.executable, script, "--port", "0", "--exit-on-stdin-eof", "--quiet"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = proc.stdout.readline().decode()
        assert line.startswith("PORT ") and line.endswith("\n")
        port = int(line.split()[1])
        r = fetch(f"http://127.0.0.1:{port}/anchor?n=3")
        assert r.json()["total"] == 3
        proc.stdin.close()
        assert proc.wait(timeout=TIMEOUT) == 0
        assert proc.stdout.read() == b"" and proc.stderr.read() == b""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=TIMEOUT)
        for f in (proc.stdin, proc.stdout, proc.stderr):
            f.close()


def test_cli_sigterm():
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "api_server.py")
    proc = subprocess.Popen([sys.executable, script, "--quiet"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline().startswith(b"PORT ")
        proc.terminate()
        assert proc.wait(timeout=TIMEOUT) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=TIMEOUT)
        proc.stdout.close()


def test_the_timeline_orders_arrivals_and_injected_failures(server):
    get(server, "/_reset", method="POST", data=b"{}")
    get(server, "/anchor?page=1&n=20&per_page=5")
    assert get(server, "/anchor?page=2&n=20&per_page=5&fail=2:1:404").status == 404
    get(server, "/anchor?page=3&n=20&per_page=5")
    timeline = get(server, "/_timeline").json()
    first, second, third = timeline["arrivals"]
    (failure,) = timeline["failures"]
    assert first <= second <= failure["at"] <= third
    assert failure["in_flight"] == 1          # the failing request itself
    get(server, "/_reset", method="POST", data=b"{}")
    assert get(server, "/_timeline").json() == {"arrivals": [], "failures": []}


# ---- an org: /orgs/<org>/repos and /repos/<org>/<repo>/issues (org_api.py) -------------------

import re  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402

import org_api  # noqa: E402

LINK = re.compile(r'<([^>]*)>;\s*rel="([^"]*)"')


def links(response) -> dict:
    return {rel: url for url, rel in LINK.findall(response.headers.get("Link") or "")}


def walk_repos(server, org, query=""):
    """Every repository of the org's list, following rel="next"; (items, requests)."""
    items, url, requests = [], f"{server.base_url}/orgs/{org}/repos{query}", 0
    while url:
        r = fetch(url)
        assert r.status == 200, (url, r.status, r.body)
        requests += 1
        items += r.json()
        url = links(r).get("next")
    return items, requests


def issues_page(r):
    """(items, next URL or None, convention) of one issues page, read as its convention says."""
    body = r.json()
    if isinstance(body, list):
        return body, links(r).get("next"), "link"
    if "issues" in body:
        assert set(body) == {"issues", "next"}
        return body["issues"], body["next"], "body"
    assert set(body) == {"data", "page", "per_page", "total", "total_pages"}
    more = body["page"] < body["total_pages"]
    nxt = None
    if more:
        base, _, query = r.url.partition("?")
        params = [p for p in query.split("&") if p and not p.startswith("page=")]
        nxt = f"{base}?{'&'.join([*params, 'page=%d' % (body['page'] + 1)])}"
    return body["data"], nxt, "numbered"


def walk_issues(server, org, repo, query=""):
    """Every issue of one repository, page by page; (items, pages, the conventions seen)."""
    items, pages, seen = [], 0, set()
    url = f"{server.base_url}/repos/{org}/{repo}/issues{query}"
    while url:
        r = fetch(url)
        assert r.status == 200, (url, r.status, r.body)
        r.url = url
        page_items, url, convention = issues_page(r)
        items += page_items
        pages += 1
        seen.add(convention)
        assert pages <= 200
    return items, pages, seen


def test_an_org_lists_its_300_repositories_github_style(server):
    r = get(server, "/orgs/acme/repos")
    assert r.status == 200 and len(r.json()) == 30
    assert links(r)["last"] == f"{server.base_url}/orgs/acme/repos?page=10"
    repos, requests = walk_repos(server, "acme", "?per_page=100")
    assert requests == 3
    assert repos == [{"id": i, "name": f"repo-{i:03d}", "full_name": f"acme/repo-{i:03d}", "owner": {"login": "acme"}}
                     for i in range(300)]
    assert [r["full_name"] for r in walk_repos(server, "tiny", "?repos=3")[0]] == ["tiny/repo-000", "tiny/repo-001", "tiny/repo-002"]
    assert get(server, "/orgs/none/repos?repos=0").json() == []


def test_an_orgs_repositories_can_repeat_or_miss_their_full_name(server):
    repos, _ = walk_repos(server, "acme", "?repos=25&per_page=10&repeat=1")
    assert [r["id"] for r in repos] == [*range(10), 9, *range(10, 20), 19, *range(20, 25)]
    repos, _ = walk_repos(server, "acme", "?repos=10&missing=4")
    assert [r["id"] for r in repos if "full_name" not in r] == [3, 7]


def test_each_repository_has_its_planned_pages_in_its_convention_and_the_union_is_exact(server):
    """Walks every child of the default org: page counts 0 to 12 (one request for an empty
    list), every convention read as documented, ids unique across the org."""
    repos, _ = walk_repos(server, "acme", "?per_page=100")
    with ThreadPoolExecutor(8) as pool:
        walked = list(pool.map(lambda repo: walk_issues(server, "acme", repo["name"]), repos))
    union, by_convention = [], {}
    for i, (items, pages, seen) in enumerate(walked):
        count, planned, convention = org_api.repo_plan("acme", i)
        assert len(items) == count and seen == {convention}, i
        assert pages == max(planned, 1), i
        assert [it["number"] for it in items] == list(range(count, 0, -1))      # newest first
        assert all(it["repository"] == f"acme/repo-{i:03d}" for it in items)
        by_convention.setdefault(convention, set()).add(planned)
        union += items
    ids = [it["id"] for it in union]
    assert len(ids) == len(set(ids))                                            # unique across the org
    assert sorted(union, key=lambda it: it["id"]) == org_api.expected_issues("acme")
    assert get(server, "/_orgs/acme/issues").json() == {"count": len(union), "issues": org_api.expected_issues("acme")}
    # Every convention, each with empty lists and with the full 12 pages.
    assert set(by_convention) == {"link", "body", "numbered"}
    for planned in by_convention.values():
        assert {0, 12} <= planned and planned <= set(range(13))


def test_an_empty_repository_answers_an_empty_list_in_its_convention(server):
    empty = {}
    for i in range(300):
        count, pages, convention = org_api.repo_plan("acme", i)
        if pages == 0:
            empty.setdefault(convention, i)
    assert set(empty) == {"link", "body", "numbered"}
    assert get(server, f"/repos/acme/repo-{empty['link']:03d}/issues").json() == []
    assert "Link" not in get(server, f"/repos/acme/repo-{empty['link']:03d}/issues").headers
    assert get(server, f"/repos/acme/repo-{empty['body']:03d}/issues").json() == {"issues": [], "next": None}
    assert get(server, f"/repos/acme/repo-{empty['numbered']:03d}/issues").json() == {
        "data": [], "page": 1, "per_page": 10, "total": 0, "total_pages": 0}


def test_issues_page_size_direction_and_pages_past_the_end(server):
    i = next(i for i in range(300) if org_api.repo_plan("acme", i)[1] == 12)
    repo = f"repo-{i:03d}"
    count = org_api.repo_plan("acme", i)[0]
    items, pages, _ = walk_issues(server, "acme", repo, "?per_page=100&direction=asc")
    assert pages == 2 and [it["number"] for it in items] == list(range(1, count + 1))
    assert [it["updated_at"] for it in items] == sorted(it["updated_at"] for it in items)
    past = issues_page(get_with_url(server, f"/repos/acme/{repo}/issues?page=99"))[0]
    assert past == []


def get_with_url(server, path):
    r = get(server, path)
    r.url = server.base_url + path
    return r


def test_added_issues_come_first_and_since_returns_only_them(server):
    get(server, "/_orgs/grow/reset", method="POST")
    try:
        before = org_api.expected_issues("grow")
        newest = max(it["updated_at"] for it in before)
        i = next(i for i in range(300) if org_api.repo_plan("grow", i)[1] == 3)
        count = org_api.repo_plan("grow", i)[0]
        r = get(server, f"/_orgs/grow/repos/repo-{i:03d}/issues?add=4", method="POST")
        assert r.status == 200
        added = r.json()["added"]
        assert r.json()["count"] == count + 4
        assert [it["number"] for it in added] == list(range(count + 1, count + 5))
        assert all(it["updated_at"] > newest for it in added)
        r = get(server, "/_orgs/grow/repos/repo-000/issues?add=1", method="POST")
        last = r.json()["added"]
        # The repository's list now starts with them, newest first, on the pages they take.
        items, pages, _ = walk_issues(server, "grow", f"repo-{i:03d}")
        assert items[:4] == added[::-1] and len(items) == count + 4 and pages == -(-(count + 4) // 10)
        # since= (inclusive, as GitHub's) finds exactly what was added after the first run.
        since = added[0]["updated_at"]
        assert walk_issues(server, "grow", f"repo-{i:03d}", f"?since={since}")[0] == added[::-1]
        assert walk_issues(server, "grow", "repo-001", f"?since={since}")[0] == []
        assert walk_issues(server, "grow", "repo-000", f"?since={since}")[0] == last
        # The expected issues count them, with or without since.
        expected = get(server, "/_orgs/grow/issues").json()
        assert expected["count"] == len(before) + 5
        assert expected["issues"] == server.orgs.expected("grow")
        assert get(server, f"/_orgs/grow/issues?since={since}").json()["issues"] == sorted(added + last, key=lambda it: it["id"])
        assert org_api.expected_issues("grow", since=since) == []
        # /_reset keeps them; /_orgs/<org>/reset forgets them.
        get(server, "/_reset")
        assert len(walk_issues(server, "grow", f"repo-{i:03d}")[0]) == count + 4
        get(server, "/_orgs/grow/reset", method="POST")
        assert get(server, "/_orgs/grow/issues").json()["count"] == len(before)
    finally:
        get(server, "/_orgs/grow/reset", method="POST")


def test_an_orgs_options_apply_to_its_lists_unless_a_request_sets_its_own(server):
    assert get(server, "/_orgs/slow/options?latency_ms=300&limit=2&limit_retry_after=5", method="POST").status == 200
    try:
        answers = concurrently(server, ["/repos/slow/repo-000/issues", "/repos/slow/repo-001/issues",
                                        "/orgs/slow/repos"])
        statuses = sorted(a.status for a in answers)
        assert statuses == [200, 200, 429]
        refused = next(a for a in answers if a.status == 429)
        assert refused.headers["Retry-After"] == "5"
        t0 = time.monotonic()
        assert get(server, "/repos/slow/repo-000/issues").status == 200
        assert time.monotonic() - t0 >= 0.3
        t0 = time.monotonic()
        assert get(server, "/repos/slow/repo-000/issues?latency_ms=0").status == 200   # its own wins
        assert time.monotonic() - t0 < 0.25
        t0 = time.monotonic()
        get(server, "/repos/acme/repo-000/issues")                                     # another org: none
        assert time.monotonic() - t0 < 0.25
        # capacity= queues rather than refuses; bearer= asks every request for the token.
        get(server, "/_orgs/slow/options?latency_ms=150&capacity=1&bearer=T", method="POST")
        t0 = time.monotonic()
        answers = concurrently(server, ["/repos/slow/repo-000/issues"] * 2)
        assert [a.status for a in answers] == [401, 401] and time.monotonic() - t0 >= 0.3
        ok = get(server, "/orgs/slow/repos", headers={"Authorization": "Bearer T"})
        assert ok.status == 200
        assert "bearer" not in (links(ok).get("next") or "")     # defaults stay out of next links
    finally:
        get(server, "/_orgs/slow/reset", method="POST")
    assert get(server, "/_orgs/slow/options?per_page=5", method="POST").json() == {"error": "bad parameter", "param": "per_page"}


def test_an_orgs_lists_take_fail_and_garbage_and_refuse_bad_requests(server):
    assert get(server, "/repos/acme/repo-000/issues?fail=1:1:503").status == 503
    assert get(server, "/repos/acme/repo-000/issues?fail=1:1:503").status == 200
    assert get(server, "/orgs/acme/repos?page=2&garbage=2").body == api_server.GARBAGE_BODY
    assert get(server, "/repos/acme/repo-7/issues").status == 404
    assert get(server, "/repos/acme/widgets/issues").status == 404
    assert get(server, "/repos/acme/repo-000/issues?since=yesterday").json() == {"error": "bad parameter", "param": "since"}
    assert get(server, "/repos/acme/repo-000/issues?direction=up").status == 400
    assert get(server, "/repos/acme/repo-000/issues?page=0").status == 400
    assert get(server, "/orgs/acme/repos", method="POST", data=b"").status == 405
    assert get(server, "/_orgs/acme/repos/repo-000/issues?add=1").status == 405     # adding is a POST
    assert get(server, "/_orgs/acme/repos/nope/issues?add=1", method="POST").status == 404
    assert get(server, "/_orgs/acme/repos/repo-000/issues?add=x", method="POST").status == 400
    assert get(server, "/_stats").json()["requests"] == 8     # control requests are not counted
