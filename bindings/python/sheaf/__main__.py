"""`python3 -m sheaf ...` runs the `sheaf` command-line tool (see sheaf.cli)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
