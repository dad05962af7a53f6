"""Shared fixtures: the loopback test API server (Tests/server/api_server.py) run in-process.

The package is imported from this source tree (bindings/python); the library from
$SHEAF_LIBRARY_PATH when set (CTest sets it), else from the build tree.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Tuple

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "bindings" / "python"))
sys.path.insert(0, str(REPO / "Tests" / "server"))

from api_server import APIServer, start_server  # noqa: E402
import feeds  # noqa: E402
import post_api  # noqa: E402


# The tests that run the `sheaf` command in a process of its own. The sanitizer runs
# (Tests/sanitizers/run.sh) leave them out with `-m "not cli_process"`: the command makes the
# library calls the in-process tests make, and under a sanitizer each process start costs about
# a second (the runtime and a debug library), which was two thirds of the TSan run; what the
# command adds is Python, which no sanitizer looks at.
CLI_MODULES = {"test_cli.py", "test_cli_usage.py", "test_cli_groups.py"}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "cli_process: runs the sheaf command in a process of its own")


def pytest_collection_modifyitems(config: pytest.Config, items: List[pytest.Item]) -> None:
    for item in items:
        name = item.name.split("[")[0]
        if item.path.name in CLI_MODULES or name.startswith("test_cli_") or "_the_cli_" in name:
            item.add_marker(pytest.mark.cli_process)

TOKEN = "sheaf-python-token-5d1e"


def _start() -> APIServer:
    server, _thread = start_server(port=0)
    return server


def _fresh(server: APIServer) -> APIServer:
    """Waits (bounded) for earlier tests' requests to leave the server, then clears its state.
    A request an earlier test's list sent just before it was stopped may not have begun yet (a
    connection not yet taken up, bytes not yet read): it is waited for too, as one in flight."""
    deadline = time.monotonic() + 15
    while (server.state.in_flight or server.unread()) and time.monotonic() < deadline:
        time.sleep(0.01)
    server.state.reset()
    post_api.reset()
    feeds.reset()
    return server


@pytest.fixture(scope="session")
def _api_session() -> Iterator[APIServer]:
    server = _start()
    yield server
    server.shutdown_and_close()


@pytest.fixture(scope="session")
def _other_session() -> Iterator[APIServer]:
    server = _start()
    yield server
    server.shutdown_and_close()


@pytest.fixture
def api(_api_session: APIServer) -> APIServer:
    """The test API server, its counters and request log cleared for this test."""
    return _fresh(_api_session)


@pytest.fixture
def other_api(_other_session: APIServer) -> APIServer:
    """A second server: another origin (a different port)."""
    return _fresh(_other_session)


def _openssl(*arguments: str, cwd: Path) -> None:
    subprocess.run(["openssl", *arguments], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="session")
def pki(tmp_path_factory) -> Path:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, both signed by it."""
    folder = tmp_path_factory.mktemp("pki")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
             "-days", "2", "-subj", "/CN=Sheaf Test CA", cwd=folder)
    for name, extension in (("server", "subjectAltName=IP:127.0.0.1"), ("client", "extendedKeyUsage=clientAuth")):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
                 "-subj", f"/CN={name}", cwd=folder)
        (folder / f"{name}.ext").write_text(extension + "\n")
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext", cwd=folder)
    return folder


def interrupt_cli(proc: subprocess.Popen, read_first_output: Callable[[], None]) -> Tuple[bytes, bytes, str]:
    """Ctrl-C to a running `sheaf get` once `read_first_output` has read what it wrote first: its
    stdout and stderr, and the resume token it printed (it must exit 130 and say why)."""
    try:
        read_first_output()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=15)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130, err
    said = err.decode().splitlines()
    assert said[-2] == "sheaf: interrupted" and said[-1].startswith("sheaf: to go on: --resume "), err
    return out, err, said[-1].rsplit(" ", 1)[1]


def close_the_pipe(proc: subprocess.Popen, read_first_output: Callable[[], None]) -> bytes:
    """Closes a running `sheaf get`'s stdout once `read_first_output` has read what it wrote
    first, as `| head -1` does: its stderr (it must exit 0)."""
    try:
        read_first_output()
        proc.stdout.close()
        err = proc.stderr.read()
        proc.wait(timeout=15)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 0, err
    return err


def stats(server: APIServer) -> Dict[str, Any]:
    """The server's /_stats: requests, max_in_flight, in_flight and the request log."""
    with urllib.request.urlopen(f"{server.base_url}/_stats", timeout=10) as response:
        return json.load(response)


def settled_log(server) -> List[str]:
    """The paths the server saw, once no request is in flight: a list that ended may have sent a
    page past its end that the server answers after the list has returned."""
    deadline = time.monotonic() + 5
    while stats(server)["in_flight"] and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)
    return [entry["path"] for entry in stats(server)["log"]]


def pages_asked(urls: List[str], parameter: str = "page") -> List[int]:
    """The page numbers of `urls` (paths or URLs), in order. A list sends a window of pages with
    page one, before it knows how long the list is: tests count the pages they mean."""
    from urllib.parse import parse_qs, urlsplit

    return [int(parse_qs(urlsplit(url).query)[parameter][0]) for url in urls]


def expected_items(n: int, start: int = 0) -> List[Dict[str, Any]]:
    """Items start..n-1 as the server makes them."""
    return [{"id": i, "name": f"item-{i}"} for i in range(start, n)]


def walk(server: APIServer, path: str, items_key: str, next_key: str) -> List[Any]:
    """The list as the server serves it, walked page by page with urllib (not Sheaf)."""
    url, out = f"{server.base_url}{path}", []
    while url:
        with urllib.request.urlopen(url, timeout=10) as response:
            page = json.load(response)
        out.extend(page[items_key])
        url = page.get(next_key)
    return out
