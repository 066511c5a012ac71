"""Explaining persistent recompiles, in the parent: the recompiles the children's exploration
marked ``persistent`` (a frame's recompiles after its first automatic-dynamic one for the same
dimension or int, or every one under ``dynamic=False``) are grouped by the user line they come
from and the guard that failed, and each group gets its cause (the line that fixed the size, from
the compile trace's singleton replacements; else the source line the guard names; else the
frame), the static finding of a recompile rule that predicted it (one covering the line, failing
that one in the same function) or ``missed``, a concrete remedy (rewrite the specialising line,
pad to bucket sizes, ``mark_dynamic`` / ``maybe_mark_dynamic`` / ``mark_unbacked`` on the
argument and dimension the guard names, the ``dynamic=True`` trade-off) and, when the frame
recompiled on every new value, when it will fall back to eager (the recompile limit).
Standard library only.
"""

from __future__ import annotations

import re

from .common import STATE_PHASE, _display, _norm

_INPUT_GUARD = re.compile(r"tensor '([^']+)' (size|stride) mismatch at index (\d+)(?:\. expected (\d+), actual (\d+))?")
_SIZE_EXPR = re.compile(r"([A-Za-z_][\w.]*(?:\[[^\]]*\])*)\.size\(\)\[(\d+)\]")
_INT_GUARD = re.compile(r"^([A-Za-z_]\w*) == (-?\d+)$")
_VALUE_GUARD = re.compile(r"size|(==|!=|<=|>=|<|>)\s*-?\d+\b")
# Dynamo's own hint on a guard that failed on an nn.Module's int attribute (`self.calls == 3`).
_MODULE_INT_HINT = "integer attributes of the nn.Module"
_MODULE_INT_GUARD = re.compile(r"^(?:self|L\['self'\])\.([A-Za-z_]\w*)\s*[!=]=")
_PREFIX = re.compile(r"^\d+/\d+:\s*")
_NUMBERS = re.compile(r"\. expected -?\d+, actual -?\d+")


def _code(source: str) -> str:
    """A source line without its comment."""
    import io
    import tokenize

    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                return source[: tok.start[1]].strip()
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return source.strip()


def _frame_name(function: str | None) -> str:
    """`forward`, or for a resume function `forward() after line 91`, without the call parens."""
    match = re.fullmatch(r"torch_dynamo_resume_in_(\w+?)_at_(\d+)", function or "")
    if match:
        return f"{match.group(1)}() after line {match.group(2)}"
    return f"{function or '?'}()"


def _clean_name(name: str) -> str:
    """`L['x']` -> `x`, `L['self']._buffers['mask']` -> `self._buffers['mask']`."""
    return re.sub(r"\b[LG]\['([^']+)'\]", r"\1", name)


def guard_summary(reason: str) -> str:
    """The failing guard without its frame prefix, source comment and numbers; long string
    constants (a tensor's repr on the stack) cut short."""
    text = _PREFIX.sub("", reason or "").split(" # ", 1)[0].strip()
    text = re.sub(r"(==\s*|\(|,\s*)'([^']{24})[^']*(?:'|$)", r"\1'\2...'", text)
    return _clean_name(_NUMBERS.sub("", text))


def _group_key(guard: str) -> str:
    """Guards that differ only in the value compared (`n == 1`, `n == 2`, `sum == 0.0`) are one problem."""
    return re.sub(r"\b\d{6,}\b", "ID", re.sub(r"(==|!=|<=|>=|<|>)\s*-?\d+(\.\d+)?(e-?\d+)?\b", r"\1 N", guard))


def _input_dim(reason: str) -> tuple[str, int, int | None] | None:
    """(argument, dim, the value it had) when the guard tests an input's size."""
    match = _INPUT_GUARD.search(reason or "")
    if match:
        before = int(match.group(4)) if match.group(4) else None
        return _clean_name(match.group(1)), int(match.group(3)), before
    match = _SIZE_EXPR.search(guard_summary(reason))
    if match:
        return _clean_name(match.group(1)), int(match.group(2)), None
    return None


