"""The response cache (issue 44): ``Client(cache=DIR)`` and ``sheaf get --cache DIR`` store every
GET answer that has a validator and ask for it again with it, so that a re-sync pays only for the
pages that changed. The server is GitHub-shaped (Tests/server/api_server.py ``etag=1``: a weak
ETag and a Last-Modified on every page, a 304 that costs no point of ``quota=``, ``/_edit`` to
change items), and hostile (``etag=unasked``, ``always``, ``nostore``, ``huge``)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path

import pytest

import sheaf
from conftest import expected_items, stats
from test_cli import cli_env, lines, run_cli

PAGES = dict(paging="page:page", size_param="per_page", page_size=10)
PATH = "/anchor?n=300&etag=1&quota=5000:3600"


def edit(api, ids: str) -> None:
    with urllib.request.urlopen(f"{api.base_url}/_edit?ids={ids}") as answer:
        assert answer.status == 200


def last_snapshot(client: sheaf.Client, path: str) -> sheaf.Snapshot:
    snapshot = None
    for snapshot in client.stream(path, **PAGES):
        pass
    assert snapshot is not None
    return snapshot


def test_a_resync_pays_only_for_the_pages_that_changed(api, tmp_path):
    folder = tmp_path / "cache"
    with sheaf.Client(api.base_url, token="t-cache", cache=folder) as client:
        first = client.fetch_all(PATH, **PAGES)
    assert first == expected_items(300)
    assert stats(api)["not_modified"] == 0
    with sheaf.Client(api.base_url, token="t-cache", cache=folder) as client:
        end = last_snapshot(client, PATH)
    assert stats(api)["not_modified"] == 30 and stats(api)["requests"] == 60
    assert end.requests_revalidated == 30 and end.requests_made == 30
    assert end.quota_remaining == 4970, "the second run spent no point"
    assert end.quota_reset is not None and 0 < end.quota_reset <= 3601  # a Unix time, rounded up
    edit(api, "5,6,150")   # pages 1 and 16
    with sheaf.Client(api.base_url, token="t-cache", cache=folder) as client:
        again = client.fetch_all(PATH, **PAGES)
        assert client.fetch_all(PATH, **PAGES) == again
    assert [item["name"] for item in again if item["name"].endswith("-edited")] == \
        ["item-5-edited", "item-6-edited", "item-150-edited"]
    # Two pages paid for, then none: 30 + 2 points in all.
    assert stats(api)["requests"] - stats(api)["not_modified"] == 32
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(path.stat().st_mode) == 0o600 for path in folder.iterdir())


def test_the_output_with_the_cache_equals_the_output_without(api, tmp_path):
    for path in ("/anchor?n=137&etag=1", "/conv/github?n=95&etag=1"):
        with sheaf.Client(api.base_url) as plain:
            expected = plain.fetch_all(path)
        for _ in range(2):
            with sheaf.Client(api.base_url, cache=tmp_path) as cached:
                assert cached.fetch_all(path) == expected, path


def test_hostile_validators_and_cache_headers(api, tmp_path):
    # A 304 to a request that sent no validator is no page: the list fails, never OK and short.
    with sheaf.Client(api.base_url, cache=tmp_path / "a", max_attempts=1) as client:
        with pytest.raises(sheaf.Error) as caught:
            client.fetch_all("/anchor?n=50&etag=unasked", **PAGES)
    assert "304" in caught.value.message, caught.value.message
    # Cache-Control: no-store is never stored: the second run asks for every page whole.
    unasked = stats(api)["not_modified"]
    for _ in range(2):
        with sheaf.Client(api.base_url, cache=tmp_path / "b") as client:
            assert client.fetch_all("/anchor?n=50&etag=nostore", **PAGES) == expected_items(50)
    assert stats(api)["not_modified"] == unasked
    assert [p for p in (tmp_path / "b").iterdir() if p.name.startswith("e-")] == []
    # A 4 KiB ETag is stored and sent back as it came.
    for _ in range(2):
        with sheaf.Client(api.base_url, cache=tmp_path / "c") as client:
            assert client.fetch_all("/anchor?n=50&etag=huge", **PAGES) == expected_items(50)
    assert stats(api)["not_modified"] == unasked + 5
    # Entries written by another key (a forged folder) are misses.
    folder = tmp_path / "c"
    (folder / "key").write_bytes(b"x" * 32)
    before = stats(api)["not_modified"]
    with sheaf.Client(api.base_url, cache=folder) as client:
        assert client.fetch_all("/anchor?n=50&etag=huge", **PAGES) == expected_items(50)
    assert stats(api)["not_modified"] == before


def test_a_folder_under_home_is_spelled_with_a_tilde(api, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    with sheaf.Client(api.base_url, cache="~/.cache/sheaf") as client:
        client.fetch_all("/anchor?n=20&etag=1", **PAGES)
    assert (tmp_path / ".cache" / "sheaf" / "key").is_file()


def test_a_folder_it_cannot_trust_is_refused(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(sheaf.UsageError, match="symbolic link"):
        sheaf.Client("http://127.0.0.1:9", cache=tmp_path / "link")
    (tmp_path / "file").write_text("")
    with pytest.raises(sheaf.UsageError, match="not a folder"):
        sheaf.Client("http://127.0.0.1:9", cache=tmp_path / "file")
    with pytest.raises(sheaf.UsageError, match="cache's size"):
        sheaf.Client("http://127.0.0.1:9", cache=tmp_path / "real", cache_max_bytes=100)
    with pytest.raises(sheaf.UsageError, match="NUL"):
        sheaf.Client("http://127.0.0.1:9", cache=str(tmp_path) + "/a\0b")


TWO_PROCESSES = textwrap.dedent("""
    import json, sys
    import sheaf
    base, folder, path = sys.argv[1:4]
    with sheaf.Client(base, token="t-shared", cache=folder) as client:
        items = client.fetch_all(path, paging="page:page", size_param="per_page", page_size=10)
    print(json.dumps([item["id"] for item in items]))
