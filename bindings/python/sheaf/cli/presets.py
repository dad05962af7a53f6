"""`sheaf presets`: the library's presets, each with the flags it stands for, shell-quoted."""

from __future__ import annotations

import argparse
import shlex
import sys

from .connection import load_api
from .exits import EXIT_FAILURE, EXIT_OK


def run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    api = load_api(None)
    if api is None:
        return EXIT_FAILURE
    known = api.presets()
    width = max(map(len, known), default=0)
    for name, (summary, description) in known.items():
        # Shell-quoted, so they paste back into `sheaf get`: a body that is the array is --items ''.
        flags = " ".join(shlex.quote(flag) for flag in description.flags())
        sys.stdout.write(f"{name:<{width}}  {summary}\n{'':<{width}}  {flags}\n")
    return EXIT_OK
