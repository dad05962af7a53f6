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
the same page, and a cursor names a position that stays valid when items are added. A page is
found by binary search (the lists are made once per query and kept), so that 64 requests at once
cost the server little: it is a peer in the benchmark's rows, not their bottleneck. n stays below
10^6.
"""

from __future__ import annotations

import base64
import bisect
import json
import math
import threading
import time
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional, Tuple

START = 1_700_000_000
#: An item's place in every list's order is its key, created x 10^6 + number (numbers stay below
#: 10^6): newest first by the field, then by number, as Stripe's and Shopify's lists order ties,
#: and exactly the microseconds of Slack's ts.
SCALE = 1_000_000

_lock = threading.Lock()
_insert_clock: Dict[float, float] = {}   # insert rate -> when its inserts began
_made: Dict[Tuple[Any, ...], "Segment"] = {}


def reset() -> None:
    with _lock:
        _insert_clock.clear()


class Segment:
    """Items newest first, as keys, searchable by key range and by number in O(log n)."""

    def __init__(self, keys_newest_first: List[int]) -> None:
        self.keys = keys_newest_first
        self.ascending = [-key for key in keys_newest_first]
        self.place = {key % SCALE: index for index, key in enumerate(keys_newest_first)}

    def window(self, low: Optional[int], high: Optional[int], start: int) -> Tuple[int, int]:
        """The indices from `start` whose keys are within [low, high] (None: open)."""
        first = 0 if high is None else bisect.bisect_left(self.ascending, -high)
        last = len(self.keys) if low is None else bisect.bisect_right(self.ascending, -low)
        return max(first, start), last


def _base(n: int, span: int, start: int, burst: Optional[Tuple[int, int]]) -> Segment:
    """The items made at the start, numbered from 1 oldest first."""
    key = (n, span, start, burst)
    with _lock:
        made = _made.get(key)
    if made is not None:
        return made
    if n >= SCALE:
        raise ValueError("n must stay below 10^6")
    created: List[int] = []
    if burst:
        size, count = burst
        for k in range(count):
            created += [start - span + (k + 1) * span // (count + 1)] * size
    rest = max(0, n - len(created))
    created += [start - span + (i * span) // max(1, rest) for i in range(rest)]
    created.sort()
    made = Segment(sorted(((t * SCALE + i + 1) for i, t in enumerate(created[:n])), reverse=True))
    with _lock:
        if len(_made) > 16:
            _made.clear()
        _made[key] = made
    return made


def _segments(q) -> List[Segment]:
    """The list now, newest first: what was added during the run, then what was made at the start."""
    n = q.integer("n", 1000, 0)
    span = q.integer("span", max(1, n * 10), 1)
    start = q.integer("start", START, 0)
    burst = None
    if q.has("burst"):
        size, _, count = (q.text("burst") or "").partition(":")
        burst = (int(size), int(count or 1))
    segments = [_base(n, span, start, burst)]
    rate = float(q.text("insert_rate") or 0)
    if rate > 0:
        with _lock:
            began = _insert_clock.setdefault(rate, time.monotonic())
        added = min(SCALE - n - 1, int((time.monotonic() - began) * rate))
        inserted = [(start + 1 + int(k / rate)) * SCALE + n + 1 + k for k in range(added)]
        segments.insert(0, Segment(inserted[::-1]))
    return segments


def _page(q, after: Optional[int], low: Optional[int], high: Optional[int], limit: int) -> Tuple[List[int], bool, bool]:
    """Up to `limit` keys after the item numbered `after` (None: from the start), within [low,
    high]; whether more follow; whether `after` was found."""
    segments = _segments(q)
    begin = 0
    if after is not None:
        for index, segment in enumerate(segments):
            if after in segment.place:
                begin, offset = index, segment.place[after] + 1
                break
        else:
            return [], False, False
    out: List[int] = []
    for index in range(begin, len(segments)):
        first, last = segments[index].window(low, high, offset if after is not None and index == begin else 0)
        out += segments[index].keys[first:min(last, first + limit + 1 - len(out))]
        if len(out) > limit:
            break
    return out[:limit], len(out) > limit, True


def _token(data: Dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode()).decode().rstrip("=")


def _untoken(text: str) -> Optional[Dict[str, Any]]:
    try:
        data = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
        return data if isinstance(data, dict) else None
    except ValueError:
        return None


def _seconds_bounds(q, gte: str, gt: str, lte: str, lt: str) -> Tuple[Optional[int], Optional[int]]:
    """Whole-second bounds as key bounds (inclusive)."""
    low = high = None
    if q.has(gte):
        low = q.integer(gte, None) * SCALE
    elif q.has(gt):
        low = (q.integer(gt, None) + 1) * SCALE
    if q.has(lte):
        high = (q.integer(lte, None) + 1) * SCALE - 1
    elif q.has(lt):
        high = q.integer(lt, None) * SCALE - 1
    return low, high


def stripe(p) -> None:
    q = p.q
    limit = p.size("limit", 10, 100)
    after = None
    if q.has("starting_after"):
        text = q.text("starting_after") or ""
        after = int(text[3:]) if text.startswith("ch_") and text[3:].isdigit() else -1
    low, high = (None, None) if q.flag("ignore_filter") else \
        _seconds_bounds(q, "created[gte]", "created[gt]", "created[lte]", "created[lt]")
    keys, more, found = _page(q, after, low, high, limit)
    if not found:
        p.error(400, {"error": {"type": "invalid_request_error", "message": f"No such charge: '{q.text('starting_after')}'",
                                "param": "starting_after", "code": "resource_missing"}})
        return
    p.send({"object": "list", "url": "/v1/charges", "has_more": more,
            "data": [{"id": f"ch_{key % SCALE:08d}", "object": "charge", "created": key // SCALE} for key in keys]})


def _ts(key: int) -> str:
    return f"{key // SCALE}.{key % SCALE:06d}"


def slack(p) -> None:
    q = p.q
    limit = p.size("limit", 100, 1000)
    after = None
    if q.text("cursor"):
        data = _untoken(q.text("cursor") or "")
        if data is None or not isinstance(data.get("after"), int):
            p.send({"ok": False, "error": "invalid_cursor"})
            return
        after = data["after"]
    low = high = None
    if not q.flag("ignore_filter"):
        inclusive = q.text("inclusive") in ("true", "1")

        def parse(name: str) -> Optional[int]:
            text = q.text(name)
            if not text:
                return None
            whole, _, fraction = text.partition(".")
            return int(whole) * SCALE + int((fraction + "000000")[:6])
        low, high = parse("oldest"), parse("latest")
        if low is not None and not inclusive:
            low += 1
        if high is not None and not inclusive:
            high -= 1
    keys, more, found = _page(q, after, low, high, limit)
    if not found:
        p.send({"ok": False, "error": "invalid_cursor"})
        return
    p.send({"ok": True, "messages": [{"type": "message", "ts": _ts(key), "text": f"message {key % SCALE}"} for key in keys],
            "has_more": more, "pin_count": 0,
            "response_metadata": {"next_cursor": _token({"after": keys[-1] % SCALE}) if more else ""}})


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
    after = None
    if q.has("page_info"):
        others = [name for name in q.names() if name not in ("page_info", "limit", "fields")]
        if others:
            p.error(400, {"errors": {others[0]: f"{others[0]} cannot be passed when page_info is present"}})
            return
        data = _untoken(q.text("page_info") or "")
        if data is None or not isinstance(data.get("filters"), dict):
            p.error(400, {"errors": {"page_info": "Invalid value."}})
            return
        filters, after = data["filters"], data.get("after")
    else:
        filters = {name: q.raw_value(name) for name in q.names() if name != "limit"}
    from_filters = type(q)("&".join(f"{k}={v}" for k, v in filters.items()))
    low = high = None
    if not from_filters.flag("ignore_filter"):
        if from_filters.has("created_at_min"):
            at = _parse_rfc3339(from_filters.text("created_at_min") or "")
            low = None if at is None else math.ceil(at) * SCALE
        if from_filters.has("created_at_max"):
            at = _parse_rfc3339(from_filters.text("created_at_max") or "")
            high = None if at is None else (math.floor(at) + 1) * SCALE - 1
    keys, more, found = _page(from_filters, after, low, high, limit)
    if not found:
        p.error(400, {"errors": {"page_info": "Invalid value."}})
        return
    headers = []
    if more:
        token = _token({"filters": filters, "after": keys[-1] % SCALE})
        base = p.handler.server.base_url
        headers.append(("Link", f'<{base}{p.path}?limit={limit}&page_info={token}>; rel="next"'))
    p.send({"orders": [{"id": key % SCALE, "created_at": _rfc3339(key // SCALE), "name": f"#{key % SCALE}"} for key in keys]},
           headers=headers)


def register(routes: Dict[str, Any]) -> None:
    from conventions import Page

    def route(handler, q, name: str, function) -> None:
        function(Page(handler, q, f"/range/{name}"))

    for name, function in (("stripe", stripe), ("slack", slack), ("shopify", shopify)):
        routes[f"/range/{name}"] = (lambda function, name: lambda handler, q: route(handler, q, name, function))(function, name)
