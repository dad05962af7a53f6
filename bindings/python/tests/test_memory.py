"""Long loops of lists keep memory, threads and callback objects flat."""

from __future__ import annotations

import ctypes
import gc
import os
import subprocess
import sys
import threading
import tracemalloc
from typing import Iterator

import pytest

import sheaf
from conftest import REPO, expected_items

ANCHOR = dict(items="/items", next="/next_page", total="/total", paging="page:page",
              size_param="per_page", page_size=10, id="/id")


# Under a sanitizer (Tests/sanitizers/run.sh sets SHEAF_SANITIZER) freed memory is held in
# quarantine and shadow memory grows with use, so RSS says nothing about leaks there: LeakSanitizer
# and the C stress test check those builds instead; the object and thread counts still apply.
RSS_MEANINGFUL = not os.environ.get("SHEAF_SANITIZER")


@pytest.fixture(scope="module")
def own_process_api() -> Iterator[str]:
    """The test server in a process of its own: what these tests measure is the client's memory,
    not the server's log of its requests."""
    server = subprocess.Popen([sys.executable, str(REPO / "Tests" / "server" / "api_server.py"), "--quiet",
                               "--exit-on-stdin-eof"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        assert line.startswith("PORT "), line
        yield f"http://127.0.0.1:{int(line.split()[1])}"
    finally:
        server.stdin.close()
        server.wait(timeout=30)


def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * ctypes.sizeof(ctypes.c_char) * 4096


def callback_objects() -> int:
    return sum(1 for obj in gc.get_objects() if isinstance(obj, ctypes._CFuncPtr))


def run_lists(client: sheaf.Client, count: int) -> None:
    for k in range(count):
        if k % 4 == 3:
            for _snapshot in client.stream("/anchor?n=30", **ANCHOR):
                break
        elif k % 4 == 2:
            assert [i for s in client.stream("/anchor?n=30", **ANCHOR) for i in s.items] == expected_items(30)
        elif k % 4 == 1:
            try:
                client.fetch_all("/anchor?n=30&fail=2:1:404", **ANCHOR)
            except sheaf.HTTPError as error:
                assert error.items == expected_items(10)
        else:
            assert client.fetch_all("/anchor?n=30", **ANCHOR) == expected_items(30)


def test_two_hundred_lists_leave_no_python_or_native_growth(own_process_api):
    with sheaf.Client(own_process_api) as client:
        run_lists(client, 40)   # warm up: caches, the library's threads, the server's
        gc.collect()
        callbacks_before = callback_objects()
        rss_before = rss_bytes()
        tracemalloc.start()
        try:
            before = tracemalloc.take_snapshot()
            run_lists(client, 200)
            gc.collect()
            after = tracemalloc.take_snapshot()
        finally:
            tracemalloc.stop()
        rss_after = rss_bytes()
    growth = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    assert growth < 256 * 1024, f"Python memory grew by {growth} bytes over 200 lists"
    assert not RSS_MEANINGFUL or rss_after - rss_before < 16 * 1024 * 1024, f"RSS grew by {rss_after - rss_before} bytes"
    assert callback_objects() == callbacks_before
    # The binding's own threads (one waiter per list) are all gone.
    assert [t.name for t in threading.enumerate() if t.name.startswith("sheaf-")] == []
    assert sheaf._live_runs() == 0


def test_lists_through_a_python_transport_leave_nothing_behind(own_process_api):
    import urllib.error
    import urllib.request

    def transport(method, url, headers, body):
        request = urllib.request.Request(url, headers=dict(headers), method=method)
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.headers, response.read()
        except urllib.error.HTTPError as error:   # a failing status is an answer, not an exception
            with error:
                return error.code, error.headers, error.read()

    with sheaf.Client(own_process_api, transport=transport) as client:
        run_lists(client, 8)
        gc.collect()
        callbacks_before = callback_objects()
        tracemalloc.start()
        try:
            before = tracemalloc.take_snapshot()
            for _ in range(60):
                assert client.fetch_all("/anchor?n=30", **ANCHOR) == expected_items(30)
            gc.collect()
            after = tracemalloc.take_snapshot()
        finally:
            tracemalloc.stop()
    growth = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    assert growth < 256 * 1024, f"Python memory grew by {growth} bytes over 60 lists"
    assert callback_objects() == callbacks_before
    assert sheaf._live_runs() == 0


def test_clients_made_and_dropped_in_a_loop_are_freed(api):
    gc.collect()
    rss_before = rss_bytes()
    for _ in range(200):
        client = sheaf.Client(api.base_url, "t")
        del client   # freed by __del__
    gc.collect()
    assert not RSS_MEANINGFUL or rss_bytes() - rss_before < 8 * 1024 * 1024
