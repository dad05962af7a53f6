"""Issue 47, "Trust: never silently short in the corners", for the `sheaf` command (and the
Python package beneath it):

1. a partition names no origin a credential goes to: the URL given with it does (or, without a
   URL, nothing secret is sent);
2. an option a command cannot honour is refused (exit 2, the message names both options),
   never dropped;
3. a bad state file names itself, the list and the bad value (exit 2); a FIFO is refused without
   blocking; two runs sharing a state file keep each other's entries;
4. a sync value is kept as the library's JSON text (a Python float would move the bound);
5. the core compares RFC 3339 timestamps by the instant they name;
6. a full page that says nothing of more ends UNCONFIRMED, with a warning from the command.

    SHEAF_LIBRARY_PATH=build/lib/libsheaf.so.1 python3 -m pytest bindings/python/tests/test_cli_trust.py
"""

from __future__ import annotations

import decimal
import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Dict, List, Optional
from urllib.parse import parse_qs, urlsplit

import pytest

import sheaf
from conftest import stats
from test_cli import cli_env, command, lines

REPO = Path(__file__).resolve().parents[3]
TOKEN = "tok-Trust-47-b81c"
SECRET = "key-Trust-47-secret-value"


def run_cli(*args: str, env: Optional[dict] = None, stdin: bytes = b"", timeout: float = 30,
            subcommand: str = "get") -> subprocess.CompletedProcess:
    """The command's outcome; one that hangs is aborted with its Python stacks on stderr."""
    argv = command(*args) if subcommand == "get" else [sys.executable, "-m", "sheaf", subcommand, *args]
    process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=env or cli_env(PYTHONFAULTHANDLER="1"), cwd=REPO)
    try:
        out, err = process.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGABRT)
        out, err = process.communicate()
        raise AssertionError(f"sheaf {subcommand} {' '.join(args)} hung:\n{err.decode(errors='replace')}") from None
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def said(result: subprocess.CompletedProcess) -> str:
    return result.stderr.decode("utf-8", "replace")


def plan(server, path: str, n: int = 2) -> List[str]:
    """The partitions of `server`'s list at `path`, as `sheaf get URL --partitions N` prints them."""
    printed = run_cli(server.base_url + path, "--partitions", str(n))
    assert printed.returncode == 0, printed.stderr
    return printed.stdout.decode().splitlines()


# ---- 1. a credential goes only to the origin the user names ------------------------------------------

LIST = "/anchor?n=100&per_page=10"


@pytest.mark.parametrize("credential, env", [
    ([], {"SHEAF_TOKEN": TOKEN}),
    (["--token", TOKEN], {}),
    (["--query", f"api_key={SECRET}"], {}),
    (["--api-key-param", f"api_key={SECRET}"], {}),
    (["--api-key", f"X-Api-Key={SECRET}"], {}),
    (["--basic", f"user:{SECRET}"], {}),
    (["-H", f"Authorization: Bearer {SECRET}"], {}),
])
def test_cli_a_forged_partition_without_a_url_gets_no_credential(api, other_api, credential, env):
    # The job-queue pattern: a worker runs what the queue hands it. A partition that names
    # another server (here the second one) must not take the worker's credential there.
    forged = plan(other_api, LIST)[1]
    other_api.state.reset()
    result = run_cli("--partition", forged, *credential, env=cli_env(**env))
    assert result.returncode == 2, result.stderr
    message = said(result)
    assert other_api.base_url in message and "--partition" in message, message
    assert TOKEN not in message and SECRET not in message
    log = stats(other_api)["log"]
    assert not [entry for entry in log if entry["authorization"] or SECRET in entry["path"]], log
    assert stats(other_api)["requests"] == 0, "nothing is sent"


def test_cli_a_partition_on_another_origin_than_the_url_is_refused_and_nothing_is_sent(api, other_api):
    forged = plan(other_api, LIST)[0]
    api.state.reset()
    other_api.state.reset()
    result = run_cli(api.base_url + LIST + f"&api_key={SECRET}", "--partition", forged,
                     env=cli_env(SHEAF_TOKEN=TOKEN))
    assert result.returncode == 2, result.stderr
    message = said(result)
    assert api.base_url in message and other_api.base_url in message, message
    assert SECRET not in message and TOKEN not in message
    assert stats(other_api)["requests"] == 0 and stats(api)["requests"] == 0