def _use_of(source: str) -> str:
    """What a specialising line does with the size."""
    source = re.sub(r"\.shape\[[^\]]*\]|\.size\([^)]*\)(?:\[[^\]]*\])?", ".shape", source)
    if re.search(r"\.index\(", source):
        return "index"
    if re.search(r"\.chunk\(|\bchunk\(", source):
        return "chunk"
    if re.search(r"\b(list|tuple|set|sorted)\(\s*range\(|\]\s*\*\s*[\w.(]|[\w.)]\s*\*\s*\[", source):
        return "list"
    if re.search(r"\brange\(", source):
        return "range"
    if re.search(r"\bin\b", source) and not re.search(r"\bfor\b", source):
        return "member"
    if re.search(r"\b(str|repr)\(|\bf['\"]|\.format\(", source):
        return "string"
    if re.search(r"\.get\(|\w\[[^\]:]*\]", source):
        return "lookup"
    if re.search(r"==|!=|\bin\b|<|>", source):
        return "compare"
    return "value"


_USE_TEXT = {
    "index": "needs the size as a Python int (list.index() of a size)",
    "chunk": "splits a tensor into as many chunks as the size (one graph per count)",
    "list": "builds a Python list as long as the size",
    "member": "tests whether the size is in a Python container",
    "length": "iterates or measures a Python list whose length changes between calls (the frame guards on len())",
    "range": "uses the size as a Python loop's trip count",
    "string": "turns the size into a string",
    "lookup": "looks a Python dict or list up by the size",
    "compare": "compares the size with a constant in Python",
    "value": "needs the size as a Python int",
}


def _rewrite(use: str, source: str) -> str:
    if use == "index":
        match = re.search(r"([\w.]+)\.index\(", source)
        table = match.group(1) if match else "the list"
        return (f"replace {table}.index(size) with tensor code (keep {table} as a tensor: "
                f"`(torch.tensor({table}) == size).nonzero()`) or compute the position once outside the "
                "compiled region and pass it in")
    if use == "lookup":
        match = re.search(r"([\w.]+)(?:\.get\(|\[)", source)
        table = match.group(1) if match else "the table"
        return (f"index a tensor instead of the Python {table} (its values as a tensor, indexed by "
                "a tensor), or compute the table once (in __init__ or before the call) and pass the value in")
    if use == "chunk":
        return ("split into chunks of a fixed size instead (t.split(k) with k constant, or a view "
                "t.view(n, -1, ...)), so that the number of pieces stays symbolic")
    if use == "list":
        return ("build a tensor instead of the Python list (torch.arange(n) for list(range(n)), "
                "torch.full((n,), v) for [v] * n): its length stays symbolic")
    if use == "length":
        return ("keep the values in a tensor and vectorise the loop over them (a mask, torch.where, "
                "index_select, scatter_add/index_add), or pad the list to a fixed length")
    if use == "member":
        return ("keep the table as a tensor and test `(table == size).any()` in tensor code, or decide "
                "once outside the compiled function and pass the result in")
    if use == "range":
        return ("vectorise the loop: one tensor op over the whole dimension (cumsum, a batched matmul, "
                "torch.where over a mask) instead of a Python loop that runs once per element")
    if use == "string":
        return ("build the string outside the compiled region (or under "
                "`if not torch.compiler.is_compiling():`)")
    if use == "compare":
        return ("compute both outcomes and select with torch.where, or move the test out of the compiled "
                "function: each outcome of a test on the exact size costs a graph")
    return "keep the size symbolic on this line (no int(), no Python container keyed by it)"


