"""Every convention of Tests/server/conventions.py, detected and through its preset: the whole
list in order, in parallel where page k can be addressed; and a real case of each signal that
ends a list NOT_FOLLOWED when the description does not follow it."""

from __future__ import annotations

import pytest
from conftest import expected_items, stats

import sheaf

N = 237

#: The page size each endpoint serves with the queries below.
PAGE_SIZES = {"github": 30, "gitlab": 20, "json-server": 10, "hand-written": 10, "drf-limit": 50, "drf-cursor": 50, "jsonapi": 20,
              "odata": 50, "hal": 20, "spring": 20, "stripe": 10, "slack": 40, "google": 40, "zendesk": 40, "fastapi-page": 50,
              "fastapi-limit-offset": 50, "content-range": 25, "jira": 50, "elastic": 10, "drf": 50, "anchor": 50}

#: name -> (the path's query beyond n, the preset or None, whether pages are addressable)
CONVENTIONS = {
    "github": ("", "github", True),
    "gitlab": ("", "gitlab", True),
    "json-server": ("&_page=1", "json-server", True),
    # No Link header and no _page in the URL: the paging is found by trying the usual parameters.
    "hand-written": ("", None, True),
    # Spring Data's Page, pages from 0 and no links: found by asking for page=1.
    "spring": ("", None, True),
    "drf-limit": ("", "drf-limit", True),
    "drf-cursor": ("", "drf-cursor", False),
    "jsonapi": ("", "jsonapi", True),
    "odata": ("&$count=true", "odata", True),
    "hal": ("", "hal", True),
    "stripe": ("", "stripe", False),
    "slack": ("&limit=40", "slack", False),
    "google": ("&pageSize=40", "google", False),
    "zendesk": ("&page[size]=40", "zendesk", False),
    "fastapi-page": ("", "fastapi-page", True),
    "fastapi-limit-offset": ("", "fastapi-limit-offset", True),
    "content-range": ("&offset=0", "content-range", True),
    "jira": ("", "jira", True),
    "elastic": ("&from=0", None, True),
    # The older endpoints of api_server.py, at /drf and /anchor.
    "drf": ("", "drf-page", True),
    "anchor": ("", "anchor", True),
}


#: Requests page one costs beyond itself: the page parameters tried before one gave the next
#: items (the list's first page names no way to page two).
PROBES = {"hand-written": 4, "spring": 1}


def plain(items: list) -> list:
    """The documents of a list: Elasticsearch wraps each one in a hit."""
    return [item["_source"] if "_source" in item else item for item in items]


def path_of(name: str) -> str:
    return f"/{name}" if name in ("drf", "anchor") else f"/conv/{name}"


