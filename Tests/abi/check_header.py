#!/usr/bin/env python3
"""Checks that include/sheaf.h and libsheaf.so agree, and that the header stands on its own.

- Every function declared SHEAF_API in the header is exported by the library, and every symbol
  the library exports is declared in the header. Names only: that the types agree is already
  enforced at compile time, because the Swift side implements each function with
  `@c @implementation` against this very header, imported as a module (CSheafHeader).
- Every function prototype in the header carries SHEAF_API.
- The header compiles alone as C99 and as C++ with -Wall -Wextra -Werror -pedantic.

usage: check_header.py --header sheaf.h --library libsheaf.so --cc gcc --cxx g++
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

FAILURES: list[str] = []


def fail(message: str) -> None:
    FAILURES.append(message)
    print(f"FAIL: {message}", file=sys.stderr)


def ok(message: str) -> None:
    print(f"ok: {message}")


def header_code(text: str) -> str:
    """The header without comments, string literals' contents and preprocessor lines."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    text = re.sub(r"\\\n", " ", text)  # continued preprocessor lines
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


def declared_functions(code: str) -> tuple[set[str], set[str]]:
    """(functions declared with SHEAF_API, function prototypes declared without it)."""
    with_api, without_api = set(), set()
    for statement in code.split(";"):
        statement = statement.strip()
        # Drop what precedes the declaration inside the statement: `extern "C" {`, `}`, ...
        statement = statement.rsplit("{", 1)[-1].rsplit("}", 1)[-1].strip()
        if statement.startswith("typedef") or "(" not in statement:
            continue
        match = re.match(r"(?P<before>[\w\s\*]*?)\b(?P<name>sheaf_\w+)\s*\(", statement)
        if not match:
            continue
        if re.search(r"\bSHEAF_API\b", match.group("before")):
            with_api.add(match.group("name"))
        else:
            without_api.add(match.group("name"))
    return with_api, without_api


def exported_symbols(library: str) -> set[str]:
    out = subprocess.run(["nm", "-D", "--defined-only", library], check=True,
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 3:
            names.add(fields[2].split("@", 1)[0])
    return names


def compiles(compiler: str, language: str, standard: str, header: str) -> None:
    flags = [f"-std={standard}", "-Wall", "-Wextra", "-Werror", "-pedantic"]
    if language == "c":
        flags += ["-Wstrict-prototypes", "-Wmissing-prototypes"]
    include_dir = os.path.dirname(os.path.abspath(header))
    source = "#include \"sheaf.h\"\n#include \"sheaf.h\"\n"  # twice: the include guard works
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "only_the_header." + ("c" if language == "c" else "cpp"))
        with open(path, "w") as f:
            f.write(source)
        result = subprocess.run([compiler, *flags, "-fsyntax-only", "-I", include_dir, path],
                                capture_output=True, text=True)
    label = f"{os.path.basename(header)} compiles alone as {standard} ({os.path.basename(compiler)})"
    if result.returncode == 0:
        ok(label)
    else:
        fail(f"{label}:\n{result.stdout}{result.stderr}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--header", required=True)
    parser.add_argument("--library", required=True)
    parser.add_argument("--cc", required=True)
    parser.add_argument("--cxx", default="")
    args = parser.parse_args()

    with open(args.header) as f:
        code = header_code(f.read())
    declared, unmarked = declared_functions(code)
    if not declared:
        fail("found no SHEAF_API declarations in the header")
    else:
        ok(f"{len(declared)} functions declared SHEAF_API")
    if unmarked:
        fail(f"prototypes without SHEAF_API: {', '.join(sorted(unmarked))}")

    exported = exported_symbols(args.library)
    missing = declared - exported
    undeclared = exported - declared
    if missing:
        fail(f"declared in the header but not exported: {', '.join(sorted(missing))}")
    else:
        ok("every SHEAF_API function is exported")
    if undeclared:
        fail(f"exported but not declared in the header: {', '.join(sorted(undeclared))}")
    else:
        ok("every exported symbol is declared in the header")

    compiles(args.cc, "c", "c99", args.header)
    if args.cxx:
        compiles(args.cxx, "c++", "c++11", args.header)
        compiles(args.cxx, "c++", "c++17", args.header)
    else:
        fail("no C++ compiler was found to check the header as C++ (install g++)")

    if FAILURES:
        print(f"{len(FAILURES)} header checks failed", file=sys.stderr)
        return 1
    print("all header checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
