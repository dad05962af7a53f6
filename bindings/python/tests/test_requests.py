"""Single requests from Python: methods, bodies, headers, auth by origin, server errors, redaction."""

from __future__ import annotations

import base64
import json
import os
import resource
import signal
import stat
import subprocess
import sys
import textwrap

import pytest

import sheaf

from conftest import REPO, stats
from test_memory import RSS_MEANINGFUL


def test_every_method_and_body_kind_reaches_the_server(api) -> None:
    with sheaf.Client(api.base_url, headers={"X-Client": "c", "X-Both": "client"}) as client:
        for method in ("GET", "PUT", "DELETE", "OPTIONS", "POST", "PATCH"):
            response = client.request(method, "/req/echo", params={"q": "a&b"}, headers={"X-Both": "request"})
            echo = response.json()
            assert response.status == 200 and response.ok
            assert echo["method"] == method
            assert echo["query"] == [["q", "a&b"]]
            assert echo["headers"]["x-client"] == ["c"] and echo["headers"]["x-both"] == ["request"]
            assert response.header("x-echo-method") == method
        assert client.head("/req/echo").content == b""
        echo = client.post("/req/echo", json={"name": "café", "n": [1, 2]}).json()
        assert echo["json"] == {"name": "café", "n": [1, 2]} and echo["content_type"] == "application/json"
        echo = client.put("/req/echo", data={"a b": "c&d", "many": ["1", "2"]}).json()
        assert echo["form"] == {"a b": ["c&d"], "many": ["1", "2"]}
        echo = client.patch("/req/echo", content=b"\x00\xffraw", content_type="application/x-raw").json()
        assert echo["body_length"] == 5 and echo["content_type"] == "application/x-raw"


def test_segments_are_escaped_whole_and_the_base_url_is_a_prefix(api) -> None:
    with sheaf.Client(api.base_url + "/req") as client:
        assert client.get("echo/x").json()["path"] == "/req/echo/x"
        assert client.get("/echo/x").json()["path"] == "/req/echo/x"
        assert client.get(("echo", "a/b c", 7)).json()["path"] == "/req/echo/a%2Fb%20c/7"


@pytest.mark.parametrize("shape, status, wanted", [
    ("plain", 400, "invalid_cursor"),
    ("drf", 403, "You do not have permission"),
    ("fastapi", 422, "body.name: Field required"),
    ("stripe", 400, "Missing required param: amount."),
    ("jsonapi", 422, "First name must contain at least two characters."),
    ("problem", 403, "Your current balance is 30"),
    ("github", 401, "Bad credentials"),
])
def test_a_failing_status_raises_with_the_servers_own_words(api, shape, status, wanted) -> None:
    with sheaf.Client(api.base_url) as client:
        with pytest.raises(sheaf.HTTPError) as raised:
            client.get(f"/req/error/{shape}")
        error = raised.value
        assert error.status == status and wanted in error.server_message and wanted in str(error)
        assert error.response is not None and error.response.status == status and error.response.json()
        unchecked = client.get(f"/req/error/{shape}", check=False)
        assert unchecked.status == status and not unchecked.ok


def test_post_is_retried_only_when_asked(api) -> None:
    with sheaf.Client(api.base_url, retry_base=0.001) as client:
        assert client.get("/req/flaky?fails=1&key=py-get").ok
        with pytest.raises(sheaf.HTTPError) as raised:
            client.post("/req/flaky?fails=1&key=py-post", json={})
        assert raised.value.status == 503
        assert client.post("/req/flaky?fails=1&key=py-post-retry", json={}, retry=True).ok
        assert client.post("/req/flaky?fails=1&key=py-post-key", json={}, headers={"Idempotency-Key": "k"}).ok


@pytest.mark.parametrize("auth, header, expected", [
    ("t0ken-abc", "authorization", "Bearer t0ken-abc"),
    (("Aladdin", "open sesame"), "authorization", "Basic " + base64.b64encode(b"Aladdin:open sesame").decode()),
    (sheaf.ApiKey("X-Api-Key", "k3y-header-1"), "x-api-key", "k3y-header-1"),
])
def test_credentials_go_only_to_their_origin(api, other_api, auth, header, expected) -> None:
    with sheaf.Client(api.base_url, auth=auth) as client:
        assert client.get("/req/echo").json()["headers"][header] == [expected]
        with pytest.raises(sheaf.PolicyError):
            client.get(other_api.base_url + "/req/echo")
    with sheaf.Client(api.base_url, auth=auth, follow_cross_origin=True) as client:
        echo = client.get(other_api.base_url + "/req/echo").json()
        assert header not in echo["headers"] or expected not in echo["headers"][header]
        assert "authorization" not in echo["headers"]


