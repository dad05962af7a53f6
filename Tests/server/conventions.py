"""Endpoints that paginate the way public APIs document it, for the convention tests.

Every list is items {"id": i, "name": "item-<i>"}, i = 0..n-1 (n=1000 by default), under the
path /conv/<name>; every endpoint takes latency_ms, fail=K:C:S and garbage=K as the others do (K
is the 1-based page), and short=K (the list really has n-K items while its totals still say n)
where it reports a total. Links are absolute unless said otherwise; the other query parameters of
the request are kept in them.

| path | addressing | next / end | total | defaults |
|---|---|---|---|---|
| /conv/github | page, per_page | Link rel=next/last/first/prev (link=standard, relative, split, unquoted, none) | - (rel=last) | 30, max 100 |
| /conv/gitlab | page, per_page | X-Next-Page ("" at the end), Link (link=none: no Link) | X-Total, X-Total-Pages (nototal=1: none, as GitLab past 10,000) | 20, max 100 |
| /conv/json-server | _page, _limit | Link | X-Total-Count | 10; no _page: everything |
| /conv/hand-written | _page, _limit | - (no Link, no next field) | X-Total-Count | 10, max 100; no _page: page 1 |
| /conv/spring | page (0-based), size | - (Spring Data's Page: no links) | totalElements, totalPages, number | 20, max 100; items "content"; no page: page 0 |
| /conv/drf-limit | limit, offset | "next" | "count" | 50, max 100 |
| /conv/drf-cursor | cursor (opaque) | "next" | - | page_size 50 |
| /conv/jsonapi | page[number], page[size] | links.next (null at the end) | meta.total | 20, max 100 |
| /conv/odata | $skip, $top | @odata.nextLink (absent at the end) | @odata.count with $count=true | 50 a page |
| /conv/hal | page (0-based), size | _links.next.href | page.totalElements, page.totalPages | 20, max 100 |
| /conv/stripe | starting_after (an id), limit | has_more | - | 10, max 100 |
| /conv/slack | cursor, limit | response_metadata.next_cursor ("" at the end) | - | 100, max 1000; items "members" |
| /conv/google | pageToken, pageSize | nextPageToken (absent at the end) | - | 100, max 1000; items "files" |
| /conv/zendesk | page[after], page[size] | meta.has_more, meta.after_cursor, links.next | - | 100, max 100; items "tickets" |
| /conv/fastapi-page | page, size | - | total, pages | 50, max 100 |
| /conv/fastapi-limit-offset | limit, offset | - | total | 50, max 100 |
| /conv/content-range | offset, limit | - | Content-Range: items a-b/n | 25 |
| /conv/jira | startAt, maxResults | isLast | total | 50, max 100 |
| /conv/elastic | from, size | - | hits.total {value, relation} (gte above 10,000) | 10 |

Simplified against the real APIs: every item has the same form (an int id) so that one check
fits all; Stripe's ids are ints; cursors are base64 of an offset.
"""

from __future__ import annotations

import base64
import json
from typing import Any, Callable, Dict, List, Optional, Tuple

DEFAULT_N = 1000


def _items(start: int, end: int) -> List[Dict[str, Any]]:
    return [{"id": i, "name": f"item-{i}"} for i in range(start, end)]


