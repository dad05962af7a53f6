"""Tests of the `sheaf` command-line tool (python3 -m sheaf get ...), run as a subprocess against
the loopback test API (Tests/server/api_server.py) started in this process.

    SHEAF_LIBRARY_PATH=build/lib/libsheaf.so.1 python3 -m pytest bindings/python/tests/test_cli.py
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import pty
import socket
import stat
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
PYTHON_DIR = REPO / "bindings" / "python"
LIBRARY = os.environ.get("SHEAF_LIBRARY_PATH") or str(REPO / "build" / "lib" / "libsheaf.so.1")

sys.path.insert(0, str(REPO / "Tests" / "server"))
from api_server import start_server  # noqa: E402
from conftest import close_the_pipe, interrupt_cli, pages_asked  # noqa: E402

TOKEN = "tok-Secret-7f3a9c1d"
OPTIONS = ["--token", "--preset", "--paging", "--explain", "--cursor", "--page-count", "--has-more", "--is-last", "--items", "--next", "--total", "--id", "--page-param",
           "--first-page", "--size-param", "--page-size", "--concurrency", "--max-items",
           "--max-pages", "--max-requests", "--deadline", "--resume", "--timeout", "--max-attempts", "--format",
           "--output", "-o", "--quiet", "--until", "--since-param", "--since-field", "--state",
           "--help"]


@pytest.fixture(scope="module")
def server():
    srv, thread = start_server(port=0, latency_ms=0)
    try:
        yield srv
    finally:
        srv.shutdown_and_close(thread)


@pytest.fixture
def api(server):
    """The server's base URL, with its counters and log reset."""
    server.state.reset()
    return server.base_url


def expected(n: int, start: int = 0) -> list:
    return [{"id": i, "name": f"item-{i}"} for i in range(start, n)]


def cli_env(**extra) -> dict:
    env = dict(os.environ)
    env.pop("SHEAF_TOKEN", None)
    env.pop("SHEAF_CACHE", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PYTHON_DIR), env.get("PYTHONPATH")]))
    env["SHEAF_LIBRARY_PATH"] = LIBRARY
    env.update(extra)
    return env


def command(*args: str) -> list:
    return [sys.executable, "-m", "sheaf", "get", *args]