@pytest.mark.parametrize("name", sorted(CONVENTIONS))
@pytest.mark.parametrize("how", ["detected", "preset"])
def test_each_convention_arrives_whole_and_in_order(api, name, how):
    query, preset, addressable = CONVENTIONS[name]
    if how == "preset" and preset is None:
        pytest.skip("no preset: detected only")
    path = f"{path_of(name)}?n={N}&latency_ms=20{query}"
    with sheaf.Client(api.base_url, concurrency=4) as client:
        items = client.fetch_all(path, preset=preset if how == "preset" else None)
    assert plain(items) == expected_items(N), name
    seen = stats(api)
    needed = -(-N // PAGE_SIZES[name]) + PROBES.get(name, 0)
    mine = sum(entry["path"].startswith(f"{path_of(name)}?") for entry in seen["log"])
    # The end is found without asking for more than the speculative window past it.
    assert needed <= mine <= needed + 4, (name, mine, needed)
    if addressable:
        assert seen["max_in_flight"] > 1, f"{name}: pages are addressable but went one at a time"
    else:
        assert seen["max_in_flight"] == 1, f"{name}: a cursor walk is sequential"


@pytest.mark.parametrize("name", ["github", "drf-limit", "hal", "jsonapi"])
def test_detection_explains_an_addressable_plan(api, name):
    query, _, _ = CONVENTIONS[name]
    with sheaf.Client(api.base_url) as client:
        explained = client.explain(f"/conv/{name}?n={N}{query}")
    assert explained.plan == "parallel", (name, explained)
    assert "paging" in explained.detected


@pytest.mark.parametrize("name, parts, signal", [
    ("github", {"items": "", "paging": "next", "next": "none", "page_count": "none"}, 'Link rel="next"'),
    ("stripe", {"items": "/data", "paging": "next", "next": "none", "has_more": "none", "cursor": "none"},
     '"has_more": true'),
    ("drf-limit", {"items": "/results", "paging": "next", "next": "none", "total": "none"}, "/next"),
    ("slack", {"items": "/members", "paging": "next", "cursor": "none", "next": "none"}, "next_cursor"),
    ("content-range", {"items": "", "paging": "next", "total": "none"}, "Content-Range"),
    ("jira", {"items": "/values", "paging": "next", "is_last": "none", "total": "none"}, '"isLast": false'),
    ("fastapi-page", {"items": "/items", "paging": "next", "total": "none", "page_count": "none"}, "a total of"),
    ("gitlab", {"items": "", "paging": "next", "next": "none", "total": "none", "page_count": "none"}, "X-Next-Page"),
])
def test_a_signal_of_more_that_is_not_followed_ends_the_list_not_followed(api, name, parts, signal):
    query, _, _ = CONVENTIONS[name]
    with sheaf.Client(api.base_url) as client:
        with pytest.raises(sheaf.NotFollowedError) as raised:
            # GitLab without its Link header, to see X-Next-Page alone.
            client.fetch_all(f"/conv/{name}?n={N}{query}" + ("&link=none" if name == "gitlab" else ""), **parts)
    error = raised.value
    assert signal in error.signal, error.signal
    assert error.hint
    assert error.items and error.items == expected_items(len(error.items))


@pytest.mark.parametrize("name", sorted(CONVENTIONS))
@pytest.mark.parametrize("how", ["detected", "preset"])
def test_each_convention_through_the_command_line(api, name, how):
    from test_cli import lines, run_cli

    query, preset, _ = CONVENTIONS[name]
    if how == "preset" and preset is None:
        pytest.skip("no preset: detected only")
    args = ["--preset", preset] if how == "preset" else []
    r = run_cli(f"{api.base_url}{path_of(name)}?n={N}{query}", *args)
    assert r.returncode == 0, r.stderr
    items = lines(r.stdout)
    assert plain(items) == expected_items(N)


def test_a_hand_written_list_is_probed_for_its_page_parameter(api):
    # A bare array with X-Total-Count and no way to page two on it: the library asks for page=1
    # and page=2 (page one again: refused), _page=1 (page one again: numbered from 1), then
    # _page=2 (the next items: taken), and runs with _page.
    path = f"/conv/hand-written?n={N}"
    with sheaf.Client(api.base_url, concurrency=4) as client:
        items = client.fetch_all(path)
        asked = [entry["path"] for entry in stats(api)["log"]]
        explained = client.explain(path)
    assert items == expected_items(N)
    assert asked[:5] == [path, f"{path}&page=1", f"{path}&page=2", f"{path}&_page=1", f"{path}&_page=2"]
    assert (explained.paging, explained.first, explained.plan) == ("page:_page", 1, "parallel")
    assert "paging" in explained.detected


def test_a_list_numbered_from_zero_found_by_probing_arrives_whole(api):
    # Spring Data's Page: ?page=0 is page one, no links; page=1 brings the second page, so the
    # pages are numbered from 0 (asked for page=2 first, the second page would never be read and
    # the list would end OK, 20 items short).
    path = f"/conv/spring?n={N}"
    with sheaf.Client(api.base_url, concurrency=4) as client:
        items = client.fetch_all(path)
        explained = client.explain(path)
    assert items == expected_items(N)
    assert (explained.paging, explained.first) == ("page:page", 0)


def test_the_cli_explains_the_page_parameter_a_probe_found(api):
    from test_cli import run_cli

    r = run_cli(f"{api.base_url}/conv/hand-written?n={N}", "--explain")
    assert r.returncode == 0, r.stderr
    assert b"--paging page:_page --first 1" in r.stdout, r.stdout


def test_an_approximate_total_is_not_taken_for_a_count(api):
    # Elasticsearch past 10,000 says "relation": "gte": the list is walked to its end instead.
    with sheaf.Client(api.base_url) as client:
        explained = client.explain("/conv/elastic?n=12000&from=0&size=1000")
    assert explained.total == "none"
    assert explained.plan == "speculative"
