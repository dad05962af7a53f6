"""HTTP/2: a list's window multiplexed over one connection (h2 over TLS by ALPN, h2c by prior
knowledge when asked), HTTP/1.1 when asked or when the server offers nothing else."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator, Tuple

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


# A server that rotates its connections (GOAWAY) or resets a stream (RST_STREAM): a stream the
# server did not process is asked for again, as a reset connection is.

ROTATED = "/anchor?n=400&per_page=10"     # 40 pages, answered at once: the requests race the GOAWAY
ROTATED_ITEMS = [{"id": i, "name": f"item-{i}"} for i in range(400)]


def _fetch_rotated(server: H2Server, pki: Path, path: str = ROTATED) -> Tuple[float, dict]:
    server.reset()
    started = time.monotonic()
    with sheaf.Client(server.base_url, concurrency=8, adaptive_window=False, timeout=20,
                      verify=str(pki / "ca.pem")) as client:
        assert client.fetch_all(path, **PAGED) == ROTATED_ITEMS
    return time.monotonic() - started, server.stats()


@pytest.fixture
def rotating_abruptly(pki: Path) -> Iterator[H2Server]:
    server = H2Server(str(pki / "server.pem"), str(pki / "server.key"), goaway_every=10, abrupt=True)
    yield server
    server.close()


@pytest.fixture
def hypercorn_rotating(pki: Path) -> Iterator[H2Server]:
    server = H2Server(str(pki / "server.pem"), str(pki / "server.key"), max_requests_per_connection=10)
    yield server
    server.close()


@pytest.fixture
def rotating(pki: Path) -> Iterator[H2Server]:
    server = H2Server(str(pki / "server.pem"), str(pki / "server.key"), goaway_every=10)
    yield server
    server.close()


@pytest.fixture
def resetting(pki: Path) -> Iterator[H2Server]:
    server = H2Server(str(pki / "server.pem"), str(pki / "server.key"), reset_pages=[5])
    yield server
    server.close()


def test_a_list_over_connections_closed_after_a_goaway_every_10_requests_completes(pki, rotating_abruptly) -> None:
    # The streams in flight when a connection goes away fail (curl errors 16 and 92): asked for again.
    for _ in range(3):      # which streams are lost depends on timing: a few tries
        took, seen = _fetch_rotated(rotating_abruptly, pki)
        assert seen["goaways"] >= 3 and seen["versions"] == {"2": seen["requests"]}
        assert took < 2, seen


def test_a_list_over_connections_hypercorn_rotates_every_10_requests_completes(pki, hypercorn_rotating) -> None:
    # Hypercorn's rotation breaks the framing of the streams in flight (curl error 16): asked for
    # again. It also leaves some unanswered on a connection it keeps open: a short timeout ends them.
    for _ in range(2):
        hypercorn_rotating.reset()
        with sheaf.Client(hypercorn_rotating.base_url, concurrency=8, adaptive_window=False, timeout=1,
                          verify=str(pki / "ca.pem")) as client:
            assert client.fetch_all(ROTATED, **PAGED) == ROTATED_ITEMS
        assert hypercorn_rotating.stats()["requests"] >= 40


def test_a_list_over_connections_rotated_by_a_graceful_goaway_every_10_requests_completes(pki, rotating) -> None:
    took, seen = _fetch_rotated(rotating, pki)
    assert seen["goaways"] >= 3 and seen["connections"] >= 4
    assert took < 2, seen


def test_a_stream_reset_on_page_5_is_asked_for_again(pki, resetting) -> None:
    events: list = []
    resetting.reset()
    with sheaf.Client(resetting.base_url, concurrency=8, adaptive_window=False, timeout=20,
                      verify=str(pki / "ca.pem"), on_event=events.append) as client:
        assert client.fetch_all(ROTATED, **PAGED) == ROTATED_ITEMS
    seen = resetting.stats()
    assert seen["resets"] == 1
    assert seen["requests"] == 40       # the reset request is not counted: the server never answered it
    retried = [event for event in events if event.kind == "retrying"]
    assert [event.url.endswith("page=5") for event in retried] == [True]


def test_a_post_whose_stream_is_reset_is_not_sent_again(pki, resetting) -> None:
    resetting.reset()
    with sheaf.Client(resetting.base_url, verify=str(pki / "ca.pem")) as client:
        with pytest.raises(sheaf.TransportError, match="curl error 92"):
            client.post("/anchor?n=400&per_page=10&page=5", json={"a": 1})
        assert client.get("/anchor?n=400&per_page=10&page=5").json()["items"] == ROTATED_ITEMS[40:50]
    assert resetting.stats()["resets"] == 1


# A server that takes at most 6 connections per client and answers 503 past them (as gateways
# do): HTTP/2 takes the whole window over one connection; HTTP/1.1 is held to 6 in flight, and
# the window learns it from the 503s, which are asked for again.

LIMITED = "/anchor?n=600&per_page=10&latency_ms=100"     # 60 pages
LIMITED_ITEMS = [{"id": i, "name": f"item-{i}"} for i in range(600)]


@pytest.fixture(scope="module")
def six_connections(pki: Path) -> Iterator[H2Server]:
    server = H2Server(str(pki / "server.pem"), str(pki / "server.key"), max_connections=6)
    yield server
    server.close()


def test_past_six_connections_http2_takes_the_adaptive_window_over_one_and_meets_no_503(pki, six_connections) -> None:
    six_connections.reset()
    with sheaf.Client(six_connections.base_url, timeout=20, verify=str(pki / "ca.pem")) as client:
        assert client.fetch_all(LIMITED, **PAGED) == LIMITED_ITEMS
    seen = six_connections.stats()
    assert seen["connections"] == 1 and seen["refused"] == 0
    assert seen["max_in_flight"] > 6, seen
    assert seen["versions"] == {"2": seen["requests"]}


def test_past_six_connections_http_1_1_retries_the_503s_and_the_window_settles_under_the_limit(
        pki, six_connections) -> None:
    six_connections.reset()
    with sheaf.Client(six_connections.base_url, timeout=20, verify=str(pki / "ca.pem"),
                      http_version="1.1") as client:
        assert client.fetch_all(LIMITED, **PAGED) == LIMITED_ITEMS
    seen = six_connections.stats()
    assert seen["versions"] == {"1.1": seen["requests"]}
    assert seen["max_in_flight"] == 6
    assert 1 <= seen["refused"] <= 10, seen         # the window's first tries past 6, then rare probes
    assert seen["requests"] == 60 + seen["refused"]
