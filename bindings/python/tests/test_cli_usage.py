"""The `sheaf` command as people expect it: a subcommand's own usage on a bad argument, --version,
a progress line that keeps what matters on a narrow terminal, --format csv and --fields, shell
completion made from the parser, and help that covers every flag.

    SHEAF_LIBRARY_PATH=build/lib/libsheaf.so.1 python3 -m pytest bindings/python/tests/test_cli_usage.py
"""

from __future__ import annotations

import argparse
import csv
import fcntl
import io
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, close_the_pipe, expected_items, interrupt_cli, stats, walk

import sheaf
from sheaf import cli
from sheaf.cli.progress import Progress, status_line
from sheaf.snapshot import Progress as Counts

PYTHON_DIR = REPO / "bindings" / "python"
NOWHERE = "http://127.0.0.1:1/things"   # never reached: the arguments fail first


def environment(**extra: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR), SHEAF_LIBRARY_PATH=sheaf.library_path)
    env.pop("SHEAF_TOKEN", None)
    env.update(extra)
    return env


def sheaf_command(*args: str, env: dict | None = None, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sheaf", *args], capture_output=True, timeout=60,
                          env=env or environment(), cwd=cwd, stdin=subprocess.DEVNULL)


def csv_rows(data: bytes) -> list:
    return list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))


# ---- usage errors name the subcommand ---------------------------------------------------------

@pytest.mark.parametrize("args, says", [
    (["get", "--max-items", "x", NOWHERE], "argument --max-items: expected a positive integer, got 'x'"),
    (["get", NOWHERE, "--format", "xml"], "argument --format: invalid choice: 'xml'"),
    (["get", NOWHERE, "--bogus"], "unrecognized arguments: --bogus"),          # was the top-level usage
    (["get", NOWHERE, "--page-size", "10"], "--page-size needs --size-param"),  # found after parsing
    (["get", NOWHERE, "--format", "csv"], "--format csv needs --fields"),
    (["get", NOWHERE, "--fields", "id,/name"], "'id' is not a JSON pointer"),
    (["get", NOWHERE, "--fields", "/a~2b"], "'~' is written ~0"),
    (["get", NOWHERE, "--fields", "/id,/id"], "/id is named twice"),
    (["request", NOWHERE, "--bogus"], "unrecognized arguments: --bogus"),
    (["request", NOWHERE, "--json", "{bad"], "--json is not JSON"),
    (["download", NOWHERE, "-o", "file", "--bogus"], "unrecognized arguments: --bogus"),
    (["completion", "fish"], "argument shell: invalid choice: 'fish'"),
])
def test_an_argument_error_shows_the_usage_of_the_subcommand_used(args, says):
    r = sheaf_command(*args)
    assert r.returncode == 2, r.stderr
    err = r.stderr.decode()
    assert err.startswith(f"usage: sheaf {args[0]} "), err
    assert f"\nsheaf {args[0]}: error: " in err and says in err, err
    assert "usage: sheaf [-h]" not in err and r.stdout == b""


def test_an_unknown_flag_still_hides_a_token_it_carries():
    r = sheaf_command("get", NOWHERE, "--tokn", "s3cret-mistyped-value")
    assert r.returncode == 2
    assert r.stderr.startswith(b"usage: sheaf get ") and b"s3cret-mistyped-value" not in r.stderr


# ---- --version --------------------------------------------------------------------------------

def test_version_names_the_package_and_the_library():
    r = sheaf_command("--version")
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().splitlines() == [f"sheaf {sheaf.__version__}",
                                              f"libsheaf {sheaf.library_version()} ({sheaf.library_path})"]
    assert r.stderr == b""


def test_version_without_the_library_still_names_the_package(monkeypatch, capsys):
    def missing() -> str:
        raise ImportError("sheaf: cannot load libsheaf.so")

    monkeypatch.setattr(sheaf, "library_version", missing)
    with pytest.raises(SystemExit) as exit:
        cli.main(["--version"])
    assert exit.value.code == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"sheaf {sheaf.__version__}"
    assert out[1].startswith("libsheaf: not found") and "SHEAF_LIBRARY_PATH" in out[1]


