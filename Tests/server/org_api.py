"""An organisation's repositories and their issues: many lists as one job (issue 28).

A parent list, /orgs/<org>/repos, names 300 repositories; each has a child list,
/repos/<org>/<repo>/issues, of 0 to 12 pages whose convention depends on the repository. Every
answer is a function of the org's name, the request and the issues added since (below), so a test
knows the whole org's issues without asking (`expected_issues`).

  GET /orgs/<org>/repos?page=N&per_page=S     GitHub's convention: a bare array, Link rel=next,
        last, first, prev; per_page 30, at most 100. Repository i (0-based) is
        {"id": i, "name": "repo-<i:03d>", "full_name": "<org>/repo-<i:03d>", "owner": {"login": "<org>"}}
        repos=300      repositories in the org
        repeat=1       every page after the first starts again with the previous page's last repository
        missing=K      every K-th repository (i % K == K - 1) has no "full_name"

  GET /repos/<org>/repo-<i:03d>/issues?page=N&per_page=S[&since=T][&direction=desc|asc]
        The repository's issues, newest first (updated_at descending; direction=asc: oldest
        first); per_page 10, at most 100; a page past the end is empty. At the default page size
        a repository has 0 to 12 pages (0: an empty list), as `repo_plan` says. Its convention:
          link      a bare array; Link rel=next/last/first/prev (absolute URLs)
          body      {"issues": [...], "next": URL or null}
          numbered  {"data": [...], "page": N, "per_page": S, "total": T, "total_pages": P}
        since=T (YYYY-MM-DDTHH:MM:SSZ): only issues updated at T or later, as GitHub's since.
        Issue k (1-based) of repository i: {"id": (i + 1) * 100000 + k, "number": k,
        "title": "<org>/repo-<i:03d> #k", "repository": "<org>/repo-<i:03d>", "updated_at": ...}
        (ids unique across the org). Base issues are updated in January 2026 (issue k at
        BASE_TIME + k hours + i seconds); added issues later than every base issue.

Both take the server's per-request options as the other lists do (latency_ms, capacity, limit,
limit_retry_after, ratelimit, fail=K:C:S, garbage=K, bearer). An org's children are fetched by URLs
a template made, which carry no options: POST /_orgs/<org>/options?latency_ms=50&capacity=16&limit=32
sets defaults for every request under that org (its repos list and its issues) that does not set
them itself: latency_ms, capacity, limit, limit_retry_after, ratelimit and bearer (what a list's
pages are is never a default: repos, per_page, fail and the like count only in the request).

Control (not counted in /_stats):
  POST /_orgs/<org>/repos/<repo>/issues?add=N   appends N issues, newest of all, to the repository:
                                                {"added": [issues], "count": issues it now has}
  GET  /_orgs/<org>/issues?repos=300[&since=T]  every issue of the org (by id):
                                                {"count": n, "issues": [...]} (`expected_issues`)
  POST /_orgs/<org>/options?...                 the org's default options (replaces the last ones)
  POST /_orgs/<org>/reset                       forgets the org's added issues and options
/_reset leaves the orgs as they are: a test may reset the request counts between two runs.
"""

from __future__ import annotations

import json
import re
import threading
import zlib
from datetime import datetime, timedelta, timezone
from typing import Callable, Dict, List, Optional, Tuple
from urllib.parse import parse_qs

DEFAULT_REPOS = 300
REPOS_PAGE_SIZE, REPOS_MAX_PAGE_SIZE = 30, 100
ISSUES_PAGE_SIZE, ISSUES_MAX_PAGE_SIZE = 10, 100
MAX_PAGES = 12                      # at ISSUES_PAGE_SIZE
MAX_REPOS = 3600                    # the seconds of an hour: base updated_at stay distinct
ISSUE_ID_STRIDE = 100_000           # issue ids of repository i: (i + 1) * stride + number
MAX_ADD = 10_000                    # issues added by one request
CONVENTIONS = ("link", "body", "numbered")
OPTIONS = {"latency_ms", "capacity", "limit", "limit_retry_after", "ratelimit", "bearer"}   # an org's defaults
BASE_TIME = datetime(2026, 1, 1, tzinfo=timezone.utc)
ADDED_TIME = datetime(2026, 2, 1, tzinfo=timezone.utc)   # added issue j (1-based, org-wide) at + j seconds
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"

