#!/usr/bin/env bash
# The one command that builds Sheaf and runs every test suite from a fresh clone.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build
# Two at once: one test that measures time, beside a build or a binding suite at nice 19
# (CMakeLists.txt, the label loop at its end, says which is which).
ctest --test-dir build --output-on-failure --parallel 2
echo "test.sh: built and tested in $((SECONDS / 60)) min $((SECONDS % 60)) s"
