"""`sheaf get` with many lists as one job (several URLs, --urls, --each), run as a subprocess
against the test server's organisation (Tests/server/org_api.py).

    SHEAF_LIBRARY_PATH=build/lib/libsheaf.so.1 python3 -m pytest bindings/python/tests/test_cli_groups.py
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request
from collections import Counter
from typing import Any, Dict, List
from urllib.parse import parse_qs, urlsplit

import pytest
from conftest import settled_log
from test_cli import cli_env, command, lines

from sheaf.cli.groups import _tagged

REPO_TEMPLATE = "/repos/{/full_name}/issues"


def run_cli(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    """The command's outcome; one that hangs is aborted with its Python stacks on stderr (faulthandler)."""
    from test_cli import REPO

    process = subprocess.Popen(command(*args), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=cli_env(PYTHONFAULTHANDLER="1"), cwd=REPO)
    try:
        out, err = process.communicate(stdin, timeout=30)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGABRT)
        out, err = process.communicate()
        raise AssertionError(f"sheaf get {' '.join(args)} hung:\n{err.decode(errors='replace')}") from None
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def org_issues(server, org: str, repos: int) -> Dict[str, List[Dict[str, Any]]]:
    """The org's issues by repository, newest first, as the server accounts for them."""
    with urllib.request.urlopen(f"{server.base_url}/_orgs/{org}/issues?repos={repos}", timeout=10) as response:
        issues = json.load(response)["issues"]
    by_repository: Dict[str, List[Dict[str, Any]]] = {f"{org}/repo-{i:03d}": [] for i in range(repos)}
    for issue in sorted(issues, key=lambda issue: issue["updated_at"], reverse=True):
        by_repository[issue["repository"]].append(issue)
    return by_repository


def summary(result: subprocess.CompletedProcess) -> str:
    return result.stderr.decode().splitlines()[-1]


def test_cli_each_writes_every_childs_items_tagged_with_its_repository(api):
    expected = org_issues(api, "clieach", 20)
    result = run_cli(f"{api.base_url}/orgs/clieach/repos?repos=20", "--each", REPO_TEMPLATE, "--tag", "from")
    assert result.returncode == 0, result.stderr
    written = lines(result.stdout)
    assert all(item.pop("from") == item["repository"] for item in written)
    assert Counter(item["id"] for item in written) == Counter(issue["id"] for issues in expected.values()
                                                              for issue in issues)
    for repository, issues in expected.items():   # each child's items in its own order
        assert [item for item in written if item["repository"] == repository] == issues
    assert summary(result) == "sheaf: 21 lists succeeded, 0 failed"


def test_cli_each_ordered_writes_the_children_in_the_parents_order(api):
    expected = org_issues(api, "cliorder", 12)
    result = run_cli(f"{api.base_url}/orgs/cliorder/repos?repos=12", "--each", REPO_TEMPLATE, "--ordered")
    assert result.returncode == 0, result.stderr
    assert lines(result.stdout) == [issue for issues in expected.values() for issue in issues]


def test_cli_urls_from_stdin_skip_blank_lines_and_comments(api):
    expected = org_issues(api, "cliurls", 3)
    listed = "\n".join(["# the org's first three repositories", "",
                        *(f"{api.base_url}/repos/cliurls/repo-{i:03d}/issues" for i in range(3)), "   ", "# end"])
    result = run_cli("--urls", "-", "--ordered", "--tag", "list", stdin=listed.encode())
    assert result.returncode == 0, result.stderr
    written = lines(result.stdout)
    assert [item.pop("list") for item in written] == [f"{api.base_url}/repos/cliurls/repo-{i:03d}/issues"
                                                     for i in range(3) for _ in expected[f"cliurls/repo-{i:03d}"]]
    assert written == [issue for issues in expected.values() for issue in issues]
    assert summary(result) == "sheaf: 3 lists succeeded, 0 failed"


