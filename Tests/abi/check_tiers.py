#!/usr/bin/env python3
"""Holds the C interface's two tiers to their rule (issue 42): include/sheaf.h is stable,
include/sheaf/experimental.h is experimental (it may change or go in a minor release, and the ABI
baseline check leaves it out).

Fails when:
- a function is declared in both headers;
- a function of sheaf.h is used by fewer than two of the bindings (Python, Go, Rust) and its doc
  comment has no line that starts "C only:" saying why C callers keep it. One added after the
  baseline (Tests/abi/baseline/libsheaf.abi, the ABI of 1.0.0) may instead move to
  experimental.h; one of the baseline stays in sheaf.h, promised;
- a function of experimental.h is used by two bindings or more: time to promote it to sheaf.h;
- a function of experimental.h is in the baseline: what 1.0.0 promised never leaves sheaf.h.

A binding uses a function when its own sources call it (tests, examples and declarations do not
count): Python, bindings/python/sheaf/**/*.py, an attribute `.sheaf_x` (`lib.sheaf_x(...)`; the
`fn("sheaf_x", ...)` declarations of _ffi.py are strings); Go, the package's non-test .go files
(`C.sheaf_x`) and its .c files (a call `sheaf_x(`); Rust, bindings/rust/src/**/*.rs but sys.rs,
the declarations (a call `sys::sheaf_x(`). Comments and string literals are left out.

usage: check_tiers.py [--source-dir DIR] [--include-dir DIR] [--baseline FILE] [--table]
       check_tiers.py --self-test [--source-dir DIR]
  --table      also prints every function: since, the bindings that use it, its tier.
  --self-test  runs the check on copies of the tree broken on purpose, one way at a time, and
               fails unless each copy fails (and the unbroken copy passes).
"""

from __future__ import annotations

import argparse
import io
import re
import shutil
import subprocess
import sys
import tempfile
import tokenize
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_header import declared_functions, header_code  # noqa: E402 - beside this script

ROOT = Path(__file__).resolve().parents[2]
BINDINGS = ("Python", "Go", "Rust")
STABLE = "sheaf.h"
EXPERIMENTAL = "sheaf/experimental.h"
C_ONLY = re.compile(r"^\s*\*?\s*C only:\s*\S", re.M)


# ---- what the headers declare -------------------------------------------------------------------

def declarations(path: Path) -> dict[str, str]:
    """Every SHEAF_API function of the header, with its doc comment ("" when it has none)."""
    text = path.read_text(encoding="utf-8")
    names, _ = declared_functions(header_code(text))
    docs = {match.group("name"): match.group("doc") for match in re.finditer(
        r"(?P<doc>/\*\*(?:(?!\*/).)*\*/)\s*SHEAF_API\b[^;]*?\b(?P<name>sheaf_\w+)\s*\(", text, flags=re.S)}
    return {name: docs.get(name, "") for name in names}


def baseline_functions(path: Path) -> set[str]:
    return set(re.findall(r"<elf-symbol name='(sheaf_\w+)' type='func-type'", path.read_text()))


# ---- what the bindings call ---------------------------------------------------------------------

