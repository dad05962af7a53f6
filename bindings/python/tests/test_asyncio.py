"""sheaf.AsyncClient: lists, snapshots and requests awaited on an event loop that never blocks."""

from __future__ import annotations

import asyncio
import os
import threading
import time

import pytest

import sheaf
from conftest import expected_items, stats

PAGED = dict(paging="page:page", size_param="per_page", page_size=10)
#: The most the loop may go without running a 5 ms timer (a sanitizer slows everything down).
MAX_STALL = 0.5 if os.environ.get("SHEAF_SANITIZER") else 0.05


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 60))


def assert_the_list_stopped(api, window: int) -> None:
    """The requests already on the wire when a list stopped (at most its window) may still reach
    the server a little later; after that, nothing more is asked for."""
    stopped_at = stats(api)["requests"]
    time.sleep(0.3)
    settled = stats(api)["requests"]
    assert settled - stopped_at <= window, f"{settled - stopped_at} requests came after the stop"
    time.sleep(0.3)
    assert stats(api)["requests"] == settled < 100, "nothing is asked for after the stop"
    assert sheaf._live_runs() == 0


def test_fetch_all_and_stream_give_the_list(api) -> None:
    async def main():
        async with sheaf.AsyncClient(api.base_url) as client:
            items = await client.fetch_all("/anchor?n=95", **PAGED)
            snapshots = [snapshot async for snapshot in client.stream("/anchor?n=95", **PAGED)]
            return items, snapshots

    items, snapshots = run(main())
    assert items == expected_items(95) and items.complete
    assert [item for snapshot in snapshots for item in snapshot.items] == expected_items(95)
    assert snapshots[-1].item_count == 95


def test_two_lists_and_a_timer_run_together_and_the_loop_never_stalls(api) -> None:
    async def ticker(stop: asyncio.Event, gaps: list) -> None:
        last = time.monotonic()
        while not stop.is_set():
            await asyncio.sleep(0.005)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    async def main():
        gaps: list = []
        stop = asyncio.Event()
        timer = asyncio.create_task(ticker(stop, gaps))
        async with sheaf.AsyncClient(api.base_url, concurrency=4, adaptive_window=False) as client:
            started = time.monotonic()
            first, second = await asyncio.gather(
                client.fetch_all("/anchor?n=400&latency_ms=30", **PAGED),
                client.fetch_all("/anchor?n=300&latency_ms=30&per_page=10", **PAGED))
            elapsed = time.monotonic() - started
        stop.set()
        await timer
        return first, second, gaps, elapsed

    first, second, gaps, elapsed = run(main())
    assert first == expected_items(400) and second == expected_items(300)
    # Serially: 70 pages x 30 ms = 2.1 s; both lists' windows were in flight together.
    assert elapsed < 2.0, elapsed
    assert len(gaps) > 20 and max(gaps) < MAX_STALL, max(gaps)
    assert threading.active_count() < 50   # no thread per call


def test_cancelling_the_task_stops_the_list(api) -> None:
    async def main():
        async with sheaf.AsyncClient(api.base_url, concurrency=2, adaptive_window=False) as client:
            task = asyncio.create_task(client.fetch_all("/anchor?n=100000&latency_ms=20", **PAGED))
            await asyncio.sleep(0.3)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    run(main())
    assert_the_list_stopped(api, window=2)


def test_leaving_async_for_stops_the_list(api) -> None:
    async def main():
        async with sheaf.AsyncClient(api.base_url, concurrency=2, adaptive_window=False) as client:
            stream = client.stream("/anchor?n=100000&latency_ms=10", **PAGED)
            async for snapshot in stream:
                if snapshot.item_count >= 30:
                    break
            assert_the_list_stopped(api, window=2)   # the stream still referenced: the break alone stopped it
            await stream.aclose()                    # and closing it again changes nothing

    run(main())
    assert_the_list_stopped(api, window=2)


def test_a_failure_is_raised_with_the_items_before_it(api) -> None:
    async def main():
        async with sheaf.AsyncClient(api.base_url, max_attempts=1) as client:
            return await client.fetch_all("/anchor?n=95&fail=4:9:404", **PAGED)

    with pytest.raises(sheaf.HTTPError) as raised:
        run(main())
    assert raised.value.status == 404 and raised.value.items == expected_items(30)


def test_requests_and_downloads_are_awaited(api, tmp_path) -> None:
    async def main():
        async with sheaf.AsyncClient(api.base_url) as client:
            echoed, created = await asyncio.gather(client.get("/req/echo", params={"q": "1"}),
                                                   client.post("/req/echo", json={"name": "x"}))
            with pytest.raises(sheaf.HTTPError) as raised:
                await client.get("/req/status/404")
            saved = await client.download("/anchor?n=5", tmp_path / "page.json")
            return echoed, created, raised.value, saved

    echoed, created, missing, saved = run(main())
    assert echoed.json()["method"] == "GET" and created.json()["method"] == "POST"
    assert missing.status == 404
    assert saved.status == 200 and (tmp_path / "page.json").read_bytes().startswith(b"{")


def test_a_cancelled_request_is_abandoned(api) -> None:
    async def main():
        async with sheaf.AsyncClient(api.base_url) as client:
            task = asyncio.create_task(client.get("/anchor?n=5&latency_ms=3000"))
            await asyncio.sleep(0.2)
            started = time.monotonic()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            return time.monotonic() - started

    assert run(main()) < 1.0
