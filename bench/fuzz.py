#!/usr/bin/env python
"""Fuzz the analyzer: no input may make an exception escape `Analyzer.check_source`.

    python bench/fuzz.py --examples 5000            # many thousands; prints the counts
    python bench/fuzz.py --examples 300 --sources mutate --seed 7

Three sources of programs, each wrapped so it lands inside a compiled region:
  grammar   hypothesmith.from_grammar(): random syntactically valid Python, indented into the
            `forward` of an nn.Module, and (the same text at module level, with `import torch`)
            every top-level function decorated with @torch.compile
  torchish  a hypothesis grammar of torch-flavoured statements (tensor methods, .item(), print,
            branches on data, loops, with/try, closures, helpers, match) placed in forward(), a
            helper it calls, and a @torch.compile function
  mutate    real files (fixtures/*.py, the installed torch's torch/nn/modules/*.py, and with
            --packages the .py files under 100 KB of other installed packages, each top-level
            def compiled when the file has no torch code) with 1-5 random line deletions,
            duplications, token swaps, indent changes and inserted hazards
  project   three-file packages (torchish bodies) whose traced code calls helpers and a base
            class in other files: checked through tcl.runner.run, so cross-file analysis runs

An outcome is one of: skipped (pre-filter), parse failure (a "cannot parse" FileError), analysed
(findings or none), a limit (nesting too deep, timed out), an internal error (a bug inside the
analyzer, recorded as one FileError line) or an escape (an exception out of check_source: the
worst kind). Every distinct internal error or escape is shrunk line by line to a small
reproducer, printed with its traceback, and written under --out.

With --fix, every single-file program is also given to `tcl fix`'s driver (fix_source, in
process, unsafe fixes included, so every fixer runs): its outcome is fix-changed, fix-unchanged
or fix-refused (the analysis reported the file, as check does), or a crash: fix-escape (an
exception out of fix_source), fix-invalid (a rewrite that does not parse, or that fix_source
itself caught as invalid), fix-internal (an internal error or a fixer that raised).

tests/test_fuzz.py runs a small seeded slice of the same generators.
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import re
import sys
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import tcl.engine as engine  # noqa: E402
from tcl.config import Config  # noqa: E402
from tcl.engine import Analyzer  # noqa: E402
from tcl.findings import FileError  # noqa: E402

# -- wrapping generated code into compiled regions ------------------------------------------------
FORWARD_WRAPPER = """import torch


class Generated(torch.nn.Module):
    def forward(self, x, *args, **kwargs):
{body}
        return x
