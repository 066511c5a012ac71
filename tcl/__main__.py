"""`python -m tcl`: the command line, with the current directory off the import path.

`python -m` puts the current directory first on sys.path, so a checked tree that ships its own
`libcst.py` (or `pygls/`) would be imported in place of the real one and run: tcl only reads the
code it checks. The entry is dropped before anything else is imported, as `python -P` does;
tcl's own modules are found through the package, not through sys.path.
"""

import os
import sys

if sys.path and not getattr(sys.flags, "safe_path", False):
    first = sys.path[0]
    if first in ("", ".") or os.path.realpath(first) == os.path.realpath(os.getcwd()):
        del sys.path[0]

from .cli import main  # noqa: E402  (after the import path is safe)

sys.exit(main())
