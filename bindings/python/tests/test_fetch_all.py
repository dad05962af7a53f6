"""Client.fetch_all: whole lists, in order, in the shapes real APIs use."""

from __future__ import annotations

import time

import pytest

import sheaf
from conftest import TOKEN, expected_items, pages_asked, stats, walk

ANCHOR = dict(items="/items", next="/next_page", total="/total", paging="page:page",
              size_param="per_page", page_size=50, id="/id")


def test_an_anchor_list_of_1000_arrives_whole_and_in_order(api):
    with sheaf.Client(api.base_url, TOKEN) as client:
        items = client.fetch_all("/anchor?n=1000", **ANCHOR)
    # One request per page, the token on each of them.
    log = stats(api)["log"]
    assert len(log) == 20
    assert all(entry["authorization"] == f"Bearer {TOKEN}" for entry in log)
    assert items == walk(api, "/anchor?n=1000&per_page=50", "items", "next_page")
    assert items == expected_items(1000)


def test_pages_are_fetched_concurrently_in_the_window(api):
    with sheaf.Client(api.base_url, concurrency=4, adaptive_window=False) as client:
        items = client.fetch_all("/anchor?n=1000&latency_ms=30", **ANCHOR)
    assert items == expected_items(1000)
    assert stats(api)["max_in_flight"] == 4


def test_lists_with_headers_of_their_own_share_the_clients_window(api):
    # A list with its own headers runs on a client of its own inside the library: it still
    # sends through its client's window at the origin, so two lists at once keep to 4.
    import threading
    with sheaf.Client(api.base_url, concurrency=4, adaptive_window=False) as client:
        results = {}
        lists = [("own", {"X-Team": "a"}), ("shared", None), ("other", {"X-Team": "b"})]
        threads = [threading.Thread(target=lambda name=name, headers=headers: results.__setitem__(
            name, client.fetch_all("/anchor?n=1000&latency_ms=30", headers=headers, **ANCHOR))) for name, headers in lists]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    assert all(results.get(name) == expected_items(1000) for name, _ in lists)
    seen = stats(api)
    assert seen["requests"] >= 60 and seen["max_in_flight"] == 4


@pytest.mark.parametrize("path, options", [
    ("/anchor?n=1010&nototal=1&latency_ms=30", dict(ANCHOR, total=None)),                  # next links
    ("/array?n=1010&latency_ms=30", dict(paging="page:page", size_param="per_page", page_size=50)),  # nothing
])
def test_page_numbers_without_a_total_are_fetched_concurrently_too(api, path, options):
    with sheaf.Client(api.base_url, concurrency=4, adaptive_window=False) as client:
        items = client.fetch_all(path, **options)
    assert items == expected_items(1010)
    seen = stats(api)
    assert seen["max_in_flight"] == 4
    # 21 pages; past the last one, at most a window of pages is asked for.
    assert 21 <= seen["requests"] <= 21 + 4


def test_a_drf_list_arrives_whole(api):
    with sheaf.Client(api.base_url) as client:
        items = client.fetch_all("/drf?n=1000", items="/results", next="/next", total="/count",
                                 paging="page:page", size_param="page_size", page_size=50)
    assert items == walk(api, "/drf?n=1000&page_size=50", "results", "next")
    assert items == expected_items(1000)


def test_shape_presets_fill_in_the_options_of_a_known_shape(api):
    with sheaf.Client(api.base_url) as client:
        assert client.fetch_all("/drf?n=230", preset="drf-page", page_size=20) == expected_items(230)
        assert client.fetch_all("/anchor?n=230", preset="anchor") == expected_items(230)
    # Without page_size the preset's size parameter is not sent.
    assert all("per_page" not in entry["path"] for entry in stats(api)["log"] if "/anchor" in entry["path"])


def test_a_list_walked_by_next_links_alone_arrives_whole(api):
    with sheaf.Client(api.base_url) as client:
        items = client.fetch_all("/anchor?n=321&per_page=40", items="/items", next="/next_page")
    assert items == expected_items(321)
    assert stats(api)["max_in_flight"] == 1


def test_a_single_page_bare_array_is_the_list(api):
    with sheaf.Client(api.base_url) as client:
        assert client.fetch_all("/array?n=30&per_page=100") == expected_items(30)


def test_duplicates_across_pages_are_dropped_by_identity(api):
    with sheaf.Client(api.base_url) as client:
        items = client.fetch_all("/anchor?n=500&dup=1", **ANCHOR)
    assert items == expected_items(500)


