"""TLS: a private CA (a file, a directory, $SSL_CERT_FILE), the insecure mode, client certificates."""

from __future__ import annotations

import shutil
import ssl
from pathlib import Path
from typing import Iterator

import pytest

import sheaf
from api_server import start_server

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")


def _https(pki: Path, require_client_cert: bool = False):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki / "server.pem", pki / "server.key")
    if require_client_cert:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(pki / "ca.pem")
    server, _thread = start_server(port=0, tls=context)
    return server


@pytest.fixture(scope="module")
def https(pki: Path) -> Iterator[object]:
    server = _https(pki)
    yield server
    server.shutdown_and_close()


def test_a_private_ca_is_trusted_only_when_named(pki, https) -> None:
    with sheaf.Client(https.base_url, timeout=10) as client:
        with pytest.raises(sheaf.TransportError) as raised:
            client.get("/req/echo")
        assert "certificate" in str(raised.value).lower() or "ssl" in str(raised.value).lower()
    with sheaf.Client(https.base_url, verify=str(pki / "ca.pem")) as client:
        assert client.get("/req/echo").json()["method"] == "GET"
        assert client.fetch_all("/anchor?n=12&per_page=5") == [{"id": i, "name": f"item-{i}"} for i in range(12)]
    with sheaf.Client(https.base_url, verify=False) as client:
        assert client.get("/req/echo").ok


def test_ssl_cert_file_is_honoured(pki, https, monkeypatch) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(pki / "ca.pem"))
    with sheaf.Client(https.base_url) as client:
        assert client.get("/req/echo").ok


def test_a_client_certificate_is_presented_when_given(pki) -> None:
    server = _https(pki, require_client_cert=True)
    try:
        ca = str(pki / "ca.pem")
        with sheaf.Client(server.base_url, verify=ca, timeout=10, max_attempts=1) as client:
            with pytest.raises(sheaf.TransportError):
                client.get("/req/echo")
        with sheaf.Client(server.base_url, verify=ca, cert=(str(pki / "client.pem"), str(pki / "client.key"))) as client:
            assert client.get("/req/echo").ok
    finally:
        server.shutdown_and_close()