def test_cli_a_partition_runs_with_the_credential_on_the_origin_the_url_names(api):
    # The URL the plan was made from (its secret query value included, which the partition
    # does not hold) or its origin alone: the credential goes there.
    partitions = plan(api, LIST + f"&api_key={SECRET}", 2)
    assert SECRET not in "".join(partitions)
    items: List[Any] = []
    for index, line in enumerate(partitions):
        api.state.reset()
        url = api.base_url + LIST + f"&api_key={SECRET}" if index == 0 else api.base_url
        result = run_cli(url, "--partition", line, env=cli_env(SHEAF_TOKEN=TOKEN))
        assert result.returncode == 0, result.stderr
        items += lines(result.stdout)
        log = stats(api)["log"]
        assert log and all(entry["authorization"] == f"Bearer {TOKEN}" for entry in log), log
        if index == 0:
            assert all(f"api_key={SECRET}" in entry["path"] for entry in log), log
    assert items == [{"id": i, "name": f"item-{i}"} for i in range(100)]


def test_cli_a_partition_of_another_list_than_the_url_is_refused(api):
    line = plan(api, LIST)[0]
    api.state.reset()
    for url, words in ((api.base_url + "/drf?n=100", "/drf"), (api.base_url + "/anchor?n=99&per_page=10", "n=99")):
        result = run_cli(url, "--partition", line)
        assert result.returncode == 2, result.stderr
        assert "--partition" in said(result) and words in said(result), said(result)
    assert stats(api)["requests"] == 0


def test_cli_a_partition_without_a_url_or_credential_still_runs_where_it_names(api):
    line = plan(api, LIST)[1]
    start = json.loads(line)["first_page"] * json.loads(line)["page_size"]
    result = run_cli("--partition", line)
    assert result.returncode == 0, result.stderr
    assert start > 0 and lines(result.stdout) == [{"id": i, "name": f"item-{i}"} for i in range(start, 100)]


# ---- 2. what a command cannot honour is refused ------------------------------------------------------

ORG_PARENT = "/orgs/trust/repos?repos=3"
EACH = "/repos/{/full_name}/issues"


@pytest.mark.parametrize("args, first, second", [
    (["URL", "--partitions", "2", "--max-items", "5"], "--partitions", "--max-items"),
    (["URL", "--partitions", "2", "--max-pages", "1"], "--partitions", "--max-pages"),
    (["URL", "--partitions", "2", "--max-requests", "1"], "--partitions", "--max-requests"),
    (["URL", "--partitions", "2", "--deadline", "5"], "--partitions", "--deadline"),
    (["URL", "--partitions", "2", "--resume", "sheaf-resume-1.x"], "--partitions", "--resume"),
    (["URL", "--partitions", "2", "--format", "json"], "--partitions", "--format"),
    (["URL", "--partitions", "2", "--fields", "/id"], "--partitions", "--fields"),
    (["URL", "--explain", "--max-items", "5"], "--explain", "--max-items"),
    (["URL", "--explain", "--deadline", "5"], "--explain", "--deadline"),
    (["URL", "--explain", "--resume", "sheaf-resume-1.x"], "--explain", "--resume"),
    (["URL", "--explain", "--until", "/id=3"], "--explain", "--until"),
    (["URL", "--explain", "--until", "/id=3", "--state", "STATE"], "--explain", "--state"),
    (["URL", "--explain", "--since-param", "since", "--since-field", "/id", "--state", "STATE"], "--explain",
     "--since-param"),
    (["URL", "--explain", "--fields", "/id"], "--explain", "--fields"),
    (["URL", "URL2", "--until", "/id=3", "--state", "STATE"], "--state", "several"),
    (["URL", "--urls", "-", "--until", "/id=3", "--state", "STATE"], "--state", "--urls"),
    (["URL", "URL2", "--at-once", "2"], "--at-once", "--partitions"),
    (["PARENT", "--each", EACH, "--until", "/id=3"], "--each", "--until"),
    (["PARENT", "--each", EACH, "--since-param", "since", "--since-field", "/id", "--state", "STATE"], "--each",
     "--state"),
    (["URL", "--since-param", "since", "--since-field", "/id"], "--since-param", "--state"),
    (["URL", "URL2", "--since-param", "since", "--since-field", "/id"], "--since-param", "--state"),
])
def test_cli_an_option_the_command_cannot_honour_is_refused_naming_both(api, tmp_path, args, first, second):
    url, url2 = api.base_url + "/anchor?n=50&per_page=10", api.base_url + "/anchor?n=20&per_page=10"
    names = {"URL": url, "URL2": url2, "PARENT": api.base_url + ORG_PARENT, "STATE": str(tmp_path / "s.state")}
    result = run_cli(*[names.get(arg, arg) for arg in args], stdin=(url2 + "\n").encode())
    assert result.returncode == 2, result.stderr
    message = said(result)
    assert first in message and second in message, message
    assert stats(api)["requests"] == 0, "nothing is sent"
    assert not (tmp_path / "s.state").exists()