def _encode(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _decode(token: str) -> Optional[str]:
    try:
        return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    except (ValueError, UnicodeDecodeError):
        return None


class Page:
    """What one convention answers for one request."""

    def __init__(self, handler, q, path: str) -> None:
        self.handler, self.q, self.path = handler, q, path
        self.n = q.integer("n", DEFAULT_N, 0)
        self.real_n = max(self.n - q.integer("short", 0, 0), 0)

    def size(self, name: str, default: int, maximum: int) -> int:
        return min(self.q.integer(name, default, 1), maximum)

    def with_params(self, params: Dict[str, Any], absolute: bool = True) -> str:
        raw = self.q.raw
        for name, value in params.items():
            raw = type(self.q)(raw).with_param(name, value)
        base = self.handler.server.base_url if absolute else ""
        return f"{base}{self.path}?{raw}"

    def send(self, body: Any, headers: Optional[List[Tuple[str, str]]] = None, status: int = 200) -> None:
        text = body if isinstance(body, bytes) else json.dumps(body, separators=(",", ":")).encode()
        self.handler.send(status, text, headers=headers)

    def error(self, status: int, body: Any) -> None:
        self.send(body, status=status)


def _link(entries: List[Tuple[str, str]], style: str) -> List[Tuple[str, str]]:
    if style == "none":
        return []
    if style == "split":
        return [("Link", f'<{url}>; rel="{rel}"') for url, rel in entries]
    if style == "unquoted":
        return [("Link", ", ".join(f"<{url}>; rel={rel}" for url, rel in entries))] if entries else []
    return [("Link", ", ".join(f'<{url}>; rel="{rel}"' for url, rel in entries))] if entries else []


def _numbered_links(p: Page, param: str, page: int, last: int, first: int = 1, style: str = "standard",
                    with_last: bool = True) -> List[Tuple[str, str]]:
    relative = style == "relative"
    entries = []
    if page < last:
        entries.append((p.with_params({param: page + 1}, not relative), "next"))
        if with_last:
            entries.append((p.with_params({param: last}, not relative), "last"))
    if page > first:
        entries.append((p.with_params({param: first}, not relative), "first"))
        entries.append((p.with_params({param: page - 1}, not relative), "prev"))
    return _link(entries, style)


def _numbered(p: Page, param: str, size_name: str, default: int, maximum: int,
              first: int = 1) -> Optional[Tuple[int, int, int, int]]:
    """(page, size, start, last page) of a page-number request; None when fail= or garbage=
    answered it already."""
    page, size = p.q.integer(param, first, first), p.size(size_name, default, maximum)
    if p.handler.injected(p.q, p.path, page - first + 1):
        return None
    return page, size, (page - first) * size, first + max(0, -(-p.n // size) - 1)


def github(p: Page) -> None:
    numbered = _numbered(p, "page", "per_page", 30, 100)
    if numbered is None:
        return
    page, size, start, last = numbered
    headers = _numbered_links(p, "page", page, last, style=p.q.text("link", "standard"))
    p.send(_items(min(start, p.real_n), min(start + size, p.real_n)), headers)


def gitlab(p: Page) -> None:
    numbered = _numbered(p, "page", "per_page", 20, 100)
    if numbered is None:
        return
    page, size, start, last = numbered
    nototal = p.q.flag("nototal")
    headers = [("X-Page", str(page)), ("X-Per-Page", str(size)),
               ("X-Next-Page", str(page + 1) if page < last else ""),
               ("X-Prev-Page", str(page - 1) if page > 1 else "")]
    if not nototal:
        headers += [("X-Total", str(p.n)), ("X-Total-Pages", str(last))]
    headers += _numbered_links(p, "page", page, last, style=p.q.text("link", "standard"), with_last=not nototal)
    p.send(_items(min(start, p.real_n), min(start + size, p.real_n)), headers)


def json_server(p: Page) -> None:
    if not p.q.has("_page"):
        p.send(_items(0, p.real_n), [("X-Total-Count", str(p.n))])
        return
    numbered = _numbered(p, "_page", "_limit", 10, 10_000)
    if numbered is None:
        return
    page, size, start, last = numbered
    headers = [("X-Total-Count", str(p.n))] + _numbered_links(p, "_page", page, last)
    p.send(_items(min(start, p.real_n), min(start + size, p.real_n)), headers)


def hand_written(p: Page) -> None:
    """json-server's answer as many hand-written APIs give it: a bare array and its total, page 1
    without _page, and nothing that names the next page: only a client that tries _page finds it."""
    numbered = _numbered(p, "_page", "_limit", 10, 100)
    if numbered is None:
        return
    _, size, start, _ = numbered
    p.send(_items(min(start, p.real_n), min(start + size, p.real_n)), [("X-Total-Count", str(p.n))])


def drf_limit(p: Page) -> None:
    limit, offset = p.size("limit", 50, 100), p.q.integer("offset", 0, 0)
    if p.handler.injected(p.q, p.path, offset // limit + 1):
        return
    nxt = p.with_params({"limit": limit, "offset": offset + limit}) if offset + limit < p.n else None
    prev = p.with_params({"limit": limit, "offset": max(0, offset - limit)}) if offset > 0 else None
    p.send({"count": p.n, "next": nxt, "previous": prev,
            "results": _items(min(offset, p.real_n), min(offset + limit, p.real_n))})


def drf_cursor(p: Page) -> None:
    size = p.size("page_size", 50, 100)
    offset = 0
    if p.q.has("cursor"):
        decoded = _decode(p.q.text("cursor") or "")
        if decoded is None or not decoded.startswith("o=") or not decoded[2:].isdigit():
            p.error(404, {"detail": "Invalid cursor"})
            return
        offset = int(decoded[2:])
    if p.handler.injected(p.q, p.path, offset // size + 1):
        return
    nxt = p.with_params({"cursor": _encode(f"o={offset + size}")}) if offset + size < p.n else None
    prev = p.with_params({"cursor": _encode(f"o={max(0, offset - size)}")}) if offset > 0 else None
    p.send({"next": nxt, "previous": prev, "results": _items(offset, min(offset + size, p.n))})


def jsonapi(p: Page) -> None:
    numbered = _numbered(p, "page[number]", "page[size]", 20, 100)
    if numbered is None:
        return
    page, size, start, last = numbered
    link = lambda number: p.with_params({"page[number]": number})  # noqa: E731
    p.send({"data": _items(min(start, p.real_n), min(start + size, p.real_n)),
            "links": {"self": link(page), "first": link(1), "last": link(last),
                      "prev": link(page - 1) if page > 1 else None, "next": link(page + 1) if page < last else None},
            "meta": {"total": p.n}})


def odata(p: Page) -> None:
    skip = p.q.integer("$skip", 0, 0)
    top = p.q.integer("$top", None, 0)
    size = 50 if top is None else min(50, top)
    if p.handler.injected(p.q, p.path, skip // 50 + 1):
        return
    end = min(skip + size, p.n if top is None else min(p.n, skip + top))
    body: Dict[str, Any] = {"@odata.context": f"{p.handler.server.base_url}/$metadata#Items"}
    if (p.q.text("$count") or "").lower() == "true":
        body["@odata.count"] = p.n
    body["value"] = _items(min(skip, p.real_n), min(end, p.real_n))
    if end < (p.n if top is None else min(p.n, top)):
        remaining = {"$skip": end} if top is None else {"$skip": end, "$top": top - (end - skip)}
        body["@odata.nextLink"] = p.with_params(remaining)
    p.send(body)


def hal(p: Page) -> None:
    page, size = p.q.integer("page", 0, 0), p.size("size", 20, 100)
    if p.handler.injected(p.q, p.path, page + 1):
        return
    start = page * size
    pages = -(-p.n // size)
    links = {"self": {"href": p.with_params({"page": page})}, "first": {"href": p.with_params({"page": 0})},
             "last": {"href": p.with_params({"page": max(0, pages - 1)})}}
    if page + 1 < pages:
        links["next"] = {"href": p.with_params({"page": page + 1})}
    if page > 0:
        links["prev"] = {"href": p.with_params({"page": page - 1})}
    p.send({"_embedded": {"items": _items(min(start, p.real_n), min(start + size, p.real_n))}, "_links": links,
            "page": {"size": size, "totalElements": p.n, "totalPages": pages, "number": page}})


def spring(p: Page) -> None:
    """Spring Data's Page<T> as a @RestController returns it: pages numbered from 0, no links."""
    page, size = p.q.integer("page", 0, 0), p.size("size", 20, 100)
    if p.handler.injected(p.q, p.path, page + 1):
        return
    start = page * size
    pages = -(-p.n // size)
    p.send({"content": _items(min(start, p.real_n), min(start + size, p.real_n)), "number": page, "size": size,
            "totalElements": p.n, "totalPages": pages, "first": page == 0, "last": page + 1 >= pages,
            "numberOfElements": max(0, min(start + size, p.real_n) - min(start, p.real_n)), "empty": start >= p.real_n})


def stripe(p: Page) -> None:
    limit = p.size("limit", 10, 100)
    start = 0
    if p.q.has("starting_after"):
        after = p.q.text("starting_after") or ""
        if not after.isdigit() or int(after) >= p.n:
            p.error(400, {"error": {"type": "invalid_request_error", "message": f"No such item: '{after}'",
                                    "param": "starting_after", "code": "resource_missing"}})
            return
        start = int(after) + 1
    if p.handler.injected(p.q, p.path, start // limit + 1):
        return
    end = min(start + limit, p.n)
    more = end < p.n or p.q.flag("lie_more")
    p.send({"object": "list", "url": "/v1/items", "has_more": more, "data": _items(start, end)})


def slack(p: Page) -> None:
    limit = p.size("limit", 100, 1000)
    offset = 0
    if p.q.text("cursor"):
        decoded = _decode(p.q.text("cursor") or "")
        if decoded is None or not decoded.startswith("user:") or not decoded[5:].isdigit():
            p.send({"ok": False, "error": "invalid_cursor"})
            return
        offset = int(decoded[5:])
    if p.handler.injected(p.q, p.path, offset // limit + 1):
        return
    end = min(offset + limit, p.n)
    p.send({"ok": True, "members": _items(offset, end),
            "response_metadata": {"next_cursor": _encode(f"user:{end}") if end < p.n else ""}})


def google(p: Page) -> None:
    size = p.size("pageSize", 100, 1000)
    offset = 0
    if p.q.text("pageToken"):
        decoded = _decode(p.q.text("pageToken") or "")
        if decoded is None or not decoded.isdigit():
            p.error(400, {"error": {"code": 400, "message": "Invalid pageToken", "status": "INVALID_ARGUMENT"}})
            return
        offset = int(decoded)
    if p.handler.injected(p.q, p.path, offset // size + 1):
        return
    end = min(offset + size, p.n)
    body: Dict[str, Any] = {"kind": "drive#fileList", "files": _items(offset, end)}
    if end < p.n:
        body["nextPageToken"] = _encode(str(end))
    p.send(body)


def zendesk(p: Page) -> None:
    size = p.size("page[size]", 100, 100)
    offset = 0
    if p.q.text("page[after]"):
        decoded = _decode(p.q.text("page[after]") or "")
        if decoded is None or not decoded.isdigit():
            p.error(400, {"error": "InvalidPaginationParameter", "description": "invalid cursor"})
            return
        offset = int(decoded)
    if p.handler.injected(p.q, p.path, offset // size + 1):
        return
    end = min(offset + size, p.n)
    more = end < p.n
    after = _encode(str(end)) if more else None
    p.send({"tickets": _items(offset, end),
            "meta": {"has_more": more, "after_cursor": after, "before_cursor": _encode(str(offset)) if offset else None},
            "links": {"next": p.with_params({"page[after]": after}) if more else None, "prev": None}})


def fastapi_page(p: Page) -> None:
    numbered = _numbered(p, "page", "size", 50, 100)
    if numbered is None:
        return
    page, size, start, _ = numbered
    p.send({"items": _items(min(start, p.real_n), min(start + size, p.real_n)), "total": p.n, "page": page,
            "size": size, "pages": -(-p.n // size)})


def fastapi_limit_offset(p: Page) -> None:
    limit, offset = p.size("limit", 50, 100), p.q.integer("offset", 0, 0)
    if p.handler.injected(p.q, p.path, offset // limit + 1):
        return
    p.send({"items": _items(min(offset, p.real_n), min(offset + limit, p.real_n)), "total": p.n, "limit": limit,
            "offset": offset})


def content_range(p: Page) -> None:
    limit, offset = p.size("limit", 25, 1000), p.q.integer("offset", 0, 0)
    if p.handler.injected(p.q, p.path, offset // limit + 1):
        return
    start, end = min(offset, p.real_n), min(offset + limit, p.real_n)
    served = f"items {start}-{end - 1}/{p.n}" if end > start else f"items */{p.n}"
    p.send(_items(start, end), [("Content-Range", served)])


def jira(p: Page) -> None:
    limit, start = p.size("maxResults", 50, 100), p.q.integer("startAt", 0, 0)
    if p.handler.injected(p.q, p.path, start // limit + 1):
        return
    end = min(start + limit, p.n)
    p.send({"startAt": start, "maxResults": limit, "total": p.n, "isLast": end >= p.n,
            "values": _items(min(start, p.real_n), min(end, p.real_n))})


def elastic(p: Page) -> None:
    size, start = p.size("size", 10, 10_000), p.q.integer("from", 0, 0)
    if p.handler.injected(p.q, p.path, start // size + 1):
        return
    total = {"value": min(p.n, 10_000), "relation": "eq" if p.n <= 10_000 else "gte"}
    hits = [{"_id": str(i), "_source": item} for i, item in zip(range(start, p.n), _items(start, min(start + size, p.n)))]
    p.send({"took": 1, "hits": {"total": total, "hits": hits}})


CONVENTIONS: Dict[str, Callable[[Page], None]] = {
    "github": github, "gitlab": gitlab, "json-server": json_server, "hand-written": hand_written,
    "drf-limit": drf_limit,
    "drf-cursor": drf_cursor, "jsonapi": jsonapi, "odata": odata, "hal": hal, "spring": spring, "stripe": stripe,
    "slack": slack, "google": google, "zendesk": zendesk, "fastapi-page": fastapi_page,
    "fastapi-limit-offset": fastapi_limit_offset, "content-range": content_range, "jira": jira,
    "elastic": elastic,
}


def register(routes: Dict[str, Callable]) -> None:
    """Adds every convention to the server's routes, at /conv/<name>."""
    for name, answer in CONVENTIONS.items():
        path = f"/conv/{name}"
        routes[path] = (lambda handler, q, path=path, answer=answer: answer(Page(handler, q, path)))
