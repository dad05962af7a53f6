#!/usr/bin/env bash
# What this Linux machine can check of the Swift core (Sources/Sheaf, Sources/SheafCurl) on Apple
# platforms, which it cannot build for:
#  1. the core type-checks with `import Foundation` where it imports FoundationEssentials on Linux
#     (Apple platforms have no FoundationEssentials module of their own);
#  2. every file that imports Glibc also imports Darwin when it can;
#  3. no Linux-only call (epoll, eventfd, pthread_condattr_setclock, Glibc.xxx) outside an
#     `#if` that keeps it off Darwin.
# What it cannot check: the Darwin branches themselves compile, and libcurl's module on macOS.
# usage: check_portable.sh SOURCE_DIR
set -euo pipefail
source_dir="${1:?usage: check_portable.sh SOURCE_DIR}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0

cp -r "$source_dir/Sources/Sheaf" "$work/Sheaf"
grep -rl 'canImport(FoundationEssentials)' "$work/Sheaf" | xargs sed -i 's/canImport(FoundationEssentials)/false/'
if ! swiftc -typecheck -parse-as-library -swift-version 6 -module-name Sheaf -package-name sheaf \
        $(find "$work/Sheaf" -name '*.swift' | sort); then
    echo "FAIL: the core does not type-check with Foundation in place of FoundationEssentials"
    failures=$((failures + 1))
fi

for file in $(grep -rl '^import Glibc' "$source_dir/Sources/Sheaf" "$source_dir/Sources/SheafCurl"); do
    if ! grep -q 'canImport(Darwin)' "$file"; then
        echo "FAIL: $file imports Glibc with no Darwin alternative"
        failures=$((failures + 1))
    fi
done

# A Linux-only call must sit after an `#if` that excludes Darwin (an `#else` of canImport(Darwin)).
python3 - "$source_dir" <<'PY' || failures=$((failures + 1))
import pathlib, re, sys

linux_only = re.compile(r"\b(epoll_\w+|eventfd|pthread_condattr_setclock|Glibc\.\w+|inotify_\w+)\b")

def off_darwin(condition: str) -> bool:
    """Whether a branch taken under `condition` is never compiled on Darwin."""
    return any(word in condition for word in ("canImport(Glibc)", "canImport(Musl)", "os(Linux)", "!canImport(Darwin)"))

bad = []
for path in sorted(pathlib.Path(sys.argv[1], "Sources").glob("Sheaf*/**/*.swift")):
    stack = []   # per open #if: [its conditions so far, whether the current branch is off Darwin]
    for number, line in enumerate(path.read_text().splitlines(), 1):
        code = line.split("//")[0].strip()
        if code.startswith("#if "):
            stack.append([[code[4:]], off_darwin(code[4:])])
        elif code.startswith("#elseif ") and stack:
            stack[-1][0].append(code[8:])
            stack[-1][1] = off_darwin(code[8:])
        elif code == "#else" and stack:
            # The rest of the cases: off Darwin only when an earlier branch was Darwin's.
            stack[-1][1] = any(c.strip() == "canImport(Darwin)" or c.strip() == "os(macOS)" for c in stack[-1][0])
        elif code == "#endif" and stack:
            stack.pop()
        elif linux_only.search(code) and not any(branch for _, branch in stack):
            bad.append(f"{path}:{number}: {code}")
for entry in bad:
    print(f"FAIL: a Linux-only call is compiled on Darwin: {entry}")
sys.exit(1 if bad else 0)
PY

if [ "$failures" -ne 0 ]; then
    echo "check_portable: $failures failure(s)"
    exit 1
fi
echo "check_portable: the core type-checks with Foundation; no Linux-only import or call reachable on Darwin"
