"""Import a test's source text as a module: the compiler tests need real files, since Dynamo
reads a function's code object and the log names its file and lines."""

from __future__ import annotations

import importlib.util
import textwrap


def load_module(source: str, directory, name: str):
    """`source` (dedented) written to `directory/name.py` and imported under `name`."""
    path = directory / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
