"""Self-tests of the convention endpoints: each walked with urllib the way its API documents,
every item arrives once, in order, and the end signal comes on the last page only."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request

import pytest

from api_server import start_server


@pytest.fixture(scope="module")
def base():
    server, _thread = start_server(port=0)
    yield server.base_url
    server.shutdown_and_close()


def get(url: str):
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response), response.headers


def link_next(headers) -> str | None:
    for value in headers.get_all("Link") or []:
        for part in value.split(", <"):
            if 'rel="next"' in part or "rel=next" in part:
                return part.strip("<").split(">")[0]
    return None


def ids(items):
    return [item["id"] for item in items]


def walk(base: str, path: str, read, limit: int = 200):
    """Follows `read(body, headers, url) -> (items, next_url or None)` from `path`."""
    url, out, pages = f"{base}{path}", [], 0
    while url and pages < limit:
        body, headers = get(url)
        items, url = read(body, headers, url)
        out += items
        pages += 1
    return out, pages


def with_param(url: str, **params) -> str:
    parts = urllib.parse.urlsplit(url)
    query = dict(urllib.parse.parse_qsl(parts.query))
    query.update({k: str(v) for k, v in params.items()})
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))


READERS = {
    "github": lambda b, h, u: (b, link_next(h)),
    "json-server": lambda b, h, u: (b, link_next(h)),
    "hand-written": lambda b, h, u: (
        b, with_param(u, _page=page + 1) if (page := int(dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(u).query)).get("_page", 1)))
        * 10 < int(h["X-Total-Count"]) else None),
    "gitlab": lambda b, h, u: (b, with_param(u, page=h["X-Next-Page"]) if h["X-Next-Page"] else None),
    "drf-limit": lambda b, h, u: (b["results"], b["next"]),
    "drf-cursor": lambda b, h, u: (b["results"], b["next"]),
    "jsonapi": lambda b, h, u: (b["data"], b["links"]["next"]),
    "odata": lambda b, h, u: (b["value"], b.get("@odata.nextLink")),
    "hal": lambda b, h, u: (b["_embedded"]["items"], b["_links"].get("next", {}).get("href")),
    "stripe": lambda b, h, u: (b["data"], with_param(u, starting_after=b["data"][-1]["id"]) if b["has_more"] else None),
    "slack": lambda b, h, u: (b["members"], with_param(u, cursor=c) if (c := b["response_metadata"]["next_cursor"]) else None),
    "google": lambda b, h, u: (b["files"], with_param(u, pageToken=b["nextPageToken"]) if "nextPageToken" in b else None),
    "zendesk": lambda b, h, u: (b["tickets"], b["links"]["next"] if b["meta"]["has_more"] else None),
    "fastapi-page": lambda b, h, u: (b["items"], with_param(u, page=b["page"] + 1) if b["page"] < b["pages"] else None),
    "fastapi-limit-offset": lambda b, h, u: (
        b["items"], with_param(u, offset=b["offset"] + b["limit"]) if b["offset"] + b["limit"] < b["total"] else None),
    "content-range": lambda b, h, u: (
        b, with_param(u, offset=int(h["Content-Range"].split("-")[1].split("/")[0]) + 1)
        if not h["Content-Range"].startswith("items */") and int(h["Content-Range"].split("-")[1].split("/")[0]) + 1
        < int(h["Content-Range"].split("/")[1]) else None),
    "jira": lambda b, h, u: (b["values"], None if b["isLast"] else with_param(u, startAt=b["startAt"] + b["maxResults"])),
    "elastic": lambda b, h, u: ([hit["_source"] for hit in b["hits"]["hits"]],
                                with_param(u, **{"from": int(dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(u).query)).get("from", 0)) + 10})
                                if b["hits"]["hits"] else None),
}


@pytest.mark.parametrize("name", sorted(READERS))
@pytest.mark.parametrize("n", [0, 7, 23])
def test_each_convention_walks_to_every_item_once_in_order(base, name, n):
    items, pages = walk(base, f"/conv/{name}?n={n}", READERS[name])
    assert ids(items) == list(range(n)), name


def test_the_link_header_formats(base):
    _, standard = get(f"{base}/conv/github?n=100&per_page=10&page=2")
    assert standard["Link"].count("rel=") == 4 and standard["Link"].startswith(f"<{base}/conv/github?")
    _, relative = get(f"{base}/conv/github?n=100&per_page=10&link=relative")
    assert relative["Link"].startswith("</conv/github?")
    _, split = get(f"{base}/conv/github?n=100&per_page=10&page=2&link=split")
    assert len(split.get_all("Link")) == 4
    _, last = get(f"{base}/conv/github?n=100&per_page=10&page=10")
    assert 'rel="next"' not in last["Link"] and 'rel="prev"' in last["Link"]


def test_totals_in_headers_and_the_gitlab_headers(base):
    _, headers = get(f"{base}/conv/gitlab?n=45&per_page=20&page=3")
    assert (headers["X-Next-Page"], headers["X-Total"], headers["X-Total-Pages"]) == ("", "45", "3")
    _, headers = get(f"{base}/conv/gitlab?n=45&nototal=1")
    assert "X-Total" not in headers and headers["X-Next-Page"] == "2"
    _, headers = get(f"{base}/conv/content-range?n=60&offset=50")
    assert headers["Content-Range"] == "items 50-59/60"
    _, headers = get(f"{base}/conv/json-server?n=60&_page=2")
    assert headers["X-Total-Count"] == "60"


def test_a_hand_written_list_names_no_next_page_and_ignores_other_page_parameters(base):
    first, headers = get(f"{base}/conv/hand-written?n=25")
    assert ids(first) == list(range(10)) and headers["X-Total-Count"] == "25" and "Link" not in headers
    for ignored in ("page=2", "p=2", "offset=10", "skip=10"):
        assert get(f"{base}/conv/hand-written?n=25&{ignored}")[0] == first, ignored
    assert ids(get(f"{base}/conv/hand-written?n=25&_page=3")[0]) == list(range(20, 25))
    assert ids(get(f"{base}/conv/hand-written?n=25&_page=2&_limit=4")[0]) == list(range(4, 8))


def test_bad_cursors_are_answered_as_the_apis_do(base):
    with pytest.raises(urllib.error.HTTPError) as raised:
        get(f"{base}/conv/drf-cursor?cursor=zzz")
    assert raised.value.code == 404
    body, _ = get(f"{base}/conv/slack?cursor=zzz")
    assert body == {"ok": False, "error": "invalid_cursor"}
    with pytest.raises(urllib.error.HTTPError) as raised:
        get(f"{base}/conv/stripe?starting_after=nope")
    assert raised.value.code == 400 and json.load(raised.value)["error"]["code"] == "resource_missing"


def test_short_lists_still_claim_their_total(base):
    items, _ = walk(base, "/conv/drf-limit?n=100&short=30", READERS["drf-limit"])
    assert len(items) == 70
    body, _ = get(f"{base}/conv/drf-limit?n=100&short=30")
    assert body["count"] == 100


def test_an_approximate_elastic_total(base):
    body, _ = get(f"{base}/conv/elastic?n=12000&size=1")
    assert body["hits"]["total"] == {"value": 10000, "relation": "gte"}
