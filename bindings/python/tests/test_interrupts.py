"""Ctrl-C during a list, and an interpreter that exits with a list still running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

from conftest import REPO

PRELUDE = f"""
import sys, time
sys.path[:0] = [{str(REPO / 'bindings' / 'python')!r}, {str(REPO / 'Tests' / 'server')!r}]
import sheaf
from api_server import start_server
server, _ = start_server(port=0)
client = sheaf.Client(server.base_url)
ANCHOR = dict(items="/items", next="/next_page", total="/total", paging="page:page",
              size_param="per_page", page_size=10)
"""


def spawn(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(PRELUDE) + textwrap.dedent(code)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))


def test_ctrl_c_interrupts_fetch_all_promptly():
    process = spawn("""
        print("ready", flush=True)
        try:
            client.fetch_all("/anchor?n=1000&latency_ms=500", **ANCHOR)   # 100 pages: > 6 s
        except KeyboardInterrupt:
            print("interrupted", sheaf._live_runs(), flush=True)
    """)
    assert process.stdout.readline().strip() == "ready"
    time.sleep(0.8)
    started = time.monotonic()
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
    assert out.strip() == "interrupted 0"
    assert time.monotonic() - started < 3.0


def test_exiting_with_a_stream_still_running_is_clean():
    process = spawn("""
        stream = client.stream("/anchor?n=1000&latency_ms=200", **ANCHOR)
        first = next(stream)
        print("got", len(first.items), flush=True)
        # exit with the stream neither exhausted nor closed
    """)
    started = time.monotonic()
    out, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
    assert out.strip() == "got 10"
    assert time.monotonic() - started < 8.0
