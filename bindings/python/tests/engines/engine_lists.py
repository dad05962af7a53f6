"""The lists the engine suite reads, the token the workers must read, and the checks every read
meets (imported by the tests and conftest.py)."""

from __future__ import annotations

import json
from typing import Any, List

#: The token every worker must read from SHEAF_TOKEN, and the one read from OTHER_TOKEN (token_env).
SECRET = "sheaf-engine-SECRET-7f3a9c"
OTHER_SECRET = "sheaf-engine-OTHER-SECRET-41d2"

N = 100_000

#: Each list the server can address by page (name -> path): page numbers with a total in the
#: body, offset/limit with a count, a Link header with rel=last, a total in X-Total-Count.
ADDRESSED = {
    "page-numbers": f"/anchor?n={N}&per_page=500&cap=500",
    "offset-limit": f"/conv/drf-limit?n={N}&limit=100",
    "link-header": f"/conv/github?n={N}&per_page=100",
    "total-header": f"/conv/json-server?n={N}&_page=1&_limit=500",
}
#: A cursor list: one partition.
CURSOR = {"cursor": f"/conv/drf-cursor?n={N}&page_size=100"}
LISTS = {**ADDRESSED, **CURSOR}
#: A cursor list with a range filter (Stripe's): split into ranges, one a partition.
SPLIT = "/range/stripe?n=20000&limit=100"


def split_list(server: Any) -> List[str]:
    """The ids of SPLIT, walked one page at a time in this process (its order: newest first)."""
    import sheaf

    with sheaf.Client(server.base_url, SECRET) as client:
        return [item["id"] for item in client.fetch_all(SPLIT, preset="stripe", split="none")]

#: The window the partitions share (concurrency = max_concurrency): the budget of requests in
#: flight at the server, shared among the 2 task slots' partitions.
WINDOW = 4
SLOTS = 2
CLIENT_OPTIONS = {"concurrency": WINDOW, "max_concurrency": WINDOW}


def rows_json(table: Any) -> str:
    """A pyarrow table's rows sorted by id, as the JSON of a list of objects."""
    return json.dumps(table.sort_by("id").to_pylist())


def authorizations(server: Any) -> List[Any]:
    return [entry["authorization"] for entry in server.state.snapshot()["log"] if not entry["path"].startswith("/_")]


def assert_read_within_budget(server: Any, pages_at_least: int = 1) -> None:
    """Every request carried the token from the environment, and never more than the window
    the partitions share were in flight, however many tasks ran at once."""
    seen = authorizations(server)
    assert len(seen) >= pages_at_least
    assert set(seen) == {f"Bearer {SECRET}"}
    assert server.state.snapshot()["max_in_flight"] <= WINDOW


def secret_free(blob: bytes, what: str) -> None:
    assert SECRET.encode() not in blob and OTHER_SECRET.encode() not in blob, f"a token is in {what}"




def asked_again(server: Any, parameter: str) -> List[int]:
    """The values of `parameter` (a page number or an offset) that more than one request asked for,
    beyond those of page one's window (asked when planning, and again by the first partition)."""
    from urllib.parse import parse_qs, urlsplit

    asked = [int(parse_qs(urlsplit(entry["path"]).query).get(parameter, ["0"])[0])
             for entry in server.state.snapshot()["log"] if not entry["path"].startswith("/_")]
    smallest = sorted(set(asked))[:WINDOW + 1]
    return sorted({value for value in asked if asked.count(value) > 1 and value not in smallest})
