"""Lists behind a POST, under /post/ of the test API server, shaped as the public APIs document them.

| path | shape | paging in the body |
|---|---|---|
| POST /post/notion/query | Notion's database query: {"object": "list", "results", "next_cursor", "has_more"} | start_cursor (the next item's id), page_size (default 100, at most 100) |
| POST /post/es/_search | Elasticsearch: {"hits": {"total": {"value", "relation"}, "hits": [{"_id", "_source", "sort"}]}} | size (default 10), sort, search_after (the last hit's sort values) |
| POST /post/graphql | GitHub GraphQL: {"data": {"repository": {"issues": {"totalCount", "pageInfo", "nodes" or "edges"}}}} | variables.first (1 to 100, required), variables.after (an opaque cursor) |

Query parameters (of the URL, not the body):
  n=N              items in the list (default 250)
  burst=B          Elasticsearch: B documents share each ts value (ties that only the id breaks)
  key=K            names the counters of fail=, rate_limited= and throttled=
  fail=F           the first F requests with key K answer 503 (Retry-After: 0)
  rate_limited=R   GraphQL: the first R requests with key K answer 200 with GitHub's RATE_LIMITED
                   error and X-RateLimit-Remaining: 0, resetting in 1 s
  throttled=T      GraphQL: the first T requests with key K answer 200 with Shopify's THROTTLED
                   error and its cost extension (restoring in 100 ms)
  error_at=P       GraphQL: the page holding item number P answers its data with an error
                   (partial data, as GitHub does when a field fails)
  comments=C       GraphQL: issue i has (i * 7) % (C + 1) comments (default C=22); a query that
                   names comments gets each issue's comments(first: F) connection (F from the
                   query's text, default 5): totalCount, pageInfo, nodes (or edges)
  nested_fail=I    GraphQL: the node(id:) query for issue I answers an error
  ignore_cursor=1  also the node(id:) query's after is ignored

A query with node(id: $id) is the nested one: {"data": {"node": {"comments": {...}}}} for the
issue whose id is variables.id, paged by variables.first and variables.after.
  ignore_cursor=1  the cursor in the body is ignored (a server that does not read it)

Notion's body may hold {"filter": {"property": "n", "number": {"greater_than_or_equal_to": K}}}.
A body that is not a JSON object, a wrong Content-Type, a bad cursor or page size answer 400 in
the API's own error shape. Every body received is kept (GET /_post/log: [{"path", "body"}]) and
cleared with /_reset.
"""

from __future__ import annotations

import base64
import json
import re
import threading

_lock = threading.Lock()
_log: list = []
_counts: dict = {}
LOG_LIMIT = 20_000


def reset() -> None:
    with _lock:
        _log.clear()
        _counts.clear()


def log_json() -> list:
    with _lock:
        return list(_log)


def _counted(q, name: str) -> bool:
    """Whether this request is one of the first `name`= requests of its key."""
    limit = q.integer(name, 0, 0, 1000)
    if not limit:
        return False
    key = (name, q.text("key", ""))
    with _lock:
        seen = _counts.get(key, 0)
        _counts[key] = seen + 1
    return seen < limit


def record(path: str, body: bytes) -> None:
    """Keeps a body received (GET /_post/log)."""
    with _lock:
        if len(_log) < LOG_LIMIT:
            _log.append({"path": path, "body": body.decode("utf-8", "replace")})


def handle(handler, method: str, path: str, q, body: bytes) -> None:
    record(path, body)
    if method != "POST":
        handler.send_json(405, {"error": "method not allowed"})
        return
    if _counted(q, "fail"):
        handler.send_json(503, {"error": "unavailable"}, [("Retry-After", "0")])
        return
    if not (handler.headers.get("Content-Type") or "").startswith("application/json"):
        handler.send_json(400, {"object": "error", "status": 400, "code": "invalid_request",
                                "message": "Content-Type must be application/json"})
        return
    try:
        request = json.loads(body or b"{}")
    except ValueError:
        request = None
    if not isinstance(request, dict):
        handler.send_json(400, {"object": "error", "status": 400, "code": "invalid_json",
                                "message": "Error parsing JSON body."})
        return
    route = {"/post/notion/query": notion, "/post/es/_search": elasticsearch, "/post/graphql": graphql}.get(path)
    if route is None:
        handler.send_json(404, {"error": "not found"})
        return
    route(handler, q, request)


def _bad(handler, message: str) -> None:
    handler.send_json(400, {"object": "error", "status": 400, "code": "validation_error", "message": message})


