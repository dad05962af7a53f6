#!/usr/bin/env python3
"""Checks that the headers and libsheaf.so agree, and that each header stands on its own.

The headers are the two tiers of the C interface: include/sheaf.h (stable) and
include/sheaf/experimental.h (experimental; it includes sheaf.h). Give each with --header.

- Every function declared SHEAF_API in a header is exported by the library, and every symbol
  the library exports is declared in exactly one of the headers (a function declared in both
  would sit in both tiers). Names only: that the types agree is already enforced at compile
  time, because the Swift side implements each function with `@c @implementation` against these
  very headers, imported as a module (CSheafHeader).
- Every function prototype in a header carries SHEAF_API.
- Each header compiles alone, and included twice (its include guard works), as C99 and as C++
  with -Wall -Wextra -Werror -pedantic; so do all of them together, in either order.

usage: check_header.py --header include/sheaf.h --header include/sheaf/experimental.h
                       --library libsheaf.so --cc gcc --cxx g++ [--include-dir include]
  --include-dir: the folder a caller puts on its include path (default: the first header's);
  each header is included by its path from there ("sheaf/experimental.h").
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


def compiles(compiler: str, language: str, standard: str, include_dir: str, headers: list[str]) -> None:
    """`headers` (paths from include_dir), each included twice, compiled alone as `standard`."""
    flags = [f"-std={standard}", "-Wall", "-Wextra", "-Werror", "-pedantic"]
    if language == "c":
        flags += ["-Wstrict-prototypes", "-Wmissing-prototypes"]
    source = "".join(f'#include "{header}"\n#include "{header}"\n' for header in headers)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "only_the_header." + ("c" if language == "c" else "cpp"))
        with open(path, "w") as f:
            f.write(source)
        result = subprocess.run([compiler, *flags, "-fsyntax-only", "-I", include_dir, path],
                                capture_output=True, text=True)
    what = f"{headers[0]} compiles alone" if len(headers) == 1 else f"{' then '.join(headers)} compile together"
    label = f"{what} as {standard} ({os.path.basename(compiler)})"
    if result.returncode == 0:
        ok(label)
    else:
        fail(f"{label}:\n{result.stdout}{result.stderr}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--header", required=True, action="append",
                        help="a header of the C interface (give each: sheaf.h, sheaf/experimental.h)")
    parser.add_argument("--include-dir", default="")
    parser.add_argument("--library", required=True)
    parser.add_argument("--cc", required=True)
    parser.add_argument("--cxx", default="")
    args = parser.parse_args()
    include_dir = os.path.abspath(args.include_dir or os.path.dirname(args.header[0]))
    names = [os.path.relpath(os.path.abspath(header), include_dir) for header in args.header]
    for name in names:
        if name.startswith(".."):
            fail(f"{name} is not under the include folder {include_dir}")

    declared_in: dict[str, list[str]] = {}
    for header, name in zip(args.header, names):
        with open(header) as f:
            code = header_code(f.read())
        declared, unmarked = declared_functions(code)
        if not declared:
            fail(f"found no SHEAF_API declarations in {name}")
        else:
            ok(f"{name}: {len(declared)} functions declared SHEAF_API")
        if unmarked:
            fail(f"{name}: prototypes without SHEAF_API: {', '.join(sorted(unmarked))}")
        for function in declared:
            declared_in.setdefault(function, []).append(name)
    twice = sorted(f"{function} ({' and '.join(where)})" for function, where in declared_in.items() if len(where) > 1)
    if twice:
        fail(f"declared in more than one header: {', '.join(twice)}")
    elif len(names) > 1:
        ok("no function is declared in two headers")
    declared = set(declared_in)

    exported = exported_symbols(args.library)
    missing = declared - exported
    undeclared = exported - declared
    if missing:
        fail(f"declared in a header but not exported: {', '.join(sorted(missing))}")
    else:
        ok(f"every SHEAF_API function ({len(declared)}) is exported")
    if undeclared:
        fail(f"exported but declared in no header: {', '.join(sorted(undeclared))}")
    else:
        ok(f"every exported symbol ({len(exported)}) is declared in a header")

    sets = [[name] for name in names]
    if len(names) > 1:
        sets += [names, names[::-1]]
    for headers in sets:
        compiles(args.cc, "c", "c99", include_dir, headers)
        if args.cxx:
            compiles(args.cxx, "c++", "c++11", include_dir, headers)
            compiles(args.cxx, "c++", "c++17", include_dir, headers)
    if not args.cxx:
        fail("no C++ compiler was found to check the headers as C++ (install g++)")

    if FAILURES:
        print(f"{len(FAILURES)} header checks failed", file=sys.stderr)
        return 1
    print("all header checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