def _local_class(rec: dict, shape) -> dict | None:
    """A guard on the id of a class defined inside the function (`class Output(NamedTuple)` in
    forward): every call makes a new class object.  The cause is its `class` line."""
    match = re.search(r"___check_obj_id\(.*type=<class '[\w.]*\.(\w+)\.<locals>\.(\w+)'>", rec.get("reason") or "")
    if not match or not rec.get("path"):
        return None
    function, name = match.groups()
    file = shape(_norm(rec["path"]))
    pattern = re.compile(rf"^\s*class\s+{re.escape(name)}\b")
    for number in range(1, len(file.lines) + 1):
        inside = file.function_at(number)
        if pattern.match(file.line_text(number)) and inside is not None and inside[2] == function:
            return {"kind": "local class", "path": rec["path"], "line": number, "use": None,
                    "source": _code(file.line_text(number)),
                    "text": f"`{_code(file.line_text(number))}` is defined inside {function}(): every call makes a "
                            "new class object, and the frame after the graph break guards on its id"}
    return None


def _cause(rec: dict, shape=None) -> dict:
    """Where a persistent recompile comes from, and why."""
    specs = rec.get("specialised_by") or []
    if specs:
        spec = specs[0]
        source = _code(spec.get("source") or "")
        use = _use_of(source)
        also = [s for s in specs[1:] if (s["path"], s["line"]) != (spec["path"], spec["line"])]
        text = (f"`{source}` {_USE_TEXT[use]}: Dynamo fixed it to {spec.get('value')} there, "
                "so every new value fails the guard")
        if also:
            text += "; so does " + ", ".join(f"`{_code(s.get('source') or '')}` (line {s['line']})" for s in also[:3])
        return {"kind": "specialised", "path": spec["path"], "line": spec["line"], "use": use,
                "source": source, "text": text, "lines": [(s["path"], s["line"]) for s in specs]}
    reason = rec.get("reason") or ""
    local = _local_class(rec, shape) if shape is not None else None
    if local is not None:
        return local
    attribute = _MODULE_INT_GUARD.match(guard_summary(reason))
    if attribute and _MODULE_INT_HINT in reason:
        name = f"self.{attribute.group(1)}"
        source = _code(rec.get("guard_source") or "")
        where = f"`{source}` reads {name}" if source else f"line {rec.get('guard_line')} reads {name}"
        return {"kind": "module int", "path": rec.get("guard_path") or rec.get("path"),
                "line": rec.get("guard_line") or rec.get("line"), "use": None, "source": source or None,
                "name": name,
                "text": f"{where}, an int attribute of the module that changes between calls: Dynamo "
                        "specialises a module's int attributes, so every new value compiles again"}
    if rec.get("guard_path") and rec.get("guard_line"):
        source = _code(rec.get("guard_source") or "")
        use = "length" if guard_summary(reason).startswith("len(") else _use_of(source)
        text = (f"the guard `{guard_summary(reason)}` comes from `{source}`" if source
                else f"the guard `{guard_summary(reason)}` comes from line {rec['guard_line']}")
        if use != "length" and rec.get("phase") == STATE_PHASE:
            # recompiles.py names a guard that failed on identical inputs after the value: a float
            # accumulator, a timestamp, a step the call itself moves -- not a size.
            return {"kind": "state", "path": rec["guard_path"], "line": rec["guard_line"], "use": use,
                    "source": source,
                    "text": text + ": it tests a Python value the calls themselves change (identical inputs "
                                   "included), and Dynamo guards on its exact value, so every call compiles again"}
        if source and _VALUE_GUARD.search(guard_summary(reason)):
            text += f", which {_USE_TEXT[use]}"
        elif rec.get("on_same_inputs"):
            text += ": it tests a value that changes on every call, identical inputs included"
        return {"kind": "guard", "path": rec["guard_path"], "line": rec["guard_line"], "use": use,
                "source": source, "text": text}
    function = _frame_name(rec.get("function"))
    if rec.get("dynamic") is False:
        return {"kind": "static", "path": rec.get("path"), "line": rec.get("line"), "use": None, "source": None,
                "text": f"{function} is compiled with dynamic=False: every size is static, so each new "
                        "one compiles again"}
    return {"kind": "frame", "path": rec.get("path"), "line": rec.get("line"), "use": None, "source": None,
            "text": f"a guard on the inputs of {function} failed and no line was seen to fix the value: "
                    "automatic dynamic shapes did not absorb it"}


