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
warnings.warn})`). `ignore_logger_methods` (an alias of `ignore_logging_functions` on 2.13) is a
set too: a Logger method (`logging.Logger.warning`, also transformers' `warning_once`) or a
module-level `logging.info` listed there is a no-op under compile, as the guard fix makes it, and
breaks nothing (measured on 2.13: a `logger.warning`, `logger.info`, `warning_once` and
`logging.warning` each 2 breaks over two calls -> 0; eager runs still log). tcl reads it per
function (`ignore_logger_methods:logging.Logger.warning`), since a method not listed still
breaks. A fourth switch decides a class of recompiles: `allow_unspec_int_on_nn_module`
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

from .python_nodes import nodes_of

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
    "ignore_logger_methods": "the logging calls listed there are skipped under compile (no-ops, as the guard "
                             "fix makes them) instead of breaking the graph; eager runs still log",
    "allow_unspec_int_on_nn_module": "int attributes of nn.Modules are traced as symbolic ints, not "
                                     "specialised: a counter updated on every call stops recompiling "
                                     "each call",
}
# fullgraph=True captures scalars and data-dependent shapes whatever the settings say (measured on
# 2.13: `.item()` and `nonzero` trace; a Python branch on the captured value raises a UserError).
FULLGRAPH_SETTINGS = frozenset({"capture_scalar_outputs", "capture_dynamic_output_shape_ops"})
REORDERABLE = "reorderable_logging_functions"
IGNORED_LOGGING = "ignore_logger_methods"
IGNORED_LOGGING_NAMES = (IGNORED_LOGGING, "ignore_logging_functions")  # 2.13 aliases one to the other
# What `[tool.tcl] dynamo-config = ["ignore_logger_methods"]` stands for: every Logger method and
# module-level logging function a rule reports (tcl.names.LOG_METHODS).
_LOGGER_METHODS = ("debug", "info", "warning", "warn", "error", "exception", "critical", "log", "fatal",
                   "warning_once", "info_once")


def ignored_logging(target: str) -> str:
    """The setting that makes `target` (`logging.Logger.warning`, `logging.info`) a no-op."""
    return f"{IGNORED_LOGGING}:{target}"
# What tcl registers there, as `tcl fix` writes it and as the file must name it to count.
REORDERED_FUNCTIONS = ("print", "warnings.warn")
CONFIG_MODULE = "torch._dynamo.config"
FACT_KEY = "dynamo_settings"


def settings_in_file(index) -> frozenset[str]:
    """The known settings `index`'s file sets to True (cached on the index)."""
    source = index.source or ""
    if "capture_" not in source and "allow_" not in source and "reorderable_" not in source \
            and "ignore_logg" not in source:  # cheap: most files set nothing
        return frozenset()
    found = index.file_fact(FACT_KEY, settings_in_tree)
    return found or frozenset()


def settings_in_tree(tree: ast.AST) -> frozenset[str]:
    aliases: dict[str, str] = {}
    for node in nodes_of(tree, ast.Import, ast.ImportFrom):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    found = set()
    reordered: set[str] = set()
    for node in nodes_of(tree, ast.Call, ast.AugAssign, ast.Assign):  # what _added_to and the loop read
        reordered.update(_added_to(node, aliases, (REORDERABLE,)))
        found.update(ignored_logging(name) for name in _added_to(node, aliases, IGNORED_LOGGING_NAMES))
        if not isinstance(node, ast.Assign) or not (isinstance(node.value, ast.Constant) and node.value.value is True):
            continue
        for target in node.targets:
            name = _dotted(target, aliases)
            if name and name.rpartition(".")[0] == CONFIG_MODULE and name.rpartition(".")[2] in KNOWN:
                found.add(name.rpartition(".")[2])
    if set(REORDERED_FUNCTIONS) <= reordered:
        found.add(REORDERABLE)
    return frozenset(found)


def _added_to(node: ast.AST, aliases: dict[str, str], settings: tuple[str, ...]) -> set[str]:
    """The functions `node` adds to one of the set-valued `settings`: `.add(f)`, `.update({f,
    g})`, `|= {f}` or `= {f, g}` on it (dotted names, `print` for the builtin)."""
    targets = {f"{CONFIG_MODULE}.{setting}" for setting in settings}
    values: list[ast.AST] = []
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("add", "update") \
            and _dotted(node.func.value, aliases) in targets:
        values = list(node.args)
    elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.BitOr) \
            and _dotted(node.target, aliases) in targets:
        values = [node.value]
    elif isinstance(node, ast.Assign) and any(_dotted(t, aliases) in targets for t in node.targets):
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
    if setting.startswith(IGNORED_LOGGING + ":"):  # one target, or several joined by commas
        targets = setting.partition(":")[2].split(",")
        if len(targets) == 1:
            return f"torch._dynamo.config.{IGNORED_LOGGING}.add({targets[0]})"
        return f"torch._dynamo.config.{IGNORED_LOGGING}.update({{{', '.join(targets)}}})"
    if setting == REORDERABLE:
        return f"torch._dynamo.config.{REORDERABLE}.update({{{', '.join(REORDERED_FUNCTIONS)}}})"
    return f"torch._dynamo.config.{setting} = True"


def statement_imports(setting: str) -> tuple[str, ...]:
    """Modules besides torch that the inserted line names."""
    if setting.startswith(IGNORED_LOGGING + ":"):
        return ("logging",)
    return ("warnings",) if setting == REORDERABLE else ()


def config_values(settings) -> dict:
    """`settings` as `torch._dynamo.config.patch(**...)` takes them (run time only)."""
    values: dict = {}
    for setting in settings:
        if setting.startswith(IGNORED_LOGGING + ":"):
            import logging

            for name in setting.partition(":")[2].split(","):
                target = logging
                for part in name.split(".")[1:]:  # `logging.Logger.warning`
                    target = getattr(target, part, None)
                if target is not None:
                    values.setdefault(IGNORED_LOGGING, set()).add(target)
        elif setting == REORDERABLE:
            import warnings

            values[setting] = {print, warnings.warn}
        else:
            values[setting] = True
    return values


def check_names(names, where: str) -> list[str]:
    """`names` validated; a ValueError names `where` and the known settings."""
    out = []
    for name in names:
        if name == IGNORED_LOGGING:  # every logging call a rule reports
            out.extend(ignored_logging(f"logging.Logger.{m}") for m in _LOGGER_METHODS)
            out.extend(ignored_logging(f"logging.{m}") for m in _LOGGER_METHODS if not m.endswith("_once"))
            continue
        if name.startswith(IGNORED_LOGGING + ":"):
            out.append(name)
            continue
        if name not in KNOWN:
            raise ValueError(f"{where}: unknown Dynamo setting {name!r} (known: {', '.join(sorted(KNOWN))})")
        out.append(name)
    return out