"""


def indent(code: str, spaces: int) -> str:
    if code and not code.endswith("\n"):
        code += "\n"
    pad = " " * spaces
    return "".join(pad + line if line.strip() else line for line in code.splitlines(keepends=True)) or pad + "pass\n"


def in_forward(code: str) -> str:
    if not code.endswith("\n"):
        code += "\n"
    return FORWARD_WRAPPER.format(body=indent(code, 8).rstrip("\n") or "        pass")


_TOP_DEF = re.compile(r"^(async\s+def|def)\s", re.M)
_TOP_CLASS = re.compile(r"^class\s+(\w+)\s*:", re.M)


def decorated(code: str) -> str:
    """Module-level code with `import torch`, every top-level def compiled, every bare class a Module."""
    code = _TOP_DEF.sub(lambda m: "@torch.compile\n" + m.group(0), code)
    code = _TOP_CLASS.sub(lambda m: f"class {m.group(1)}(torch.nn.Module):", code)
    return "import torch\n" + code


# -- the torch-flavoured grammar ------------------------------------------------------------------
ATOMS = [
    "x", "y", "z", "n", "self.weight", "x.shape[0]", "x.size(1)", "x.dtype", "x.device", "1", "0.5",
    "None", "True", "self.training", "torch.ones(2)", "len(x)", "[]", "{}", "()", "'s'", "f'{x}'",
    "x[0]", "x[:, 1]", "self.layers", "kwargs", "args", "g", "i", "np.pi", "x.T", "...", "b'x'",
]
METHODS = [
    "item", "tolist", "numpy", "sum", "any", "all", "nonzero", "cpu", "detach", "size", "dim", "float",
    "mean", "max", "argmax", "unique", "keys", "items", "append", "data_ptr", "__len__", "clone", "view",
]
FUNCTIONS = [
    "print", "len", "int", "float", "bool", "range", "torch.sum", "torch.where", "torch.cat", "isinstance",
    "getattr", "self.helper", "helper", "open", "logging.info", "logger.warning", "warnings.warn",
    "pdb.set_trace", "breakpoint", "torch.nonzero", "np.array", "time.time", "random.random",
    "torch._check", "torch.cond", "id", "super().forward", "self.sub", "copy.deepcopy",
    "torch.manual_seed", "torch.compiler.is_compiling", "torch.tensor", "x.new_zeros", "enumerate", "zip",
]
OPERATORS = ["+", "-", "*", "/", "//", "%", "**", "@", "&", "|", "^", "<<", ">>", "<", ">", "==", "!=",
             "<=", ">=", "and", "or", "is", "is not", "in", "not in"]
TARGETS = ["x", "y", "z", "n", "self.cache", "x[0]", "g", "(a, b)", "[a, *rest]", "self.count"]


def torchish_strategies():
    from hypothesis import strategies as st

    atoms = st.sampled_from(ATOMS)

    def extend(inner):
        return st.one_of(
            st.tuples(inner, st.sampled_from(OPERATORS), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
            st.tuples(inner, st.sampled_from(METHODS)).map(lambda t: f"({t[0]}).{t[1]}()"),
            st.tuples(st.sampled_from(FUNCTIONS), st.lists(inner, max_size=3)).map(lambda t: f"{t[0]}({', '.join(t[1])})"),
            st.tuples(inner, inner, inner).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})"),
            st.tuples(inner, inner).map(lambda t: f"[{t[0]} for i in {t[1]}]"),
            st.tuples(inner, inner).map(lambda t: f"{{{t[0]}: {t[1]} for i in x}}"),
            inner.map(lambda e: f"(not {e})"),
            inner.map(lambda e: f"(lambda z: {e})"),
            inner.map(lambda e: f"f'{{{e}}}'" if not re.search(r"['{}\\]", e) else f"str({e})"),
            inner.map(lambda e: f"(*{e},)"),
            st.tuples(inner, inner).map(lambda t: f"{t[0]}[{t[1]}]"),
            st.tuples(inner, inner).map(lambda t: f"({t[0]}, {t[1]})"),
            inner.map(lambda e: f"(y := {e})"),
            inner.map(lambda e: f"(await {e})"),
        )

    expr = st.recursive(atoms, extend, max_leaves=6)
    target = st.sampled_from(TARGETS)
    single = st.sampled_from([t for t in TARGETS if not t.startswith(("(", "["))])
    simple = st.one_of(
        st.tuples(target, expr).map(lambda t: f"{t[0]} = {t[1]}"),
        st.tuples(single, expr).map(lambda t: f"{t[0]} += {t[1]}"),
        st.tuples(single, expr).map(lambda t: f"{t[0]}: int = {t[1]}"),
        expr.map(lambda e: f"print({e})"),
        st.tuples(expr, expr).map(lambda t: f"assert {t[0]}, {t[1]}"),
        expr.map(lambda e: f"assert {e}"),
        expr.map(lambda e: f"return {e}"),
        expr.map(lambda e: f"yield {e}"),
        expr.map(lambda e: f"raise ValueError({e})"),
        expr,
        st.sampled_from(["pass", "break", "continue", "global g", "nonlocal n", "del x", "return",
                         "import pdb; pdb.set_trace()", "from torch import nn", "x = x.item()"]),
    )

    def block(inner):
        body = st.lists(inner, min_size=1, max_size=4).map(lambda lines: "\n".join(lines))
        return st.one_of(
            st.tuples(expr, body).map(lambda t: f"if {t[0]}:\n{indent(t[1], 4)}"),
            st.tuples(expr, body, body).map(lambda t: f"if {t[0]}:\n{indent(t[1], 4)}else:\n{indent(t[2], 4)}"),
            st.tuples(expr, body).map(lambda t: f"for i in {t[0]}:\n{indent(t[1], 4)}"),
            st.tuples(expr, body).map(lambda t: f"while {t[0]}:\n{indent(t[1], 4)}"),
            st.tuples(st.sampled_from(["torch.no_grad()", "open('f')", "ctx", "torch.autocast('cpu')"]), body)
            .map(lambda t: f"with {t[0]} as w:\n{indent(t[1], 4)}"),
            st.tuples(body, body).map(lambda t: f"try:\n{indent(t[0], 4)}except Exception as e:\n{indent(t[1], 4)}"),
            st.tuples(body, body).map(lambda t: f"try:\n{indent(t[0], 4)}finally:\n{indent(t[1], 4)}"),
            body.map(lambda b: f"def inner(a, b=1, *c, **d):\n{indent(b, 4)}"),
            body.map(lambda b: f"@torch.compiler.disable\ndef off(a):\n{indent(b, 4)}"),
            body.map(lambda b: f"class Inner(torch.nn.Module):\n    def forward(self, q):\n{indent(b, 8)}"),
            st.tuples(expr, body).map(lambda t: f"match {t[0]}:\n    case 1:\n{indent(t[1], 8)}    case _:\n        pass\n"),
        )

    statement = st.recursive(simple, block, max_leaves=8)
    return st.lists(statement, min_size=1, max_size=6).map(lambda lines: "\n".join(lines) + "\n")


TORCHISH_MODULE = """import copy
import logging
import random