def test_cli_failed_lists_are_written_and_fetched_again_from_where_they_stopped(api, tmp_path):
    expected = org_issues(api, "clifail", 3)
    flaky = f"{api.base_url}/repos/clifail/repo-001/issues?fail=2:2:500"   # two 500s, then it passes
    failed = tmp_path / "failed.jsonl"
    first = run_cli(f"{api.base_url}/repos/clifail/repo-000/issues", f"{api.base_url}/nowhere", flaky,
                    "--max-attempts", "2", "--failed", str(failed))
    assert first.returncode == 3, first.stderr   # an HTTP failure
    assert summary(first) == f"sheaf: 1 list succeeded, 2 failed (written to {failed})"
    listed = [json.loads(line) for line in failed.read_text().splitlines()]
    assert [entry["url"] for entry in listed] == [f"{api.base_url}/nowhere", flaky]
    assert all(entry["resume_token"] and "HTTP" in entry["error"] for entry in listed)
    first_items = lines(first.stdout)
    asked_before = len(settled_log(api))

    again = tmp_path / "failed-again.jsonl"
    second = run_cli("--urls", str(failed), "--failed", str(again), "--max-attempts", "2")
    assert second.returncode == 3 and summary(second) == f"sheaf: 1 list succeeded, 1 failed (written to {again})"
    assert [json.loads(line)["url"] for line in again.read_text().splitlines()] == [f"{api.base_url}/nowhere"]
    asked = settled_log(api)[asked_before:]
    assert not any("repo-000" in path for path in asked)   # the list that succeeded is not asked again
    pages = [int(parse_qs(urlsplit(path).query).get("page", ["1"])[0]) for path in asked if "repo-001" in path]
    assert pages and min(pages) >= 2   # it went on from page 2
    repo_001 = [item for item in first_items + lines(second.stdout) if item["repository"] == "clifail/repo-001"]
    assert repo_001 == expected["clifail/repo-001"]


def test_cli_fail_fast_stops_the_others_with_the_first_failures_status(api):
    urls = [f"{api.base_url}/nowhere"] + [f"{api.base_url}/repos/clifast/repo-{i:03d}/issues?latency_ms=30"
                                          for i in range(10)]
    result = run_cli(*urls, "--fail-fast", "--concurrency", "2", "--fixed-window")
    assert result.returncode == 3, result.stderr
    assert "/nowhere: " in result.stderr.decode() and summary(result).endswith("failed")


@pytest.mark.parametrize("args, says", [
    (["URL", "--tag", "t"], "--tag is for several lists"),
    (["URL", "URL", "--each", REPO_TEMPLATE], "--each fans out from one list"),
    (["URL", "URL", "--resume", "x"], "--resume is for one list"),
    (["URL", "URL", "--missing", "fail"], "--missing is about --each"),
    (["URL", "--each", REPO_TEMPLATE, "--max-items", "5"], "--max-items is not taken with --each"),
])
def test_cli_group_flags_used_wrongly_are_usage_errors(args, says):
    nowhere = "http://127.0.0.1:1/things"
    result = run_cli(*[nowhere if arg == "URL" else arg for arg in args])
    assert result.returncode == 2 and says in result.stderr.decode(), result.stderr


def test_cli_urls_on_another_origin_are_refused(api):
    result = run_cli(f"{api.base_url}/a", "http://127.0.0.1:1/b")
    assert result.returncode == 2 and b"first URL's origin" in result.stderr


def test_a_tag_is_added_to_an_object_and_wraps_anything_else():
    assert _tagged([{"id": 1, "t": "old"}, 2, None, [3]], "t", "x") == [
        {"id": 1, "t": "x"}, {"t": "x", "item": 2}, {"t": "x", "item": None}, {"t": "x", "item": [3]}]


def test_cli_failed_writes_a_middle_level_with_the_templates_below_it(api, tmp_path):
    templates = ["/repos/{/full_name}/issues?fail=1:1:500", "/anchor?n=2&issue={/id}"]
    failed = tmp_path / "failed.jsonl"
    result = run_cli(f"{api.base_url}/orgs/climiddle/repos?repos=2", "--each", templates[0], "--each", templates[1],
                     "--max-attempts", "1", "--failed", str(failed))
    assert result.returncode == 3, result.stderr
    listed = [json.loads(line) for line in failed.read_text().splitlines()]
    assert len(listed) == 2 and all(entry["each"] == [templates[1]] for entry in listed), listed
    assert all("/repos/climiddle/repo-" in entry["url"] for entry in listed)
