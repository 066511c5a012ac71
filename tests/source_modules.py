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


def write(root, name: str, source: str):
    """`source` (dedented) written to `root/name`, its folders made; the path."""
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    return path


def install(tmp_path, monkeypatch, files: dict[str, str]):
    """A site-packages folder holding `files` (path -> source) that tcl's --follow-imports
    (tcl/installed.py) and Python's imports both find; the folder."""
    from tcl import installed

    site = tmp_path / "site-packages"
    for name, source in files.items():
        write(site, name, source)
    monkeypatch.setattr(installed, "site_directories", lambda: [str(site)])
    monkeypatch.syspath_prepend(str(site))
    return site
