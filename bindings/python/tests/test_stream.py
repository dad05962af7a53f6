"""Client.stream: growing, ordered snapshots; leaving early stops the list."""

from __future__ import annotations

import threading
import time

import pytest

import sheaf
from sheaf import _run
from conftest import expected_items, stats

ANCHOR = dict(items="/items", next="/next_page", total="/total", paging="page:page",
              size_param="per_page", id="/id")


def test_snapshots_are_growing_prefixes_that_add_up_to_the_whole_list(api):
    with sheaf.Client(api.base_url) as client:
        whole = client.fetch_all("/anchor?n=1000", page_size=50, **ANCHOR)
        snapshots = list(client.stream("/anchor?n=1000", page_size=50, **ANCHOR))
    concatenated = [item for snapshot in snapshots for item in snapshot.items]
    assert concatenated == whole == expected_items(1000)

    first = snapshots[0]
    assert first.page_count == 1 and first.items == expected_items(50)
    assert first.requests_made >= 1
    seen_items = seen_pages = 0
    for snapshot in snapshots:
        assert snapshot.item_count == seen_items + len(snapshot.items)
        assert snapshot.page_count > seen_pages
        assert snapshot.expected_items == 1000
        assert snapshot.expected_pages == 20
        assert snapshot.requests_made >= snapshot.page_count
        seen_items, seen_pages = snapshot.item_count, snapshot.page_count
    assert (seen_items, seen_pages) == (1000, 20)
    assert snapshots[-1].fraction_done == 1.0


def test_a_list_without_a_total_reports_unknown_expectations(api):
    with sheaf.Client(api.base_url) as client:
        snapshots = list(client.stream("/anchor?n=120&per_page=50", items="/items", next="/next_page", total="none",
                                       paging="next"))
    assert [len(s.items) for s in snapshots] == [50, 50, 20]
    assert all(s.expected_items is None and s.fraction_done is None for s in snapshots)


def test_breaking_out_early_cancels_the_list_promptly(api):
    # 100 pages of 50 ms: at least 0.6 s with a window of 8, had the list gone on.
    with sheaf.Client(api.base_url) as client:
        started = time.monotonic()
        for snapshot in client.stream("/anchor?n=1000&latency_ms=50", page_size=10, **ANCHOR):
            assert snapshot.page_count == 1
            break
        left = time.monotonic() - started
    assert left < 1.0
    time.sleep(0.3)   # nothing more is requested after the break
    requests = stats(api)["requests"]
    assert requests <= 30, f"{requests} of 100 pages were requested"
    assert sheaf._live_runs() == 0


def test_breaking_out_of_a_stream_still_referenced_stops_the_list_at_once(api):
    # The stream object outlives the loop: the break alone must stop the list. 0.4.0 let the
    # list go on until a window of pages waited for a consumer that would never come back.
    with sheaf.Client(api.base_url) as client:
        stream = client.stream("/anchor?n=10000&latency_ms=200", page_size=10, **ANCHOR)
        for snapshot in stream:
            assert snapshot.page_count == 1
            break
        time.sleep(0.05)  # a request already on the wire at the break lands (loopback: well under 50 ms)
        at_the_break = stats(api)["requests"]
        time.sleep(0.8)   # four latencies: a list still running would have sent more by now
        after = stats(api)["requests"]
        assert after == at_the_break, f"{after - at_the_break} requests started after the break"
        assert sheaf._live_runs() == 0
        assert list(stream) == [], "a stopped stream cannot go on"
        assert stream.resume_token is not None, "the token goes on after the snapshot taken"


def test_dropping_an_iterator_of_a_held_stream_stops_the_list(api):
    with sheaf.Client(api.base_url) as client:
        stream = client.stream("/anchor?n=10000&latency_ms=200", page_size=10, **ANCHOR)
        iterator = iter(stream)
        next(iterator)
        del iterator
        time.sleep(0.05)
        at_the_drop = stats(api)["requests"]
        time.sleep(0.5)
        assert stats(api)["requests"] == at_the_drop
        assert sheaf._live_runs() == 0