def test_cli_explain_writes_to_the_file_of_o(api, tmp_path):
    url = api.base_url + "/anchor?n=50&per_page=10"
    target = tmp_path / "described.json"
    result = run_cli(url, "--explain", "--format", "json", "-o", str(target))
    assert result.returncode == 0, result.stderr
    assert result.stdout == b""
    described = json.loads(target.read_text())
    assert described["paging"]["param"] == "page"
    text = run_cli(url, "--explain", "-o", str(tmp_path / "explained.txt"))
    assert text.returncode == 0 and text.stdout == b"", text.stderr
    assert (tmp_path / "explained.txt").read_text().startswith("sheaf get ")


def test_cli_several_lists_honour_until_each_at_its_bound(api):
    # Not refused: every list of the group gets the bound, as the flags describe every list.
    first, second = api.base_url + "/anchor?n=30&per_page=10", api.base_url + "/anchor?n=20&per_page=10"
    result = run_cli(first, second, "--until", "/id=-1", "--ordered")
    assert result.returncode == 0, result.stderr
    assert len(lines(result.stdout)) == 50


def test_cli_request_refuses_a_content_type_without_a_raw_body(api):
    result = run_cli("-X", "POST", api.base_url + "/req/echo", "--json", "{}", "--content-type", "text/plain",
                     subcommand="request")
    assert result.returncode == 2, result.stderr
    assert "--content-type" in said(result) and "--json" in said(result), said(result)
    assert stats(api)["requests"] == 0


# ---- 3. state files: bad values, FIFOs, two runs at once ---------------------------------------------

@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "true", '{"a": 1}', "[1]", '"\\ud800"'])
def test_cli_a_bad_value_in_a_state_file_names_the_file_the_list_and_the_value(api, tmp_path, value):
    url = api.base_url + "/anchor?n=30&per_page=10"
    state = tmp_path / "bad.state"
    text = '{"version": 1, "lists": {"%s": {"field": "/id", "value": %s}}}' % (url, value)
    state.write_text(text)
    result = run_cli(url, "--until", "/id=0", "--state", str(state))
    assert result.returncode == 2, result.stderr
    message = said(result).splitlines()[-1]
    assert str(state) in message and url in message and value in message, message
    assert "description" not in message, message
    assert state.read_text() == text
    assert stats(api)["requests"] == 0


def test_cli_a_huge_exponent_in_a_state_file_is_a_number_kept_as_written(api, tmp_path):
    # 1e999 is a JSON number (no float holds it: a float made it "Infinity", not JSON).
    url = api.base_url + "/anchor?n=30&per_page=10"
    state = tmp_path / "big.state"
    state.write_text('{"version": 1, "lists": {"%s": {"field": "/id", "value": 1e999}}}' % url)
    result = run_cli(url, "--until", "/id=0", "--state", str(state))
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"", "every id is at or below 1e999"
    assert '"value": 1e999' in state.read_text()