def notion(handler, q, request: dict) -> None:
    n = q.integer("n", 250, 0, 1_000_000)

    def page_id(i: int) -> str:
        return f"59833787-2cf9-4fdf-8782-{i:012d}"
    low = 1
    flt = request.get("filter")
    if isinstance(flt, dict):
        low = int(flt.get("number", {}).get("greater_than_or_equal_to", 1))
    size = request.get("page_size", 100)
    if not isinstance(size, int) or isinstance(size, bool) or not 1 <= size <= 100:
        return _bad(handler, "body failed validation: body.page_size should be ≤ `100`, instead was `%s`." % json.dumps(size))
    start = max(low, 1)
    cursor = request.get("start_cursor")
    if cursor is not None and not q.flag("ignore_cursor"):
        if not isinstance(cursor, str) or not cursor.startswith("59833787-") or int(cursor[-12:]) not in range(1, n + 1):
            return _bad(handler, "body failed validation: body.start_cursor should be a valid uuid, instead was `%s`."
                        % json.dumps(cursor)[:40])
        start = int(cursor[-12:])
    chosen = list(range(start, min(n, start + size - 1) + 1))
    more = bool(chosen) and chosen[-1] < n
    handler.send_json(200, {
        "object": "list",
        "results": [{"object": "page", "id": page_id(i), "properties": {"n": {"type": "number", "number": i}}}
                    for i in chosen],
        "next_cursor": page_id(chosen[-1] + 1) if more else None,
        "has_more": more, "type": "page_or_database", "page_or_database": {}})