def test_a_consumer_that_stops_while_the_library_waits_on_a_full_queue_does_not_hang(api):
    # A window of 1: one snapshot waits to be taken, then the library waits for room. Fixed: an
    # adaptive window grows from 1 while page one's answers come fast, and the pages in flight
    # when the hold starts may then be 16 (the header's bound is twice the largest window).
    with sheaf.Client(api.base_url, concurrency=1, adaptive_window=False) as client:
        stream = client.stream("/anchor?n=2000&held=1", page_size=10, **ANCHOR)
        first = next(stream)
        time.sleep(0.3)   # the library is now held back by the full queue
        # By its path: a request an earlier test cancelled may still reach the server now (the
        # sanitizer runs counted 12, two of them an earlier test's).
        sent = [entry for entry in stats(api)["log"] if "held=1" in entry["path"]]
        assert len(sent) < 10, "the fetching went on while nobody took the snapshots"
        started = time.monotonic()
        stream.close()
        assert time.monotonic() - started < 1.0
    assert first.items == expected_items(10)
    with pytest.raises(StopIteration):
        next(stream)
    assert sheaf._live_runs() == 0


def test_a_stream_is_a_context_manager(api):
    with sheaf.Client(api.base_url) as client:
        with client.stream("/anchor?n=1000&latency_ms=20", page_size=10, **ANCHOR) as stream:
            first = next(stream)
        assert first.page_count == 1
    assert sheaf._live_runs() == 0


def test_an_abandoned_stream_that_never_started_sends_nothing(api):
    with sheaf.Client(api.base_url) as client:
        stream = client.stream("/anchor?n=100&abandoned=1", page_size=10, **ANCHOR)
        del stream
    # By its path: a request an earlier test cancelled may still reach the server now.
    assert [entry for entry in stats(api)["log"] if "abandoned=1" in entry["path"]] == []
    assert sheaf._live_runs() == 0


def test_cancel_from_another_thread_ends_the_stream_with_stopped_error(api):
    with sheaf.Client(api.base_url) as client:
        stream = client.stream("/anchor?n=1000&latency_ms=100", page_size=10, **ANCHOR)
        received = []
        timer = threading.Timer(0.4, stream.cancel)
        timer.start()
        started = time.monotonic()
        with pytest.raises(sheaf.StoppedError) as raised:
            for snapshot in stream:
                received.append(snapshot)
        timer.join()
    assert raised.value.code == sheaf.Result.CANCELLED
    assert time.monotonic() - started < 3.0
    assert 0 < sum(len(s.items) for s in received) < 1000


def test_a_failure_after_some_snapshots_is_raised_at_the_end(api):
    with sheaf.Client(api.base_url, retry_base=0.001) as client:
        received = []
        with pytest.raises(sheaf.HTTPError) as raised:
            for snapshot in client.stream("/anchor?n=1000&fail=3:1:404", page_size=50, **ANCHOR):
                received.append(snapshot)
    assert raised.value.status == 404
    assert raised.value.items == []   # streamed items were already yielded
    assert [item for s in received for item in s.items] == expected_items(100)


def test_an_exception_in_the_snapshot_path_is_reraised_from_the_stream(api, monkeypatch):
    class Boom(Exception):
        pass

    calls = []
    real_snapshot = _run.Snapshot

    def exploding_snapshot(**fields):
        calls.append(1)
        if len(calls) == 2:
            raise Boom("in the snapshot path")
        return real_snapshot(**fields)

    monkeypatch.setattr(_run, "Snapshot", exploding_snapshot)
    with sheaf.Client(api.base_url) as client:
        received = []
        with pytest.raises(Boom):
            for snapshot in client.stream("/anchor?n=1000&latency_ms=20", page_size=10, **ANCHOR):
                received.append(snapshot)
    assert len(received) == 1
    time.sleep(0.2)
    assert stats(api)["requests"] <= 30   # the list stopped
    assert sheaf._live_runs() == 0


def test_bad_options_are_refused_when_the_stream_is_made(api):
    with sheaf.Client(api.base_url) as client:
        with pytest.raises(sheaf.UsageError):
            client.stream("/anchor", items="items")   # not a JSON pointer
    assert stats(api)["requests"] == 0


def test_a_stream_keeps_its_client_alive_even_when_the_client_object_is_dropped(api):
    from test_transport import BlockingTransport

    stream = sheaf.Client(api.base_url, transport=BlockingTransport()).stream("/anchor?n=100", page_size=10,
                                                                               **ANCHOR)
    import gc

    gc.collect()
    assert [item for s in stream for item in s.items] == expected_items(100)


def test_a_stream_of_a_client_closed_before_it_started_is_refused(api):
    client = sheaf.Client(api.base_url)
    stream = client.stream("/anchor?n=100", page_size=10, **ANCHOR)
    client.close()
    with pytest.raises(sheaf.UsageError) as raised:
        next(stream)
    assert raised.value.code == sheaf.Result.STATE
    assert sheaf._live_runs() == 0