def test_an_api_key_in_the_query_is_sent_and_never_shown(api) -> None:
    with sheaf.Client(api.base_url, auth=sheaf.ApiKey("appid", "q-secret-77", where="query")) as client:
        response = client.get("/req/echo")
        assert response.json()["query"] == [["appid", "q-secret-77"]]
        assert "q-secret-77" not in response.url
        with pytest.raises(sheaf.HTTPError) as raised:
            client.get("/req/echo?status=401")
        error = raised.value
        for text in (str(error), error.url, error.body):
            assert "q-secret-77" not in text


def test_secret_query_parameters_are_hidden_in_messages(api) -> None:
    with sheaf.Client(api.base_url, secret_params=["session"]) as client:
        with pytest.raises(sheaf.HTTPError) as raised:
            client.get("/req/echo?status=400&access_token=tok-aaaa-1111&session=sess-bbbb-2222&page=2")
        error = raised.value
        for text in (str(error), error.url, error.body):
            assert "tok-aaaa-1111" not in text and "sess-bbbb-2222" not in text
        assert "page=2" in error.url


def test_bad_requests_are_refused_before_sending(api) -> None:
    with sheaf.Client(api.base_url) as client:
        for method, options in (("GE T", {}), ("GET", {"headers": {"X-Evil": "a\r\nb: c"}}),
                                ("GET", {"headers": {"Bad Name": "v"}}), ("GET", {"json": {}}),
                                ("POST", {"json": {}, "content": b"x"})):
            with pytest.raises(sheaf.UsageError):
                client.request(method, "/req/echo", **options)
    with pytest.raises(sheaf.UsageError):
        sheaf.Client(api.base_url, auth=("user:colon", "pw"))
    with pytest.raises(sheaf.UsageError):
        sheaf.Client(api.base_url, headers={"X": "a\nb"})
    with pytest.raises(sheaf.UsageError):
        sheaf.Client(api.base_url, token="a", auth="b")


NUL_SECRET = "abc\0s3cret-after-the-nul"   # C would read "abc": a credential cut short


def sent_with_a_nul(api) -> list:
    """The requests of these tests that reached the server (a list's stray requests from the
    tests before may still arrive, so counting all requests would not do)."""
    return [entry for entry in api.state.snapshot()["log"] if "sent=nul" in entry["path"]]


@pytest.mark.parametrize("options", [
    {"token": NUL_SECRET}, {"auth": NUL_SECRET}, {"auth": ("user", NUL_SECRET)},
    {"auth": sheaf.ApiKey("X-Api-Key", NUL_SECRET)}, {"auth": sheaf.ApiKey("appid", NUL_SECRET, where="query")},
    {"headers": {"Authorization": "Bearer " + NUL_SECRET}},
])
def test_a_client_credential_with_a_nul_is_refused_not_cut_short(api, options) -> None:
    with pytest.raises(sheaf.UsageError) as refused:
        with sheaf.Client(api.base_url, **options) as client:
            client.get("/req/echo?sent=nul")
    assert "s3cret" not in str(refused.value) and "NUL" in str(refused.value)
    assert not sent_with_a_nul(api)


@pytest.mark.parametrize("send", [
    lambda client: client.get("/req/echo?sent=nul", headers={"X-Api-Key": NUL_SECRET}),
    lambda client: client.fetch_all("/anchor?n=10&sent=nul", headers={"X-Api-Key": NUL_SECRET}),
])
def test_a_header_value_with_a_nul_is_refused_not_cut_short(api, send) -> None:
    with sheaf.Client(api.base_url) as client:
        with pytest.raises(sheaf.UsageError) as refused:
            send(client)
    assert "s3cret" not in str(refused.value) and "NUL" in str(refused.value)
    assert not sent_with_a_nul(api)


def test_a_token_provider_answer_with_a_nul_is_refused_not_cut_short(api) -> None:
    with sheaf.Client(api.base_url, token_provider=lambda refresh: NUL_SECRET) as client:
        with pytest.raises(sheaf.CredentialError) as refused:
            client.get("/req/echo?sent=nul")
    assert "s3cret" not in str(refused.value) and "NUL" in str(refused.value)
    assert not sent_with_a_nul(api)


