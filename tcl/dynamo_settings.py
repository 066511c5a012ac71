"""The Dynamo settings a checked program turns on, and which findings they change.

Three `torch._dynamo.config` switches decide whether whole classes of operations break the graph
in default mode: `capture_scalar_outputs` keeps `.item()` / `float(t)` / `int(t)` reads in the
graph as symbolic scalars (a Python branch on such a scalar still breaks, at the branch),
`capture_dynamic_output_shape_ops` keeps `nonzero`, boolean-mask indexing and the other ops whose
output size depends on data, and `allow_rnn` lets Dynamo trace nn.RNN/LSTM/GRU modules (measured
on 2.13: LSTM, GRU, RNN, bidirectional and stacked, with `flatten_parameters()`, trace without a
break and match eager). `reorderable_logging_functions` is a set, not a switch: a `print()` or
`warnings.warn()` registered there runs after the graph instead of breaking it, when every argument
is a constant, a string (formatted or not) or a tensor (measured on 2.13: a message, an f-string of
sizes, `stacklevel=2` and a tensor are reordered and still printed or warned once per call; a
warning category, a torch.Size or a list is not: the break stays, as GB0296). A deferred tensor
shows later in-place updates, so the rules count only constants and strings
(tcl/rules/side_effects.py `reorderable_call`). tcl counts it as on
when the file registers both (`tcl fix` inserts `...reorderable_logging_functions.update({print,
warnings.warn})`). A fourth switch decides a class of recompiles: `allow_unspec_int_on_nn_module`
traces int attributes of nn.Modules as symbolic ints, so a counter a forward updates on every call
(TCL501) no longer recompiles each call (measured on 2.13: `self.step += 1` 6 calls -> 2
compiles, `if self.calls % 4 == 0` -> 3, one per outcome; an int in a module-level dict is not
affected). A program sets them process-wide before it compiles, so tcl reads
them from two places: assignments of `True` anywhere in the checked file
(`torch._dynamo.config.capture_scalar_outputs = True`, also through `import torch._dynamo as
dynamo` or `from torch._dynamo import config`), which apply to that file's findings and to those
it reaches in installed packages, and `[tool.tcl] dynamo-config` / `--dynamo-config`, which
apply to every file (a project that sets them in a module tcl does not check). A rule says which
settings remove its breaks (`Rule.removed_by`) or which it needs to exist at all
(`Rule.needs_settings`); what each setting does was measured on the compiler, per rule, by the
rule examples' test. `tcl fix` inserts a setting before a compile call the checked file owns when
findings reached from it are removed by that setting (tcl/fixes/settings.py).
"""

from __future__ import annotations

import ast

# setting -> what it keeps in the graph (shown by `tcl fix` and in docs)
KNOWN = {
    "capture_scalar_outputs": ".item(), float(t), int(t) and sizes read from data stay in the graph "
                              "as symbolic scalars; a Python branch on one still breaks",
    "capture_dynamic_output_shape_ops": "nonzero, boolean-mask indexing, unique and other data-dependent "
                                        "output shapes stay in the graph",
    "allow_rnn": "nn.RNN, nn.LSTM and nn.GRU modules are traced instead of breaking where the module is "
                 "loaded",
    "reorderable_logging_functions": "print() and warnings.warn() run after the graph instead of breaking it, "
                                     "where their arguments are constants, strings or tensors (the output is "
                                     "printed or warned after the graph's computation, once per call)",
    "allow_unspec_int_on_nn_module": "int attributes of nn.Modules are traced as symbolic ints, not "
                                     "specialised: a counter updated on every call stops recompiling "
                                     "each call",
}
# fullgraph=True captures scalars and data-dependent shapes whatever the settings say (measured on
# 2.13: `.item()` and `nonzero` trace; a Python branch on the captured value raises a UserError).
FULLGRAPH_SETTINGS = frozenset({"capture_scalar_outputs", "capture_dynamic_output_shape_ops"})
REORDERABLE = "reorderable_logging_functions"
# What tcl registers there, as `tcl fix` writes it and as the file must name it to count.
REORDERED_FUNCTIONS = ("print", "warnings.warn")
CONFIG_MODULE = "torch._dynamo.config"
FACT_KEY = "dynamo_settings"


def settings_in_file(index) -> frozenset[str]:
    """The known settings `index`'s file sets to True (cached on the index)."""
    source = index.source or ""
    if "capture_" not in source and "allow_" not in source and "reorderable_" not in source:  # most set nothing
        return frozenset()
    found = index.file_fact(FACT_KEY, settings_in_tree)
    return found or frozenset()


def settings_in_tree(tree: ast.AST) -> frozenset[str]:
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    found = set()
    reordered: set[str] = set()
    for node in ast.walk(tree):
        reordered.update(_registered_for_reordering(node, aliases))
        if not isinstance(node, ast.Assign) or not (isinstance(node.value, ast.Constant) and node.value.value is True):
            continue
        for target in node.targets:
            name = _dotted(target, aliases)
            if name and name.rpartition(".")[0] == CONFIG_MODULE and name.rpartition(".")[2] in KNOWN:
                found.add(name.rpartition(".")[2])
    if set(REORDERED_FUNCTIONS) <= reordered:
        found.add(REORDERABLE)
    return frozenset(found)


def _registered_for_reordering(node: ast.AST, aliases: dict[str, str]) -> set[str]:
    """The functions `node` adds to reorderable_logging_functions: `.add(f)`, `.update({f, g})`,
    `|= {f}` or `= {f, g}` on it (dotted names, `print` for the builtin)."""
    values: list[ast.AST] = []
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("add", "update") \
            and _dotted(node.func.value, aliases) == f"{CONFIG_MODULE}.{REORDERABLE}":
        values = list(node.args)
    elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.BitOr) \
            and _dotted(node.target, aliases) == f"{CONFIG_MODULE}.{REORDERABLE}":
        values = [node.value]
    elif isinstance(node, ast.Assign) and any(_dotted(t, aliases) == f"{CONFIG_MODULE}.{REORDERABLE}"
                                              for t in node.targets):
        values = [node.value]
    names: set[str] = set()
    for value in values:
        elements = value.elts if isinstance(value, (ast.Set, ast.List, ast.Tuple)) else [value]
        for element in elements:
            name = _dotted(element, aliases)
            if name:
                names.add(name.removeprefix("builtins."))
    return names


def _dotted(node: ast.AST, aliases: dict[str, str]) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    head = aliases.get(node.id, node.id)
    return ".".join([head, *reversed(parts)])


def statement(setting: str) -> str:
    """The line `tcl fix` inserts."""
    if setting == REORDERABLE:
        return f"torch._dynamo.config.{REORDERABLE}.update({{{', '.join(REORDERED_FUNCTIONS)}}})"
    return f"torch._dynamo.config.{setting} = True"


def statement_imports(setting: str) -> tuple[str, ...]:
    """Modules besides torch that the inserted line names."""
    return ("warnings",) if setting == REORDERABLE else ()


def config_values(settings) -> dict:
    """`settings` as `torch._dynamo.config.patch(**...)` takes them (run time only)."""
    values: dict = {}
    for setting in settings:
        if setting == REORDERABLE:
            import warnings

            values[setting] = {print, warnings.warn}
        else:
            values[setting] = True
    return values


def check_names(names, where: str) -> list[str]:
    """`names` validated; a ValueError names `where` and the known settings."""
    out = []
    for name in names:
        if name not in KNOWN:
            raise ValueError(f"{where}: unknown Dynamo setting {name!r} (known: {', '.join(sorted(KNOWN))})")
        out.append(name)
    return out