def test_cli_a_fifo_as_the_state_file_is_refused_at_once(api, tmp_path):
    fifo = tmp_path / "state.fifo"
    os.mkfifo(fifo)
    result = run_cli(api.base_url + "/anchor?n=30&per_page=10", "--until", "/id=0", "--state", str(fifo), timeout=15)
    assert result.returncode == 2, result.stderr
    assert str(fifo) in said(result) and "not a regular file" in said(result), said(result)
    assert stats(api)["requests"] == 0


def test_cli_two_state_files_read_at_once_keep_both_entries(tmp_path):
    # In one process, as two runs do: both read the file, then each saves its own list.
    from sheaf.cli.state import StateFile

    path = str(tmp_path / "shared.state")
    first, second = StateFile(path), StateFile(path)
    first.save("http://a/x", "/id", 1)
    second.save("http://a/y", "/id", 2)
    assert json.loads(Path(path).read_text())["lists"] == {"http://a/x": {"field": "/id", "value": 1},
                                                          "http://a/y": {"field": "/id", "value": 2}}
    assert os.listdir(tmp_path) == ["shared.state"], "no lock or temporary file is left"


def test_cli_runs_sharing_a_state_file_keep_each_others_entries(api, tmp_path):
    state = tmp_path / "shared.state"
    urls = [api.base_url + f"/anchor?n={20 + k}&per_page=10&latency_ms=400" for k in range(4)]
    processes = [subprocess.Popen(command(url, "--until", "/id=-1", "--state", str(state)), stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, env=cli_env(), cwd=REPO) for url in urls]
    try:
        errors = [process.communicate(timeout=60)[1] for process in processes]
    finally:
        for process in processes:
            process.kill()
            process.wait()
    assert [process.returncode for process in processes] == [0] * 4, errors
    stored = json.loads(state.read_text())["lists"]
    assert stored == {url: {"field": "/id", "value": 19 + k} for k, url in enumerate(urls)}
    assert os.listdir(tmp_path) == ["shared.state"]


# ---- 4. sync values kept as the library's JSON text ----------------------------------------------------

class Events:
    """A newest-first list on a server of its own: a bare array of {"id", "v"}, v written as the
    given JSON number text (no Python float ever holds it), with a since filter by exact value."""

    def __init__(self, values: List[str], field: str = "v") -> None:
        self.values = list(values)   # newest first
        self.field = field
        self.paths: List[str] = []
        events = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                events.paths.append(self.path)
                since = parse_qs(urlsplit(self.path).query).get("since", [None])[0]
                chosen = [v for v in events.values if since is None or _exact(v) >= _exact(since)]
                body = "[" + ",".join('{"id":%d,"%s":%s}' % (len(events.values) - i, events.field, v)
                                      for i, v in enumerate(chosen)) + "]"
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/events"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _exact(text: str) -> Any:
    return decimal.Decimal(text) if text[0] in "-0123456789" else text


@pytest.fixture
def events():
    served = Events(["1.00000000000000012", "1.0000000000000001", "0.5"])
    try:
        yield served
    finally:
        served.close()


def test_cli_state_keeps_the_sync_value_as_the_library_wrote_it(events, tmp_path):
    state = tmp_path / "events.state"
    first = run_cli(events.url, "--until", "/v=0", "--state", str(state))
    assert first.returncode == 0, first.stderr
    assert len(lines(first.stdout)) == 3
    assert '"value": 1.00000000000000012' in state.read_text()
    events.values.insert(0, "1.00000000000000015")   # newer than every other, by less than a float tells
    second = run_cli(events.url, "--until", "/v=0", "--state", str(state))
    assert second.returncode == 0, second.stderr
    assert second.stdout.decode().splitlines() == ['{"id":4,"v":1.00000000000000015}']
    assert '"value": 1.00000000000000015' in state.read_text()