def test_a_ca_file_that_does_not_exist_fails_the_request_not_the_process(api) -> None:
    # The file is read when a TLS connection is made; plain http never reads it.
    with sheaf.Client("https://127.0.0.1:9/", verify="/nonexistent/ca.pem", timeout=5) as client:
        with pytest.raises(sheaf.TransportError):
            client.get("/x")


def test_list_pages_carry_the_lists_headers(api) -> None:
    with sheaf.Client(api.base_url, headers={"Authorization": "Bearer client"}) as client:
        items = client.fetch_all("/anchor?n=30&per_page=10", headers={"Authorization": "Bearer list"})
        assert len(items) == 30
    log = stats(api)["log"]
    assert len(log) == 3 and {entry["authorization"] for entry in log} == {"Bearer list"}


# ---- downloads --------------------------------------------------------------------------------

def pattern(size: int) -> bytes:
    return bytes(i % 251 for i in range(size))


def test_a_download_reports_progress_and_appears_when_complete(api, tmp_path) -> None:
    target = tmp_path / "deep" / "er" / "file.bin"
    seen = []
    with sheaf.Client(api.base_url) as client:
        response = client.download("/req/download?size=3000000&key=py-progress", target,
                                   progress=lambda done, expected: seen.append((done, expected)))
        assert response.status == 200 and response.content == b""
        assert target.read_bytes() == pattern(3_000_000)
        assert seen[-1] == (3_000_000, 3_000_000)
        assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:]))
        target.write_bytes(b"old")
        with pytest.raises(sheaf.HTTPError):
            client.download("/req/error/github", target)
        with pytest.raises(sheaf.UsageError):
            client.download("/req/download?size=1", tmp_path)
        assert target.read_bytes() == b"old" and not (tmp_path / "deep" / "er" / "file.bin.part").exists()


def _download_in_a_child(api, target, size: int, preexec=None) -> subprocess.CompletedProcess:
    script = textwrap.dedent(f"""
        import sheaf, sys
        try:
            with sheaf.Client({api.base_url!r}) as client:
                client.download("/req/download?size={size}", {str(target)!r})
        except sheaf.FileError as error:
            print("FileError", error.code, error.message)
            sys.exit(3)
        # VmHWM: this program's own peak. ru_maxrss also counts the forked test runner's before exec.
        with open("/proc/self/status") as status:
            print("peak-rss-kb", next(line.split()[1] for line in status if line.startswith("VmHWM:")))
    """)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                          env=child_env(), preexec_fn=preexec)


def child_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "bindings" / "python"), env.get("PYTHONPATH")]))
    return env


@pytest.mark.skipif(not RSS_MEANINGFUL, reason="RSS means nothing under a sanitizer")
def test_a_one_gibibyte_download_keeps_memory_flat(api, tmp_path) -> None:
    target = tmp_path / "big.bin"
    result = _download_in_a_child(api, target, 1 << 30)
    assert result.returncode == 0, result.stderr + result.stdout
    peak_kb = int(result.stdout.split()[-1])
    assert target.stat().st_size == 1 << 30
    with open(target, "rb") as file:   # spot checks: the start, a period boundary, the end
        assert file.read(502) == pattern(502)
        file.seek((1 << 30) - 251)
        start = (1 << 30) - 251
        assert file.read() == bytes((start + i) % 251 for i in range(251))
    assert peak_kb < 150_000, f"peak RSS {peak_kb} KB for a 1 GiB download"
    target.unlink()


def test_a_full_disk_is_a_file_error_and_leaves_nothing_behind(api, tmp_path) -> None:
    # The file size limit stands in for a full disk: write() fails with EFBIG past 1 MB.
    def limit_file_size() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))

    target = tmp_path / "full.bin"
    target.write_bytes(b"old")
    result = _download_in_a_child(api, target, 5 << 20, preexec=limit_file_size)
    assert result.returncode == 3, result.stderr + result.stdout
    assert f"FileError {sheaf.Result.IO.value}" in result.stdout and ".full.bin.sheaf-" in result.stdout
    assert target.read_bytes() == b"old" and leftovers(tmp_path, "full.bin") == []


# ---- downloads against a hostile file system or a misbehaving server ---------------------------