def run_cli(*args: str, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(command(*args), capture_output=True, timeout=timeout,
                          env=env or cli_env(), cwd=REPO, stdin=subprocess.DEVNULL)


def lines(stdout: bytes) -> list:
    return [json.loads(line) for line in stdout.decode("utf-8").splitlines()]


def error_line(result: subprocess.CompletedProcess) -> str:
    """The one error line on stderr (and nothing else there but how to go on, when items were
    written before the failure)."""
    text = result.stderr.decode("utf-8", "replace")
    if result.stdout and "\nsheaf: to go on: --resume " in text:
        text = text[: text.index("sheaf: to go on: --resume ")]
    assert text.endswith("\n") and text.count("\n") == 1, text
    assert text.startswith("sheaf: "), text
    return text


def resume_token(result: subprocess.CompletedProcess) -> str:
    """The token of the "to go on" line, the last line on stderr."""
    last = result.stderr.decode().splitlines()[-1]
    assert last.startswith("sheaf: to go on: --resume sheaf-resume-1."), last
    return last.rsplit(" ", 1)[1]


def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- the whole list, in order ----------------------------------------------------------------

def test_jsonl_with_explicit_flags_equals_the_list(api):
    r = run_cli(f"{api}/anchor?n=237", "--items", "/items", "--next", "/next_page",
                "--total", "/total", "--page-param", "page", "--size-param", "per_page",
                "--page-size", "20", "--concurrency", "4", "--id", "/id")
    assert r.returncode == 0, r.stderr
    assert lines(r.stdout) == expected(237)
    assert r.stdout.splitlines()[0] == b'{"id":0,"name":"item-0"}'  # compact, one per line
    assert r.stderr == b""                                          # not a terminal: silent


def test_the_concurrent_plan_is_used(api, server):
    r = run_cli(f"{api}/anchor?n=400&latency_ms=30", "--preset", "anchor", "--page-size", "20",
                "--concurrency", "6")
    assert r.returncode == 0, r.stderr
    assert lines(r.stdout) == expected(400)
    stats = server.state.snapshot()
    assert stats["requests"] == 20
    assert stats["max_in_flight"] > 1


@pytest.mark.parametrize("path, args, n", [
    ("/anchor?n=321", ["--preset", "anchor", "--page-size", "25"], 321),
    ("/anchor?n=120", ["--preset", "anchor"], 120),                       # the server's page size
    ("/drf?n=321", ["--preset", "drf-page", "--page-size", "25"], 321),
    ("/drf?n=321", ["--items", "/results", "--next", "/next", "--total", "/count",
                    "--page-param", "page", "--size-param", "page_size", "--page-size", "40"], 321),
    # the preset, overridden by explicit flags
    ("/drf?n=99", ["--preset", "anchor", "--items", "/results", "--next", "/next",
                   "--total", "/count", "--size-param", "page_size", "--page-size", "10"], 99),
    ("/array?n=130", ["--items", "", "--paging", "page:page", "--size-param", "per_page", "--page-size", "20"], 130),
    ("/array?n=130&per_page=20", ["--page-param", "page"], 130),
    ("/anchor?n=230", ["--items", "/items", "--next", "/next_page"], 230),  # next links only
])
def test_shapes(api, path, args, n):
    r = run_cli(api + path, *args)
    assert r.returncode == 0, r.stderr
    assert lines(r.stdout) == expected(n)
    assert r.stderr == b""


def test_a_preset_with_a_first_page_and_no_page_size_is_accepted(api):
    # C takes the preset, then the paging with first 1 and no size; the CLI gave the preset's
    # size parameter a size of 0 and exited 2.
    r = run_cli(f"{api}/anchor?n=120", "--preset", "anchor", "--first", "1")
    assert r.returncode == 0, r.stderr
    assert lines(r.stdout) == expected(120) and r.stderr == b""


def test_a_size_parameter_without_a_size_is_refused_in_the_libraries_words(api, server):
    r = run_cli(f"{api}/anchor?n=120&refused=1", "--preset", "anchor", "--size-param", "per_page")
    assert r.returncode == 2
    assert error_line(r) == ("sheaf: the description's /paging/size: a page size parameter needs a non-empty name "
                             "and a size of 1 or more (or null: named, not sent)\n")
    assert not [entry for entry in server.state.snapshot()["log"] if "refused=1" in entry["path"]]


def test_the_urls_query_is_kept_on_every_page(api, server):
    r = run_cli(f"{api}/array?n=20&per_page=10&pad=1", "--page-param", "page", "--first-page", "1")
    assert r.returncode == 0, r.stderr
    assert [item["id"] for item in lines(r.stdout)] == list(range(20))
    assert all(item["pad"] == "x" for item in lines(r.stdout))
    paths = [entry["path"] for entry in server.state.snapshot()["log"]]
    assert paths and all("pad=1" in p and "per_page=10" in p for p in paths)


def test_identity_drops_repeats(api):
    url = f"{api}/anchor?n=100&per_page=10&dup=1"
    with_id = run_cli(url, "--items", "/items", "--next", "/next_page", "--total", "none", "--id", "/id")
    assert with_id.returncode == 0, with_id.stderr
    assert lines(with_id.stdout) == expected(100)
    without = run_cli(url, "--items", "/items", "--next", "/next_page", "--total", "none")
    assert without.returncode == 0, without.stderr
    assert len(lines(without.stdout)) == 109


def test_json_format_is_one_array(api):
    r = run_cli(f"{api}/anchor?n=157", "--preset", "anchor", "--page-size", "20", "--format", "json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == expected(157)
    empty = run_cli(f"{api}/anchor?n=0", "--preset", "anchor", "--format", "json")
    assert empty.returncode == 0, empty.stderr
    assert json.loads(empty.stdout) == []


def test_output_file(api, tmp_path):
    target = tmp_path / "things.json"
    r = run_cli(f"{api}/drf?n=75", "--preset", "drf-page", "--page-size", "10", "--format", "json",
                "-o", str(target))
    assert r.returncode == 0, r.stderr
    assert r.stdout == b""
    assert json.loads(target.read_text()) == expected(75)
    jsonl = tmp_path / "things.jsonl"
    r = run_cli(f"{api}/drf?n=75", "--preset", "drf-page", "--output", str(jsonl))
    assert r.returncode == 0, r.stderr
    assert lines(jsonl.read_bytes()) == expected(75)


def test_output_file_that_cannot_be_written(api, tmp_path):
    r = run_cli(f"{api}/anchor?n=5", "--preset", "anchor", "-o", str(tmp_path / "no" / "such.json"))
    assert r.returncode == 1
    assert "no" in error_line(r)


@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_max_items(api, fmt):
    r = run_cli(f"{api}/anchor?n=1000", "--preset", "anchor", "--page-size", "20",
                "--max-items", "30", "--format", fmt)
    assert r.returncode == 0, r.stderr
    items = lines(r.stdout) if fmt == "jsonl" else json.loads(r.stdout)
    assert items == expected(30)
    token = resume_token(r)
    assert r.stderr.decode().splitlines()[:-1] == ["sheaf: stopped at the item limit"], r.stderr   # why, then how to go on
    rest = run_cli(f"{api}/anchor?n=1000", "--preset", "anchor", "--page-size", "20", "--format", fmt, "--resume", token)
    assert rest.returncode == 0 and rest.stderr == b"", rest.stderr   # complete: no token
    assert items + (lines(rest.stdout) if fmt == "jsonl" else json.loads(rest.stdout)) == expected(1000)


def test_a_forged_token_with_a_count_near_2_63_is_a_usage_error_not_a_crash(api):
    # 0.4.0 died of SIGILL here: the item count overflowed when the run added a page to it.
    r = run_cli(f"{api}/anchor?n=1000", "--preset", "anchor", "--page-size", "20", "--max-items", "30")
    token = resume_token(r)
    body = json.loads(base64.urlsafe_b64decode(token.split(".", 1)[1] + "=" * (-len(token) % 4)))
    for field in ("n", "i", "w", "o"):
        forged = dict(body, **{field: 2**63 - 10})
        text = "sheaf-resume-1." + base64.urlsafe_b64encode(json.dumps(forged).encode()).decode().rstrip("=")
        rest = run_cli(f"{api}/anchor?n=1000", "--preset", "anchor", "--page-size", "20", "--resume", text)
        assert rest.returncode == 2, (field, rest.returncode, rest.stderr)   # a signal is negative
        assert "out of range" in error_line(rest), field
        assert rest.stdout == b""


# ---- failures and exit codes -----------------------------------------------------------------

def test_http_401_is_exit_3(api):
    r = run_cli(f"{api}/status?code=401")
    assert r.returncode == 3
    line = error_line(r)
    assert "401" in line
    assert "token" in line.lower()   # the hint: no token was given
    assert r.stdout == b""


def test_http_500_after_retries_is_exit_3(api, server):
    r = run_cli(f"{api}/anchor?n=100&fail=1:9:500", "--preset", "anchor", "--max-attempts", "2")
    assert r.returncode == 3
    assert "500" in error_line(r)
    asked = pages_asked([entry["path"] for entry in server.state.snapshot()["log"]])
    assert asked.count(1) == 2        # --max-attempts reached the client


def test_http_failure_later_keeps_the_items_before_it(api):
    r = run_cli(f"{api}/anchor?n=100&per_page=10&fail=3:9:503", "--items", "/items",
                "--next", "/next_page", "--max-attempts", "1")
    assert r.returncode == 3
    assert "503" in error_line(r)
    assert lines(r.stdout) == expected(20)                  # pages 1 and 2, then the failure
    # the same command with the token writes the rest: the fail= count is used up
    rest = run_cli(f"{api}/anchor?n=100&per_page=10&fail=3:9:503", "--items", "/items",
                   "--next", "/next_page", "--max-attempts", "1", "--resume", resume_token(r))
    assert rest.returncode == 3 and lines(rest.stdout) == []   # page 3 still fails (9 times)...
    rest = run_cli(f"{api}/anchor?n=100&per_page=10&fail=3:9:503", "--items", "/items",
                   "--next", "/next_page", "--max-attempts", "9", "--resume", resume_token(r))
    assert rest.returncode == 0 and lines(rest.stdout) == expected(100, 20)   # ...until it answers
    # and as JSON, the array is still closed
    r = run_cli(f"{api}/anchor?n=100&per_page=10&fail=3:8:503", "--items", "/items",
                "--next", "/next_page", "--max-attempts", "1", "--format", "json")
    assert r.returncode == 3
    assert json.loads(r.stdout) == expected(20)


def test_closed_port_is_exit_4(api):
    r = run_cli(f"http://127.0.0.1:{closed_port()}/anchor", "--preset", "anchor",
                "--max-attempts", "1", "--timeout", "5")
    assert r.returncode == 4
    error_line(r)
    assert r.stdout == b""


def test_timeout_is_exit_4(api):
    started = time.monotonic()
    r = run_cli(f"{api}/anchor?n=10&latency_ms=3000", "--preset", "anchor", "--timeout", "0.3",
                "--max-attempts", "1")
    assert r.returncode == 4
    error_line(r)
    assert time.monotonic() - started < 2.5


def test_timeout_zero_means_no_limit(api):
    r = run_cli(f"{api}/anchor?n=10&latency_ms=300", "--preset", "anchor", "--timeout", "0")
    assert r.returncode == 0, r.stderr
    assert lines(r.stdout) == expected(10)


def test_garbage_page_is_exit_5(api):
    r = run_cli(f"{api}/anchor?n=100&garbage=2", "--preset", "anchor", "--page-size", "20")
    assert r.returncode == 5
    error_line(r)
    items = lines(r.stdout)
    assert items == expected(len(items))     # whatever arrived is the list's prefix
    assert len(items) <= 20


def test_garbage_first_page_is_exit_5(api):
    r = run_cli(f"{api}/anchor?n=100&garbage=1", "--preset", "anchor")
    assert r.returncode == 5
    error_line(r)
    assert r.stdout == b""


def test_wrong_items_pointer_is_exit_5(api):
    r = run_cli(f"{api}/drf?n=10", "--items", "/items")
    assert r.returncode == 5
    error_line(r)


def test_loop_is_exit_5(api):
    r = run_cli(f"{api}/anchor?n=200&per_page=10&loop=1", "--items", "/items",
                "--next", "/next_page", "--paging", "next")
    assert r.returncode == 5
    assert "loop" in error_line(r).lower()
    assert lines(r.stdout) == expected(30)                  # pages 1-3, then the repeat


def test_short_list_is_exit_5(api):
    r = run_cli(f"{api}/anchor?n=100&short=30", "--preset", "anchor", "--page-size", "20")
    assert r.returncode == 5
    error_line(r)
    items = lines(r.stdout)
    assert items == expected(len(items)) and len(items) <= 70


def test_budgets_stop_with_exit_0_and_a_deadline_with_exit_6(api):
    shape = ["--items", "/items", "--next", "/next_page"]
    r = run_cli(f"{api}/anchor?n=100&per_page=10", *shape, "--max-pages", "3")
    assert r.returncode == 0 and lines(r.stdout) == expected(30)
    r = run_cli(f"{api}/anchor?n=100&per_page=10", *shape, "--max-requests", "5", "--resume", resume_token(r))
    assert r.returncode == 0 and lines(r.stdout) == expected(80, 30)
    r = run_cli(f"{api}/anchor?n=100&per_page=10&latency_ms=300", *shape, "--deadline", "0.5")
    assert r.returncode == 6, r.stderr
    assert "deadline" in error_line(r)
    assert 0 < len(lines(r.stdout)) < 100


def test_cross_origin_next_link_is_exit_5_and_gets_no_token(api, server):
    # localhost is another origin than 127.0.0.1, though it is the same server.
    other = api.replace("127.0.0.1", "localhost")
    r = run_cli(f"{api}/anchor?n=100&per_page=10&next_base={other}", "--items", "/items",
                "--next", "/next_page", env=cli_env(SHEAF_TOKEN=TOKEN))
    assert r.returncode == 5
    line = error_line(r)
    assert TOKEN not in line
    log = server.state.snapshot()["log"]
    assert [entry["authorization"] for entry in log] == [f"Bearer {TOKEN}"]


@pytest.mark.parametrize("args", [
    [],                                                  # no URL
    ["ftp://example.com/things"],
    ["not a url"],
    ["http://127.0.0.1:1/x", "--page-size", "10"],       # no --size-param
    ["http://127.0.0.1:1/x", "--first-page", "0"],       # no --paging
    ["http://127.0.0.1:1/x", "--paging", "page:page", "--page-param", "page"],   # the same option twice
    ["http://127.0.0.1:1/x", "--concurrency", "0"],
    ["http://127.0.0.1:1/x", "--format", "xml"],
    ["http://127.0.0.1:1/x", "--timeout", "soon"],
    ["http://127.0.0.1:1/x", "--timeout", "-1"],
    ["http://127.0.0.1:1/x", "--bogus"],
])
def test_usage_errors_are_exit_2(args):
    r = run_cli(*args)
    assert r.returncode == 2, r.stderr
    assert b"usage:" in r.stderr


@pytest.mark.parametrize("args", [
    ["--items", "items"],                                # not a JSON pointer
    ["--concurrency", "65"],                             # out of the library's range
    ["--size-param", "per_page"],                        # no --page-size
    ["--size-param", "per_page", "--page-size", "10"],   # no --paging
])
def test_options_the_library_refuses_are_exit_2(api, args):
    r = run_cli(f"{api}/anchor", *args)
    assert r.returncode == 2, r.stderr
    error_line(r)


# ---- the token -------------------------------------------------------------------------------

def test_token_from_the_environment_is_sent(api, server):
    r = run_cli(f"{api}/anchor?n=120", "--preset", "anchor", "--page-size", "20",
                env=cli_env(SHEAF_TOKEN=TOKEN))
    assert r.returncode == 0, r.stderr
    assert lines(r.stdout) == expected(120)
    log = server.state.snapshot()["log"]
    assert sorted(set(pages_asked([entry["path"] for entry in log]))) >= [1, 2, 3, 4, 5, 6]
    assert all(entry["authorization"] == f"Bearer {TOKEN}" for entry in log)


def test_token_flag_wins_over_the_environment(api, server):
    r = run_cli(f"{api}/anchor?n=10", "--preset", "anchor", "--token", "flag-token",
                env=cli_env(SHEAF_TOKEN=TOKEN))
    assert r.returncode == 0, r.stderr
    assert {e["authorization"] for e in server.state.snapshot()["log"]} == {"Bearer flag-token"}


def test_no_token_sends_no_authorization(api, server):
    r = run_cli(f"{api}/anchor?n=10", "--preset", "anchor")
    assert r.returncode == 0, r.stderr
    assert {e["authorization"] for e in server.state.snapshot()["log"]} == {None}


@pytest.mark.parametrize("path, args, status", [
    ("/status?code=401", [], 3),
    ("/status?code=403", [], 3),
    ("/anchor?n=50&garbage=1", ["--preset", "anchor"], 5),
    ("/anchor?n=50&per_page=10&loop=1", ["--items", "/items", "--next", "/next_page", "--paging", "next"], 5),
])
def test_token_never_appears_in_errors(api, path, args, status):
    for how in ("env", "flag"):
        env = cli_env(SHEAF_TOKEN=TOKEN) if how == "env" else cli_env()
        extra = ["--token", TOKEN] if how == "flag" else []
        r = run_cli(api + path, *args, *extra, env=env)
        assert r.returncode == status, r.stderr
        line = error_line(r)
        assert TOKEN not in line and TOKEN[4:12] not in line
        assert TOKEN.encode() not in r.stdout
        if path.startswith("/status"):
            assert "refused the token" in line


def test_token_never_appears_in_network_errors():
    r = run_cli(f"http://127.0.0.1:{closed_port()}/anchor", "--max-attempts", "1",
                env=cli_env(SHEAF_TOKEN=TOKEN))
    assert r.returncode == 4
    assert TOKEN not in error_line(r)


# ---- streaming, the progress line, Ctrl-C ----------------------------------------------------

def test_output_starts_before_the_list_ends(api):
    # 10 pages walked one by one at 100 ms each: the first line must come well before the end.
    proc = subprocess.Popen(command(f"{api}/anchor?n=500&per_page=50&latency_ms=100",
                                    "--items", "/items", "--next", "/next_page"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, env=cli_env(), cwd=REPO)
    try:
        first = proc.stdout.readline()
        assert json.loads(first) == {"id": 0, "name": "item-0"}
        assert proc.poll() is None, "the first item came only after the process ended"
        rest = proc.stdout.read()          # not communicate(): it would skip what is buffered
        err = proc.stderr.read()
        proc.wait(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 0, err
    assert lines(first + rest) == expected(500)


def run_with_terminal_stderr(*args: str, env: dict | None = None, columns: int = 200):
    """Runs the CLI with stderr on a pseudo-terminal; returns (status, stdout, terminal bytes)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    proc = subprocess.Popen(command(*args), stdout=subprocess.PIPE, stderr=slave,
                            stdin=subprocess.DEVNULL, env=env or cli_env(), cwd=REPO)
    os.close(slave)
    chunks: list = []

    def pump() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
        reader.join(10)
        os.close(master)
    return proc.returncode, out, b"".join(chunks)


def test_items_and_progress_on_the_same_terminal_do_not_mix(api):
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 200, 0, 0))
    proc = subprocess.Popen(command(f"{api}/anchor?n=300&per_page=10&latency_ms=20",
                                    "--preset", "anchor", "--concurrency", "3"),
                            stdout=slave, stderr=slave, stdin=subprocess.DEVNULL,
                            env=cli_env(), cwd=REPO)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=60) == 0
    text = b"".join(chunks).decode()
    visible = [line.split("\r\x1b[K")[-1] for line in text.split("\r\n") if line]
    assert [json.loads(line) for line in visible[:-1]] == expected(300)
    assert visible[-1].startswith("sheaf: 300/300 items, 30/30 pages")


def test_no_progress_line_when_stderr_is_not_a_terminal(api):
    r = run_cli(f"{api}/anchor?n=1000&latency_ms=20", "--preset", "anchor", "--page-size", "20")
    assert r.returncode == 0, r.stderr
    assert lines(r.stdout) == expected(1000)
    assert r.stderr == b""


def test_progress_line_on_a_terminal(api):
    status, out, term = run_with_terminal_stderr(
        f"{api}/anchor?n=2000&latency_ms=30", "--preset", "anchor", "--page-size", "50",
        "--concurrency", "4")
    assert status == 0, term
    assert lines(out) == expected(2000)
    text = term.decode("utf-8", "replace")
    assert "\r\x1b[K" in text                          # rewritten in place
    assert "items" in text and "items/s" in text        # counts and a rate
    assert "2,000/2,000 items" in text and "40/40 pages" in text
    final = text.replace("\r\n", "\n").rstrip("\n").split("\n")[-1].split("\r\x1b[K")[-1]
    assert final.startswith("sheaf: 2,000/2,000 items"), final
    assert text.endswith("\n")                          # the line is finished at the end
    assert "Traceback" not in text


def test_progress_line_shows_eta_while_running(api):
    status, out, term = run_with_terminal_stderr(
        f"{api}/anchor?n=1000&latency_ms=150", "--preset", "anchor", "--page-size", "50",
        "--concurrency", "2")
    assert status == 0, term
    text = term.decode("utf-8", "replace")
    assert "ETA" in text and "in flight" in text and "/20 pages" in text


def test_progress_line_fits_a_narrow_terminal(api):
    status, out, term = run_with_terminal_stderr(f"{api}/anchor?n=100", "--preset", "anchor",
                                                 columns=30)
    assert status == 0, term
    for piece in term.decode().replace("\r\n", "\n").replace("\r\x1b[K", "\n").split("\n"):
        assert len(piece) < 30, piece


def test_quiet_means_no_progress_line_on_a_terminal(api):
    status, out, term = run_with_terminal_stderr(f"{api}/anchor?n=300", "--preset", "anchor",
                                                 "--quiet")
    assert status == 0, term
    assert lines(out) == expected(300)
    assert term == b""


def test_errors_on_a_terminal_end_the_progress_line_first(api):
    status, out, term = run_with_terminal_stderr(f"{api}/status?code=500", "--max-attempts", "1")
    assert status == 3
    text = term.decode().replace("\r\n", "\n")
    assert text.endswith("\n")
    last = text.rstrip("\n").split("\n")[-1]
    assert last.startswith("sheaf: ") and "500" in last


def test_ctrl_c_cancels_and_exits_130(api, server):
    proc = subprocess.Popen(command(f"{api}/anchor?n=100000&per_page=10&latency_ms=200",
                                    "--items", "/items", "--next", "/next_page"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0,   # no line read ahead
                            stdin=subprocess.DEVNULL, env=cli_env(), cwd=REPO)
    def first_item() -> None:
        assert json.loads(proc.stdout.readline())["id"] == 0

    out, err, token = interrupt_cli(proc, first_item)
    assert b"Traceback" not in err
    # The token goes on after the last item written.
    written = 1 + len(lines(out))
    rest = run_cli(f"{api}/anchor?n=100000&per_page=10&latency_ms=200", "--items", "/items", "--next", "/next_page",
                   "--max-items", "3", "--resume", token)
    assert lines(rest.stdout) == expected(written + 3, written)
    time.sleep(0.5)   # the list was cancelled: the walk does not go on after exit
    made = server.state.snapshot()["requests"]
    time.sleep(0.6)
    assert server.state.snapshot()["requests"] == made


def test_closed_pipe_stops_quietly(api):
    proc = subprocess.Popen(command(f"{api}/anchor?n=100000&per_page=100&latency_ms=20",
                                    "--items", "/items", "--next", "/next_page"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, env=cli_env(), cwd=REPO)
    def first_item() -> None:
        assert json.loads(proc.stdout.readline())["id"] == 0

    err = close_the_pipe(proc, first_item)
    assert b"Traceback" not in err


# ---- help ------------------------------------------------------------------------------------

def test_help_mentions_every_option_and_the_shapes():
    r = run_cli("--help")
    assert r.returncode == 0
    text = r.stdout.decode()
    for option in OPTIONS:
        assert option in text, option
    for word in ("SHEAF_TOKEN", "next_page", "per_page", '"results"', "X-Total-Count", "Link",
                 "bare array", "sheaf presets", "github", "stripe", "never ends silently short",
                 "401", "403", "exit status", "130"):
        assert word in text, word
    for code in ("0 ", "1 ", "2 ", "3 ", "4 ", "5 ", "6 "):
        assert f"\n  {code}" in text, code
    top = subprocess.run([sys.executable, "-m", "sheaf", "--help"], capture_output=True,
                         env=cli_env(), cwd=REPO, timeout=60)
    assert top.returncode == 0 and b"get" in top.stdout


def test_no_command_is_a_usage_error():
    r = subprocess.run([sys.executable, "-m", "sheaf"], capture_output=True, env=cli_env(),
                       cwd=REPO, timeout=60)
    assert r.returncode == 2
    assert b"usage:" in r.stderr


def test_a_mistyped_token_flag_does_not_echo_the_token():
    # argparse's "unrecognized arguments: --tokn SECRET" printed the token.
    r = run_cli("http://127.0.0.1:1/x", "--tokn", "s3cret-mistyped-value")
    assert r.returncode == 2
    assert b"s3cret-mistyped-value" not in r.stderr and b"--tokn" in r.stderr
    r = run_cli("http://127.0.0.1:1/x", "--api-key=s3cret-mistyped-value")
    assert r.returncode == 2 and b"s3cret-mistyped-value" not in r.stderr


# ---- sheaf request, and the options every command shares ----------------------------------------

def run_request(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sheaf", "request", *args], capture_output=True, timeout=60,
                          env=env or cli_env(), cwd=REPO, stdin=subprocess.DEVNULL)


def test_request_sends_a_json_body_headers_and_query(api, tmp_path):
    body = tmp_path / "thing.json"
    body.write_text('{"name": "x", "n": 2}')
    r = run_request(f"{api}/req/echo", "--json", f"@{body}", "-H", "X-One: 1", "-H", "X-Two:two",
                    "--query", "q=a b", "--api-key", "X-Key=k3y-value")
    assert r.returncode == 0, r.stderr
    echo = json.loads(r.stdout)
    assert echo["method"] == "POST" and echo["json"] == {"name": "x", "n": 2}
    assert echo["headers"]["x-one"] == ["1"] and echo["headers"]["x-two"] == ["two"]
    assert echo["headers"]["x-key"] == ["k3y-value"] and echo["query"] == [["q", "a b"]]


def test_request_methods_forms_and_basic_auth(api):
    r = run_request("-X", "put", f"{api}/req/echo", "--form", "a=1", "--form", "a=2", "--basic", "Aladdin:open sesame")
    assert r.returncode == 0, r.stderr
    echo = json.loads(r.stdout)
    assert echo["method"] == "PUT" and echo["form"] == {"a": ["1", "2"]}
    assert echo["headers"]["authorization"] == ["Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="]
    r = run_request("-X", "DELETE", f"{api}/req/echo", "-i")
    assert r.returncode == 0 and json.loads(r.stdout)["method"] == "DELETE"
    assert b"HTTP 200" in r.stderr and b"X-Echo-Method: DELETE" in r.stderr


def test_the_method_may_come_before_the_url(api):
    r = run_request("patch", f"{api}/req/echo", "--json", "{}")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["method"] == "PATCH"
    r = run_request("-X", "PATCH", "PATCH", f"{api}/req/echo")
    assert r.returncode == 0 and json.loads(r.stdout)["method"] == "PATCH"
    r = run_request("-X", "PUT", "PATCH", f"{api}/req/echo")
    assert r.returncode == 2 and b"two methods: -X PUT and PATCH" in r.stderr and b"usage: sheaf request" in r.stderr
    r = run_request(f"{api}/req/echo", f"{api}/req/echo")   # two URLs: not a method and a URL
    assert r.returncode == 2 and b"unrecognized arguments" in r.stderr


def test_a_failing_request_prints_the_body_and_the_servers_words(api):
    r = run_request(f"{api}/req/error/stripe", "--token", TOKEN)
    assert r.returncode == 3
    assert json.loads(r.stdout)["error"]["code"] == "parameter_missing"
    line = error_line(r)
    assert "HTTP 400" in line and "Missing required param: amount." in line and TOKEN not in line


def test_a_secret_never_appears_in_a_message(api):
    r = run_request(f"{api}/req/echo?status=401&api_key=k-secret-param", "--api-key-param", "appid=app-secret-1")
    assert r.returncode == 3
    assert b"k-secret-param" not in r.stderr and b"app-secret-1" not in r.stderr


def test_output_files_are_replaced_only_by_a_complete_run(api, tmp_path):
    target = tmp_path / "out.json"
    target.write_text("old")
    r = run_request(f"{api}/req/error/drf", "-o", str(target))
    assert r.returncode == 3 and target.read_text() == "old"
    r = run_request(f"{api}/req/echo", "-o", str(target))
    assert r.returncode == 0 and json.loads(target.read_text())["method"] == "GET"
    items = tmp_path / "items.jsonl"
    items.write_text("old")
    r = run_cli(f"{api}/anchor?n=100&fail=3:9:500", "--preset", "anchor", "--page-size", "10",
                "--max-attempts", "1", "-o", str(items))
    assert r.returncode == 3 and items.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".part")] == []
    r = run_cli(f"{api}/anchor?n=30", "-o", str(items))
    assert r.returncode == 0 and lines(items.read_bytes()) == expected(30)
    r = run_request(f"{api}/req/echo", "-o", str(tmp_path))
    assert r.returncode == 1 and b"directory" in r.stderr


def test_request_argument_errors_show_the_request_usage(api):
    for args in (["--json", "{bad"], ["--json", "{}", "--form", "a=1"], ["--form", "novalue"],
                 ["-H", "NoColon"], ["--key", "k.pem"], ["--token", "a", "--basic", "u:p"]):
        r = run_request(f"{api}/req/echo", *args)
        assert r.returncode == 2, (args, r.stderr)
        assert b"usage: sheaf request" in r.stderr, args


def test_download_writes_the_file_and_fails_cleanly(api, tmp_path):
    target = tmp_path / "sub" / "file.bin"
    r = subprocess.run([sys.executable, "-m", "sheaf", "download", f"{api}/req/download?size=200000", "-o", str(target)],
                       capture_output=True, timeout=60, env=cli_env(), cwd=REPO, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    assert target.read_bytes() == bytes(i % 251 for i in range(200000)) and r.stderr == b""
    r = subprocess.run([sys.executable, "-m", "sheaf", "download", f"{api}/req/error/drf", "-o", str(target)],
                       capture_output=True, timeout=60, env=cli_env(), cwd=REPO, stdin=subprocess.DEVNULL)
    assert r.returncode == 3 and b"You do not have permission" in r.stderr
    assert target.stat().st_size == 200000
    r = subprocess.run([sys.executable, "-m", "sheaf", "download", f"{api}/req/download?size=1"],
                       capture_output=True, timeout=60, env=cli_env(), cwd=REPO, stdin=subprocess.DEVNULL)
    assert r.returncode == 2 and b"usage: sheaf download" in r.stderr


def run_in(folder, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sheaf", *args], capture_output=True, timeout=60,
                          env=cli_env(), cwd=folder, stdin=subprocess.DEVNULL)


def test_dash_is_stdout_and_other_files_that_are_not_regular_are_refused(api, tmp_path):
    r = run_in(tmp_path, "request", f"{api}/req/echo", "-o", "-")
    assert r.returncode == 0 and json.loads(r.stdout)["method"] == "GET"
    r = run_in(tmp_path, "get", f"{api}/anchor?n=3", "-o", "-")
    assert r.returncode == 0 and lines(r.stdout) == expected(3)
    assert list(tmp_path.iterdir()) == []   # no file named "-"
    r = run_in(tmp_path, "download", f"{api}/req/download?size=10", "-o", "-")
    assert r.returncode == 2 and b"sheaf request" in r.stderr
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for args in (["request", f"{api}/req/echo"], ["get", f"{api}/anchor?n=3"],
                 ["download", f"{api}/req/download?size=10"]):
        r = run_in(tmp_path, *args, "-o", str(fifo))
        assert r.returncode in (1, 2) and b"is a FIFO" in r.stderr and b"not a regular file" in r.stderr, (args, r.stderr)
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["fifo"]


def test_an_output_file_keeps_the_mode_of_the_file_it_replaces(api, tmp_path):
    private = tmp_path / "private.json"
    private.write_text("old")
    os.chmod(private, 0o640)
    r = run_in(tmp_path, "request", f"{api}/req/echo", "-o", str(private))
    assert r.returncode == 0 and json.loads(private.read_text())["method"] == "GET"
    assert oct(private.stat().st_mode & 0o7777) == oct(0o640)
    fresh = tmp_path / "fresh.jsonl"
    r = subprocess.run([sys.executable, "-m", "sheaf", "get", f"{api}/anchor?n=3", "-o", str(fresh)], capture_output=True,
                       timeout=60, env=cli_env(), cwd=tmp_path, stdin=subprocess.DEVNULL, preexec_fn=lambda: os.umask(0o027))
    assert r.returncode == 0 and lines(fresh.read_bytes()) == expected(3)
    assert oct(fresh.stat().st_mode & 0o7777) == oct(0o640)


# ---- partitions ---------------------------------------------------------------------------------

def test_partitions_print_the_plan_and_each_partition_runs_alone(api, tmp_path):
    url = f"{api}/conv/github?n=237&per_page=20"
    key = "key-Partition-CLI-99"
    plan = run_cli(url, "--partitions", "4", "--token", TOKEN, "--query", f"api_key={key}")
    assert plan.returncode == 0, plan.stderr
    partitions = plan.stdout.decode().splitlines()
    assert len(partitions) == 4 and all(json.loads(line)["sheaf_partition"] == 1 for line in partitions)
    assert TOKEN.encode() not in plan.stdout and key.encode() not in plan.stdout
    items = []
    for index, line in enumerate(partitions):
        if index == 0:   # from a file
            (tmp_path / "p0.json").write_text(line + "\n")
            # A credential goes with a partition only to the origin of the URL given with it.
            result = run_cli(url, "--partition", str(tmp_path / "p0.json"), "--token", TOKEN, "--query", f"api_key={key}")
        elif index == 1:   # from stdin
            result = subprocess.run(command("--partition", "-", "--format", "json"), input=line.encode(),
                                    capture_output=True, timeout=60, env=cli_env(), cwd=REPO)
        else:   # inline
            result = run_cli("--partition", line, "--fields", "/id,/name")
        assert result.returncode == 0, result.stderr
        items += json.loads(result.stdout) if index == 1 else lines(result.stdout)
    assert items == expected(237)


def test_at_once_shares_the_window_among_the_partitions_that_run_together(api):
    url = f"{api}/anchor?n=400&per_page=20"
    windows = {at_once: {json.loads(line)["window"] for line in
                         run_cli(url, "--partitions", "8", "--max-concurrency", "48", *at_once).stdout.decode().splitlines()}
               for at_once in ((), ("--at-once", "2"), ("--at-once", "3"))}
    assert windows == {(): {6}, ("--at-once", "2"): {24}, ("--at-once", "3"): {16}}
    alone = run_cli(url, "--at-once", "2")
    assert alone.returncode == 2 and "give it with --partitions" in alone.stderr.decode(), alone.stderr


def test_a_partition_flag_refuses_what_it_holds_itself(api, tmp_path):
    line = run_cli(f"{api}/anchor?n=100&per_page=10", "--partitions", "2").stdout.decode().splitlines()[1]
    for extra, words in ((["--preset", "github"], "--partition holds the list's description"),
                         ([f"{api}/drf"], "a plan of another list"),
                         (["--partitions", "3"], "not with --partitions")):
        result = run_cli("--partition", line, *extra)
        assert result.returncode == 2 and words in result.stderr.decode(), result.stderr
    written = run_cli(f"{api}/anchor?n=100&per_page=10", "--partitions", "2", "-o", str(tmp_path / "written"))
    assert written.returncode == 0 and written.stdout == b"", written.stderr
    assert (tmp_path / "written").read_text().splitlines()[1] == line
    (tmp_path / "plan").write_text(line + "\n" + line + "\n")
    result = run_cli("--partition", str(tmp_path / "plan"))
    assert result.returncode == 2 and "holds 2 partitions" in result.stderr.decode(), result.stderr
    broken = json.loads(line)
    broken["first_page"] = -1
    result = run_cli("--partition", json.dumps(broken))
    assert result.returncode != 0 and "/first_page" in error_line(result), result.stderr
    assert run_cli().returncode == 2
