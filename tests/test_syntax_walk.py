"""tcl/syntax_walk.py visits what libcst's visitors visit, in the same order."""

from __future__ import annotations

import pathlib

import libcst as cst

from tcl.syntax_walk import TRIVIA, nodes

ROOT = pathlib.Path(__file__).resolve().parent.parent

EVERY_CONSTRUCT = '''
import os, sys as system
from a.b import (c as d, e)
from . import *

@decorator(arg=f(1))
@other
class C(Base, metaclass=Meta, **extra):
    x: int = g()

    @staticmethod
    def m(a, /, b: "B" = h(), *args, c=i(), **kwargs) -> R[j()]:
        """doc"""
        y = k() if l() else n()
        z = [p(q) for q in r() if s(q) for t in q]
        w = {u(): v() for u, v in o()}
        lam = lambda aa, *bb, cc=dd(), **ee: ff(aa)
        with open(x) as handle, ctx() as (gg, hh):
            handle.read()
        try:
            jj()
        except (KE, VE) as exc:
            kk(exc)
        else:
            ll()
        finally:
            mm()
        try:
            pass
        except* OE as group:
            group.x()
        for nn, (oo, *pp) in qq():
            break
        else:
            rr()
        while ss():
            if tt := uu():
                continue
            elif vv[ww(), 1:xx():2]:
                yy = not zz and -aaa or bbb < ccc <= ddd
            else:
                eee += fff ** ggg
        assert hhh(), iii()
        del jjj[kkk()]
        global lll
        raise mmm() from nnn()
        return f"{ooo()!r:>{ppp()}} {qqq=}"

    async def am(self):
        async with aaaa() as bbbb:
            async for cccc in dddd():
                await eeee(*cccc, **bbbb)
        yield ffff()
        yield from gggg()

match subject():
    case [1, *rest] if hhhh(rest):
        pass
    case {"k": iiii, **others}:
        pass
    case Point(x=0, y=jjjj) | None as kkkk:
        pass
'''


class _Order(cst.CSTVisitor):
    def __init__(self) -> None:
        self.seen: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, TRIVIA):
            return False
        self.seen.append(node)
        return True


def _same_walk(module: cst.Module) -> None:
    visitor = _Order()
    module.visit(visitor)
    # the same node objects (a visitor is handed the tree's own nodes), in the same order
    assert [id(node) for node in nodes(module)] == [id(node) for node in visitor.seen]


def test_every_construct_in_source_order():
    _same_walk(cst.parse_module(EVERY_CONSTRUCT))


def test_real_files_in_source_order():
    files = sorted((ROOT / "tcl").rglob("*.py"))[:40] + sorted((ROOT / "fixtures").rglob("*.py"))
    assert len(files) > 40
    for path in files:
        _same_walk(cst.parse_module(path.read_text()))


def test_prune_keeps_the_node_and_skips_below():
    module = cst.parse_module("def f():\n    g()\nh()\n")
    calls = [n for n in nodes(module, prune=lambda n: isinstance(n, cst.FunctionDef)) if isinstance(n, cst.Call)]
    assert [cst.Module([]).code_for_node(c) for c in calls] == ["h()"]
    assert any(isinstance(n, cst.FunctionDef) for n in nodes(module, prune=lambda n: isinstance(n, cst.FunctionDef)))
