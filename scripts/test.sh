#!/usr/bin/env bash
# The one command that builds Sheaf and runs every test suite from a fresh clone.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build
# Three at once: one test that measures time, beside two builds or binding suites that run in
# the background, on the CPU it leaves (CMakeLists.txt, the label loop at its end, says which).
ctest --test-dir build --output-on-failure --parallel 3
echo "test.sh: built and tested in $((SECONDS / 60)) min $((SECONDS % 60)) s"
