"""isinstance() narrowing (tcl/narrowing.py): which calls see a name narrowed to a class."""

from __future__ import annotations

import textwrap

import libcst as cst

from tcl.narrowing import narrowed_calls


def _narrowed(source: str) -> dict[str, dict[str, list[str]]]:
    """{code of each narrowed call: {name: [class code]}}."""
    module = cst.parse_module(textwrap.dedent(source))
    function = next(s for s in module.body if isinstance(s, cst.FunctionDef))
    calls = {}

    class Collect(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            calls[id(node)] = module.code_for_node(node)

    function.visit(Collect())
    return {calls[key]: {name: [module.code_for_node(c) for c in classes] for name, classes in facts.items()}
            for key, facts in narrowed_calls(function).items() if key in calls}


def test_if_body_comprehension_condition_and_early_exit():
    found = _narrowed("""
        def f(self, ms):
            total = sum(r.pop() for r in ms if isinstance(r, Reg) and r.on)
            for m in ms:
                if isinstance(m, (A, pkg.B)):
                    m.run()
                else:
                    m.other()
                if not isinstance(m, C):
                    continue
                m.after()
            return total
        """)
    assert found["r.pop()"] == {"r": ["Reg"]}
    assert found["m.run()"] == {"m": ["A", "pkg.B"]}
    assert "m.other()" not in found
    assert found["m.after()"] == {"m": ["C"]}


def test_a_rebound_name_or_an_or_test_proves_nothing():
    found = _narrowed("""
        def f(ms, x):
            for m in ms:
                if not isinstance(m, C):
                    continue
                m = make(m)
                m.after()
            if isinstance(x, B):
                x = make(x)
                x.rebound()
            if isinstance(x, A) or x is None:
                x.run()
            if not isinstance(x, A):
                x.neg()
        """)
    assert "m.after()" not in found
    assert "x.rebound()" not in found
    assert "x.run()" not in found
    assert "x.neg()" not in found
