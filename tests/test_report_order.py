"""A file's report does not depend on what the process checked before it.

The analyzer keeps helpers' settled results across files (tcl/engine.py, `Analyzer.settled`).
A result settled for one file's callers was once reused for another file's, whose call sites
gave other facts: `tcl check` reported a recompile in a helper when another file that passes it
a varying size was checked first in the same process, and not otherwise, so `-j1` and `-j2`
disagreed (seen on torchkbnufft's `fft_fn`).
"""

from __future__ import annotations

import textwrap

from tcl.config import Config
from tcl.engine import Analyzer
from tcl.project import scan
from tcl.runner import _read_and_analyze

FILES = {
    "__init__.py": "",
    "helpers.py": """
        import torch


        def spectrum(x, ndim):
            dims = [d for d in range(-ndim, 0)]
            return torch.fft.fftn(x, dim=dims)
        """,
    # the batch size as the number of dims: a new size, a new trip count, a recompile
    "batched.py": """
        from torch import nn

        from .helpers import spectrum


        class Batched(nn.Module):
            def forward(self, x):
                return spectrum(x, x.shape[0])
        """,
    # the rank: the same for every batch size
    "ranked.py": """
        from torch import nn

        from .helpers import spectrum


        class Ranked(nn.Module):
            def forward(self, x):
                return spectrum(x, x.dim())
        """,
}


def _findings(report) -> list[tuple[str, int, str]]:
    return sorted((f.path.rsplit("/", 1)[-1], f.line, f.code) for f in report.findings)


def test_a_helper_settled_for_another_files_callers_is_not_reused(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    for name, text in FILES.items():
        (package / name).write_text(textwrap.dedent(text).lstrip("\n"))
    paths = sorted(str(p) for p in package.glob("*.py"))
    project = scan(paths)
    batched, ranked = str(package / "batched.py"), str(package / "ranked.py")

    alone = Analyzer(Config(), project)
    ranked_alone = _findings(_read_and_analyze(ranked, alone, None)[0])

    shared = Analyzer(Config(), project)
    batched_first = _findings(_read_and_analyze(batched, shared, None)[0])
    ranked_after = _findings(_read_and_analyze(ranked, shared, None)[0])

    assert batched_first == [("helpers.py", 5, "TCL505")]
    assert ranked_alone == ranked_after == []
