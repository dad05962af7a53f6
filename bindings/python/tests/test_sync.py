"""Incremental sync: a bound on a newest-first list (``until=``, ``--until``), a server-side
filter (``since=``, ``--since-param``), the state a run reports, and ``sheaf get --state``.

The lists are an org's repository issues (Tests/server/org_api.py): newest first by updated_at,
ten a page, and ``?add=N`` adds N issues newer than all the others.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any, Dict, List

import pytest

import sheaf
from conftest import stats

REPO = Path(__file__).resolve().parents[3]
LIBRARY = os.environ.get("SHEAF_LIBRARY_PATH") or str(REPO / "build" / "lib" / "libsheaf.so.1")
sys.path.insert(0, str(REPO / "Tests" / "server"))
import org_api  # noqa: E402

#: Repositories of the org "sync" with 12 pages of issues, in two conventions: a total and page
#: numbers in the body (a parallel plan), and next links in the body (one page after another).
NUMBERED, LINKED = 114, 10


def issues_path(org: str, repo: int) -> str:
    return f"/repos/{org}/{org_api.repo_name(repo)}/issues"


def newest_first(server, org: str, repo: int) -> List[Dict[str, Any]]:
    """The repository's issues as the server holds them now, newest first."""
    return org_api.newest_first(server.orgs.issues(org, repo))


def add_issues(server, org: str, repo: int, n: int) -> None:
    request = urllib.request.Request(f"{server.base_url}/_orgs/{org}/repos/{org_api.repo_name(repo)}/issues?add={n}",
                                     method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        response.read()


@pytest.fixture
def org(api):
    """The org "sync", without the issues an earlier test added (the server keeps them)."""
    request = urllib.request.Request(f"{api.base_url}/_orgs/sync/reset", method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        response.read()
    api.state.reset()
    return "sync"


# ---- the library ---------------------------------------------------------------------------


@pytest.mark.parametrize("repo", [NUMBERED, LINKED])
def test_until_stops_at_the_first_issue_at_or_below_the_bound(api, org, repo):
    every = newest_first(api, org, repo)
    bound = every[25]["id"]
    with sheaf.Client(api.base_url) as client:
        items = client.fetch_all(issues_path(org, repo), until=("/id", bound))
    assert items == every[:25]
    assert items.stop_reason == sheaf.StopReason.BOUND
    assert items.resume_token is None
    assert items.sync_state["field"] == "/id"
    assert items.sync_state["value"] == every[0]["id"]
    assert items.sync_state["list"] == f"{api.base_url}{issues_path(org, repo)}"
    # Page one alone, then a page in flight per page delivered: the bound is on page 3.
    assert stats(api)["requests"] <= 3 + 2


def test_timestamps_bound_a_list_as_strings(api, org):
    every = newest_first(api, org, NUMBERED)
    with sheaf.Client(api.base_url) as client:
        items = client.fetch_all(issues_path(org, NUMBERED), until=("/updated_at", every[12]["updated_at"]))
    assert items == every[:12]
    assert items.sync_state["value"] == every[0]["updated_at"]


def test_a_bound_no_issue_reaches_completes_and_reports_the_newest(api, org):
    every = newest_first(api, org, NUMBERED)
    with sheaf.Client(api.base_url) as client:
        items = client.fetch_all(issues_path(org, NUMBERED), until=("/id", 0))
    assert items == every
    assert items.stop_reason == sheaf.StopReason.COMPLETE
    assert items.sync_state["value"] == every[0]["id"]


def test_nothing_new_reports_the_old_bound_after_one_request(api, org):
    every = newest_first(api, org, NUMBERED)
    with sheaf.Client(api.base_url) as client:
        items = client.fetch_all(issues_path(org, NUMBERED), until=("/id", every[0]["id"]))
    assert items == []
    assert items.sync_state["value"] == every[0]["id"]
    assert stats(api)["requests"] == 1


def test_since_is_sent_on_the_first_request_and_the_greatest_value_recorded(api, org):
    add_issues(api, org, NUMBERED, 3)
    every = newest_first(api, org, NUMBERED)
    since = every[2]["updated_at"]
    with sheaf.Client(api.base_url) as client:
        items = client.fetch_all(issues_path(org, NUMBERED), since=("since", "/updated_at", since))
    assert items == every[:3]   # the server's since is inclusive: the issue at it comes again
    assert items.sync_state == {"list": f"{api.base_url}{issues_path(org, NUMBERED)}", "field": "/updated_at",
                                "value": every[0]["updated_at"]}
    assert f"since={since.replace(':', '%3A')}" in stats(api)["log"][0]["path"]


def test_a_stream_reports_its_state_through_the_snapshots_taken(api, org):
    every = newest_first(api, org, LINKED)
    with sheaf.Client(api.base_url) as client:
        with client.stream(issues_path(org, LINKED), until=("/id", every[15]["id"])) as stream:
            taken = [item for snapshot in stream for item in snapshot.items]
            assert stream.stop_reason == sheaf.StopReason.BOUND
            assert stream.sync_state["value"] == every[0]["id"]
    assert taken == every[:15]


def test_the_description_spells_until_and_since_in_the_librarys_json():
    described = sheaf.Description(until=("/id", 12345678901234567890), since=("since", "/id", None))
    document = json.loads(described.to_json())
    assert document["until"] == {"pointer": "/id", "value": 12345678901234567890}
    assert document["since"] == {"param": "since", "pointer": "/id", "value": None}
    back = sheaf.Description.from_json(json.dumps(document | {"paging": {}, "signals": {}}))
    assert back.until == ("/id", 12345678901234567890)
    assert back.since == ("since", "/id", None)


@pytest.mark.parametrize("options, words", [
    (dict(until=("/id",)), "until must be (pointer, value)"),
    (dict(until=("/id", True)), "until's value must be a number or a str"),
    (dict(until=("id", 3)), "/until/pointer"),
    (dict(since=("since", "/a"), until=("/b", 1)), "/since/pointer"),
    (dict(since=("", "/a")), "/since/param"),
])
def test_bad_sync_options_are_refused_naming_what_is_wrong(api, options, words):
    with sheaf.Client(api.base_url) as client:
        with pytest.raises(sheaf.UsageError) as refused:
            client.fetch_all("/anchor?n=10", **options)
    assert words in str(refused.value)
    assert stats(api)["requests"] == 0


# ---- sheaf get --state ----------------------------------------------------------------------


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO / "bindings" / "python"), SHEAF_LIBRARY_PATH=LIBRARY)
    env.pop("SHEAF_TOKEN", None)
    return subprocess.run([sys.executable, "-m", "sheaf", "get", *args], capture_output=True, timeout=60, env=env,
                          cwd=REPO, stdin=subprocess.DEVNULL)


