"""bench/scan's Swift driver (scan_pages, P5's scanner row) still builds from the library's scanner
source files and reads what those files find, so a change to the scanner that breaks the row shows
here, not as "not run" in the next benchmark table.

    python3 -m pytest -q -p no:cacheprovider bench/test_scan.py

Built unoptimised (1 to 2 s; the row builds it with -O -wmo); skipped, saying so, without swiftc.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import run  # noqa: E402  (bench/run.py: the driver's sources and its pages file format)


def _pages_file(path: Path, pages: list) -> Path:
    path.write_bytes(b"".join(map(run.page_record, pages)))
    return path


@pytest.fixture(scope="module")
def scan_pages(tmp_path_factory) -> Path:
    if shutil.which("swiftc") is None:
        pytest.skip("swiftc is not on PATH")
    out = tmp_path_factory.mktemp("scan") / "scan_pages"
    sources = [str(path) for path in run.scan_driver_sources()]
    done = subprocess.run(["swiftc", "-Onone", *sources, "-o", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return out


def test_the_scanner_driver_counts_the_items_of_every_page(scan_pages, tmp_path) -> None:
    bodies = [
        b'{"items":[{"id":0,"name":"a \\"quoted\\" one"},{"id":1,"tags":[1,[2]]}],"total":3,"next_page":"/p?page=2"}',
        b'{"total":3,"items":[{"id":2,"x":{"items":[9,9]}}],"next_page":null}',   # a nested "items" is not the list's
    ]
    done = subprocess.run([str(scan_pages), str(_pages_file(tmp_path / "pages", bodies)), "2"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["pages"], report["items"], report["reps"], report["bytes"]) == (2, 3, 2, sum(map(len, bodies)))


def test_a_page_that_is_not_json_fails_the_driver(scan_pages, tmp_path) -> None:
    pages = _pages_file(tmp_path / "pages", [b'{"items":[1,2,]}'])
    done = subprocess.run([str(scan_pages), str(pages), "1"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3 and "not JSON" in done.stderr
