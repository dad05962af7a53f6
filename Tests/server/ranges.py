"""Cursor lists with a range filter, shaped as the public APIs serve them, for splitting (issue 43).

| path | order | cursor | range filter | page size |
|---|---|---|---|---|
| /range/stripe | created desc, then id desc | starting_after (an id), has_more | created[gt], [gte], [lt], [lte] (Unix seconds) | limit 10, max 100 |
| /range/slack | ts desc | cursor (response_metadata.next_cursor, "" at the end), has_more | oldest, latest (excluded; inclusive=true: included) | limit 100, max 1000 |
| /range/shopify | created_at desc, then id desc | Link rel="next" with page_info (no other parameter but limit with it) | created_at_min, created_at_max (RFC 3339, included) | limit 50, max 250 |

Items: Stripe {"id": "ch_<n>", "object": "charge", "created": T}, Slack {"type": "message",
"ts": "T.uuuuuu", "text": ...}, Shopify {"id": n, "created_at": "...Z"} (n from 1, in the order
the items were made).

Query parameters of each:
  n=1000          items made at the start
  span=S          the seconds they spread over, ending at start=T (default 1,700,000,000), evenly
  burst=B:K       K bursts of B items, each burst in one second, spread over the span
  insert_rate=R   R items a second are added while the list is read (counted from the first
                  request carrying the same rate, or /_reset), each newer than every other
  ignore_filter=1 the range filter is not applied (a server that does not know it)

Each list is a function of its query and the clock (for inserts): a page asked for twice is
the same page, and a cursor names a position that stays valid when items are added.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional, Tuple

START = 1_700_000_000

_lock = threading.Lock()
_insert_clock: Dict[float, float] = {}   # insert rate -> when its inserts began
_made: Dict[Tuple[Any, ...], List[Tuple[int, int]]] = {}


def reset() -> None:
    with _lock:
        _insert_clock.clear()


def _base_items(n: int, span: int, start: int, burst: Optional[Tuple[int, int]]) -> List[Tuple[int, int]]:
    """(number, created) of the items made at the start, numbered from 1 oldest first."""
    key = (n, span, start, burst)
    with _lock:
        made = _made.get(key)
    if made is not None:
        return made
    created: List[int] = []
    if burst:
        size, count = burst
        for k in range(count):
            created += [start - span + (k + 1) * span // (count + 1)] * size
    rest = max(0, n - len(created))
    created += [start - span + (i * span) // max(1, rest) for i in range(rest)]
    created.sort()
    made = [(i + 1, t) for i, t in enumerate(created[:n])]
    with _lock:
        if len(_made) > 64:
            _made.clear()
        _made[key] = made
    return made


def _items(q) -> List[Tuple[int, int]]:
    """Every item now, newest first: (number, created)."""
    n = q.integer("n", 1000, 0)
    span = q.integer("span", max(1, n * 10), 1)
    start = q.integer("start", START, 0)
    burst = None
    if q.has("burst"):
        size, _, count = (q.text("burst") or "").partition(":")
        burst = (int(size), int(count or 1))
    items = list(_base_items(n, span, start, burst))
    rate = float(q.text("insert_rate") or 0)
    if rate > 0:
        with _lock:
            began = _insert_clock.setdefault(rate, time.monotonic())
        added = int((time.monotonic() - began) * rate)
        newest = start
        items += [(n + 1 + k, newest + 1 + int(k / rate)) for k in range(added)]
    items.sort(key=lambda item: (item[1], item[0]), reverse=True)
    return items


def _bounded(items: List[Tuple[int, int]], low: Optional[float], low_in: bool, high: Optional[float], high_in: bool,
             value=lambda item: item[1]) -> List[Tuple[int, int]]:
    def keep(item) -> bool:
        v = value(item)
        if low is not None and (v < low or (v == low and not low_in)):
            return False
        if high is not None and (v > high or (v == high and not high_in)):
            return False
        return True
    return [item for item in items if keep(item)]


def _token(data: Dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode()).decode().rstrip("=")


def _untoken(text: str) -> Optional[Dict[str, Any]]:
    try:
        data = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
        return data if isinstance(data, dict) else None
    except ValueError:
        return None


def _after(items: List[Tuple[int, int]], number: Optional[int]) -> List[Tuple[int, int]]:
    """The items after the one numbered `number` in the list's order (all of them for None)."""
    if number is None:
        return items
    for position, item in enumerate(items):
        if item[0] == number:
            return items[position + 1:]
    return []