""")


def test_two_processes_share_one_cache_folder(api, tmp_path):
    folder = tmp_path / "shared"
    script = tmp_path / "one.py"
    script.write_text(TWO_PROCESSES)
    env = cli_env()

    def start(path: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, str(script), api.base_url, str(folder), path],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)

    for round_ in range(2):
        runs = [start("/anchor?n=400&etag=1"), start("/anchor?n=400&etag=1"), start("/anchor?n=200&etag=1&x=2")]
        outs = [run.communicate(timeout=60) for run in runs]
        assert [run.returncode for run in runs] == [0, 0, 0], [err for _, err in outs]
        assert [len(__import__("json").loads(out)) for out, _ in outs] == [400, 400, 200]
    # The second round found every page of the first: 40 + 20 pages answered 304 at least once each.
    assert stats(api)["not_modified"] >= 60
    assert not [p for p in folder.iterdir() if p.name.startswith("t-")], "no write left behind"


def test_the_cli_keeps_its_cache_in_the_folder_given_or_in_sheaf_cache(api, tmp_path):
    url = f"{api.base_url}/anchor?n=120&etag=1&per_page=20"
    first = run_cli(url, "--cache", str(tmp_path / "cli"), "--format", "jsonl")
    assert first.returncode == 0, first.stderr
    again = run_cli(url, "--format", "jsonl", "-v", env=cli_env(SHEAF_CACHE=str(tmp_path / "cli")))
    assert again.returncode == 0, again.stderr
    assert lines(again.stdout) == lines(first.stdout) == expected_items(120)
    assert stats(api)["not_modified"] == 6
    assert b" 304" in again.stderr, again.stderr   # -v shows each answer
    plain = run_cli(url, "--cache", "", "--format", "jsonl", env=cli_env(SHEAF_CACHE=str(tmp_path / "cli")))
    assert plain.returncode == 0 and stats(api)["not_modified"] == 6, "--cache '' turns it off"
    bad = run_cli(url, "--cache", str(tmp_path / "cli" / "key"))
    assert bad.returncode == 2 and b"not a folder" in bad.stderr, bad.stderr


def test_a_nightly_resync_of_a_newest_first_list_with_nothing_new_costs_one_304(api, tmp_path):
    # The incremental sync's bound (until=) ends the list at the first issue already synced; with
    # the cache, the page one that says so is a 304: no point, a few hundred bytes.
    import urllib.request as request
    with request.urlopen(request.Request(f"{api.base_url}/_orgs/sync/reset", method="POST"), timeout=10) as answer:
        answer.read()
    path = "/repos/sync/repo-114/issues?etag=1"
    with sheaf.Client(api.base_url, cache=tmp_path) as client:
        newest = client.fetch_all(path)[0]["id"]
    api.state.reset()
    with sheaf.Client(api.base_url, cache=tmp_path) as client:
        again = client.fetch_all(path, until=("/id", newest))
    assert list(again) == [] and again.stop_reason == sheaf.StopReason.BOUND
    seen = stats(api)
    assert seen["requests"] == 1 and seen["not_modified"] == 1, seen


# A folder that cannot be written to: the command runs as another user (root can write anywhere)
# or with a file-size limit (a full disk: writes past it fail with EFBIG).
NO_WRITES = textwrap.dedent("""
    import json, os, resource, signal, sys
    import sheaf
    base, folder, path, how = sys.argv[1:5]
    if how == "readonly":
        os.setgid(65534)
        os.setuid(65534)
    else:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))
    with sheaf.Client(base, cache=folder) as client:
        items = client.fetch_all(path, paging="page:page", size_param="per_page", page_size=10)
    print(json.dumps([item["id"] for item in items]))
