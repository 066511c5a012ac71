"""Counting compilations, the runtime truth for recompile-hazard rules (tests and verify).

A counting backend sees one call per graph Dynamo compiles; with no graph break in the frame,
every call after the first is a recompilation.
"""

from __future__ import annotations


def count_compiles(target, calls) -> int:
    """Compile `target` once and call it with each args tuple in `calls`; graphs compiled."""
    import torch

    compiled = 0

    def counting_backend(graph_module, example_inputs):
        nonlocal compiled
        compiled += 1
        return graph_module.forward

    torch._dynamo.reset()
    fn = torch.compile(target, backend=counting_backend)
    for args in calls:
        fn(*args)
    torch._dynamo.reset()
    return compiled
