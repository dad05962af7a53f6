#!/usr/bin/env bash
# Builds the documentation site into build/site (open build/site/index.html): the pages of docs/,
# and the C, Python and Swift API references, generated here from include/sheaf.h, the docstrings
# of bindings/python/sheaf and the Swift sources. It fails (exit 1, naming the place) when a
# SHEAF_API function has no doc comment, a name of sheaf.__all__ or a public method has no
# docstring, or a link or anchor leads nowhere (MkDocs in strict mode).
#
# MkDocs comes from PyPI, pinned in docs/requirements.txt, into a venv of its own, build/docs-venv:
# made on the first run (a download of a few MB) and again when the pins change; otherwise this
# touches no network. CTest's `docs` test runs this script.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

venv=build/docs-venv
requirements=docs/requirements.txt
export PYTHONDONTWRITEBYTECODE=1   # no __pycache__ in docs/ or in the package

# The venv is whole once the requirements it was made from are copied into it, last: a run that
# was interrupted, or failed, leaves no copy, and the next run starts the venv again.
if ! cmp -s "$requirements" "$venv/requirements.txt"; then
    echo "docs: making $venv (the tools pinned in $requirements, from PyPI)" >&2
    rm -rf "$venv"
    python3 -m venv "$venv" || {
        echo "docs: 'python3 -m venv' failed (Debian: apt install python3-venv)" >&2
        exit 1
    }
    # Wheels only: no package's setup code runs here. A short timeout and few retries, so a
    # machine without PyPI hears so in about a minute, not ten.
    if ! "$venv/bin/python" -m pip install --disable-pip-version-check --no-input --quiet \
            --only-binary=:all: --timeout 15 --retries 2 -r "$requirements"; then
        echo "docs: could not install MkDocs from PyPI into $venv (pip says why above)." >&2
        echo "docs: building the docs needs PyPI once, to make that venv; later runs reuse it." >&2
        rm -rf "$venv"
        exit 1
    fi
    cp "$requirements" "$venv/requirements.txt"
fi

python3 docs/gen_c_reference.py
python3 docs/gen_python_reference.py
python3 docs/gen_swift_reference.py
"$venv/bin/python" -m mkdocs build --strict --site-dir build/site
echo "docs: build/site/index.html"