def lines(stdout: bytes) -> List[Any]:
    return [json.loads(line) for line in stdout.decode().splitlines()]


def test_cli_state_first_run_fetches_everything_then_only_the_new_issues_by_until(api, org, tmp_path):
    state = tmp_path / "issues.state"
    url = api.base_url + issues_path(org, NUMBERED)
    first = run_cli(url, "--until", "/id=0", "--state", str(state))
    assert first.returncode == 0, first.stderr
    every = newest_first(api, org, NUMBERED)
    assert lines(first.stdout) == every
    stored = json.loads(state.read_text())
    assert stored == {"version": 1, "lists": {url: {"field": "/id", "value": every[0]["id"]}}}

    add_issues(api, org, NUMBERED, 13)   # two pages' worth at the top
    api.state.reset()
    second = run_cli(url, "--until", "/id=0", "--state", str(state))
    assert second.returncode == 0, second.stderr
    now = newest_first(api, org, NUMBERED)
    assert lines(second.stdout) == now[:13]
    assert stats(api)["requests"] <= 2 + 1, "only the pages holding new issues, and one more at most"
    assert json.loads(state.read_text())["lists"][url]["value"] == now[0]["id"]

    api.state.reset()
    third = run_cli(url, "--until", "/id=0", "--state", str(state))
    assert (third.returncode, third.stdout) == (0, b"")
    assert stats(api)["requests"] == 1


def test_cli_state_by_since_param_asks_the_server_for_the_new_issues_only(api, org, tmp_path):
    state = tmp_path / "issues.state"
    url = api.base_url + issues_path(org, LINKED)
    flags = ["--since-param", "since", "--since-field", "/updated_at", "--state", str(state)]
    first = run_cli(url, *flags)
    assert first.returncode == 0, first.stderr
    every = newest_first(api, org, LINKED)
    assert lines(first.stdout) == every
    assert "since=" not in stats(api)["log"][0]["path"], "a first run has nothing to filter by"

    add_issues(api, org, LINKED, 12)
    api.state.reset()
    second = run_cli(url, *flags)
    assert second.returncode == 0, second.stderr
    now = newest_first(api, org, LINKED)
    # The server's since is inclusive (as GitHub's): the issue the last run ended at comes again.
    assert lines(second.stdout) == now[:13]
    log = [entry["path"] for entry in stats(api)["log"]]
    assert "since=" + every[0]["updated_at"].replace(":", "%3A") in log[0]
    assert len(log) <= 2 + 1
    assert json.loads(state.read_text())["lists"][url] == {"field": "/updated_at", "value": now[0]["updated_at"]}