_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_REPOS_PATH = re.compile(rf"/orgs/({_NAME})/repos")
_ISSUES_PATH = re.compile(rf"/repos/({_NAME})/({_NAME})/issues")
_CONTROL_PATH = re.compile(rf"/_orgs/({_NAME})(?:/(reset|options|issues)|/repos/({_NAME})/issues)")
_REPO_NAME = re.compile(r"repo-(\d{3,})")


class BadRequest(Exception):
    """A parameter the org endpoints cannot take (answered 400 naming it)."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


# ---- what an org holds (pure) ------------------------------------------------------------------

def repo_name(i: int) -> str:
    return f"repo-{i:03d}"


def repo_index(name: str) -> Optional[int]:
    """i for "repo-<i:03d>", None for any other name."""
    m = _REPO_NAME.fullmatch(name)
    if m is None:
        return None
    i = int(m.group(1))
    return i if repo_name(i) == name and i < MAX_REPOS else None


def repo_plan(org: str, i: int) -> Tuple[int, int, str]:
    """(base issues, pages at the default page size, convention) of repository i: a function of
    its full name, pages 0 to MAX_PAGES."""
    h = zlib.crc32(f"{org}/{repo_name(i)}".encode())
    pages = h % (MAX_PAGES + 1)
    count = 0 if pages == 0 else (pages - 1) * ISSUES_PAGE_SIZE + 1 + (h // (MAX_PAGES + 1)) % ISSUES_PAGE_SIZE
    return count, pages, CONVENTIONS[(h // ((MAX_PAGES + 1) * ISSUES_PAGE_SIZE)) % len(CONVENTIONS)]


def repository(org: str, i: int) -> dict:
    return {"id": i, "name": repo_name(i), "full_name": f"{org}/{repo_name(i)}", "owner": {"login": org}}


def issue(org: str, i: int, number: int, updated: datetime) -> dict:
    full_name = f"{org}/{repo_name(i)}"
    return {"id": (i + 1) * ISSUE_ID_STRIDE + number, "number": number, "title": f"{full_name} #{number}",
            "repository": full_name, "updated_at": updated.strftime(TIME_FORMAT)}


def base_issues(org: str, i: int) -> List[dict]:
    """Repository i's issues before any were added, oldest first."""
    count = repo_plan(org, i)[0]
    return [issue(org, i, k, BASE_TIME + timedelta(hours=k, seconds=i)) for k in range(1, count + 1)]


def parse_time(text: str) -> datetime:
    try:
        return datetime.strptime(text, TIME_FORMAT).replace(tzinfo=timezone.utc)
    except ValueError:
        raise BadRequest("since") from None


def newest_first(issues: List[dict], since: Optional[str] = None, ascending: bool = False) -> List[dict]:
    """`issues` updated at `since` or later, newest first (ties: the larger id first)."""
    if since is not None:
        floor = parse_time(since).strftime(TIME_FORMAT)   # the format sorts as the time does
        issues = [it for it in issues if it["updated_at"] >= floor]
    ordered = sorted(issues, key=lambda it: (it["updated_at"], it["id"]))
    return ordered if ascending else ordered[::-1]


def expected_issues(org: str, repos: int = DEFAULT_REPOS, since: Optional[str] = None,
                    added: Optional[Dict[int, List[dict]]] = None) -> List[dict]:
    """Every issue of the org's first `repos` repositories (those `added` included), by id: what a
    fan-out over /orgs/<org>/repos must collect, exactly."""
    every = []
    for i in range(repos):
        every += base_issues(org, i) + list((added or {}).get(i, ()))
    return sorted(newest_first(every, since), key=lambda it: it["id"])