def elasticsearch(handler, q, request: dict) -> None:
    n = q.integer("n", 250, 0, 1_000_000)
    burst = q.integer("burst", 1, 1, 1000)
    size = request.get("size", 10)
    if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size <= 10_000:
        return handler.send_json(400, {"error": {"type": "illegal_argument_exception",
                                                 "reason": "[size] must be between 0 and 10000"}, "status": 400})
    # Sorted by ts ascending, then _id: documents i share ts i // burst.
    docs = [(1_700_000_000 + (i // burst), f"d{i:06d}", i) for i in range(n)]
    after = request.get("search_after")
    start = 0
    if after is not None and not q.flag("ignore_cursor"):
        if not (isinstance(after, list) and len(after) == 2):
            return handler.send_json(400, {"error": {"type": "illegal_argument_exception",
                                                     "reason": "search_after has 2 value(s) but sort has 2."}, "status": 400})
        key = (after[0], after[1])
        start = next((k for k, d in enumerate(docs) if (d[0], d[1]) > key), n)
    hits = docs[start:start + size]
    handler.send_json(200, {
        "took": 1, "timed_out": False,
        "hits": {"total": {"value": min(n, 10_000), "relation": "eq" if n <= 10_000 else "gte"},
                 "max_score": None,
                 "hits": [{"_index": "logs", "_id": d[1], "_score": None, "_source": {"ts": d[0], "n": d[2]},
                           "sort": [d[0], d[1]]} for d in hits]}})


def _cursor(i: int, kind: str = "cursor:v2") -> str:
    return base64.b64encode(f"{kind}:{i}".encode()).decode()


def _comment_count(q, number: int) -> int:
    return (number * 7) % (q.integer("comments", 22, 0, 10_000) + 1)


def _comments(q, number: int, first: int, after: int, edges: bool) -> dict:
    """Issue `number`'s comments after the `after`-th, `first` of them, as a connection."""
    count = _comment_count(q, number)
    chosen = list(range(after + 1, min(count, after + first) + 1))
    nodes = [{"id": f"IC_{number}_{k}", "body": f"comment {k} of issue {number}"} for k in chosen]
    connection = {"totalCount": count, "pageInfo": {
        "hasNextPage": after + len(chosen) < count,
        "endCursor": _cursor(chosen[-1], f"comment:{number}") if chosen else None}}
    if edges:
        connection["edges"] = [{"cursor": _cursor(node_k, f"comment:{number}"), "node": node}
                               for node_k, node in zip(chosen, nodes)]
    else:
        connection["nodes"] = nodes
    return connection


def _nested(handler, q, query: str, variables: dict) -> None:
    """node(id: $id) { ... on Issue { comments(first: $first, after: $after) } }"""
    node_id = variables.get("id")
    if not isinstance(node_id, str) or not node_id.startswith("I_kwDO"):
        return handler.send_json(200, {"data": {"node": None}, "errors": [{
            "type": "NOT_FOUND", "path": ["node"], "message": "Could not resolve to a node with the global id of '%s'" % str(node_id)[:40]}]})
    number = int(node_id[len("I_kwDO"):])
    if q.integer("nested_fail", None, 1) == number:
        return handler.send_json(200, {"data": {"node": None}, "errors": [{
            "type": "FORBIDDEN", "path": ["node", "comments"], "message": "Resource not accessible by integration"}]})
    first = variables.get("first")
    if not isinstance(first, int) or isinstance(first, bool) or not 1 <= first <= 100:
        return handler.send_json(200, {"data": None, "errors": [{
            "type": "MISSING_PAGINATION_BOUNDARIES", "path": ["node", "comments"],
            "message": "You must provide a `first` or `last` value to properly paginate the `comments` connection."}]})
    after = 0
    if variables.get("after") is not None and not q.flag("ignore_cursor"):
        try:
            text = base64.b64decode(variables["after"], validate=True).decode()
            prefix = f"comment:{number}:"
            assert text.startswith(prefix)
            after = int(text[len(prefix):])
        except Exception:
            return handler.send_json(200, {"data": {"node": {"comments": None}}, "errors": [{
                "type": "INVALID_CURSOR_ARGUMENTS", "path": ["node", "comments"],
                "message": "`%s` does not appear to be a valid cursor." % str(variables["after"])[:40]}]})
    handler.send_json(200, {"data": {"node": {"comments": _comments(q, number, first, after, "edges" in query)}}})


def graphql(handler, q, request: dict) -> None:
    n = q.integer("n", 250, 0, 1_000_000)
    query = request.get("query")
    variables = request.get("variables") or {}
    if not isinstance(query, str) or not isinstance(variables, dict):
        return handler.send_json(200, {"errors": [{"message": "A query attribute must be specified and must be a string."}]})
    if _counted(q, "rate_limited"):
        return handler.send_json(200, {"errors": [{"type": "RATE_LIMITED", "message": "API rate limit exceeded for user ID 1."}]},
                                 [("X-RateLimit-Limit", "5000"), ("X-RateLimit-Remaining", "0"),
                                  ("X-RateLimit-Reset", str(int(__import__("time").time()) + 1)),
                                  ("X-RateLimit-Resource", "graphql")])
    if _counted(q, "throttled"):
        return handler.send_json(200, {"errors": [{"message": "Throttled", "extensions": {"code": "THROTTLED"}}],
                                       "extensions": {"cost": {"requestedQueryCost": 10, "actualQueryCost": None,
                                                               "throttleStatus": {"maximumAvailable": 1000,
                                                                                  "currentlyAvailable": 5, "restoreRate": 50}}}})
    if "node(" in query:
        return _nested(handler, q, query, variables)
    first = variables.get("first")
    if not isinstance(first, int) or isinstance(first, bool) or not 1 <= first <= 100:
        return handler.send_json(200, {"data": None, "errors": [{
            "type": "MISSING_PAGINATION_BOUNDARIES", "path": ["repository", "issues"],
            "locations": [{"line": 1, "column": 40}],
            "message": "You must provide a `first` or `last` value to properly paginate the `issues` connection."}]})
    after = variables.get("after")
    start = 1
    if after is not None and not q.flag("ignore_cursor"):
        try:
            text = base64.b64decode(after, validate=True).decode()
            assert text.startswith("cursor:v2:")
            start = int(text[len("cursor:v2:"):]) + 1
        except Exception:
            return handler.send_json(200, {"data": {"repository": {"issues": None}}, "errors": [{
                "type": "INVALID_CURSOR_ARGUMENTS", "path": ["repository", "issues"],
                "locations": [{"line": 1, "column": 40}],
                "message": "`%s` does not appear to be a valid cursor." % str(after)[:40]}]})
    chosen = list(range(start, min(n, start + first - 1) + 1))
    nodes = [{"id": f"I_kwDO{i:08d}", "number": i, "title": f"Issue {i}"} for i in chosen]
    if "comments" in query:
        match = re.search(r"comments\(first:\s*(\d+)", query)
        inner = int(match.group(1)) if match else 5
        edges = "comments(first" in query and "edges" in query.split("comments(first", 1)[1][:200]
        for node in nodes:
            node["comments"] = _comments(q, node["number"], inner, 0, edges)
    connection = {"pageInfo": {"hasNextPage": bool(chosen) and chosen[-1] < n,
                               "endCursor": _cursor(chosen[-1]) if chosen else None}}
    if "totalCount" in query:
        connection["totalCount"] = n
    if "edges" in query.split("comments", 1)[0]:
        connection["edges"] = [{"cursor": _cursor(node["number"]), "node": node} for node in nodes]
    else:
        connection["nodes"] = nodes
    answer = {"data": {"repository": {"issues": connection}}}
    error_at = q.integer("error_at", None, 1)
    if error_at is not None and error_at in chosen:
        answer["errors"] = [{"type": "SERVICE_UNAVAILABLE", "path": ["repository", "issues", "nodes", 0, "author"],
                             "locations": [{"line": 1, "column": 80}],
                             "message": "Something went wrong while executing your query."}]
    handler.send_json(200, answer)