def stripe(p) -> None:
    q = p.q
    limit = p.size("limit", 10, 100)
    items = _items(q)
    after = None
    if q.has("starting_after"):
        text = q.text("starting_after") or ""
        if not text.startswith("ch_") or not text[3:].isdigit() or not any(i[0] == int(text[3:]) for i in items):
            p.error(400, {"error": {"type": "invalid_request_error", "message": f"No such charge: '{text}'",
                                    "param": "starting_after", "code": "resource_missing"}})
            return
        after = int(text[3:])
    rest = _after(items, after)
    if not q.flag("ignore_filter"):
        def bound(name: str) -> Optional[int]:
            return q.integer(name, None)
        low, low_in = (bound("created[gte]"), True) if q.has("created[gte]") else (bound("created[gt]"), False)
        high, high_in = (bound("created[lte]"), True) if q.has("created[lte]") else (bound("created[lt]"), False)
        rest = _bounded(rest, low, low_in, high, high_in)
    page = rest[:limit]
    p.send({"object": "list", "url": "/v1/charges", "has_more": len(rest) > limit,
            "data": [{"id": f"ch_{number:08d}", "object": "charge", "created": created} for number, created in page]})


def _ts(item: Tuple[int, int]) -> str:
    # Unique within a second: the item's number in the microseconds.
    return f"{item[1]}.{item[0] % 1_000_000:06d}"


def _ts_value(item: Tuple[int, int]) -> Tuple[int, int]:
    return (item[1], item[0] % 1_000_000)


def slack(p) -> None:
    q = p.q
    limit = p.size("limit", 100, 1000)
    items = _items(q)
    items.sort(key=_ts_value, reverse=True)
    after = None
    if q.text("cursor"):
        data = _untoken(q.text("cursor") or "")
        if data is None or not isinstance(data.get("after"), int):
            p.send({"ok": False, "error": "invalid_cursor"})
            return
        after = data["after"]
    rest = _after(items, after)
    if not q.flag("ignore_filter"):
        inclusive = q.text("inclusive") in ("true", "1")

        def parse(name: str) -> Optional[Tuple[int, int]]:
            text = q.text(name)
            if not text:
                return None
            whole, _, fraction = text.partition(".")
            return (int(whole), int((fraction + "000000")[:6]))
        rest = _bounded(rest, parse("oldest"), inclusive, parse("latest"), inclusive, value=_ts_value)
    page = rest[:limit]
    more = len(rest) > limit
    p.send({"ok": True, "messages": [{"type": "message", "ts": _ts(item), "text": f"message {item[0]}"} for item in page],
            "has_more": more, "pin_count": 0,
            "response_metadata": {"next_cursor": _token({"after": page[-1][0]}) if more else ""}})


def _rfc3339(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_rfc3339(text: str) -> Optional[float]:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00")).timestamp()
    except ValueError:
        return None


def shopify(p) -> None:
    q = p.q
    limit = p.size("limit", 50, 250)
    filters: Dict[str, Any] = {}
    after = None
    if q.has("page_info"):
        others = [name for name in q.names() if name not in ("page_info", "limit", "fields")]
        if others:
            p.error(400, {"errors": {others[0]: f"{others[0]} cannot be passed when page_info is present"}})
            return
        data = _untoken(q.text("page_info") or "")
        if data is None:
            p.error(400, {"errors": {"page_info": "Invalid value."}})
            return
        filters, after = data.get("filters", {}), data.get("after")
    else:
        filters = {name: q.raw_value(name) for name in q.names() if name != "limit"}
    from_filters = type(q)("&".join(f"{k}={v}" for k, v in filters.items()))
    items = _items(from_filters)
    rest = _after(items, after)
    if not from_filters.flag("ignore_filter"):
        low = _parse_rfc3339(from_filters.text("created_at_min") or "") if from_filters.has("created_at_min") else None
        high = _parse_rfc3339(from_filters.text("created_at_max") or "") if from_filters.has("created_at_max") else None
        rest = _bounded(rest, low, True, high, True)
    page = rest[:limit]
    headers = []
    if len(rest) > limit:
        token = _token({"filters": filters, "after": page[-1][0]})
        base = p.handler.server.base_url
        headers.append(("Link", f'<{base}{p.path}?limit={limit}&page_info={token}>; rel="next"'))
    p.send({"orders": [{"id": number, "created_at": _rfc3339(created), "name": f"#{number}"} for number, created in page]},
           headers=headers)


def register(routes: Dict[str, Any]) -> None:
    from conventions import Page

    def route(handler, q, name: str, function) -> None:
        function(Page(handler, q, f"/range/{name}"))

    for name, function in (("stripe", stripe), ("slack", slack), ("shopify", shopify)):
        routes[f"/range/{name}"] = (lambda function, name: lambda handler, q: route(handler, q, name, function))(function, name)