def leftovers(folder, *keep) -> list:
    """What a download left in `folder` besides `keep`: temporary files, part files."""
    return sorted(p.name for p in folder.iterdir() if p.name not in keep)


def test_a_link_planted_at_the_part_name_never_redirects_the_write(api, tmp_path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"secret")
    target = tmp_path / "file.bin"
    os.symlink(victim, tmp_path / "file.bin.part")
    with sheaf.Client(api.base_url) as client:
        with pytest.raises(sheaf.HTTPError):
            client.download("/req/error/github", target)
        assert victim.read_bytes() == b"secret"
        client.download("/req/download?size=5000", target)
    assert victim.read_bytes() == b"secret"
    assert not target.is_symlink() and target.read_bytes() == pattern(5000)
    assert leftovers(tmp_path, "victim", "file.bin", "file.bin.part") == []


def test_a_link_at_the_destination_is_replaced_not_followed(api, tmp_path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"secret")
    target = tmp_path / "file.bin"
    os.symlink(victim, target)
    with sheaf.Client(api.base_url) as client:
        client.download("/req/download?size=5000", target)
    assert victim.read_bytes() == b"secret"
    assert not target.is_symlink() and target.read_bytes() == pattern(5000)


def test_concurrent_downloads_to_one_destination_each_write_their_own_file(api, tmp_path) -> None:
    import threading

    target = tmp_path / "shared.bin"
    sizes = (6_000_000, 5_000_000)
    for _ in range(3):
        barrier = threading.Barrier(len(sizes))
        outcomes: dict = {}

        def fetch(size: int) -> None:
            with sheaf.Client(api.base_url) as client:
                barrier.wait()
                try:
                    outcomes[size] = client.download(f"/req/download?size={size}", target).status
                except sheaf.Error as error:
                    outcomes[size] = error
        threads = [threading.Thread(target=fetch, args=(size,)) for size in sizes]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert outcomes == {size: 200 for size in sizes}
        assert target.read_bytes() in (pattern(sizes[0]), pattern(sizes[1]))
        assert leftovers(tmp_path, "shared.bin") == []
    # A failed download removes its own temporary file, and only that.
    with sheaf.Client(api.base_url, max_attempts=1) as client:
        with pytest.raises(sheaf.TransportError):
            client.download("/req/download?size=5000&lie=100", target)
    assert leftovers(tmp_path, "shared.bin") == []


def _device_like_dev_null(tmp_path):
    """A character device to download onto: a private copy of /dev/null when root may make one
    (so that a failing test cannot replace the system's), else /dev/null itself (which a user
    other than root cannot replace)."""
    if os.geteuid() != 0:
        return "/dev/null"
    device = tmp_path / "null"
    os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    return device


