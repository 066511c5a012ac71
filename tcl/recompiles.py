"""Counting compilations, the runtime truth for recompile-hazard rules (tests and verify).

A counting backend sees one call per graph Dynamo compiles; with no graph break in the frame,
every call after the first is a recompilation.
"""

from __future__ import annotations


def count_compiles(target, calls, **options) -> int:
    """Compile `target` once and call it with each args tuple in `calls`; graphs compiled.

    `options`: torch.compile keywords that change guards (`dynamic=False`), as the checked
    code passes them; the backend is always the counting one."""
    import torch

    compiled = 0

    def counting_backend(graph_module, example_inputs):
        nonlocal compiled
        compiled += 1
        return graph_module.forward

    torch._dynamo.reset()
    fn = torch.compile(target, backend=counting_backend, **options)
    for args in calls:
        fn(*args)
    torch._dynamo.reset()
    return compiled