def test_version_of_a_package_with_no_library_anywhere(tmp_path):
    package = tmp_path / "sheaf"
    sources = Path(sheaf.__file__).parent
    for source in sources.rglob("*.py"):   # the Python files alone, subpackages included
        copy = package / source.relative_to(sources)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, copy)
    r = sheaf_command("--version", env=environment(PYTHONPATH=str(tmp_path), SHEAF_LIBRARY_PATH="/nowhere/libsheaf.so.1"),
                      cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().splitlines()[0] == f"sheaf {sheaf.__version__}" and b"not found" in r.stdout


# ---- the progress line on a narrow terminal ------------------------------------------------------

#: 12,345 of 100,000 items after 5 s: 2,469 items/s, 36 s to go.
RUNNING = Counts(item_count=12_345, page_count=124, expected_items=100_000, expected_pages=1_000,
                 requests_in_flight=8, requests_made=130, window=16)


@pytest.mark.parametrize("width, line", [
    (100, "sheaf: 12,345/100,000 items, 124/1,000 pages, 8 in flight (window 16), 2,469 items/s, ETA 36s"),
    (60, "sheaf: 12,345/100,000 items, 2,469 items/s, ETA 36s"),
    (40, "12,345/100,000 2,469/s ETA 36s"),
    (20, "12.3k/100k ETA 36s"),
])
def test_a_narrow_line_keeps_the_items_the_rate_and_the_eta(width, line):
    assert status_line(RUNNING, 5.0, width) == line


def test_no_width_is_exceeded_and_items_rate_and_eta_go_last():
    shortest_with_all_three = len("12.3k/100k 2,469/s ETA 36s")
    lines = {width: status_line(RUNNING, 5.0, width) for width in range(1, 131)}
    for width, line in lines.items():
        assert len(line) <= width, (width, line)
        if width >= len("12.3k/100k"):
            assert "12,345/100,000" in line or "12.3k/100k" in line, (width, line)
        if width >= shortest_with_all_three:
            assert "ETA 36s" in line and "2,469" in line and "/s" in line, (width, line)
    # Each part, once given up, stays away at every smaller width; and they go in this order.
    markers = ["(window", "in flight", " pages", "sheaf: ", " items", "/s", "ETA"]
    last_width_with = [max(w for w, line in lines.items() if marker in line) for marker in markers]
    assert last_width_with == sorted(last_width_with, reverse=True), dict(zip(markers, last_width_with))
    for marker, last in zip(markers, last_width_with):
        assert all(marker in lines[w] for w in range(last, 131)), marker


def test_the_final_line_and_the_waiting_line_fit_too():
    for width in (20, 40, 60, 100):
        final = status_line(RUNNING, 5.0, width, final=True, note="stopped where asked")
        assert len(final) <= width and ("12,345" in final or "12.3k" in final)
        waiting = status_line(None, 1.25, width)
        assert len(waiting) <= width and "waiting" in waiting
    assert status_line(RUNNING, 5.0, 200, final=True, note="failed") == (
        "sheaf: 12,345/100,000 items, 124/1,000 pages, 2,469 items/s, 130 requests, in 5.0s (failed)")


def test_the_drawn_line_stays_off_the_last_column(monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")   # a StringIO has no terminal size: $COLUMNS is used
    terminal = io.StringIO()
    clock = iter([0.0, 5.0]).__next__
    progress = Progress(terminal, enabled=True, clock=clock)
    progress.snapshot = RUNNING
    progress.finish("interrupted")
    drawn = terminal.getvalue()
    assert drawn.startswith("\r\x1b[K") and drawn.endswith("\n")
    assert drawn[4:-1] == "12,345/100,000 2,469/s in 5.0s" and len(drawn[4:-1]) <= 39


# ---- --format csv and --fields --------------------------------------------------------------------

def test_csv_has_a_row_per_item_of_the_server(api):
    path = "/anchor?n=237&pad=3"
    r = sheaf_command("get", api.base_url + path, "--preset", "anchor", "--page-size", "20",
                      "--format", "csv", "--fields", "/id,/name,/pad,/absent")
    assert r.returncode == 0, r.stderr
    assert r.stderr == b""
    served = walk(api, path, "items", "next_page")
    assert len(served) == 237
    assert csv_rows(r.stdout) == [["id", "name", "pad", "absent"]] + [
        [str(item["id"]), item["name"], item["pad"], ""] for item in served]
    assert r.stdout.endswith(b"\r\n")   # RFC 4180 rows, as the csv module writes them


def test_csv_cells_follow_json_pointers_and_types():
    items = json.loads("""[
        {"id": 1, "ok": true, "none": null, "ratio": 0.5, "text": "a, \\"b\\"\\nc\\r", "user": {"login": "\u00e9l\u00e8ve"},
         "labels": [{"name": "bug"}, {"name": "ui"}], "tags": ["x", "y"], "a/b": 2, "m~n": 3, "": 4},
        {"id": 2, "ok": false, "labels": [], "user": "not an object"},
        "not an object"
    ]""")
    fields = cli._fields("/id,/ok,/none,/ratio,/text,/user/login,/labels/0/name,/labels/1/name,/labels/01/name,"
                         "/labels/-/name,/tags,/user,/a~1b,/m~0n,/")
    out = io.BytesIO()
    writer = cli.FieldWriter(out, "csv", fields, header=True)
    writer.start()
    writer.add(items)
    writer.finish()
    rows = csv_rows(out.getvalue())
    assert rows[0] == ["id", "ok", "none", "ratio", "text", "user/login", "labels/0/name", "labels/1/name",
                       "labels/01/name", "labels/-/name", "tags", "user", "a~1b", "m~0n", ""]
    assert rows[1] == ["1", "true", "", "0.5", 'a, "b"\nc\r', "\u00e9l\u00e8ve", "bug", "ui", "", "",
                       '["x","y"]', '{"login":"\u00e9l\u00e8ve"}', "2", "3", "4"]
    assert rows[2] == ["2", "false", "", "", "", "", "", "", "", "", "", "not an object", "", "", ""]
    assert rows[3] == [""] * 15


def test_csv_without_fields_is_a_usage_error_and_fetches_nothing(api):
    r = sheaf_command("get", f"{api.base_url}/anchor?n=10", "--format", "csv")
    assert r.returncode == 2
    assert r.stderr.startswith(b"usage: sheaf get ") and b"--format csv needs --fields" in r.stderr
    assert stats(api)["log"] == []


@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_format_flag_writes_what_it_wrote_before(api, fmt):
    url = f"{api.base_url}/anchor?n=75&indent=1"
    r = sheaf_command("get", url, "--preset", "anchor", "--format", fmt)
    assert r.returncode == 0, r.stderr
    if fmt == "jsonl":
        assert r.stdout == sheaf_command("get", url, "--preset", "anchor").stdout   # the default
        assert [json.loads(line) for line in r.stdout.splitlines()] == expected_items(75)
        assert b'"id": 0,' in r.stdout.splitlines()[0]   # the server's bytes: not decoded in Python
    else:
        assert json.loads(r.stdout) == expected_items(75)


@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_fields_with_json_project_each_item(api, fmt):
    r = sheaf_command("get", f"{api.base_url}/anchor?n=57", "--preset", "anchor", "--page-size", "10",
                      "--format", fmt, "--fields", "/id,/nope")
    assert r.returncode == 0, r.stderr
    items = [json.loads(line) for line in r.stdout.splitlines()] if fmt == "jsonl" else json.loads(r.stdout)
    assert items == [{"id": i, "nope": None} for i in range(57)]
    empty = sheaf_command("get", f"{api.base_url}/anchor?n=0", "--preset", "anchor", "--format", fmt, "--fields", "/id")
    assert empty.returncode == 0 and empty.stdout == (b"[]\n" if fmt == "json" else b"")


def test_a_failure_leaves_the_json_array_closed_and_a_token_that_goes_on(api):
    url = f"{api.base_url}/anchor?n=100&per_page=10&fail=3:2:503"   # page 3 fails twice, then answers
    args = ["--items", "/items", "--next", "/next_page", "--fields", "/id", "--format", "json"]
    r = sheaf_command("get", url, *args, "--max-attempts", "1")
    assert r.returncode == 3
    assert json.loads(r.stdout) == [{"id": i} for i in range(20)]
    last = r.stderr.decode().splitlines()[-1]
    assert last.startswith("sheaf: to go on: --resume ")
    rest = sheaf_command("get", url, *args, "--max-attempts", "2", "--resume", last.rsplit(" ", 1)[1])
    assert rest.returncode == 0, rest.stderr
    assert json.loads(rest.stdout) == [{"id": i} for i in range(20, 100)]


def test_a_resumed_csv_has_no_second_header(api, tmp_path):
    url = f"{api.base_url}/anchor?n=100"
    args = ["--preset", "anchor", "--page-size", "20", "--format", "csv", "--fields", "/id,/name"]
    first = sheaf_command("get", url, *args, "--max-items", "30")
    assert first.returncode == 0, first.stderr
    token = first.stderr.decode().splitlines()[-1].rsplit(" ", 1)[1]
    target = tmp_path / "rest.csv"
    rest = sheaf_command("get", url, *args, "--resume", token, "-o", str(target))
    assert rest.returncode == 0 and rest.stderr == b"", rest.stderr
    assert csv_rows(first.stdout + target.read_bytes()) == [["id", "name"]] + [
        [str(item["id"]), item["name"]] for item in expected_items(100)]


def test_csv_into_a_closed_pipe_stops_quietly(api):
    proc = subprocess.Popen([sys.executable, "-m", "sheaf", "get", f"{api.base_url}/anchor?n=100000&per_page=100&latency_ms=20",
                             "--items", "/items", "--next", "/next_page", "--format", "csv", "--fields", "/id"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            env=environment(), cwd=REPO)
    def header() -> None:
        assert proc.stdout.readline() == b"id\r\n"

    err = close_the_pipe(proc, header)
    assert err == b"", err


def test_ctrl_c_during_csv_gives_a_token_after_the_rows_written(api):
    url = f"{api.base_url}/anchor?n=100000&per_page=10&latency_ms=200"
    args = ["--items", "/items", "--next", "/next_page", "--format", "csv", "--fields", "/id"]
    proc = subprocess.Popen([sys.executable, "-m", "sheaf", "get", url, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, bufsize=0, stdin=subprocess.DEVNULL, env=environment(), cwd=REPO)
    def header_and_first_row() -> None:
        assert proc.stdout.readline() == b"id\r\n"
        assert proc.stdout.readline() == b"0\r\n"

    out, _, token = interrupt_cli(proc, header_and_first_row)
    written = 1 + len(csv_rows(out))
    rest = sheaf_command("get", url, *args, "--max-items", "3", "--resume", token)
    assert csv_rows(rest.stdout) == [[str(i)] for i in range(written, written + 3)]


# ---- shell completion -------------------------------------------------------------------------------

def subcommands() -> dict:
    parser = cli.build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def flags_of(name: str) -> list:
    return [option for action in subcommands()[name]._actions for option in action.option_strings]


@pytest.fixture(scope="module")
def bash_script(tmp_path_factory) -> Path:
    r = sheaf_command("completion", "bash")
    assert r.returncode == 0, r.stderr
    path = tmp_path_factory.mktemp("completion") / "sheaf.bash"
    path.write_bytes(r.stdout)
    return path


#: For the shells: the environment less a sanitizer's LD_PRELOAD (they are not Sheaf's code).
SHELL_ENV = {name: value for name, value in os.environ.items() if name != "LD_PRELOAD"}


def complete_in_bash(script: Path, *words: str) -> list:
    """What the script offers for the last of `words` (the words typed after `sheaf`)."""
    typed = " ".join(f"'{word}'" for word in words)
    code = (f"source '{script}'; COMP_WORDS=(sheaf {typed}); COMP_CWORD={len(words)}; "
            "_sheaf; printf '%s\\n' \"${COMPREPLY[@]}\"")
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c", code], capture_output=True, text=True, timeout=30,
                       env=SHELL_ENV)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    return sorted(filter(None, r.stdout.splitlines()))


def test_the_bash_script_parses_and_knows_every_flag_of_get(bash_script):
    assert subprocess.run(["bash", "-n", str(bash_script)], capture_output=True, timeout=30,
                          env=SHELL_ENV).returncode == 0
    text = bash_script.read_text()
    assert "complete -F _sheaf sheaf" in text
    get_flags = flags_of("get")
    assert {"--format", "--fields", "--preset", "--max-items", "-o", "--output"} <= set(get_flags)
    for flag in get_flags:
        assert f" {flag} " in text or f" {flag}\"" in text, flag


def test_bash_completes_subcommands_flags_and_their_values(bash_script, tmp_path):
    assert complete_in_bash(bash_script, "") == sorted([*subcommands(), "-h", "--help", "--version"])
    assert complete_in_bash(bash_script, "get", "--max-") == ["--max-attempts", "--max-concurrency", "--max-items",
                                                              "--max-pages", "--max-requests", "--max-wait"]
    assert complete_in_bash(bash_script, "get", "URL", "--format", "") == ["csv", "json", "jsonl"]
    assert complete_in_bash(bash_script, "get", "--format", "=", "js") == ["json", "jsonl"]
    assert complete_in_bash(bash_script, "get", "--preset", "") == sorted(sheaf.presets())
    assert complete_in_bash(bash_script, "get", "--token", "") == []
    assert complete_in_bash(bash_script, "request", "-X", "POST", "--js") == ["--json"]
    assert complete_in_bash(bash_script, "completion", "") == ["bash", "zsh"]
    (tmp_path / "things.csv").write_text("")
    assert complete_in_bash(bash_script, "get", "-o", str(tmp_path / "thi")) == [str(tmp_path / "things.csv")]


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_the_zsh_script_parses_and_registers_itself(tmp_path):
    r = sheaf_command("completion", "zsh")
    assert r.returncode == 0, r.stderr
    script = tmp_path / "_sheaf"
    script.write_bytes(r.stdout)
    assert subprocess.run(["zsh", "-n", str(script)], capture_output=True, timeout=30, env=SHELL_ENV).returncode == 0
    text = script.read_text()
    assert text.startswith("#compdef sheaf\n")
    for flag in flags_of("get"):
        assert flag in text, flag
    assert ":format:(jsonl json csv)" in text and "github" in text
    loaded = subprocess.run(["zsh", "-f", "-c", f"autoload -U compinit; compinit -u -d {tmp_path}/zcompdump; "
                                              f"source {script}; print -r -- $_comps[sheaf]"],
                            capture_output=True, text=True, timeout=60, env=dict(SHELL_ENV, HOME=str(tmp_path)))
    assert loaded.returncode == 0 and loaded.stdout.strip() == "_sheaf", loaded.stderr


# ---- help -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(subcommands()))
def test_help_of_every_subcommand_shows_every_flag(name):
    for action in subcommands()[name]._actions:
        assert action.help != argparse.SUPPRESS, action.option_strings
    r = sheaf_command(name, "--help")
    assert r.returncode == 0, r.stderr
    text = r.stdout.decode()
    assert text.startswith(f"usage: sheaf {name} ")
    for flag in flags_of(name):
        assert flag in text, flag


def test_get_help_has_examples_of_every_format():
    text = sheaf_command("get", "--help").stdout.decode()
    assert "\nexamples:\n" in text and "\noutput formats:\n" in text
    for example in ("--format json -o things.json", "--format csv --fields /number,/user/login,/labels/0/name",
                    "--fields /id,/owner/name"):
        assert example in text, example


# ---- stdout whose reader left ------------------------------------------------------------------

@pytest.mark.parametrize("args", [["presets"], ["get", "--help"]])
def test_a_command_whose_reader_leaves_after_the_first_line_stops_quietly(args):
    # `sheaf presets | head -1`: a pipe of one page (4 KB, the least Linux allows), so the
    # command is still writing when the reader closes it after the first line.
    assert len(sheaf_command(*args).stdout) > 4096 + 200   # more than the pipe holds
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)
    proc = subprocess.Popen([sys.executable, "-m", "sheaf", *args], stdout=write_end, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, env=environment(), cwd=REPO)
    os.close(write_end)
    try:
        first_line = b""
        while not first_line.endswith(b"\n"):
            first_line += os.read(read_end, 1)
        os.close(read_end)
        err = proc.stderr.read()
        proc.wait(timeout=30)
    finally:
        proc.kill()
        proc.wait()
    assert b"Traceback" not in err and b"BrokenPipeError" not in err, err
    assert err == b"" and proc.returncode in (0, -signal.SIGPIPE, 128 + signal.SIGPIPE), (proc.returncode, err)


# ---- printed flags paste back --------------------------------------------------------------------

def _description_json(list_options: dict) -> dict:
    """What the library makes of a list described by `list_options` (nothing fetched)."""
    import ctypes

    from sheaf import _ffi

    with sheaf.Client(NOWHERE.rsplit("/", 1)[0]) as client:
        run = client._new_run("/things", None, list_options, None)
        try:
            pointer, length = ctypes.c_void_p(), ctypes.c_size_t()
            _ffi.lib.sheaf_list_description(run.handle, ctypes.byref(pointer), ctypes.byref(length))
            return json.loads(_ffi.take_string(pointer, length.value))
        finally:
            run.close()


def _pinned(description: dict) -> dict:
    """The parts of a description that decide requests: a size parameter without a size sends
    nothing (a preset names it for a --page-size given later; no flag names it alone)."""
    paging = dict(description["paging"])
    if paging.get("size") is None:
        paging.pop("size_param", None)
    return {"paging": paging, "signals": description["signals"]}


def test_every_preset_prints_flags_that_paste_back_into_sheaf_get(capsys):
    assert cli.main(["presets"]) == 0
    printed = capsys.readouterr().out.splitlines()
    presets = sheaf.presets()
    assert len(printed) == 2 * len(presets)
    for name, flags_line in zip(printed[0::2], printed[1::2]):
        name = name.split()[0]
        parser = cli.build_parser()
        args = parser.parse_args(["get", NOWHERE, *shlex.split(flags_line)])
        from_flags = _description_json(cli._list_options(args.subparser, args))
        assert _pinned(from_flags) == _pinned(_description_json({"preset": name})), (name, flags_line)


# ---- unrecognized arguments are not repeated ---------------------------------------------------

@pytest.mark.parametrize("args", [
    ["get", NOWHERE, "s3cret-given-positionally"],
    ["get", NOWHERE, "--bogus", "s3cret-given-positionally"],
    ["get", NOWHERE, "--bogus=s3cret-given-positionally"],
    ["request", NOWHERE, "s3cret-given-positionally"],
    ["download", NOWHERE, "-o", "file", "s3cret-given-positionally"],
])
def test_an_unrecognized_argument_is_never_repeated_it_may_be_a_secret(args):
    r = sheaf_command(*args)
    assert r.returncode == 2, r.stderr
    assert b"s3cret" not in r.stderr and b"s3cret" not in r.stdout, r.stderr
    assert r.stderr.startswith(f"usage: sheaf {args[0]} ".encode()) and b"unrecognized argument" in r.stderr, r.stderr
