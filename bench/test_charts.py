"""bench/charts.py on a small results file: which rows become bars, and the SVGs it writes.

    python3 -m pytest -q -p no:cacheprovider bench/test_charts.py

Drawing needs matplotlib: from this interpreter, else from build/bench-venv's python (where
bench/README.md installs it). Without either, the drawing tests skip and say so; the rest run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import charts  # noqa: E402

ROWS = [
    {"id": "P1", "scenario": "N=200x50, L=50 ms, total, page parameter given, fixed W=8 (fetch_all, C)",
     "sheaf": "1.287 s", "floor": "1.250 s", "ratio": "1.03x", "target": "<= 1.05x floor; server saw 8", "met": "yes"},
    {"id": "P1", "scenario": "  baseline: requests, serial walk", "sheaf": "1.287 s", "floor": "10.355 s",
     "ratio": "0.12x", "target": "(Sheaf / baseline)", "met": "-"},
    {"id": "P5", "scenario": "  page JSON throughput (17.3 MB of pages)", "sheaf": "213 MB/s",
     "floor": "75 MB/s (jansson)", "ratio": "-", "target": ">= 100 MB/s", "met": "yes"},
    {"id": "P5", "scenario": "P5 C against `curl --parallel`", "sheaf": "0.081 s", "floor": "0.053 s (curl)",
     "ratio": "1.53x", "target": "<= 1.20x curl", "met": "NO"},
    {"id": "P13", "scenario": "a 404 on page 10 of 20", "sheaf": "0 request(s) after the 404 (most of 5 runs)",
     "floor": "4-11 in flight then", "ratio": "-", "target": "after <= in flight then", "met": "yes"},
]


def results() -> dict:
    return {"format": charts.FORMAT, "command": "python3 bench/run.py --only P1,P5,P13 --runs 1",
            "library": "libsheaf 0.4.0 (test)", "tree": "abc1234", "machine": "a test", "runs": 1, "rows": ROWS}


def test_rows_become_pairs_of_the_same_unit():
    found = charts.pairs(results())
    assert list(found) == ["P1", "P5", "P13"]
    p1 = found["P1"]
    assert [(p.sheaf, p.other, p.other_label, p.is_floor) for p in p1] == [
        (1.287, 1.25, "floor", True), (1.287, 10.355, "requests, serial walk", False)]
    assert [(p.unit, p.other_label) for p in found["P5"]] == [("MB/s", "jansson"), ("s", "curl")]
    assert found["P13"] == []            # no number against a number: not drawn


def test_parse_value():
    assert charts.parse_value("58.4 MB = 2 x 17.3 + 40") == (58.4, "MB", "= 2 x 17.3 + 40")
    assert charts.parse_value("85 us/page") == (85.0, "us/page", "")
    assert charts.parse_value("10,355 s") == (10355.0, "s", "")
    assert charts.parse_value("7 (3.4%)") is None
    assert charts.parse_value("-") is None


def matplotlib_python():
    """An interpreter with matplotlib: this one, or build/bench-venv's; None when neither has it."""
    if charts.available() is None:
        return sys.executable
    for venv in (BENCH.parent / "build" / "bench-venv",):
        python = venv / "bin" / "python"
        if python.exists() and subprocess.run([str(python), "-c", "import matplotlib"],
                                              capture_output=True).returncode == 0:
            return str(python)
    return None


def test_charts_py_draws_an_svg_per_scenario_with_its_names(tmp_path):
    python = matplotlib_python()
    if python is None:
        pytest.skip("matplotlib is not installed here nor in build/bench-venv: "
                    "build/bench-venv/bin/pip install matplotlib to draw the charts")
    saved = tmp_path / "results.json"
    saved.write_text(json.dumps(results()))
    out = tmp_path / "charts"
    done = subprocess.run([python, str(BENCH / "charts.py"), str(saved), str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["P1.svg", "P5.svg"]
    assert "nothing to draw for P13" in done.stderr
    p1 = (out / "P1.svg").read_text()
    assert p1.startswith("<?xml") and "<svg" in p1
    for text in ("P1: Sheaf against the floor and its peers", "baseline: requests, serial walk", "floor: 1.250 s",
                 "requests, serial walk: 10.355 s", "python3 bench/run.py --only P1,P5,P13 --runs 1"):
        assert text in p1, text
    p5 = (out / "P5.svg").read_text()
    assert "jansson: 75.0 MB/s" in p5 and "curl: 0.053 s" in p5 and "target missed" in p5
    # The same results draw the same bytes (the SVGs are committed under docs/).
    again = tmp_path / "again"
    subprocess.run([python, str(BENCH / "charts.py"), str(saved), str(again)], check=True, capture_output=True)
    assert (again / "P1.svg").read_bytes() == (out / "P1.svg").read_bytes()


def test_without_matplotlib_it_says_so_in_one_line(tmp_path):
    if charts.available() is None:
        pytest.skip("matplotlib is installed in this interpreter: the message for its absence is not shown here")
    saved = tmp_path / "results.json"
    saved.write_text(json.dumps(results()))
    done = subprocess.run([sys.executable, str(BENCH / "charts.py"), str(saved), str(tmp_path / "c")],
                          capture_output=True, text=True)
    assert done.returncode == 3
    assert done.stderr.count("\n") == 1 and "matplotlib is not installed" in done.stderr
    assert not (tmp_path / "c").exists()


def test_a_file_that_is_not_a_results_file_is_refused(tmp_path):
    other = tmp_path / "other.json"
    other.write_text("{}")
    done = subprocess.run([sys.executable, str(BENCH / "charts.py"), str(other), str(tmp_path / "c")],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "not a bench/run.py results file" in done.stderr
