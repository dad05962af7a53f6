"""HTTP/2: a list's window multiplexed over one connection (h2 over TLS by ALPN, h2c by prior
knowledge when asked), HTTP/1.1 when asked or when the server offers nothing else."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

import sheaf
from conftest import REPO

if not os.environ.get("CI"):   # CI installs hypercorn (scripts/setup.sh): there, a missing one fails
    pytest.importorskip("hypercorn")
from h2_server import H2Server  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")

N, PER_PAGE = 400, 10
LIST = f"/anchor?n={N}&per_page={PER_PAGE}&latency_ms=20"
EXPECTED = [{"id": i, "name": f"item-{i}"} for i in range(N)]
PAGED = dict(paging="page:page", size_param="per_page", page_size=PER_PAGE)


@pytest.fixture(scope="module")
def h2_tls(pki: Path) -> Iterator[H2Server]:
    server = H2Server(str(pki / "server.pem"), str(pki / "server.key"))
    yield server
    server.close()


@pytest.fixture(scope="module")
def h2c() -> Iterator[H2Server]:
    server = H2Server(prior_knowledge=True)
    yield server
    server.close()


@pytest.fixture(scope="module")
def http1_clear() -> Iterator[H2Server]:
    server = H2Server()
    yield server
    server.close()


def _fetch(server: H2Server, **options) -> dict:
    server.reset()
    with sheaf.Client(server.base_url, concurrency=8, adaptive_window=False, timeout=20, **options) as client:
        assert client.fetch_all(LIST, **PAGED) == EXPECTED
    return server.stats()


def test_over_tls_the_whole_window_shares_one_http2_connection(pki, h2_tls) -> None:
    seen = _fetch(h2_tls, verify=str(pki / "ca.pem"))
    assert seen["versions"] == {"2": seen["requests"]}
    assert seen["connections"] == 1
    assert seen["max_in_flight"] == 8      # multiplexed, not serialised


def test_http_1_1_when_asked_takes_a_connection_per_request_in_flight(pki, h2_tls) -> None:
    seen = _fetch(h2_tls, verify=str(pki / "ca.pem"), http_version="1.1")
    assert seen["versions"] == {"1.1": seen["requests"]}
    assert seen["connections"] == 8
    assert seen["max_in_flight"] == 8


def test_cleartext_speaks_http2_by_prior_knowledge_when_asked(h2c) -> None:
    if _libcurl_version() < (8, 0):
        # libcurl 7.x fails every request on a reused h2c connection: refused, clearly, at once.
        h2c.reset()
        with sheaf.Client(h2c.base_url, http_version="2") as client:
            with pytest.raises(sheaf.TransportError, match="needs libcurl 8.0 or later"):
                client.fetch_all(LIST, **PAGED)
        assert h2c.stats()["requests"] == 0
        return
    seen = _fetch(h2c, http_version="2")
    assert seen["versions"] == {"2": seen["requests"]}
    assert seen["connections"] == 1
    assert seen["max_in_flight"] == 8


def test_cleartext_speaks_http_1_1_unless_asked(http1_clear) -> None:
    seen = _fetch(http1_clear)    # "auto": no ALPN on cleartext
    assert seen["versions"] == {"1.1": seen["requests"]}
    assert seen["connections"] == 8


def test_single_requests_use_http2_too(pki, h2_tls) -> None:
    h2_tls.reset()
    with sheaf.Client(h2_tls.base_url, verify=str(pki / "ca.pem")) as client:
        assert client.get("/anchor?n=3&per_page=2").json()["items"] == EXPECTED[:2]
    assert h2_tls.stats()["versions"] == {"2": 1}


def test_an_unknown_http_version_is_refused() -> None:
    with pytest.raises(sheaf.UsageError, match="http_version"):
        sheaf.Client("http://127.0.0.1:1", http_version="3")


def _libcurl_version() -> tuple:
    import ctypes
    text = ctypes.CDLL("libcurl.so.4").curl_version
    text.restype = ctypes.c_char_p
    return tuple(int(part) for part in text().split()[0].split(b"/")[1].split(b".")[:2])


def test_the_cli_speaks_http_1_1_when_asked(pki, h2_tls) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO / "bindings" / "python"),
               SHEAF_LIBRARY_PATH=sheaf.library_path)
    command = [sys.executable, "-m", "sheaf", "get", f"{h2_tls.base_url}/anchor?n=30&per_page=10",
               "--preset", "anchor", "--cacert", str(pki / "ca.pem"), "--quiet"]
    for flags, version in (([], "2"), (["--http1.1"], "1.1")):
        h2_tls.reset()
        done = subprocess.run(command + flags, capture_output=True, timeout=60, env=env, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr
        assert len(done.stdout.splitlines()) == 30
        assert set(h2_tls.stats()["versions"]) == {version}
