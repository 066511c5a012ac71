"""`tcl fix`: libcst rewrites that remove a graph break and keep eager results identical.

Each rule that can be fixed names its fixer (`Rule.fixer`, a function in this package); the
driver (`tcl.fixing.apply`) runs the one analysis engine, hands every finding's node to its
rule's fixer, applies the non-overlapping edits, re-analyses and repeats until nothing changes.

A fixer returns a `Fix` with a safety level:

* SAFE        -- applied by `tcl fix --apply`: eager results (values, shapes, dtypes) are
                 unchanged for every input eager accepted;
* UNSAFE      -- applied only with `--unsafe-fixes`: right for the usual case, but tcl cannot
                 prove it (shapes that might broadcast, branches that might raise, dtypes);
* SUGGESTION  -- never applied: shown as a diff to copy by hand.

This module stays import-light: rule modules import fixers from here at `tcl check` time.
"""

from .base import SAFE, SUGGESTION, UNSAFE, Fix, FixContext, Safety

__all__ = ["Fix", "FixContext", "Safety", "SAFE", "UNSAFE", "SUGGESTION"]