class Orgs:
    """The issues added to each org, and each org's default options; every access holds the lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.added: Dict[str, Dict[int, List[dict]]] = {}   # org -> repository -> added issues
        self.sequence: Dict[str, int] = {}                  # org -> issues added so far
        self.options: Dict[str, str] = {}                   # org -> a raw query

    def add(self, org: str, i: int, n: int) -> Tuple[List[dict], int]:
        """Appends n issues to repository i, each updated after every issue before it."""
        with self.lock:
            repo = self.added.setdefault(org, {}).setdefault(i, [])
            first = repo_plan(org, i)[0] + len(repo) + 1
            if first + n > ISSUE_ID_STRIDE:
                raise BadRequest("add")
            new = []
            for number in range(first, first + n):
                self.sequence[org] = self.sequence.get(org, 0) + 1
                new.append(issue(org, i, number, ADDED_TIME + timedelta(seconds=self.sequence[org])))
            repo += new
            return new, first - 1 + n

    def issues(self, org: str, i: int) -> List[dict]:
        with self.lock:
            return base_issues(org, i) + list(self.added.get(org, {}).get(i, ()))

    def expected(self, org: str, repos: int = DEFAULT_REPOS, since: Optional[str] = None) -> List[dict]:
        with self.lock:
            added = {i: list(v) for i, v in self.added.get(org, {}).items()}
        return expected_issues(org, repos, since, added)

    def set_options(self, org: str, raw: str) -> None:
        for name in parse_qs(raw, keep_blank_values=True):
            if name not in OPTIONS:
                raise BadRequest(name)
        with self.lock:
            self.options[org] = raw

    def forget(self, org: str) -> None:
        with self.lock:
            self.added.pop(org, None)
            self.sequence.pop(org, None)
            self.options.pop(org, None)

    def with_options(self, org: str, raw: str) -> str:
        """The raw query `raw` with the org's default options it does not set itself appended."""
        with self.lock:
            defaults = self.options.get(org, "")
        own = parse_qs(raw, keep_blank_values=True)
        extra = [seg for seg in defaults.split("&") if seg and seg.split("=", 1)[0] not in own]
        return "&".join(part for part in [raw, *extra] if part)


# ---- the endpoints -----------------------------------------------------------------------------

def org_of(path: str) -> Optional[str]:
    """The org a list path belongs to, None for any other path."""
    m = _REPOS_PATH.fullmatch(path) or _ISSUES_PATH.fullmatch(path)
    return m.group(1) if m else None


def route(path: str) -> Optional[Callable]:
    """The handler function for an org list path (called as route(handler, q)), or None."""
    m = _REPOS_PATH.fullmatch(path)
    if m:
        return _answering_bad_requests(lambda handler, q: repos(handler, q, path, m.group(1)))
    m = _ISSUES_PATH.fullmatch(path)
    if m:
        return _answering_bad_requests(lambda handler, q: issues(handler, q, path, m.group(1), m.group(2)))
    return None


def _answering_bad_requests(answer: Callable) -> Callable:
    def answering(handler, q) -> None:
        try:
            answer(handler, q)
        except BadRequest as e:
            _send(handler, {"error": "bad parameter", "param": e.name}, status=400)
    return answering


def _send(handler, body, headers=None, status: int = 200) -> None:
    handler.send(status, json.dumps(body, separators=(",", ":")).encode(), headers=headers)


def _page(q, default_size: int, max_size: int) -> Tuple[int, int]:
    return q.integer("page", 1, 1), min(q.integer("per_page", default_size, 1), max_size)


def _url(handler, q, path: str, page: int) -> str:
    return f"{handler.server.base_url}{path}?{q.with_param('page', page)}"


