"""Lists that grow while they are watched (issue 46): items are added by the caller, now or in a
given second, and the lists serve them as the public APIs do.

| path | order | paging | filter |
|---|---|---|---|
| /feed/stripe | created desc, then id desc (Stripe's charges) | starting_after (an id), has_more, limit (10, max 100) | created[gte], created[gt], created[lt], created[lte] (Unix seconds) |
| /feed/events | created asc, then id asc (an events feed read oldest first) | page, per_page (10, max 100), a "next" URL | since (Unix seconds, included, as GitHub's since) |

Query parameters of both: feed=NAME (default "default"), each feed its own list;
ignore_filter=1 (a server that does not know the filter). Items: {"id": "ch_<n>" (stripe) or
n (events), "created": seconds, "inserted_at": the server's time.time() when it was added}.

Control:
  POST /_feed/insert?feed=NAME&n=K[&at=T]   adds K items, created now (or in second T); answers
                                            {"ids": [...]} (the ids as the lists name them)
  GET  /_feed/items?feed=NAME               every item, oldest first
  /_reset empties every feed.
"""

from __future__ import annotations

import bisect
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

_lock = threading.Lock()
#: feed -> items as (created, number, inserted_at), oldest first (created, then number).
_feeds: Dict[str, List[Tuple[int, int, float]]] = {}
_numbers: Dict[str, int] = {}


def reset() -> None:
    with _lock:
        _feeds.clear()
        _numbers.clear()


def insert(feed: str, count: int, at: Optional[int] = None) -> List[int]:
    """Adds `count` items to `feed`, created in second `at` (default: now); their numbers."""
    with _lock:
        items = _feeds.setdefault(feed, [])
        made = []
        for _ in range(count):
            number = _numbers.get(feed, 0) + 1
            _numbers[feed] = number
            now = time.time()
            bisect.insort(items, (int(now) if at is None else at, number, now))
            made.append(number)
        return made


def _items(feed: str) -> List[Tuple[int, int, float]]:
    with _lock:
        return list(_feeds.get(feed, []))


def _stripe_item(item: Tuple[int, int, float]) -> Dict[str, Any]:
    return {"id": f"ch_{item[1]:08d}", "object": "charge", "created": item[0], "inserted_at": item[2]}


def stripe(p) -> None:
    q = p.q
    limit = p.size("limit", 10, 100)
    items = _items(q.text("feed") or "default")[::-1]   # newest first
    if not q.flag("ignore_filter"):
        if q.has("created[gte]"):
            low = q.integer("created[gte]", None)
            items = [item for item in items if item[0] >= low]
        elif q.has("created[gt]"):
            low = q.integer("created[gt]", None)
            items = [item for item in items if item[0] > low]
        if q.has("created[lt]"):
            high = q.integer("created[lt]", None)
            items = [item for item in items if item[0] < high]
        elif q.has("created[lte]"):
            high = q.integer("created[lte]", None)
            items = [item for item in items if item[0] <= high]
    start = 0
    if q.has("starting_after"):
        text = q.text("starting_after") or ""
        number = int(text[3:]) if text.startswith("ch_") and text[3:].isdigit() else -1
        places = [index for index, item in enumerate(items) if item[1] == number]
        if not places:
            p.error(400, {"error": {"type": "invalid_request_error", "message": f"No such charge: '{text}'",
                                    "param": "starting_after", "code": "resource_missing"}})
            return
        start = places[0] + 1
    page = items[start:start + limit]
    p.send({"object": "list", "url": "/v1/charges", "has_more": start + limit < len(items),
            "data": [_stripe_item(item) for item in page]})


def events(p) -> None:
    q = p.q
    per_page = p.size("per_page", 10, 100)
    page_number = q.integer("page", 1, 1)
    items = _items(q.text("feed") or "default")
    if not q.flag("ignore_filter") and q.has("since"):
        since = q.integer("since", None)
        items = [item for item in items if item[0] >= since]
    start = (page_number - 1) * per_page
    page = items[start:start + per_page]
    more = start + per_page < len(items)
    p.send({"items": [{"id": item[1], "created": item[0], "inserted_at": item[2]} for item in page],
            "next": p.with_params({"page": page_number + 1}) if more else None})


def control(handler, method: str, path: str, q) -> bool:
    """The /_feed/ endpoints; False for any other path."""
    feed = q.text("feed") or "default"
    if path == "/_feed/insert" and method in ("POST", "GET"):
        count = q.integer("n", 1, 0, 100_000)
        at = q.integer("at", None) if q.has("at") else None
        numbers = insert(feed, count, at)
        handler.send_json(200, {"ids": numbers, "stripe_ids": [f"ch_{n:08d}" for n in numbers]})
        return True
    if path == "/_feed/items" and method == "GET":
        handler.send_json(200, {"items": [{"id": n, "created": c, "inserted_at": t} for c, n, t in _items(feed)]})
        return True
    return False


def register(routes: Dict[str, Any]) -> None:
    from conventions import Page

    for name, function in (("stripe", stripe), ("events", events)):
        routes[f"/feed/{name}"] = (lambda function, name: lambda handler, q: function(Page(handler, q, f"/feed/{name}")))(
            function, name)
