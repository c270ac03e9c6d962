import os
import sys

# `python -m flamechase` put the working directory first on the path, and the engine works in
# a tree agents write: nothing it imports from here on (a module loaded lazily) may come from
# there. (flamechase itself is loaded already; `python -I -m flamechase`, or the `flamechase`
# command, never had the directory on the path at all.)
try:
    _here: str | None = os.getcwd()
except OSError:  # a deleted working directory holds nothing to import (and is refused)
    _here = None
if not sys.flags.safe_path and sys.path and sys.path[0] in ("", _here):
    del sys.path[0]

from flamechase.cli import main

main()
