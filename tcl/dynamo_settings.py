"""The Dynamo settings a checked program turns on, and which findings they change.

Three `torch._dynamo.config` switches decide whether whole classes of operations break the graph
in default mode: `capture_scalar_outputs` keeps `.item()` / `float(t)` / `int(t)` reads in the
graph as symbolic scalars (a Python branch on such a scalar still breaks, at the branch),
`capture_dynamic_output_shape_ops` keeps `nonzero`, boolean-mask indexing and the other ops whose
output size depends on data, and `allow_rnn` lets Dynamo trace nn.RNN/LSTM/GRU modules (measured
on 2.13: LSTM, GRU, RNN, bidirectional and stacked, with `flatten_parameters()`, trace without a
break and match eager). A fourth decides a class of recompiles: `allow_unspec_int_on_nn_module`
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
    "allow_unspec_int_on_nn_module": "int attributes of nn.Modules are traced as symbolic ints, not "
                                     "specialised: a counter updated on every call stops recompiling "
                                     "each call",
}
# fullgraph=True captures scalars and data-dependent shapes whatever the settings say (measured on
# 2.13: `.item()` and `nonzero` trace; a Python branch on the captured value raises a UserError).
FULLGRAPH_SETTINGS = frozenset({"capture_scalar_outputs", "capture_dynamic_output_shape_ops"})
CONFIG_MODULE = "torch._dynamo.config"
FACT_KEY = "dynamo_settings"


def settings_in_file(index) -> frozenset[str]:
    """The known settings `index`'s file sets to True (cached on the index)."""
    source = index.source or ""
    if "capture_" not in source and "allow_" not in source:  # cheap: most files set nothing
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
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign) or not (isinstance(node.value, ast.Constant) and node.value.value is True):
            continue
        for target in node.targets:
            name = _dotted(target, aliases)
            if name and name.rpartition(".")[0] == CONFIG_MODULE and name.rpartition(".")[2] in KNOWN:
                found.add(name.rpartition(".")[2])
    return frozenset(found)


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
    return f"torch._dynamo.config.{setting} = True"


def check_names(names, where: str) -> list[str]:
    """`names` validated; a ValueError names `where` and the known settings."""
    out = []
    for name in names:
        if name not in KNOWN:
            raise ValueError(f"{where}: unknown Dynamo setting {name!r} (known: {', '.join(sorted(KNOWN))})")
        out.append(name)
    return out