""")


def run_without_writes(api, tmp_path, folder: Path, path: str, how: str) -> list:
    script = tmp_path / "no_writes.py"
    script.write_text(NO_WRITES)
    script.chmod(0o644)
    run = subprocess.run([sys.executable, str(script), api.base_url, str(folder), path, how],
                         capture_output=True, env=cli_env(), timeout=60)
    assert run.returncode == 0, run.stderr.decode(errors="replace")
    import json
    return json.loads(run.stdout)


def test_a_full_disk_stores_nothing_and_loses_nothing(api, tmp_path):
    folder = tmp_path / "full"
    path = "/anchor?n=60&etag=1&pad=200"     # pages of 2 KB, past the limit of 1,000 bytes
    for _ in range(2):
        assert run_without_writes(api, tmp_path, folder, path, "full") == list(range(60))
    assert stats(api)["not_modified"] == 0, "nothing could be stored"
    assert [p.name for p in folder.iterdir()] == ["key"], "no entry, and no temporary file left behind"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run the command as another user")
def test_a_read_only_folder_still_answers_from_what_it_holds(api, tmp_path):
    import shutil
    import tempfile
    # Not under tmp_path (pytest keeps it 0700): a folder of /tmp the other user can reach.
    outer = Path(tempfile.mkdtemp(prefix="sheaf-readonly-", dir="/tmp"))
    outer.chmod(0o755)
    try:
        readonly_folder(api, outer, outer / "cache")
    finally:
        shutil.rmtree(outer, ignore_errors=True)


def readonly_folder(api, scripts: Path, folder: Path) -> None:
    path = "/anchor?n=60&etag=1"
    with sheaf.Client(api.base_url, cache=folder) as client:
        client.fetch_all(path, **PAGES)
    for entry in [folder, *folder.iterdir()]:
        os.chown(entry, 65534, 65534)
    folder.chmod(0o500)
    before = sorted(p.name for p in folder.iterdir())
    api.state.reset()
    edit(api, "33")    # one page changed: fetched whole, and not stored
    assert run_without_writes(api, scripts, folder, path, "readonly") == list(range(60))
    assert stats(api)["not_modified"] == 5, "the unchanged pages were still revalidated"
    assert sorted(p.name for p in folder.iterdir()) == before