def _links(handler, q, path: str, page: int, last: int) -> list:
    entries = []
    if page < last:
        entries += [(_url(handler, q, path, page + 1), "next"), (_url(handler, q, path, last), "last")]
    if page > 1:
        entries += [(_url(handler, q, path, 1), "first"), (_url(handler, q, path, page - 1), "prev")]
    return [("Link", ", ".join(f'<{url}>; rel="{rel}"' for url, rel in entries))] if entries else []


def repos(handler, q, path: str, org: str) -> None:
    page, size = _page(q, REPOS_PAGE_SIZE, REPOS_MAX_PAGE_SIZE)
    n = q.integer("repos", DEFAULT_REPOS, 0, MAX_REPOS)
    missing = q.integer("missing", None, 1)
    if handler.injected(q, path, page):
        return
    start = (page - 1) * size
    indices = list(range(min(start, n), min(start + size, n)))
    if q.flag("repeat") and page > 1 and indices:
        indices.insert(0, start - 1)
    items = []
    for i in indices:
        item = repository(org, i)
        if missing is not None and i % missing == missing - 1:
            del item["full_name"]
        items.append(item)
    last = max(1, -(-n // size))
    _send(handler, items, _links(handler, q, path, page, last))


def issues(handler, q, path: str, org: str, repo: str) -> None:
    i = repo_index(repo)
    if i is None:
        _send(handler, {"message": "Not Found"}, status=404)
        return
    page, size = _page(q, ISSUES_PAGE_SIZE, ISSUES_MAX_PAGE_SIZE)
    direction = q.text("direction", "desc")
    if direction not in ("asc", "desc"):
        raise BadRequest("direction")
    if handler.injected(q, path, page):
        return
    ordered = newest_first(handler.server.orgs.issues(org, i), q.text("since"), ascending=direction == "asc")
    total = len(ordered)
    pages = -(-total // size)
    items = ordered[(page - 1) * size:page * size]
    convention = repo_plan(org, i)[2]
    if convention == "link":
        _send(handler, items, _links(handler, q, path, page, pages))
    elif convention == "body":
        _send(handler, {"issues": items, "next": _url(handler, q, path, page + 1) if page < pages else None})
    else:
        _send(handler, {"data": items, "page": page, "per_page": size, "total": total, "total_pages": pages})


def control(handler, method: str, path: str, raw_query: str) -> bool:
    """Answers a /_orgs/ control request; False when `path` is no such request."""
    m = _CONTROL_PATH.fullmatch(path)
    if m is None:
        return False
    org, action, repo = m.group(1), m.group(2), m.group(3)
    orgs = handler.server.orgs
    q = parse_qs(raw_query, keep_blank_values=True)

    def integer(name: str, default: int, lo: int, hi: int) -> int:
        try:
            value = int(q[name][0]) if name in q else default
        except ValueError:
            raise BadRequest(name) from None
        if not lo <= value <= hi:
            raise BadRequest(name)
        return value

    try:
        if action == "issues" and method == "GET":
            since = q["since"][0] if "since" in q else None
            every = orgs.expected(org, integer("repos", DEFAULT_REPOS, 0, MAX_REPOS), since)
            _send(handler, {"count": len(every), "issues": every})
        elif method != "POST":
            _send(handler, {"error": "method not allowed"}, status=405)
        elif action == "reset":
            orgs.forget(org)
            _send(handler, {"ok": True})
        elif action == "options":
            orgs.set_options(org, raw_query)
            _send(handler, {"ok": True, "options": raw_query})
        else:
            i = repo_index(repo)
            if i is None:
                _send(handler, {"error": "not found"}, status=404)
                return True
            added, count = orgs.add(org, i, integer("add", 1, 0, MAX_ADD))
            _send(handler, {"added": added, "count": count})
    except BadRequest as e:
        _send(handler, {"error": "bad parameter", "param": e.name}, status=400)
    return True