def test_max_items_stops_the_list_without_an_error(api):
    with sheaf.Client(api.base_url) as client:
        items = client.fetch_all("/anchor?n=1000", max_items=120, **ANCHOR)
    assert items == expected_items(120)


def test_query_parameters_from_a_mapping_or_from_pairs_reach_every_page(api):
    with sheaf.Client(api.base_url) as client:
        from_mapping = client.fetch_all("/anchor", query={"n": 130, "tag": ["a", "b"]}, **ANCHOR)
        from_pairs = client.fetch_all("/anchor", query=[("n", "130")], **ANCHOR)
    assert from_mapping == from_pairs == expected_items(130)
    tagged = [entry["path"] for entry in stats(api)["log"] if "tag=" in entry["path"]]
    assert sorted(pages_asked(tagged))[:3] == [1, 2, 3] and all("tag=a" in path and "tag=b" in path for path in tagged)


def test_an_empty_list_is_an_empty_python_list(api):
    with sheaf.Client(api.base_url) as client:
        assert client.fetch_all("/anchor?n=0", **ANCHOR) == []


def test_one_client_runs_lists_from_several_threads_at_once(api):
    import concurrent.futures

    with sheaf.Client(api.base_url) as client:
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            sizes = [100 + 37 * k for k in range(8)]
            results = list(pool.map(lambda n: client.fetch_all(f"/anchor?n={n}", **ANCHOR), sizes))
    assert results == [expected_items(n) for n in sizes]
    assert sheaf._live_runs() == 0


def test_a_closed_client_refuses_new_lists_and_closing_twice_is_harmless(api):
    client = sheaf.Client(api.base_url)
    client.close()
    client.close()
    assert client.closed
    with pytest.raises(sheaf.UsageError) as raised:
        client.fetch_all("/anchor")
    assert raised.value.code == sheaf.Result.STATE
    assert "closed" in repr(client)


def test_the_token_is_never_in_the_clients_repr(api):
    with sheaf.Client(api.base_url, TOKEN) as client:
        assert TOKEN not in repr(client)


def test_versions_are_reported():
    assert sheaf.__version__ == "1.0.0"
    assert sheaf.library_version() == "1.0.0"
    assert sheaf.library_path.endswith(tuple(["libsheaf.so.1", "libsheaf.so.1.0.0", "libsheaf.so"]))


def test_an_integer_past_pythons_digit_limit_is_decoded_not_an_error(api):
    # A valid page with a 5,000-digit integer raised a bare ValueError (Python's int-string limit).
    big = "7" * 5000

    def transport(method, url, headers, body):
        return 200, [("Content-Type", "application/json")], f'[{{"id": {big}}}, {{"id": 2}}]'.encode()

    with sheaf.Client(api.base_url, transport=transport) as client:
        items = client.fetch_all("/big", paging="single")
    assert items[0]["id"] == int("7" * 1000) * 10 ** 4000 + int("7" * 4000) and items[1] == {"id": 2}


def test_a_million_digit_integer_is_decoded_exactly_in_linear_time(api):
    # 0.4.0 turned it into an int through Decimal: quadratic, 30 s and more for one 1 MB page.
    big = "7" * 1_000_000

    def transport(method, url, headers, body):
        return 200, [("Content-Type", "application/json")], f'[{{"id": -{big}}}, {{"id": 12345678901234567890}}]'.encode()

    with sheaf.Client(api.base_url, transport=transport) as client:
        started = time.process_time()
        items = client.fetch_all("/big", paging="single")
        assert time.process_time() - started < 5
    assert str(items[0]["id"]) == "-" + big                  # every digit kept
    assert items[1] == {"id": 12345678901234567890} and type(items[1]["id"]) is int


def test_a_preset_with_a_first_page_and_no_page_size_is_what_the_library_accepts(api):
    with sheaf.Client(api.base_url) as client:
        assert client.fetch_all("/anchor?n=120", preset="anchor", first=1) == expected_items(120)


def test_a_size_parameter_without_a_size_is_refused_in_the_libraries_words(api):
    with sheaf.Client(api.base_url) as client:
        with pytest.raises(sheaf.UsageError) as refused:
            client.fetch_all("/anchor?n=120&refused=1", preset="anchor", size_param="per_page")
    # The library's words name the field of the description JSON the binding handed over.
    assert refused.value.message == ("the description's /paging/size: a page size parameter needs a non-empty name "
                                     "and a size of 1 or more (or null: named, not sent)")
    assert not [entry for entry in api.state.snapshot()["log"] if "refused=1" in entry["path"]]