def remedy(rec: dict, cause: dict) -> str:
    """A concrete fix for one persistent recompile (sentences joined by '; ')."""
    reason = rec.get("reason") or ""
    guard = guard_summary(reason)
    dim = _input_dim(reason)
    out = []
    if dim is not None and (dim[2] in (0, 1) or re.search(r"\b2 <= |[!=]= 1\b", guard)):
        out.append(f"torch._dynamo.mark_unbacked({dim[0]}, {dim[1]}) before the call: sizes 0 and 1 are "
                   "specialised by default, an unbacked size covers them in the same graph (a branch on "
                   "size == 1 then needs torch._check)")
    if cause["kind"] == "module int":
        name = cause.get("name") or "the attribute"
        attr = name.split(".", 1)[-1]
        out.append(f"keep {name} in a tensor buffer (self.register_buffer('{attr}', torch.zeros((), "
                   f"dtype=torch.long)) in __init__, {name}.add_(1) in forward), or set "
                   "torch._dynamo.config.allow_unspec_int_on_nn_module = True before compiling (a symbolic "
                   "int then: a counter stops recompiling each call; `tcl fix --verify` inserts it where the "
                   "file compiles the module)")
    elif cause["kind"] == "state":
        out.append("keep the value in a tensor updated in place (a buffer, a 0-d tensor), or read and update it "
                   "outside the compiled function (before the call, or in a helper under "
                   "torch.compiler.disable); a graph break on this line is what hands it to the next frame")
    elif _INT_GUARD.match(guard) and cause["kind"] != "specialised":
        name = _INT_GUARD.match(guard).group(1)
        out.append(f"{name} is a Python int baked into the graph: keep it a tensor (a 0-d tensor, or "
                   f"sizes read from one) across the break or the call, or keep it fixed between calls")
    elif cause["kind"] == "local class":
        out.append("define the class at module level (one class object for every call)")
    elif cause["kind"] == "guard" and not _VALUE_GUARD.search(guard):
        out.append("the guard tests a Python object or value that changes between calls (a string, a class "
                   "defined inside the function, a counter): build it outside the compiled function, or "
                   "keep it in a tensor; a graph break on this line is what hands it to the next frame")
    elif cause["kind"] in ("specialised", "guard"):
        out.append(_rewrite(cause["use"], cause.get("source") or ""))
        if cause["use"] != "compare":
            out.append("or pad the inputs to a few bucket sizes (round the size up to a multiple of 8 or 64) "
                       "so that only that many graphs compile")
        if dim is not None and cause["kind"] == "specialised":
            out.append(f"then torch._dynamo.mark_dynamic({dim[0]}, {dim[1]}) before the first call saves the "
                       "automatic-dynamic recompile too (while the line specialises, mark_dynamic raises a "
                       "ConstraintViolationError that names it)")
    elif cause["kind"] == "static":
        arg = f"{dim[0]}, {dim[1]}" if dim else "x, dim"
        out.append(f"drop dynamic=False (the default makes a size dynamic after its first change: one "
                   f"recompile, not one per size), or keep it and call torch._dynamo.mark_dynamic({arg}) "
                   "before the call (honoured under dynamic=False); dynamic=True makes every size "
                   "symbolic from the first call: one graph, but no size-specialised kernels")
    elif dim is not None:
        out.append(f"torch._dynamo.mark_dynamic({dim[0]}, {dim[1]}) before the first call "
                   f"(torch._dynamo.maybe_mark_dynamic({dim[0]}, {dim[1]}) does not raise if code specialises "
                   "the size); or torch.compile(..., dynamic=True): symbolic sizes from the first call, at "
                   "the cost of size-specialised kernels and of 0/1 sizes still compiling apart")
    else:
        out.append("the guard tests Python state that changes between calls: keep it in a tensor (a "
                   "buffer) or out of the compiled function")
    return "; ".join(out)


