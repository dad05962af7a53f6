#!/usr/bin/env python3
"""Fails when what is mirrored across include/sheaf.h, the Swift core and the Python package drifts.

- The version: sheaf.h's SHEAF_VERSION_*, CMakeLists.txt's project(VERSION), the Swift
  SheafVersion, and the Python package's sheaf.__version__ (pyproject.toml reads CMakeLists.txt's).
- Result codes: every `SHEAF_*` value of `enum sheaf_result` in sheaf.h has a constant of the same
  value in bindings/python/sheaf/_ffi.py and a member in sheaf.errors.Result; the Swift side has one
  static text per code (Results.swift) and maps every failure code it can produce.
- Every other enum of the headers (paging, signal, source, auth, option, transport error), in
  sheaf.h and in include/sheaf/experimental.h (the experimental tier), has the same values in
  _ffi.py; the version is sheaf.h's alone.
Presets are not mirrored anywhere: Python and the CLI list them from the library.

usage: check_mirrors.py [SOURCE_DIR]
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2])
failures: list[str] = []


def check(ok: bool, message: str) -> None:
    if not ok:
        failures.append(message)
        print(f"FAIL: {message}", file=sys.stderr)


def header_enums(text: str) -> dict[str, dict[str, int]]:
    """Every `typedef enum NAME { A = 1, ... } NAME;` of the header, comments removed."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    enums = {}
    for name, body in re.findall(r"typedef enum (\w+) \{(.*?)\}", text, flags=re.S):
        enums[name] = {key: int(value) for key, value in re.findall(r"(SHEAF_\w+)\s*=\s*(-?\d+)", body)}
    return enums


def python_constants(path: Path) -> dict[str, int]:
    tree = ast.parse(path.read_text())
    constants = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, int):
                constants[node.targets[0].id] = node.value.value
    return constants


def main() -> int:
    header = (ROOT / "include/sheaf.h").read_text()
    version = tuple(int(re.search(rf"#define SHEAF_VERSION_{part} (\d+)", header).group(1))
                    for part in ("MAJOR", "MINOR", "PATCH"))
    text = ".".join(map(str, version))
    check(f'#define SHEAF_VERSION_STRING "{text}"' in header, f"SHEAF_VERSION_STRING is not {text}")
    cmake = re.search(r"project\(sheaf VERSION ([\d.]+)", (ROOT / "CMakeLists.txt").read_text()).group(1)
    check(cmake == text, f"CMakeLists.txt says {cmake}, sheaf.h {text}")
    swift = (ROOT / "Sources/Sheaf/Support/SheafVersion.swift").read_text()
    swift_version = tuple(int(re.search(rf"static let {part} = (\d+)", swift).group(1)) for part in ("major", "minor", "patch"))
    check(swift_version == version, f"SheafVersion says {swift_version}, sheaf.h {version}")
    # pyproject.toml reads its version from CMakeLists.txt's project(VERSION) (a regex): it must
    # still find it there, and name no version of its own.
    pyproject = (ROOT / "pyproject.toml").read_text()
    check('dynamic = ["version"]' in pyproject and not re.search(r'^version = ', pyproject, flags=re.M),
          "pyproject.toml must take its version from CMakeLists.txt (dynamic), not repeat it")
    pattern = re.search(r"^regex = '(.+)'$", pyproject, flags=re.M).group(1)
    found = re.search(pattern, (ROOT / "CMakeLists.txt").read_text())
    check(found is not None and found.group("value") == text,
          f"pyproject.toml's version regex finds {found.group('value') if found else 'nothing'} in CMakeLists.txt, sheaf.h {text}")
    init = (ROOT / "bindings/python/sheaf/__init__.py").read_text()
    package = re.search(r'__version__ = "([^"]+)"', init).group(1)
    check(package == text, f"sheaf.__version__ says {package}, sheaf.h {text}")

    enums = header_enums(header)
    experimental = ROOT / "include/sheaf/experimental.h"
    if experimental.exists():
        experimental_text = experimental.read_text()
        check(re.search(r"#\s*define\s+SHEAF_VERSION_", experimental_text) is None,
              "include/sheaf/experimental.h defines a version of its own: the version is sheaf.h's")
        for name, values in header_enums(experimental_text).items():
            check(name not in enums, f"enum {name} is declared in sheaf.h and in sheaf/experimental.h")
            enums[name] = values
    results = enums["sheaf_result"]
    check(sorted(results.values()) == list(range(len(results))), "result codes are not 0..N-1 without gaps")
    ffi = python_constants(ROOT / "bindings/python/sheaf/_ffi.py")
    for name, values in enums.items():
        for key, value in values.items():
            check(ffi.get(key) == value, f"_ffi.py: {key} is {ffi.get(key)}, sheaf.h says {value} ({name})")
    errors = (ROOT / "bindings/python/sheaf/errors.py").read_text()
    for key in results:
        member = key.removeprefix("SHEAF_E_").removeprefix("SHEAF_")
        check(re.search(rf"^\s+{member} = _ffi\.{key}$", errors, flags=re.M) is not None,
              f"errors.Result has no member {member} = _ffi.{key}")

    swift_results = (ROOT / "Sources/SheafCABI/Results.swift").read_text()
    table = swift_results[swift_results.index("private let resultTexts"):]
    table = table[: table.index("].map")]
    texts = len(re.findall(r'^\s+"', table, flags=re.M))
    check(texts == len(results), f"Results.swift has {texts} texts for {len(results)} result codes")
    for key in results:
        if key.startswith("SHEAF_E_") and key != "SHEAF_E_INTERNAL":
            check(key in swift_results, f"Results.swift never produces {key}")

    print(f"check_mirrors: {len(failures)} failure(s); version {text}, {len(results)} result codes, "
          f"{sum(len(v) for v in enums.values())} enum values checked")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