def test_a_destination_that_is_not_a_regular_file_is_refused(api, tmp_path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    device = _device_like_dev_null(tmp_path)
    link_to_fifo = tmp_path / "link"
    os.symlink(fifo, link_to_fifo)
    with sheaf.Client(api.base_url) as client:
        for destination, kind in ((fifo, "FIFO"), (device, "character device"), (link_to_fifo, "FIFO")):
            with pytest.raises(sheaf.UsageError) as caught:
                client.download("/req/download?size=5000", destination)
            assert f"is a {kind}" in caught.value.message and "not a regular file" in caught.value.message
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and stat.S_ISCHR(os.lstat(device).st_mode)
    assert os.path.islink(link_to_fifo)
    assert leftovers(tmp_path, "fifo", "null", "link") == []


def test_a_download_keeps_the_mode_of_the_file_it_replaces(api, tmp_path) -> None:
    private = tmp_path / "private.bin"
    private.write_bytes(b"old")
    os.chmod(private, 0o600)
    fresh = tmp_path / "fresh.bin"
    old_umask = os.umask(0o027)
    try:
        with sheaf.Client(api.base_url) as client:
            client.download("/req/download?size=5000", private)
            client.download("/req/download?size=5000", fresh)
    finally:
        os.umask(old_umask)
    assert private.read_bytes() == pattern(5000) and oct(private.stat().st_mode & 0o7777) == oct(0o600)
    assert oct(fresh.stat().st_mode & 0o7777) == oct(0o666 & ~0o027)


def test_a_part_of_the_file_for_a_request_of_all_of_it_is_refused(api, tmp_path) -> None:
    target = tmp_path / "file.bin"
    target.write_bytes(b"old")
    with sheaf.Client(api.base_url) as client:
        with pytest.raises(sheaf.TransportError) as caught:
            client.download("/req/download?size=200000&part=1000", target)
    assert "part of the file" in caught.value.message and "bytes 0-999/200000" in caught.value.message
    assert target.read_bytes() == b"old" and leftovers(tmp_path, "file.bin") == []


def test_a_resumed_range_of_another_version_is_never_appended(api, tmp_path) -> None:
    target = tmp_path / "file.bin"
    version_2 = bytes((i + 1) % 251 for i in range(700_000))
    with sheaf.Client(api.base_url, retry_base=0.001) as client:
        # A server that honours If-Range sends the new version whole: it is saved, alone.
        client.download("/req/download?size=700000&cut=300000&changes=1&key=py-v2-200", target)
        assert target.read_bytes() == version_2
        target.write_bytes(b"old")
        # One that ignores it sends a 206 of the new version: not spliced onto the old one.
        with pytest.raises(sheaf.TransportError) as caught:
            client.download("/req/download?size=700000&cut=300000&changes=1&ifrange=0&key=py-v2-206", target)
    message = caught.value.message
    assert "changed" in message and '"sheaf-700000"' in message and '"sheaf-700000-v2"' in message
    assert target.read_bytes() == b"old" and leftovers(tmp_path, "file.bin") == []


def test_a_compressed_download_is_saved_as_served(api, tmp_path) -> None:
    import gzip

    target = tmp_path / "bomb.gz"
    with sheaf.Client(api.base_url) as client:
        client.download("/req/gzip-bomb?size=67108864", target)
        echo = client.download("/req/echo", tmp_path / "echo.json")
    saved = target.read_bytes()
    assert len(saved) < 1 << 20 and saved[:2] == b"\x1f\x8b"
    assert gzip.decompress(saved) == bytes(64 << 20)
    assert echo.status == 200
    assert "accept-encoding" not in json.loads((tmp_path / "echo.json").read_bytes())["headers"]


@pytest.mark.parametrize("method", ["POST", "PATCH"])
def test_a_request_the_server_read_before_dropping_a_reused_connection_is_sent_once(api, method) -> None:
    # The server reads the request on a kept-alive connection, then closes it without a word: the
    # request may have taken effect, so nothing may send it again unasked (libcurl would, on a
    # fresh connection, for a reused connection that died before answering).
    path = f"/req/drop?key=reused-{method}"
    with sheaf.Client(api.base_url, http_version="1.1", max_attempts=1) as client:
        assert client.get("/req/echo").ok   # leaves a connection open for the next request
        with pytest.raises(sheaf.TransportError):
            client.request(method, path, json={"n": 1})
    assert [entry["path"] for entry in stats(api)["log"]].count(path) == 1


def test_a_get_on_a_dropped_reused_connection_is_still_answered(api) -> None:
    # Idempotent requests keep the connection reuse (and libcurl's fresh-connect retry of them).
    with sheaf.Client(api.base_url, http_version="1.1", max_attempts=1) as client:
        for _ in range(3):
            assert client.get("/req/echo").ok


def test_a_redirect_to_another_origin_carries_no_secret_query_parameter(api, other_api) -> None:
    key = "q-secret-redirected-91"
    elsewhere = f"{other_api.base_url}/req/echo?appid={key}&session=sess-cc-33&page=2&signature=presigned-sig"
    auth = sheaf.ApiKey("appid", key, where="query")
    with sheaf.Client(api.base_url, auth=auth, follow_cross_origin=True, secret_params=["session"]) as client:
        # The Location echoes the key (and a parameter the client marks secret).
        response = client.get("/req/redirect", params={"code": "302", "to": elsewhere})
        assert response.status == 200
        query = dict(response.json()["query"])
        assert "appid" not in query and "session" not in query
        # Other parameters, the built-in secret names among them (a presigned URL's signature
        # is what lets the other origin answer), go as they are.
        assert query["page"] == "2" and query["signature"] == "presigned-sig"
        # At the same origin the redirect keeps the key.
        same = client.get("/req/redirect", params={"code": "302", "to": f"/req/echo?appid={key}&session=s-1"})
        assert dict(same.json()["query"]) == {"appid": key, "session": "s-1"}
    log = " ".join(entry["path"] for entry in stats(other_api)["log"])
    assert "/req/echo" in log and key not in log and "sess-cc-33" not in log
    assert key in " ".join(entry["path"] for entry in stats(api)["log"])
