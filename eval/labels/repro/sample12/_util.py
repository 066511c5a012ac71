"""The repro helper of sample11 (../sample11/util.py: compile with backend "eager", collect
Dynamo's graph-break and recompile records), shared; here `breaks(fn, None, calls=[...])` also
accepts a placeholder argument tuple."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sample11"))
import util as _shared  # noqa: E402
from util import *  # noqa: E402,F401,F403


def breaks(fn, *args, calls=None, **kw):
    if calls is not None and args == (None,):
        args = ()
    return _shared.breaks(fn, *args, calls=calls, **kw)
