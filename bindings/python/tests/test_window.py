"""The adaptive window: it grows while the server keeps up, shrinks to what a refusing server
takes, and obeys the server's rate-limit headers (Tests/server/api_server.py: capacity=, limit=,
ratelimit=)."""

from __future__ import annotations

import logging

import sheaf
from conftest import expected_items, stats

PAGES = dict(paging="page:page", size_param="per_page", page_size=50)


def windows_seen(client: sheaf.Client, path: str, **options) -> list:
    """The window each snapshot of the list reports, in order (the list checked whole)."""
    seen, items = [], []
    for snapshot in client.stream(path, **PAGES, **options):
        seen.append(snapshot.window)
        items.extend(snapshot.items)
    assert items == expected_items(len(items))
    return seen


def test_the_window_grows_while_latency_holds_and_never_past_its_maximum(api):
    with sheaf.Client(api.base_url, max_concurrency=20) as client:
        seen = windows_seen(client, "/anchor?n=3000&latency_ms=40")
    assert len(seen) >= 2 and seen[0] >= 8
    assert max(seen) > 8, seen
    assert max(seen) <= 20, seen
    assert 8 < stats(api)["max_in_flight"] <= 20


def test_a_fixed_window_stays_where_it_is(api):
    with sheaf.Client(api.base_url, concurrency=6, adaptive_window=False) as client:
        seen = windows_seen(client, "/anchor?n=2000&latency_ms=20")
    assert set(seen) == {6}
    assert stats(api)["max_in_flight"] == 6


def test_a_server_that_queues_past_its_capacity_stops_the_growth(api):
    # Past 8 requests the server queues: latency doubles, so the window does not run to its
    # maximum as it does when latency holds (above); latency alone never takes it below 8.
    with sheaf.Client(api.base_url, max_concurrency=64) as client:
        seen = windows_seen(client, "/anchor?n=4000&latency_ms=40&capacity=8")
    assert min(seen) >= 8, seen
    assert seen[-1] < 32, seen


def test_a_server_that_refuses_above_4_in_flight_gets_4_and_few_refusals(api, caplog):
    with caplog.at_level(logging.INFO, logger="sheaf"), sheaf.Client(api.base_url) as client:
        seen = windows_seen(client, "/anchor?n=6000&latency_ms=30&limit=4")
    seen_by_server = stats(api)
    # The first window's requests past the fourth are refused (8 - 4), then the window is 4 or
    # less; trying 5 again waits for more good answers each time it is refused: few refusals
    # after, and the list may end during such a try (its last snapshots then say 5).
    refused = seen_by_server["refused"]
    assert 1 <= refused <= (8 - 4) + 0.05 * seen_by_server["requests"], seen_by_server
    after = seen[next(i for i, window in enumerate(seen) if window < 8):]
    assert max(after) <= 5, seen
    assert sorted(after[len(after) // 2:])[len(after) // 4] <= 4, seen   # mostly at or below what the server takes
    shrunk = [r.getMessage() for r in caplog.records if getattr(r, "sheaf_kind", None) == "window"]
    assert any("the server refused a request with" in message for message in shrunk), shrunk


def test_rate_limit_headers_hold_requests_back_until_the_reset(api):
    # 12 requests a second, said in RateLimit headers; 30 pages need three such seconds. A client
    # that ignores the headers sends them in the first second and sees 18 refusals.
    with sheaf.Client(api.base_url) as client:
        items = client.fetch_all("/anchor?n=1500&ratelimit=12:1", **PAGES)
    assert items == expected_items(1500)
    seen_by_server = stats(api)
    assert seen_by_server["refused"] <= 2, seen_by_server


def test_lists_on_one_client_share_their_origins_window(api):
    # Four lists started together on one client: the server never sees more than the client's
    # one window (16), where four windows of their own would put up to 64 on it.
    import threading
    results = {}
    with sheaf.Client(api.base_url, max_concurrency=16) as client:
        def fetch(k):
            results[k] = client.fetch_all(f"/anchor?n=3000&latency_ms=30&list={k}", **PAGES)
        threads = [threading.Thread(target=fetch, args=(k,)) for k in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert all(results[k] == expected_items(3000) for k in range(4))
    seen_by_server = stats(api)
    assert 8 < seen_by_server["max_in_flight"] <= 16, seen_by_server


def test_a_list_starts_with_the_window_the_origin_learnt(api, caplog):
    # The first list grows the origin's window; the next list on the client starts where it got
    # to, not at 8 again; a list on a new client starts at 8 (its first change is from 8).
    with sheaf.Client(api.base_url, max_concurrency=40) as client:
        first = windows_seen(client, "/anchor?n=4000&latency_ms=30")
        second = windows_seen(client, "/anchor?n=500&latency_ms=30")
    assert first[-1] > 8, first
    assert second[0] >= first[-1], (first, second)
    with caplog.at_level(logging.DEBUG, logger="sheaf"), sheaf.Client(api.base_url, max_concurrency=40) as client:
        windows_seen(client, "/anchor?n=4000&latency_ms=30")
    changes = [r.getMessage() for r in caplog.records if getattr(r, "sheaf_kind", None) == "window"]
    assert changes and changes[0].startswith("window 8 → "), changes


def test_requests_wait_their_turn_in_the_origins_window(api):
    # A fixed window of 2, kept full by a list's slow pages: requests sent meanwhile wait for a
    # place, so the server never has more than 2 at once, and every one is answered.
    import threading
    import time
    with sheaf.Client(api.base_url, concurrency=2, adaptive_window=False) as client:
        listing = threading.Thread(target=lambda: client.fetch_all("/anchor?n=1500&latency_ms=60", **PAGES))
        listing.start()
        time.sleep(0.15)
        answers = []
        senders = [threading.Thread(target=lambda k=k: answers.append(client.get(f"/req/echo?k={k}").status))
                   for k in range(6)]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join()
        listing.join()
    assert answers == [200] * 6
    assert stats(api)["max_in_flight"] == 2, stats(api)