def _covers(finding, lines) -> bool:
    return any(_norm(p) == _norm(finding.path) and finding.line <= n <= max(finding.end_line, finding.line)
               for p, n in lines)


def _predicted(cause: dict, findings: list, recompile_category, shape, guard: str = "") -> list[dict]:
    """The static findings that saw it coming: a recompile rule's on the cause line (``line``);
    else any finding there (``break``: a graph break on that line is what hands the value to the
    next frame's guards); else, for a guard on a size or a number (what the recompile rules are
    about, not an object id), a recompile rule's in the same function (``function``)."""
    if not cause.get("path") or not cause.get("line"):
        return []
    lines = cause.get("lines") or [(cause["path"], cause["line"])]
    recompile = [f for f in findings if recompile_category(f.code)]
    exact = sorted((f for f in recompile if _covers(f, lines)), key=lambda f: (f.line != cause["line"], f.line))
    if exact:
        return [{"code": f.code, "line": f.line, "how": "line"} for f in exact]
    breaks = [f for f in findings if _covers(f, lines)]
    if breaks:
        return [{"code": f.code, "line": f.line, "how": "break"} for f in breaks]
    path = _norm(cause["path"])
    file = shape(path)
    function = file.function_at(file.def_line(cause["line"]))
    if function is None or not (_VALUE_GUARD.search(guard) or cause["kind"] == "static"):
        return []
    return [{"code": f.code, "line": f.line, "how": "function"} for f in recompile
            if _norm(f.path) == path and file.function_at(file.def_line(f.line)) == function]


def explain(recompiles: list[dict], findings, shape, recompile_category) -> list[dict]:
    """Persistent recompiles grouped by (cause line, guard, varied quantity), with their cause,
    predicting findings, ``missed`` (no finding predicted it and the user did not ask for static
    shapes with dynamic=False: then it is ``requested``), remedy and recompile-limit note."""
    groups: dict[tuple, dict] = {}
    for rec in recompiles:
        if not rec.get("persistent"):
            continue
        cause = _cause(rec, shape)
        guard = guard_summary(rec.get("reason") or "")
        key = (_norm(cause["path"]) if cause.get("path") else "?", cause.get("line"), _group_key(guard),
               rec.get("phase"))
        group = groups.get(key)
        if group is None:
            predicted = _predicted(cause, findings, recompile_category, shape, guard)
            requested = not predicted and rec.get("dynamic") is False
            group = groups[key] = {
                "path": _display(cause["path"]) if cause.get("path") else None, "line": cause.get("line"),
                "function": rec.get("function"), "frame_name": _frame_name(rec.get("function")),
                "frame": {"path": _display(rec["path"]) if rec.get("path") else None, "line": rec.get("line")},
                "guard": guard, "reason": rec.get("reason"), "varied": rec.get("varied"), "phase": rec.get("phase"),
                "cause": {k: cause[k] for k in ("kind", "text", "source")},
                "predicted_by": predicted, "missed": not predicted and not requested, "requested": requested,
                "remedy": remedy(rec, cause), "every_new_value": False, "every_call": False,
                "recompile_limit": rec.get("recompile_limit"), "limit_note": None,
                "triggers": [], "examples": [], "count": 0,
            }
        group["count"] += 1
        if rec.get("trigger") not in group["triggers"]:
            group["triggers"].append(rec.get("trigger"))
        if rec.get("example") not in group["examples"]:
            group["examples"].append(rec.get("example"))
        if rec.get("every_new_value"):
            limit = rec.get("recompile_limit")
            limit = limit if limit is not None else 8
            every = rec.get("on_same_inputs")
            group["every_new_value"] = True
            group["every_call"] = group["every_call"] or bool(every)
            what = "call, identical inputs included," if group["every_call"] else f"new {rec.get('varied')}"
            group["limit_note"] = (f"this frame recompiles on every {what} and falls back to eager after "
                                   f"{limit} (torch._dynamo.config.recompile_limit)")
    return sorted(groups.values(), key=lambda g: (g["path"] or "", g["line"] or 0, g["guard"]))