def test_cli_since_sends_the_stored_value_as_the_library_wrote_it(events, tmp_path):
    state = tmp_path / "events.state"
    flags = ["--since-param", "since", "--since-field", "/v", "--state", str(state)]
    assert run_cli(events.url, *flags).returncode == 0
    events.paths.clear()
    events.values.insert(0, "1.00000000000000015")
    second = run_cli(events.url, *flags)
    assert second.returncode == 0, second.stderr
    assert "since=1.00000000000000012" in events.paths[0], events.paths
    assert '"value": 1.00000000000000015' in state.read_text()


def test_cli_until_on_the_command_line_is_the_number_as_typed(events):
    events.values.insert(0, "1.00000000000000015")
    result = run_cli(events.url, "--until", "/v=1.00000000000000012")
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode().splitlines() == ['{"id":4,"v":1.00000000000000015}']


def test_the_sync_state_value_is_the_librarys_number_exactly_and_goes_back_as_it_came(events):
    with sheaf.Client(events.url.rsplit("/", 1)[0]) as client:
        items = client.fetch_all("/events", until=("/v", 0))
        value = items.sync_state["value"]
        assert value == 1.00000000000000012 and str(value) == "1.00000000000000012"
        events.values.insert(0, "1.00000000000000015")
        again = client.fetch_all("/events", until=("/v", value))
        assert [item["id"] for item in again] == [4]
        assert str(again.sync_state["value"]) == "1.00000000000000015"
        exact = client.fetch_all("/events", until=("/v", decimal.Decimal("1.00000000000000012")))
        assert [item["id"] for item in exact] == [4]
    described = sheaf.Description(until=("/v", value))
    assert '"value": 1.00000000000000012' in described.to_json()
    assert sheaf.Description.from_json(described.to_json() [:-1] + ', "paging": {}, "signals": {}}').until[1] == value
    with pytest.raises(sheaf.UsageError, match="finite"):
        sheaf.Description(until=("/v", float("inf"))).to_json()


# ---- 5. the core's timestamp order (Sources/Sheaf/Read/SyncValue.swift) --------------------------------

def test_until_orders_rfc3339_timestamps_with_fractional_seconds_of_any_length():
    served = Events(['"2024-05-01T10:00:00.5Z"', '"2024-05-01T10:00:00.123Z"', '"2024-05-01T10:00:00Z"',
                     '"2024-05-01T09:59:59.999999999Z"'], field="t")
    try:
        with sheaf.Client(served.url.rsplit("/", 1)[0]) as client:
            items = client.fetch_all("/events", until=("/t", "2024-05-01T10:00:00Z"))
        assert [item["t"] for item in items] == ["2024-05-01T10:00:00.5Z", "2024-05-01T10:00:00.123Z"]
    finally:
        served.close()


# ---- 6. a full page that says nothing of more is not a plain end -------------------------------------

def test_a_full_page_that_says_nothing_of_more_ends_unconfirmed_not_complete(api):
    with sheaf.Client(api.base_url) as client:
        items = client.fetch_all("/conv/github?n=95&link=none")
        stream = client.stream("/conv/github?n=95&link=none")
        streamed = [item for snapshot in stream for item in snapshot.items]
        short = client.fetch_all("/conv/github?n=27&link=none")
    assert len(items) == 30 and items.stop_reason == sheaf.StopReason.UNCONFIRMED
    assert len(streamed) == 30 and stream.stop_reason == sheaf.StopReason.UNCONFIRMED
    assert short.stop_reason == sheaf.StopReason.COMPLETE, "27 of a page of 30: the end is real"


def test_cli_a_full_page_that_says_nothing_of_more_warns_even_when_quiet(api):
    result = run_cli(f"{api.base_url}/conv/github?n=95&link=none", "--quiet")
    assert result.returncode == 0, said(result)
    assert len(lines(result.stdout)) == 30
    assert "warning: 30 items in one full page, and nothing said it was the last" in said(result)
    described = run_cli(f"{api.base_url}/conv/github?n=95&link=none", "--paging", "page:page", "--quiet")
    assert described.returncode == 0 and len(lines(described.stdout)) == 95, said(described)
    assert "warning" not in said(described)
