"""The work a check does grows with the code, not faster: each case counts the work (visits,
parses) instead of timing it, so it holds on a loaded CI machine."""

from __future__ import annotations

import gc
import textwrap

from tcl import branches, engine
from tcl.config import Config
from tcl.runner import COLLECTION_THRESHOLDS, run


def _elif_chain(links: int) -> str:
    lines = ["import torch", "", "@torch.compile", "def pick(x, kind: int):"]
    for i in range(links):
        lines.append(f"    {'if' if i == 0 else 'elif'} kind == {i}:")
        lines.append(f"        y{i} = x * {i}")
    lines += ["    else:", "        y = x.tolist()", "    return x"]
    return "\n".join(lines) + "\n"


def test_an_elif_chain_is_visited_once_per_link(tmp_path, monkeypatch):
    # The walker asks for the names bound in every branch of a chain; each link must be read
    # once, not once per link before it (n*n/2: half of torch/_dynamo/variables/builder.py's time).
    visited = []
    collected = branches._collected

    def counting(visitor_class, node):
        visited.append(node)
        return collected(visitor_class, node)

    monkeypatch.setattr(branches, "_collected", counting)
    path = tmp_path / "chain.py"
    links = 150  # (200 links are past what the walker's recursion takes: a file error, before and after)
    path.write_text(_elif_chain(links))
    result = run([str(path)], Config(torch_version="2.13"), jobs=1)
    assert [f.code for f in result.findings] == ["TCL205"]  # the .tolist() in the else branch
    # a test and a body per link, per visitor (bound names, assigned names), and the else block
    assert len(visited) <= 2 * (2 * links + 1)


def test_a_file_another_file_calls_into_is_parsed_once(tmp_path, monkeypatch):
    parses = []
    parse = engine.parse_source

    def counting(path, source, statements=None):
        parses.append(path)
        return parse(path, source, statements)

    monkeypatch.setattr(engine, "parse_source", counting)
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text(textwrap.dedent("""
        def scale(x):
            return x * float(x.sum())
    """))
    (pkg / "model.py").write_text(textwrap.dedent("""
        import torch
        from pkg.helpers import scale

        @torch.compile
        def step(x):
            return scale(x)
    """))
    result = run([str(pkg / "model.py"), str(pkg / "helpers.py")], Config(torch_version="2.13"), jobs=1)
    assert any(f.path.endswith("helpers.py") for f in result.findings)
    assert sorted(p.rsplit("/", 1)[-1] for p in parses) == ["helpers.py", "model.py"]


def test_the_collector_thresholds_hold_for_the_run_and_are_restored(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("import torch\n")
    before = gc.get_threshold()
    seen = []
    original = gc.set_threshold

    try:
        gc.set_threshold = lambda *t: (seen.append(t), original(*t))  # type: ignore[assignment]
        run([str(path)], Config(), jobs=1)
    finally:
        gc.set_threshold = original  # type: ignore[assignment]
    assert seen[0] == COLLECTION_THRESHOLDS
    assert gc.get_threshold() == before


STATE_SOURCE = textwrap.dedent('''
    import torch
    from torch import nn

    STATS = {"calls": 0}
    SEEN = set()
    torch._dynamo.config.capture_scalar_outputs = True

    class Meter:
        pass

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.meter = Meter()
            self.steps = 0
            self.cache = []

        class Inner:
            def __init__(self):
                self.meter = Meter()

    def make():
        global SEEN
        return dict(step=0)
''')


def test_file_facts_share_one_walk_of_the_tree(monkeypatch):
    # Six facts read every node of a file's `ast` tree; they share one walk (tcl/python_nodes.py).
    import ast

    from tcl import dynamo_settings, module_constants
    from tcl.rules import containers, counters, specialisation

    tree = ast.parse(STATE_SOURCE)
    walks = []
    walk = ast.walk

    def counting(node):
        if node is tree:
            walks.append(node)
        return walk(node)

    monkeypatch.setattr(ast, "walk", counting)
    # A class built only as state, in the innermost class that holds each `self.x = C()`.
    assert counters._state_instances(tree) == {"Meter": frozenset({"Outer", "Inner"}), "set": frozenset({"<global>"})}
    assert counters._int_initialised(tree) == (frozenset({"calls", "step"}), frozenset({"steps"}))
    assert specialisation._hashed_names(tree) == (frozenset({"STATS", "SEEN"}), frozenset())
    assert containers._containers_initialised(tree) == (frozenset({"cache"}), frozenset())
    assert "SEEN" not in module_constants._constants(tree)  # declared global in make()
    assert dynamo_settings.settings_in_tree(tree) == {"capture_scalar_outputs"}
    assert len(walks) == 1