import numpy as np
import torch
import torch.nn as nn

logger = logging.getLogger(__name__)
g = 0


def helper(x, n=3, *args):
{helper}
    return x


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(2))
        self.sub = nn.Linear(2, 2)
        self.layers = nn.ModuleList([nn.Linear(2, 2)])

    def helper(self, x):
{method}
        return x

    def forward(self, x, y=None, *args, **kwargs):
{forward}
        return self.helper(helper(x))


@torch.compile(fullgraph=False)
def fn(x, n=3):
{compiled}
    return x


compiled = torch.compile(Model())
"""


def torchish_module(parts: tuple[str, str, str, str]) -> str:
    forward, helper_body, method, compiled = parts
    return TORCHISH_MODULE.format(
        forward=indent(forward, 8).rstrip("\n"), helper=indent(helper_body, 4).rstrip("\n"),
        method=indent(method, 8).rstrip("\n"), compiled=indent(compiled, 4).rstrip("\n"),
    )


# -- mutating real files --------------------------------------------------------------------------
HAZARDS = ["print(x)", "x = x.item()", "if x.sum() > 0:\n    pass", "import pdb; pdb.set_trace()",
           "for v in x.tolist():\n    pass", "assert x.max() < 3, f'{x}'", "y = x.numpy()"]
_TOKEN = re.compile(r"\w+|[^\w\s]")


MAX_REAL_FILE_BYTES = 100_000  # bigger files would dominate the run's time


def real_files(limit_torch: int | None = None, packages: tuple[str, ...] = ()) -> list[Path]:
    files = sorted((REPO / "fixtures").glob("*.py"))
    spec = importlib.util.find_spec("torch")  # without importing torch
    if spec is not None and spec.submodule_search_locations:
        modules = Path(list(spec.submodule_search_locations)[0]) / "nn" / "modules"
        torch_files = sorted(modules.glob("*.py"))
        files += torch_files[:limit_torch] if limit_torch is not None else torch_files
    for name in packages:
        spec = importlib.util.find_spec(name)  # found, never imported
        if spec is None or not spec.submodule_search_locations:
            continue
        root = Path(list(spec.submodule_search_locations)[0])
        files += sorted(p for p in root.rglob("*.py") if p.stat().st_size <= MAX_REAL_FILE_BYTES)
    return files


def compiled_everywhere(source: str) -> str:
    """A file without torch code, with its top-level defs compiled: otherwise the pre-filter
    skips it and no rule ever runs on it."""
    return source if "torch" in source else decorated(source)


def mutate(source: str, rng: random.Random, count: int) -> str:
    lines = source.splitlines(keepends=True) or ["\n"]
    for _ in range(count):
        if not lines:
            lines = ["\n"]
        i = rng.randrange(len(lines))
        # deletions, duplications, hazards and renamed identifiers mostly keep the file parseable
        kind = rng.choices(range(8), weights=(3, 3, 1, 1, 4, 4, 1, 1))[0]
        line = lines[i]
        if kind == 0:
            del lines[i]
        elif kind == 1:
            lines.insert(i, line)
        elif kind == 2:
            tokens = list(_TOKEN.finditer(line))
            if len(tokens) >= 2:
                j = rng.randrange(len(tokens) - 1)
                a, b = tokens[j], tokens[j + 1]
                lines[i] = line[:a.start()] + b.group() + line[a.end():b.start()] + a.group() + line[b.end():]
        elif kind == 3:
            lines[i] = rng.choice(["    ", "\t", " ", ""]) + line if rng.random() < 0.6 else line.lstrip(" ")[: len(line)]
        elif kind == 4:
            pad = re.match(r"[ \t]*", line).group()
            hazard = rng.choice(HAZARDS).replace("\n", "\n" + pad)
            lines.insert(i, pad + hazard + "\n")
        elif kind == 5:
            words = _TOKEN.findall(source)
            tokens = list(re.finditer(r"\b\w+\b", line))
            if tokens and words:
                t = rng.choice(tokens)
                lines[i] = line[:t.start()] + rng.choice(words) + line[t.end():]
        elif kind == 6 and line:
            j = rng.randrange(len(line))
            lines[i] = line[:j] + rng.choice("()[]{}:,.'\"\\#@=") + line[j:]
        else:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
    return "".join(lines)


# -- running and classifying ----------------------------------------------------------------------
@dataclass
class Outcome:
    kind: str  # skipped | parse-failure | analysed | limit | internal-error | escape | bad-error
    signature: str = ""
    detail: str = ""
    traceback: str = ""


_LAST_TRACEBACK: list[str] = [""]
_original_internal_error = engine._internal_error


def _capturing_internal_error(path, module, exc):
    _LAST_TRACEBACK[0] = "".join(traceback.format_exception(exc))
    return _original_internal_error(path, module, exc)


def install_traceback_capture() -> None:
    """Keep the traceback behind each internal error (check_source reports only one line)."""
    engine._internal_error = _capturing_internal_error


def _frames(tb: str) -> str:
    """The innermost tcl frame of a traceback, as `file:line in function`."""
    frames = re.findall(r'File "([^"]*tcl[/\\][^"]*)", line (\d+), in (\w+)', tb)
    if not frames:
        return ""
    path, line, function = frames[-1]
    return f"{Path(path).name}:{line} in {function}"


FILE_MARKER = "# === file: "
_PROJECT_DIR: list[Path] = []


def split_project(text: str) -> dict[str, str]:
    """`# === file: pkg/x.py ===` sections of one text -> {relative path: source}."""
    files: dict[str, str] = {}
    current = None
    for line in text.splitlines(keepends=True):
        if line.startswith(FILE_MARKER):
            current = line[len(FILE_MARKER):].strip().rstrip("=").strip()
            files.setdefault(current, "")
        elif current is not None:
            files[current] += line
    return files


def classify_project(text: str) -> Outcome:
    """Write the files to a scratch tree and check it the way `tcl check -j1` does (cross-file
    analysis included); the same contract, for every file of the tree."""
    import shutil
    import tempfile

    from tcl import runner

    if not _PROJECT_DIR:
        _PROJECT_DIR.append(Path(tempfile.mkdtemp(prefix="tcl-fuzz-")))
    root = _PROJECT_DIR[0] / "tree"
    shutil.rmtree(root, ignore_errors=True)
    for relative, source in split_project(text).items():
        if not relative or relative.startswith(("/", "..")):
            continue
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source)
    if not root.exists():
        return Outcome("skipped")
    _LAST_TRACEBACK[0] = ""
    try:
        result = runner.run([str(root)], Config(), jobs=1)
    except Exception as exc:
        tb = "".join(traceback.format_exception(exc))
        return Outcome("escape", f"escape {type(exc).__name__} at {_frames(tb)}", str(exc)[:200], tb)
    errors = result.all_errors
    for error in errors:
        line = str(error)
        if "\n" in line or not line.startswith(str(root)):
            return Outcome("bad-error", "badly formed error line", line)
    internal = [e for e in errors if e.message.startswith("internal error")]
    if internal:
        head = re.sub(r"(: [^:]*)$", "", internal[0].message)
        tb = _LAST_TRACEBACK[0]
        return Outcome("internal-error", f"{head} at {_frames(tb)}", str(internal[0]).replace(str(root) + "/", ""), tb)
    if any("nesting too deep" in e.message or "timed out" in e.message for e in errors):
        return Outcome("limit")
    if errors:
        return Outcome("parse-failure", detail=errors[0].message)
    return Outcome("analysed", detail=str(len(result.findings)))


def classify(analyzer: Analyzer, source: str, path: str = "fuzz.py") -> Outcome:
    if source.startswith(FILE_MARKER):
        return classify_project(source)
    _LAST_TRACEBACK[0] = ""
    try:
        report = analyzer.check_source(source, path)
    except Exception as exc:  # the contract: nothing but recorded FileErrors
        tb = "".join(traceback.format_exception(exc))
        return Outcome("escape", f"escape {type(exc).__name__} at {_frames(tb)}", str(exc)[:200], tb)
    for error in report.errors:
        text = str(error)
        if not isinstance(error, FileError) or "\n" in text or not text.startswith(path):
            return Outcome("bad-error", "badly formed error line", text)
    if report.skipped:
        return Outcome("skipped")
    if not report.errors:
        return Outcome("analysed", detail=str(len(report.findings)))
    message = report.errors[0].message
    if message.startswith("cannot parse"):
        return Outcome("parse-failure", detail=message)
    if "nesting too deep" in message or "timed out" in message:
        return Outcome("limit", detail=message)
    if message.startswith("internal error"):
        head = re.sub(r"(: [^:]*)$", "", message)  # drop the exception's own text
        tb = _LAST_TRACEBACK[0]
        return Outcome("internal-error", f"{head} at {_frames(tb)}", str(report.errors[0]), tb)
    return Outcome("other-error", detail=message)


FIX_CRASHES = ("fix-escape", "fix-invalid", "fix-internal")


def classify_fix(analyzer: Analyzer, source: str, path: str = "fuzz.py") -> Outcome:
    """`tcl fix`'s driver on one program: it may refuse the file or change nothing, but no
    exception may escape, and every rewrite must parse (and compile, when the input did)."""
    from tcl.fixing.apply import compiles, fix_source, syntax_problem

    _LAST_TRACEBACK[0] = ""
    try:
        result = fix_source(source, path, analyzer, unsafe=True)
    except Exception as exc:
        tb = "".join(traceback.format_exception(exc))
        return Outcome("fix-escape", f"fix escape {type(exc).__name__} at {_frames(tb)}", str(exc)[:200], tb)
    for error in result.errors:
        text = str(error)
        if "\n" in text or not text.startswith(path):
            return Outcome("bad-error", "badly formed error line", text)
        if "fix produced" in error.message:
            return Outcome("fix-invalid", f"fix-invalid: {re.sub(r'[(].*', '', error.message)}", text)
        if error.message.startswith("internal error"):
            head = re.sub(r"(: [^:]*)$", "", error.message)
            return Outcome("fix-internal", f"fix {head} at {_frames(_LAST_TRACEBACK[0])}", text, _LAST_TRACEBACK[0])
    for warning in result.warnings:
        if "fixer failed" in warning:
            return Outcome("fix-internal", re.sub(r"^[^ ]* |: [^:]*$", "", warning), warning)
    if result.errors:
        return Outcome("fix-refused", detail=result.errors[0].message)
    if not result.changed:
        return Outcome("fix-unchanged")
    problem = syntax_problem(result.fixed, path, compiles(source, path))
    if problem is not None:
        return Outcome("fix-invalid", "fix-invalid: rewrite does not parse", problem)
    return Outcome("fix-changed", detail=str(len(result.applied)))


def classify_any(analyzer: Analyzer, source: str, fix: bool) -> Outcome:
    return classify_fix(analyzer, source) if fix else classify(analyzer, source)


def shrink(analyzer: Analyzer, source: str, signature: str, budget: float = 60.0, fix: bool = False) -> str:
    """Delta debugging over lines (then characters of the longest line) keeping the signature."""
    deadline = time.monotonic() + budget

    def same(candidate: str) -> bool:
        return time.monotonic() < deadline and classify_any(analyzer, candidate, fix).signature == signature

    lines = source.splitlines(keepends=True)
    chunk = max(len(lines) // 2, 1)
    while chunk >= 1 and time.monotonic() < deadline:
        i, changed = 0, False
        while i < len(lines):
            candidate = lines[:i] + lines[i + chunk:]
            if candidate and same("".join(candidate)):
                lines, changed = candidate, True
            else:
                i += chunk
        if not changed:
            chunk //= 2
    return "".join(lines)


# -- the generators -------------------------------------------------------------------------------
def hypothesis_programs(strategy, count: int, seed: int, derandomize: bool = False) -> Iterator[str]:
    """Draw `count` values from a hypothesis strategy outside a test (no shrinking, no database)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed

    drawn: list[str] = []

    @hypothesis_seed(seed)
    @settings(max_examples=count, deadline=None, database=None, derandomize=derandomize,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(value):
        drawn.append(value)

    collect()
    return iter(drawn)


def grammar_programs(count: int, seed: int, derandomize: bool = False) -> Iterator[str]:
    import warnings

    import hypothesmith

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # hypothesmith's compile() checks warn about odd code
        for i, code in enumerate(hypothesis_programs(hypothesmith.from_grammar(), count, seed, derandomize)):
            yield in_forward(code) if i % 2 == 0 else decorated(code)


def torchish_programs(count: int, seed: int, derandomize: bool = False) -> Iterator[str]:
    from hypothesis import strategies as st

    body = torchish_strategies()
    yield from (torchish_module(p) for p in hypothesis_programs(st.tuples(body, body, body, body), count, seed, derandomize))


def mutated_programs(count: int, seed: int, files: list[Path] | None = None) -> Iterator[str]:
    rng = random.Random(seed)
    sources = []
    for path in files or real_files(packages=PACKAGES):
        try:
            sources.append(compiled_everywhere(path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError):
            continue
    for _ in range(count):
        yield mutate(rng.choice(sources), rng, rng.randint(1, 5))


PACKAGES: tuple[str, ...] = ()  # --packages


PROJECT_LAYERS = """import torch
import torch.nn as nn


def helper(x, n=3):
{helper}
    return x


def other(x):
{other}
    return helper(x)


class Base(nn.Module):
    def shared(self, x):
{shared}
        return x
"""

PROJECT_MODEL = """import torch
from . import layers as L
from .layers import Base, helper as h
from pkg.layers import other


class Model(Base):
    def forward(self, x, y=None):
{forward}
        x = h(x)
        x = L.other(x)
        x = other(x)
        return self.shared(x)


@torch.compile
def fn(x):
{compiled}
    return L.helper(x)
"""


def project_programs(count: int, seed: int, derandomize: bool = False) -> Iterator[str]:
    """Three-file packages: a model whose traced code calls helpers and a base class in another
    file, through `from . import`, `from .x import y as z` and absolute imports."""
    from hypothesis import strategies as st

    body = torchish_strategies()
    yield from (project_text(p) for p in hypothesis_programs(st.tuples(*[body] * 5), count, seed, derandomize))


def project_text(parts: tuple[str, str, str, str, str]) -> str:
    helper, other, shared, forward, compiled = parts
    layers = PROJECT_LAYERS.format(helper=indent(helper, 4).rstrip("\n"), other=indent(other, 4).rstrip("\n"),
                                   shared=indent(shared, 8).rstrip("\n"))
    model = PROJECT_MODEL.format(forward=indent(forward, 8).rstrip("\n"), compiled=indent(compiled, 4).rstrip("\n"))
    return (f"{FILE_MARKER}pkg/__init__.py ===\nfrom .model import Model\n"
            f"{FILE_MARKER}pkg/layers.py ===\n{layers}"
            f"{FILE_MARKER}pkg/model.py ===\n{model}")


SOURCES: dict[str, Callable[..., Iterator[str]]] = {
    "grammar": grammar_programs, "torchish": torchish_programs, "mutate": mutated_programs,
    "project": project_programs,
}


@dataclass
class Tally:
    counts: Counter = field(default_factory=Counter)
    per_source: dict = field(default_factory=dict)
    crashes: dict = field(default_factory=dict)  # signature -> (outcome, source, origin)


CRASH_KINDS = ("internal-error", "escape", "bad-error") + FIX_CRASHES


def run(examples: int, seed: int, sources: list[str], out: Path | None, shrink_budget: float,
        fix: bool = False) -> Tally:
    install_traceback_capture()
    analyzer = Analyzer(Config())
    tally = Tally()
    share = {name: examples // len(sources) + (1 if i < examples % len(sources) else 0) for i, name in enumerate(sources)}
    for name in sources:
        started = time.monotonic()
        counts: Counter = Counter()
        generated = 0
        for source in SOURCES[name](share[name], seed):
            generated += 1
            outcomes = [classify(analyzer, source)]
            if fix and not source.startswith(FILE_MARKER):
                outcomes.append(classify_fix(analyzer, source))
            for outcome in outcomes:
                counts[outcome.kind] += 1
                if outcome.kind in CRASH_KINDS and outcome.signature not in tally.crashes:
                    tally.crashes[outcome.signature] = (outcome, source, name)
                    print(f"  new crash ({name}): {outcome.signature}", flush=True)
            if generated % 500 == 0:
                print(f"  {name}: {generated} programs, {time.monotonic() - started:.0f} s", flush=True)
        tally.counts.update(counts)
        tally.per_source[name] = (generated, counts, time.monotonic() - started)
        print(f"{name}: {generated} programs in {time.monotonic() - started:.0f} s: {dict(counts)}", flush=True)
    for number, (signature, (outcome, source, name)) in enumerate(sorted(tally.crashes.items()), 1):
        on_fix = outcome.kind in FIX_CRASHES
        small = shrink(analyzer, source, signature, shrink_budget, on_fix)
        final = classify_any(analyzer, small, on_fix)
        print(f"\n=== crash {number} ({name}): {signature}\n--- reproducer ({len(small.splitlines())} lines):\n{small}"
              f"--- error line:\n{final.detail or outcome.detail}\n--- traceback:\n{final.traceback or outcome.traceback}")
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            (out / f"crash{number}.py").write_text(small)
            (out / f"crash{number}.txt").write_text(f"{signature}\n{final.detail}\n\n{final.traceback}")
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fuzz Analyzer.check_source; print the counts.")
    parser.add_argument("--examples", type=int, default=5000, help="programs in all, split over the sources")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sources", default="grammar,torchish,mutate,project")
    parser.add_argument("--out", help="directory for the shrunk reproducers of each crash")
    parser.add_argument("--shrink-seconds", type=float, default=60.0)
    parser.add_argument("--fix", action="store_true", help="also run tcl fix's driver on each single-file program")
    parser.add_argument("--packages", default="",
                        help="comma-separated installed packages whose .py files the mutate source also uses")
    args = parser.parse_args(argv)
    global PACKAGES
    PACKAGES = tuple(p for p in args.packages.split(",") if p)
    sources = [s for s in args.sources.split(",") if s]
    unknown = set(sources) - set(SOURCES)
    if unknown:
        parser.error(f"unknown sources: {', '.join(sorted(unknown))}")
    started = time.monotonic()
    tally = run(args.examples, args.seed, sources, Path(args.out) if args.out else None, args.shrink_seconds, args.fix)
    total = sum(generated for generated, _, _ in tally.per_source.values())
    also = " (each checked, and fixed when single-file)" if args.fix else ""
    print(f"\nprograms tried: {total}{also} in {time.monotonic() - started:.0f} s (seed {args.seed})")
    kinds = ["analysed", "parse-failure", "skipped", "limit", "other-error", "internal-error", "escape", "bad-error"]
    if args.fix:
        kinds += ["fix-changed", "fix-unchanged", "fix-refused", *FIX_CRASHES]
    for kind in kinds:
        print(f"  {kind:15} {tally.counts.get(kind, 0)}")
    print(f"distinct crashes (internal errors + escapes + malformed error lines{' + fix crashes' * args.fix}): "
          f"{len(tally.crashes)}")
    return 1 if tally.crashes else 0


if __name__ == "__main__":
    sys.exit(main())
