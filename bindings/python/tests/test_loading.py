"""Finding libsheaf.so, refusing a wrong version, and saying where it looked."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import sheaf
from sheaf import _ffi

#: This package's ABI version as sheaf_version_number gives it (x.y.0), and the refusal text of others.
CURRENT = _ffi.ABI_MAJOR * 10000 + _ffi.ABI_MINOR * 100
NEEDS = f"needs version {_ffi.ABI_MAJOR}.x, {_ffi.ABI_MAJOR}.{_ffi.ABI_MINOR} or later"

PACKAGE = Path(sheaf.__file__).resolve().parent


class FakeFunction:
    def __init__(self, value: int) -> None:
        self.value = value
        self.argtypes = None
        self.restype = None

    def __call__(self) -> int:
        return self.value


class FakeLibrary:
    """Stands in for a loaded library of another major version."""

    def __init__(self, number: int) -> None:
        self.sheaf_version_number = FakeFunction(number)


def test_a_library_of_another_major_version_is_refused():
    assert _ffi.version_problem(FakeLibrary(CURRENT + 1)) is None      # x.y.1
    assert _ffi.version_problem(FakeLibrary(CURRENT + 100)) is None    # x.(y+1).0: the ABI only grew
    problem = _ffi.version_problem(FakeLibrary(CURRENT + 10000))       # (x+1).0.0
    assert problem is not None and f"{_ffi.ABI_MAJOR + 1}.{_ffi.ABI_MINOR}.0" in problem and NEEDS in problem
    problem = _ffi.version_problem(FakeLibrary(4 * 100))               # 0.4.0, before the ABI was frozen
    assert problem is not None and "0.4.0" in problem and NEEDS in problem


def test_loading_reports_a_wrong_version_for_every_place_tried(monkeypatch):
    environ = {"SHEAF_LIBRARY_PATH": sheaf.library_path}
    with pytest.raises(ImportError) as raised:
        _ffi.load_library(environ, loader=lambda path: FakeLibrary(20000))
    message = str(raised.value)
    assert sheaf.library_path in message
    assert "version 2.0.0" in message and NEEDS in message


def test_a_library_path_that_does_not_load_is_an_error_not_a_fall_back(tmp_path):
    bogus = tmp_path / "libsheaf.so.1"
    bogus.write_text("not an ELF file")
    loaded = []

    def loader(path):
        if path == str(bogus):
            return _ffi.ctypes.CDLL(path)   # raises OSError
        loaded.append(path)
        return FakeLibrary(CURRENT)

    for environ, why in (({"SHEAF_LIBRARY_PATH": str(bogus)}, "cannot be loaded"),
                         ({"SHEAF_LIBRARY_PATH": str(tmp_path / "missing.so")}, "no such file")):
        with pytest.raises(ImportError) as raised:
            _ffi.load_library(environ, loader=loader)
        assert environ["SHEAF_LIBRARY_PATH"] in str(raised.value) and why in str(raised.value)
        assert "build tree" not in str(raised.value)
    assert loaded == []     # nothing else was tried


def copy_of_the_package(destination: Path) -> Path:
    """The package's Python files alone, somewhere with no lib/ and no build tree around."""
    target = destination / "sheaf"
    target.mkdir()
    for source in PACKAGE.iterdir():
        if source.suffix == ".py" or source.name == "py.typed":
            shutil.copy(source, target / source.name)
    return destination


def run_python(code: str, pythonpath: Path, library_path: str) -> subprocess.CompletedProcess:
    environ = dict(os.environ, PYTHONPATH=str(pythonpath), SHEAF_LIBRARY_PATH=library_path)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=environ, cwd=str(pythonpath),
                          capture_output=True, text=True, timeout=60)


def test_an_import_error_lists_every_place_tried_when_nothing_is_found(tmp_path):
    # The package imports without its library (so `sheaf --version` answers); the first use of
    # the library raises the ImportError.
    root = copy_of_the_package(tmp_path)
    use = "import sheaf\nassert sheaf.library_path is None\nsheaf.Client('http://127.0.0.1:1')"
    result = run_python(use, root, "/nowhere/libsheaf.so.1")
    assert result.returncode != 0
    assert "ImportError" in result.stderr
    assert "/nowhere/libsheaf.so.1: no such file" in result.stderr
    result = run_python(use, root, "")     # not set: every place is tried
    assert result.returncode != 0
    assert str(root / "sheaf" / "lib") in result.stderr
    assert "build tree" in result.stderr and "build/lib/libsheaf.so.1" in result.stderr


def test_the_library_named_by_the_environment_is_the_one_loaded(tmp_path):
    root = copy_of_the_package(tmp_path)
    real = os.path.realpath(sheaf.library_path)
    result = run_python("import sheaf; print(sheaf.library_path)", root, real)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == real


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_a_real_library_of_another_major_version_is_refused_at_first_use(tmp_path):
    source = tmp_path / "fake.c"
    source.write_text("int sheaf_version_number(void) { return 20000; }\n")
    fake = tmp_path / "libsheaf.so.2"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(fake), str(source)], check=True)
    root = copy_of_the_package(tmp_path)
    result = run_python("import sheaf\nsheaf.Client('http://127.0.0.1:1')", root, str(fake))
    assert result.returncode != 0
    assert f"{fake}: version 2.0.0" in result.stderr and NEEDS in result.stderr


def test_every_function_of_the_header_is_declared_with_its_types():
    import re

    from conftest import REPO

    header = (REPO / "include" / "sheaf.h").read_text()
    header = re.sub(r"/\*.*?\*/", " ", header, flags=re.S)
    names = set(re.findall(r"SHEAF_API\s+[^;{}]*?\b(sheaf_\w+)\s*\(", header))
    assert len(names) >= 40
    for name in sorted(names):
        function = getattr(_ffi.lib, name)
        assert function.argtypes is not None, f"{name} has no argtypes"
        if name not in ("sheaf_free", "sheaf_client_free", "sheaf_list_free", "sheaf_error_free", "sheaf_request_free",
                        "sheaf_group_free"):
            assert function.restype is not None, f"{name} has no restype"
    # ... and each under its C prototype, as a comment in _ffi.py.
    source = Path(_ffi.__file__).read_text()
    for name in names:
        assert re.search(rf"#\s.*\b{name}\(", source), f"{name} has no prototype comment"


def test_library_owned_strings_are_never_read_through_c_char_p():
    # c_char_p results are copied by ctypes and the original leaked: only borrowed or static
    # strings may use it; strings the caller frees come back through c_void_p out-parameters.
    borrowed = {"sheaf_version_string", "sheaf_result_str", "sheaf_exchange_method", "sheaf_exchange_url",
                "sheaf_preset_name", "sheaf_request_url", "sheaf_request_header_value"}
    import ctypes

    for name in ("sheaf_list_prefix", "sheaf_list_fetch_all", "sheaf_list_description"):
        assert getattr(_ffi.lib, name).argtypes[1] is ctypes.POINTER(ctypes.c_void_p)
    for name in ("sheaf_last_error", "sheaf_list_error", "sheaf_request_error"):   # owned: read, then sheaf_error_free
        assert getattr(_ffi.lib, name).restype is ctypes.c_void_p
    declared = [n for n in vars(_ffi.lib) if n.startswith("sheaf_")]
    assert len(declared) >= 40
    for name in declared:
        if getattr(_ffi.lib, name).restype is ctypes.c_char_p:
            assert name in borrowed, name