def test_cli_a_corrupt_state_file_is_refused_naming_it(api, org, tmp_path):
    state = tmp_path / "broken.state"
    state.write_text("{not json")
    result = run_cli(api.base_url + issues_path(org, NUMBERED), "--until", "/id=0", "--state", str(state))
    assert result.returncode == 2
    assert str(state) in result.stderr.decode()
    assert state.read_text() == "{not json"
    assert stats(api)["requests"] == 0


def test_cli_a_state_entry_of_another_field_is_refused(api, org, tmp_path):
    state = tmp_path / "issues.state"
    url = api.base_url + issues_path(org, NUMBERED)
    assert run_cli(url, "--until", "/id=0", "--state", str(state)).returncode == 0
    before = state.read_text()
    result = run_cli(url, "--until", "/updated_at=x", "--state", str(state))
    assert result.returncode == 2
    message = result.stderr.decode()
    assert str(state) in message and "/id" in message and "/updated_at" in message
    assert state.read_text() == before


def test_cli_state_is_not_written_when_the_run_fails(api, org, tmp_path):
    state = tmp_path / "issues.state"
    url = api.base_url + issues_path(org, NUMBERED)
    assert run_cli(url, "--until", "/id=0", "--state", str(state)).returncode == 0
    before = state.read_text()
    add_issues(api, org, NUMBERED, 25)
    # Page 2 fails for good: the new issues of page 1 were written, but the state stays.
    failed = run_cli(url + "?fail=2:99:500", "--until", "/id=0", "--state", str(state), "--max-attempts", "1")
    assert failed.returncode == 3, failed.stderr
    assert state.read_text() == before
    assert not [name for name in os.listdir(tmp_path) if name != "issues.state"], "no temporary file is left"


def test_cli_a_run_stopped_early_by_a_limit_leaves_the_state_as_it_was(api, org, tmp_path):
    state = tmp_path / "issues.state"
    url = api.base_url + issues_path(org, NUMBERED)
    assert run_cli(url, "--until", "/id=0", "--state", str(state)).returncode == 0
    before = state.read_text()
    add_issues(api, org, NUMBERED, 25)
    # Storing the newest id now would lose the new issues this run did not write.
    limited = run_cli(url, "--until", "/id=0", "--state", str(state), "--max-items", "5")
    assert limited.returncode == 0, limited.stderr
    assert len(lines(limited.stdout)) == 5
    assert "left as it was" in limited.stderr.decode()
    assert state.read_text() == before


def test_cli_the_state_file_holds_no_secret_query_value(api, org, tmp_path):
    state = tmp_path / "issues.state"
    url = api.base_url + issues_path(org, NUMBERED) + "?api_key=very-secret-value"
    result = run_cli(url, "--until", "/id=0", "--state", str(state))
    assert result.returncode == 0, result.stderr
    assert "very-secret-value" not in state.read_text()


def test_cli_sync_flags_are_checked(api, tmp_path):
    url = api.base_url + "/anchor?n=10"
    for flags, words in ((["--since-param", "since"], "go together"),
                         (["--state", str(tmp_path / "s")], "give one of them"),
                         (["--until", "id=3"], "PTR=VALUE"),
                         (["--until", "/id=true"], "a number or a string")):
        result = run_cli(url, *flags)
        assert result.returncode == 2, flags
        assert words in result.stderr.decode(), (flags, result.stderr)


def test_the_asyncio_client_reports_the_state_too(api, org):
    import asyncio

    every = newest_first(api, org, NUMBERED)

    async def both():
        async with sheaf.AsyncClient(api.base_url) as client:
            items = await client.fetch_all(issues_path(org, NUMBERED), until=("/id", every[5]["id"]))
            stream = client.stream(issues_path(org, NUMBERED), until=("/id", every[5]["id"]))
            taken = [item async for snapshot in stream for item in snapshot.items]
            return items, taken, stream

    items, taken, stream = asyncio.run(both())
    assert items == taken == every[:5]
    assert items.sync_state["value"] == stream.sync_state["value"] == every[0]["id"]
    assert stream.stop_reason == sheaf.StopReason.BOUND
