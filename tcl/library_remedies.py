"""What a user can do about a graph break inside an installed package they do not own.

A finding that --follow-imports reports from a library (tcl/installed.py) cannot be fixed by
the rewrite its rule proposes: that code is someone else's. What the user controls is the
compile call and the code around the call that reaches it. So such findings carry a remedy
on the user's side instead: a Dynamo setting that keeps this kind of operation in the graph
(only where the setting exists for that break: `capture_scalar_outputs` for scalar reads,
`capture_dynamic_output_shape_ops` for data-dependent shapes, `reorderable_logging_functions`
for print and warnings.warn (where Dynamo can reorder the call), `ignore_logger_methods` for logging
calls, `allow_rnn` for RNN modules, `allow_unspec_int_on_nn_module` for a module's int counter
that recompiles every call), then the two ways around any break — keep the call
out of the graph with `torch.compiler.disable`, or compile a smaller region — and the
package's version, to check a newer release.
"""

from __future__ import annotations

# rule code -> the setting that removes that break when the user owns the torch.compile call
SETTINGS = {
    "TCL203": "set torch._dynamo.config.capture_scalar_outputs = True before compiling (the scalar stays in the graph)",
    "TCL204": "set torch._dynamo.config.capture_scalar_outputs = True before compiling (the scalar stays in the graph)",
    "TCL206": "set torch._dynamo.config.capture_scalar_outputs = True before compiling (sizes read from tensors stay symbolic)",
    "TCL301": ("set torch._dynamo.config.capture_dynamic_output_shape_ops = True before compiling "
               "(nonzero / masked_select shapes stay in the graph)"),
    "TCL101": ("register it before compiling: torch._dynamo.config.reorderable_logging_functions.update({print, "
               "warnings.warn}) (print then runs after the graph, once per call)"),
    "TCL104": ("list the logger method in torch._dynamo.config.ignore_logger_methods before compiling "
               "(`torch._dynamo.config.ignore_logger_methods.add(logging.Logger.warning)`: the call is then "
               "skipped under compile, eager runs still log)"),
    "TCL105": ("register it before compiling: torch._dynamo.config.reorderable_logging_functions.update({print, "
               "warnings.warn}) (the warning is then issued after the graph, once per call)"),
    "TCL408": "set torch._dynamo.config.allow_rnn = True before compiling (Dynamo then traces nn.RNN/LSTM/GRU)",
    "TCL601": ("set torch._dynamo.config.capture_scalar_outputs = True before compiling (the reads stay in the "
               "graph and the f-string no longer raises)"),
    "TCL501": ("set torch._dynamo.config.allow_unspec_int_on_nn_module = True before compiling (a module's int "
               "counter is traced as a symbolic int and stops recompiling each call)"),
}


def remedy(code: str, package: str, category: str = "graph-break", setting_applies: bool = True) -> str:
    """The fix text of a finding in `package` (`zuko==1.6.0`) under rule `code`;
    `setting_applies=False`: the rule's setting does not reach this finding (a warnings.warn
    with a category, which Dynamo cannot reorder), so it is not offered."""
    if category == "recompile":  # a crash, like a break, is avoided by keeping the call out of the graph
        if code in SETTINGS and setting_applies:
            return f"in {package}, which you do not edit: {SETTINGS[code]}"
        return (f"in {package}, which you do not edit: mark the varying dimension dynamic at your compile call "
                f"(torch._dynamo.mark_dynamic(x, dim)), or compile with dynamic=True")
    ways = [SETTINGS[code]] if code in SETTINGS and setting_applies else []
    ways.append("keep the call at this line out of the graph (call it from a function decorated "
                "@torch.compiler.disable) or compile a smaller region")
    ways.append(f"or see whether a newer release than {package} avoids it")
    return f"in {package}, which you do not edit: " + "; ".join(ways)