def _c_like_code(text: str) -> str:
    """C, Go or Rust source without comments, string and character literals (their contents)."""
    pattern = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|`[^`]*`|\'(?:\\.|[^\'\\\n])\'', re.S)
    return pattern.sub(lambda match: " " if match.group(0).startswith("/") else '""', text)


def python_calls(root: Path) -> set[str]:
    names: set[str] = set()
    for path in sorted((root / "bindings/python/sheaf").rglob("*.py")):
        previous = None
        tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
        for token in tokens:
            if token.type == tokenize.NAME and token.string.startswith("sheaf_") and previous == ".":
                names.add(token.string)
            if token.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
                previous = token.string if token.type == tokenize.OP else None
    return names


def go_calls(root: Path) -> set[str]:
    names: set[str] = set()
    package = root / "bindings/go"
    for path in sorted(package.glob("*.go")):
        if not path.name.endswith("_test.go"):
            names |= set(re.findall(r"\bC\.(sheaf_\w+)\b", _c_like_code(path.read_text(encoding="utf-8"))))
    for path in sorted(package.glob("*.c")):
        names |= set(re.findall(r"\b(sheaf_\w+)\s*\(", _c_like_code(path.read_text(encoding="utf-8"))))
    return names


def rust_calls(root: Path) -> set[str]:
    names: set[str] = set()
    for path in sorted((root / "bindings/rust/src").rglob("*.rs")):
        if path.name != "sys.rs":
            names |= set(re.findall(r"\bsys::(sheaf_\w+)\s*\(", _c_like_code(path.read_text(encoding="utf-8"))))
    return names


# ---- the check ----------------------------------------------------------------------------------

def check(root: Path, include: Path, baseline: Path, table: bool) -> int:
    failures: list[str] = []
    notes: list[str] = []

    def fail(message: str) -> None:
        failures.append(message)
        print(f"FAIL: {message}", file=sys.stderr)

    stable = declarations(include / STABLE)
    experimental = declarations(include / EXPERIMENTAL) if (include / EXPERIMENTAL).exists() else {}
    promised = baseline_functions(baseline)
    if not promised:
        fail(f"no functions in the baseline {baseline}")
    users = {name: [] for name in set(stable) | set(experimental)}
    for binding, calls in zip(BINDINGS, (python_calls(root), go_calls(root), rust_calls(root))):
        if not calls:
            fail(f"found no call of the C interface in the {binding} binding's sources (has it moved?)")
        for name in calls:
            if name in users:
                users[name].append(binding)

    for name in sorted(set(stable) & set(experimental)):
        fail(f"{name} is declared in {STABLE} and in {EXPERIMENTAL}: one tier each")
    for name, doc in sorted(stable.items()):
        used = users[name]
        if len(used) >= 2:
            if C_ONLY.search(doc):
                notes.append(f"{name} says 'C only:' but {' and '.join(used)} use it: the line may go")
            continue
        if C_ONLY.search(doc):
            continue
        who = f"used by {used[0]} alone" if used else "used by no binding"
        if name in promised:
            fail(f"{name} ({STABLE}, in the baseline) is {who}: it stays stable; add a line 'C only: why' "
                 "to its doc comment")
        else:
            fail(f"{name} ({STABLE}, added after the baseline) is {who}: move it to {EXPERIMENTAL}, or add a "
                 "line 'C only: why' to its doc comment")
    for name in sorted(experimental):
        if name in promised:
            fail(f"{name} is in the baseline (promised) but declared in {EXPERIMENTAL}: it goes back to {STABLE}")
        if len(users[name]) >= 2:
            fail(f"{name} ({EXPERIMENTAL}) is used by {' and '.join(users[name])}: promote it to {STABLE}")

    if table:
        print("| function | since | Python | Go | Rust | tier |")
        print("|---|---|---|---|---|---|")
        for name in sorted(users):
            tier = "experimental" if name in experimental else (
                "stable, C only" if len(users[name]) < 2 and C_ONLY.search(stable[name]) else "stable")
            marks = " | ".join("yes" if binding in users[name] else "" for binding in BINDINGS)
            print(f"| `{name}` | {'1.0.0' if name in promised else 'later'} | {marks} | {tier} |")
    for note in notes:
        print(f"note: {note}")
    two = sum(len(users[name]) >= 2 for name in stable)
    c_only = sum(len(users[name]) < 2 and bool(C_ONLY.search(doc)) for name, doc in stable.items())
    print(f"check_tiers: {len(stable)} stable functions ({two} used by two bindings or more, {c_only} C only), "
          f"{len(experimental)} experimental, {len(promised)} in the baseline; {len(failures)} failure(s)")
    return 1 if failures else 0


# ---- the self-test ------------------------------------------------------------------------------

def self_test(root: Path) -> int:
    """The check on copies of what it reads, each broken one way: each must fail."""
    script = Path(__file__).resolve()
    stable_text = (root / "include" / STABLE).read_text()
    experimental_text = (root / "include" / EXPERIMENTAL).read_text()

    def declaration(text: str, name: str) -> str:
        match = re.search(r"/\*\*(?:(?!\*/).)*\*/\s*SHEAF_API\b[^;]*?\b%s\s*\([^;]*;\n" % name, text, flags=re.S)
        assert match, f"self-test: no declaration of {name}"
        return match.group(0)

    def into_stable(name_from_experimental: str):
        block = declaration(experimental_text, name_from_experimental)
        return {STABLE: stable_text.replace("#ifdef __cplusplus\n}\n#endif\n\n#endif /* SHEAF_H */",
                                            block + "\n#ifdef __cplusplus\n}\n#endif\n\n#endif /* SHEAF_H */"),
                EXPERIMENTAL: experimental_text.replace(block, "")}

    list_start = declaration(stable_text, "sheaf_list_start")
    group_start = declaration(stable_text, "sheaf_group_start")
    list_url = declaration(stable_text, "sheaf_list_url")
    end_experimental = "#ifdef __cplusplus\n}\n#endif\n\n#endif /* SHEAF_EXPERIMENTAL_H */"
    cases = {
        "unbroken": ({}, {}, 0),
        "a stable function added after 1.0.0, used by fewer than two bindings, without 'C only:'":
            ({STABLE: stable_text.replace(group_start, re.sub(r"\n \* C only:.*?(?=\n \*/)", "", group_start,
                                                                  flags=re.S))}, {}, 1),
        "an experimental function moved to sheaf.h while fewer than two bindings use it":
            (into_stable("sheaf_list_partitions"), {}, 1),
        "a function declared in both headers":
            ({EXPERIMENTAL: experimental_text.replace(end_experimental, list_url + "\n" + end_experimental)}, {}, 1),
        "a 1.0.0 function moved to experimental.h":
            ({STABLE: stable_text.replace(list_start, ""),
              EXPERIMENTAL: experimental_text.replace(end_experimental, list_start + "\n" + end_experimental)}, {}, 1),
        "an experimental function that a second binding starts to call (Go, besides Python)":
            ({}, {"bindings/go/tiers_selftest.go": "package sheaf\n\n// #include <sheaf/experimental.h>\nimport \"C\"\n\n"
                  "var _ = C.sheaf_arrow_from_json\n"}, 1),
    }
    wrong = 0
    for label, (headers, extra_files, expected) in cases.items():
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp)
            for part in ("include", "bindings/python/sheaf", "bindings/go", "bindings/rust/src"):
                shutil.copytree(root / part, copy / part, ignore=shutil.ignore_patterns("__pycache__", "*_test.go"))
            (copy / "Tests/abi/baseline").mkdir(parents=True)
            shutil.copy(root / "Tests/abi/baseline/libsheaf.abi", copy / "Tests/abi/baseline/libsheaf.abi")
            for name, text in headers.items():
                assert text != (root / "include" / name).read_text(), f"self-test: {label}: the copy is not broken"
                (copy / "include" / name).write_text(text)
            for name, text in extra_files.items():
                (copy / name).write_text(text)
            result = subprocess.run([sys.executable, str(script), "--source-dir", str(copy)],
                                    capture_output=True, text=True)
        outcome = 0 if result.returncode == 0 else 1
        said = (result.stderr.strip().splitlines() or [result.stdout.strip().splitlines()[-1]])[0]
        if outcome == expected:
            print(f"ok: {label}: {'passes' if outcome == 0 else 'fails'} ({said})")
        else:
            wrong += 1
            print(f"FAIL: {label}: {'passed' if outcome == 0 else 'failed'}, expected otherwise\n"
                  f"{result.stdout}{result.stderr}", file=sys.stderr)
    if wrong:
        print(f"check_tiers self-test: {wrong} case(s) went the wrong way", file=sys.stderr)
        return 1
    print(f"check_tiers self-test: the unbroken tree passes, and each of {len(cases) - 1} broken copies fails")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source-dir", type=Path, default=ROOT)
    parser.add_argument("--include-dir", type=Path)
    parser.add_argument("--baseline", type=Path)
    parser.add_argument("--table", action="store_true")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    root = args.source_dir.resolve()
    if args.self_test:
        return self_test(root)
    return check(root, args.include_dir or root / "include",
                 args.baseline or root / "Tests/abi/baseline/libsheaf.abi", args.table)


if __name__ == "__main__":
    sys.exit(main())
