"""Parameter kinds: what a traced function's parameters hold before its body is walked.

For an entry (a function torch.compile traces directly) they are tensors unless the signature or
the body says otherwise (`entry_param_kinds`, with tcl/evidence.py's reading of the body); for a
helper they are what its traced callers pass, joined over every call site (`helper_param_kinds`),
together with the facts call sites carry besides kinds: values live across a graph break
(`crossed_params`), tuple displays (`tuple_params`), sizes of the inputs (`sized_params`,
tcl/sizes.py), tensors of sizes the caller's module fixes (`fixed_params`) and literals every site agrees on, passed or by default (`constant_params`; for an entry, with the user's calls of what
they compile, `entry_constants`). The walker (tcl/walker.py) records the call sites; the engine joins them here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, NamedTuple

import libcst as cst

from . import syntax_walk
from .dataflow import Kind, annotation_kind, constant_kind, is_tensor, join
from .evidence import EVIDENCE_KINDS, all_params, parameter_evidence, torch_only_evidence
from .evidence import TENSOR as TENSOR_EVIDENCE
from .kinds import SELF
from .module_index import FunctionInfo, named_calls
from .names import string_value

if TYPE_CHECKING:
    from .walker import CallSite



def entry_param_kinds(function: FunctionInfo) -> dict[str, Kind]:
    """Parameters of a function torch.compile traces directly: tensors unless they say otherwise,
    by their signature or by how the body uses them (tcl/evidence.py)."""
    kinds: dict[str, Kind] = {}
    params = function.node.params
    positional = list(params.posonly_params) + list(params.params)
    for i, param in enumerate(positional + list(params.kwonly_params)):
        name = param.name.value
        if i == 0 and function.owner is not None and not function.is_staticmethod and name in (SELF, "cls"):
            continue
        kinds[name] = _param_kind(param, default_kind=Kind.TENSOR)
    assumed = {name for name, kind in kinds.items() if is_tensor(kind)}
    # Judged a flag by its name alone (`p`, `step`, `dim`: no default, no annotation): tensor
    # evidence in the body wins over the name (`p.add_(...)` in an optimizer's update helper).
    named_only = {param.name.value for param in positional + list(params.kwonly_params)
                  if kinds.get(param.name.value) == Kind.META and param.default is None and param.annotation is None}
    if assumed or named_only:
        for name, what in body_evidence(function).items():
            if name in assumed and what in EVIDENCE_KINDS:
                kinds[name] = EVIDENCE_KINDS[what]
            elif name in named_only and what == TENSOR_EVIDENCE:
                kinds[name] = Kind.TENSOR
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            kinds[star.name.value] = Kind.UNKNOWN
    return kinds


# Parameter names that by near-universal convention carry flags, counts and options, not tensors
# (`output_attentions=None`, `use_cache`, `return_dict`, `num_heads`, `layer_idx`, ...).
# Verbs: a flag whatever follows (`output_hidden_states` is a bool, not hidden states).
STRONG_FLAG_PREFIXES = (
    "output_", "return_", "use_", "do_", "enable_", "disable_", "apply_", "skip_", "should_",
    "with_", "interpolate_", "keep_", "need_", "add_", "allow_", "force_", "run_",
)
# Weaker: `is_causal` is a flag, `is_index_masked` is a mask (see TENSOR_WORDS).
FLAG_PREFIXES = ("is_", "has_", "num_", "n_", "max_", "min_")
FLAG_SUFFIXES = ("_idx", "_len", "_length", "_size", "_dim", "_mode", "_type", "_flag", "_only", "_kwargs", "_name")
FLAG_NAMES = frozenset({
    "training", "train", "dim", "deterministic", "inplace", "mode", "verbose", "debug", "eps",
    "causal", "is_causal", "dropout", "p", "kwargs", "config", "step", "epoch",
})
# ... unless the name says it holds data: `is_index_global_attn`, `num_items_mask`.
TENSOR_WORDS = ("mask", "index", "indices", "ids", "tensor", "states", "weights", "logits", "labels", "embeds")
# Cache objects (transformers' Cache, tuples of past keys/values): not tensor data themselves.
OBJECT_NAMES = frozenset({"past_key_values", "past_key_value", "layer_past", "cache", "kv_cache", "past"})
OBJECT_PREFIXES = ("past_",)


_EVIDENCE: dict[int, tuple[cst.CSTNode, dict[str, str]]] = {}


def body_evidence(function: FunctionInfo) -> dict[str, str]:
    """tcl/evidence.py's reading of the function's parameters, once per function node."""
    node = function.node
    kept = _EVIDENCE.get(id(node))
    if kept is None or kept[0] is not node:
        if len(_EVIDENCE) > 20_000:
            _EVIDENCE.clear()
        names = {p.name.value for p in all_params(node.params)}
        kept = _EVIDENCE[id(node)] = (node, parameter_evidence(node.body, names, function.index))
    return kept[1]


_LOCAL_EVIDENCE: dict[int, tuple[cst.CSTNode, frozenset[str]]] = {}


def tensor_evidenced_names(function: FunctionInfo) -> frozenset[str]:
    """The names (parameters and plain local assignments) that the function's body uses as
    tensors (tcl/evidence.py: `x.norm(dim=1)`, `x @ w`), once per function node. The walker
    gives a name bound to an untyped call of tensor arguments (`x = view_func(x)`) the kind
    tensor when the body says so."""
    node = function.node
    kept = _LOCAL_EVIDENCE.get(id(node))
    if kept is None or kept[0] is not node:
        if len(_LOCAL_EVIDENCE) > 20_000:
            _LOCAL_EVIDENCE.clear()
        names = {p.name.value for p in all_params(node.params)} | _assigned_names(node.body)
        evidence = parameter_evidence(node.body, names, function.index)
        kept = _LOCAL_EVIDENCE[id(node)] = (node, frozenset(n for n, what in evidence.items() if what == "tensor"))
    return kept[1]


def _assigned_names(body: cst.CSTNode) -> set[str]:
    names: set[str] = set()

    class Assigned(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

        def visit_Assign(self, node: cst.Assign) -> None:
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    names.add(target.target.value)

    syntax_walk.run(Assigned(), body)
    return names


def _param_kind(param: cst.Param, default_kind: Kind) -> Kind:
    name = param.name.value
    if param.default is not None and constant_kind(param.default) and not (
        isinstance(param.default, cst.Name) and param.default.value == "None"
    ):
        return Kind.META  # `flag=False`, `dim=-1`: a Python constant whatever the annotation says
    if default_kind == Kind.TENSOR and name.startswith(STRONG_FLAG_PREFIXES):
        return Kind.META
    if name in OBJECT_NAMES or name.startswith(OBJECT_PREFIXES):
        return Kind.UNKNOWN  # `past_buckets_states`: a cache object, whatever else the name says
    if default_kind == Kind.TENSOR and not any(word in name for word in TENSOR_WORDS):
        if name in FLAG_NAMES or name.startswith(FLAG_PREFIXES) or name.endswith(FLAG_SUFFIXES):
            return Kind.META  # before the annotation: `output_attentions: Tensor | None` exists
    annotated = annotation_kind(param.annotation)
    if annotated is not None and annotated != Kind.UNKNOWN:
        return annotated
    if param.default is not None:
        if isinstance(param.default, cst.Name) and param.default.value == "None":
            return default_kind
        return Kind.UNKNOWN
    return default_kind if annotated is None else Kind.UNKNOWN


def positional_params(function: FunctionInfo) -> list[cst.Param]:
    """The parameters call sites fill by position: a method's `self`/`cls` left out, and the
    `ctx` of an autograd.Function's forward/backward (`F.apply(x, k)` fills `x, k`)."""
    params = function.node.params
    positional = list(params.posonly_params) + list(params.params)
    if function.owner is not None and not function.is_staticmethod and positional and positional[0].name.value in (SELF, "cls"):
        positional = positional[1:]
    elif positional and is_autograd_method(function):
        positional = positional[1:]
    return positional


def is_autograd_method(function: FunctionInfo) -> bool:
    """The staticmethod forward/backward of a torch.autograd.Function, whose first parameter
    is the ctx object Dynamo passes itself."""
    owner = function.owner
    return (owner is not None and owner.is_autograd_function and function.is_staticmethod
            and function.name in ("forward", "backward"))


def _positional_names(function: FunctionInfo) -> list[str]:
    return [param.name.value for param in positional_params(function)]


def _named(positional: list[str], key):
    return positional[key] if isinstance(key, int) and key < len(positional) else key


def _at_every_site(function: FunctionInfo, marked: list[Iterable]) -> frozenset[str]:
    """Parameter names every call site marks (each site: its positions / keywords)."""
    positional = _positional_names(function)
    names = None
    for keys in marked:
        here = {_named(positional, key) for key in keys}
        names = here if names is None else names & here
    return frozenset(n for n in names or () if isinstance(n, str))


def crossed_params(function: FunctionInfo, sites: list[CallSite]) -> frozenset:
    """Parameters that every call site fills with a value live at a graph break of the caller."""
    return _at_every_site(function, [site.crossed for site in sites])


def tuple_params(function: FunctionInfo, sites: list[CallSite]) -> dict[str, tuple[Kind, ...]]:
    """Parameters every call site fills with a tuple display (`(self.pad, extra)`): the kinds of
    its elements, joined over the sites, so `left, right = paddings` types each name."""
    positional = _positional_names(function)
    found: dict[str, tuple[Kind, ...]] | None = None
    for site in sites:
        here = {_named(positional, key): kinds for key, kinds in site.tuples.items()}
        if found is None:
            found = {k: v for k, v in here.items() if isinstance(k, str)}
        else:
            found = {
                name: tuple(join(a, b) for a, b in zip(kinds, here[name]))
                for name, kinds in found.items()
                if name in here and len(here[name]) == len(kinds)
            }
    return found or {}


def sized_params(function: FunctionInfo, sites: list[CallSite]) -> dict[str, bool | None]:
    """Parameters every call site fills with a size of its inputs (tcl/sizes.py): whether it
    varies, True only where it does at every site."""
    positional = _positional_names(function)
    found: dict | None = None
    for site in sites:
        here = {_named(positional, key): varies for key, varies in site.sizes.items()}
        here = {k: v for k, v in here.items() if isinstance(k, str)}
        found = here if found is None else {
            name: (True if varies is True and here[name] is True else None)
            for name, varies in found.items() if name in here
        }
    return found or {}


def fixed_params(function: FunctionInfo, sites: list[CallSite]) -> frozenset[str]:
    """Tensor parameters every call site fills with a tensor whose sizes its module fixes
    (`self.scale_weights`, `torch.tensor([0.5, 0.5])`): their sizes do not change between calls."""
    return _at_every_site(function, [site.fixed for site in sites])


def helper_param_kinds(function: FunctionInfo, sites: list[CallSite], filled: set[str] | None = None) -> dict[str, Kind]:
    """Parameters of a helper: what its callers in traced code pass (joined over call sites).
    Where no caller says (an element of a dict, an untyped call's result) and the signature is
    silent, a parameter the body uses as only a tensor can be used is tensor data; those names
    are added to `filled`, so a finding can say its evidence is the body, not the callers."""
    params = function.node.params
    positional = positional_params(function)
    kinds: dict[str, Kind] = {}
    body_tensors: set[str] | None = None  # read once, when a parameter needs it
    for i, param in enumerate(positional + list(params.kwonly_params)):
        name = param.name.value
        seen: Kind | None = None
        by_position = i < len(positional) and positional[i] is param
        default: Kind | None = None  # what a site that leaves the parameter out passes, read once
        for args, keywords, *_ in sites:
            if name in keywords:
                site_kind = keywords[name]
            elif by_position and i < len(args):
                site_kind = args[i]
            else:
                if default is None:
                    default = _param_kind(param, default_kind=Kind.UNKNOWN) if param.default is not None else Kind.UNKNOWN
                site_kind = default
            seen = site_kind if seen is None else join(seen, site_kind)
        if seen is None or seen == Kind.UNKNOWN:
            # No evidence from the callers: what the signature promises (annotations are often
            # wrong in practice, so they only fill gaps), then how the body uses it.
            seen = _param_kind(param, default_kind=Kind.UNKNOWN)
        if seen == Kind.UNKNOWN:
            if body_tensors is None:
                body_tensors = torch_only_evidence(function)
            if name in body_tensors:
                # `losses = loss_info["losses"]` passed on: the callers do not say, but the helper
                # calls `torch.mean(losses)` or `losses.masked_fill(...)`, which only a tensor takes.
                seen = Kind.TENSOR
                if filled is not None:
                    filled.add(name)
        kinds[name] = seen
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            kinds[star.name.value] = Kind.UNKNOWN
    return kinds


def literal_value(node: cst.BaseExpression):
    """(True, value) for a literal Dynamo sees as a constant: True/False/None, a number, a
    string; None for anything else."""
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return True, {"True": True, "False": False, "None": None}[node.value]
    if isinstance(node, cst.SimpleString):
        try:
            return True, string_value(node)
        except (ValueError, SyntaxError):
            return None
    if isinstance(node, (cst.Integer, cst.Float)):
        try:
            return True, node.evaluated_value
        except (ValueError, SyntaxError):
            return None
    if (isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus)
            and isinstance(node.expression, (cst.Integer, cst.Float))):
        return True, -node.expression.evaluated_value
    return None


def untraced_literals(function: FunctionInfo) -> dict[str, set]:
    """parameter -> every literal any call of the function in its own file passes for it
    (`self._transform(x, inverse=True)` in a method no entry reaches): the traced sites alone
    may all say `inverse=False` while users compile the method that says True (a flow's
    `inverse`, reached from `sample`), so a constant they agree on holds only if no call in the
    file passes another. Calls by name (`helper(...)`) and on `self` (`self.m(...)`)."""
    index = function.index
    if index is None or index.module is None:
        return {}
    table = index.file_facts.get("_params.literal_calls")
    if table is None:
        table = {}
        for statement in index.module.body:  # per statement: an editor's re-check reads one again
            for name, call, _ in named_calls(statement):
                table.setdefault(name, []).append(call)
        index.file_facts["_params.literal_calls"] = table
    positional = positional_params(function)
    names = [p.name.value for p in positional]
    found: dict[str, set] = {}
    for call in table.get(function.name, ()):
        position = 0
        for arg in call.args:
            if arg.star:
                break
            if arg.keyword is not None:
                name = arg.keyword.value
            elif position < len(names):
                name, position = names[position], position + 1
            else:
                continue
            literal = literal_value(arg.value)
            if literal is not None:
                found.setdefault(name, set()).add((type(literal[1]), literal[1]))
    return found


def constant_params(function: FunctionInfo, sites: list[CallSite]) -> dict:
    """Parameters every traced call site gives the same literal, passed or by the default
    (`def helper(x, last_dim_is_batch=False)` that no caller passes a value): Dynamo traces the
    helper with that constant, so tests on it are decided. A site with `*args`/`**kwargs`, or
    one that passes anything but a literal, leaves the parameter unknown."""
    if not sites or any(site.literals is None for site in sites):
        return {}
    found = agreed_literals(function, [(len(site.positional), site.keywords, site.literals) for site in sites])
    if found:
        elsewhere = untraced_literals(function)
        for name in list(found):
            if elsewhere.get(name, set()) - {(type(found[name]), found[name])}:
                del found[name]  # another call in the file passes another value
    return found


def entry_constants(function: FunctionInfo, calls: list[dict], traced: list[CallSite] = ()) -> dict:
    """Parameters every call of a compiled entry gives the same literal, passed or by the
    default: `gen(ids, max_new_tokens=4)` after `gen = torch.compile(lm.generate)` traces
    generate with `custom_generate=None`. `calls`: tcl/entry_calls.py's arguments of each call
    of the compiled object (position or keyword -> the literal, or UNKNOWN); `traced`: the
    call sites of traced code that calls the entry too (`heal_tokens` calling `self.generate`)."""
    if any(site.literals is None for site in traced):
        return {}
    sites = [(len(site.positional), site.keywords, site.literals) for site in traced]
    for call in calls:
        positional = sum(1 for key in call if isinstance(key, int))
        keywords = {key for key in call if isinstance(key, str)}
        sites.append((positional, keywords, {k: v for k, v in call.items() if v is not UNKNOWN}))
    return agreed_literals(function, sites)


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()  # an argument passed, but not as a literal (or not by every call)


class KnownKeywords(NamedTuple):
    """What every call puts in a function's `**kwargs`: (keyword, the literal, or UNKNOWN where
    the calls pass another value or do not all pass it) pairs. A keyword not listed is passed
    by no call: `kwargs.get("cache_implementation")` is None. tcl/guard_facts.py decides tests
    on it; the walker stops using it at the first statement that may change the dict
    (`keywords_escape`)."""

    items: tuple

    def lookup(self, key) -> tuple[bool | None, object]:
        """(whether every call passes `key`: None where only some do or with other values,
        the literal they pass)."""
        for name, value in self.items:
            if name == key:
                return (None, None) if value is UNKNOWN else (True, value)
        return False, None


def agreed_literals(function: FunctionInfo, sites: list[tuple]) -> dict:
    """parameter -> the literal every site gives it, passed or left to a literal default, and
    for a `**kwargs` parameter its KnownKeywords. `sites`: (how many positional arguments, the
    keywords passed, position or keyword -> the literal passed there); a passed argument missing
    from the literals is not a literal."""
    params = function.node.params
    positional = positional_params(function)
    found: dict = {}
    star = params.star_kwarg
    if star is not None and sites:
        named = {p.name.value for p in all_params(params)}
        extras = [{k for k in keywords if k not in named} for _, keywords, _ in sites]
        pairs = []
        for key in sorted(set().union(*extras)):
            values = {(type(literals[key]), literals[key]) if key in literals else None
                      for (_, _, literals), passed in zip(sites, extras) if key in passed}
            every = all(key in passed for passed in extras)
            pairs.append((key, next(iter(values))[1] if every and len(values) == 1 and None not in values else UNKNOWN))
        found[star.name.value] = KnownKeywords(tuple(pairs))
    for i, param in enumerate(positional + list(params.kwonly_params)):
        name = param.name.value
        values = set()
        for site_positional, site_keywords, site_literals in sites:
            if name in site_keywords:
                key = name
            elif i < site_positional and param in positional:
                key = i
            else:
                key = None
            if key is None:
                literal = literal_value(param.default) if param.default is not None else None
            else:
                literal = (True, site_literals[key]) if key in site_literals else None
            if literal is None:
                break
            values.add((type(literal[1]), literal[1]))
        else:
            if len(values) == 1:
                found[name] = next(iter(values))[1]
    return found


# Uses of a `**kwargs` dict that leave its keys as the calls passed them.
_KEYWORD_READS = frozenset({"get", "keys", "items", "values", "copy"})


def keywords_escape(function: FunctionInfo, name: str, known: KnownKeywords, truth=None) -> int:
    """The index of the first statement of `function`'s body from which `name` (its `**kwargs`)
    may no longer hold what the calls passed: one that stores into it, updates it, pops a
    keyword some call passes, rebinds it or hands it to other code (`f(kwargs)`). Reads
    (`.get`, `in`, `**kwargs`) and pops of keywords no call passes keep it. len(body) when
    none does. `truth(test)`: an `if`'s value when decided before tracing; its dead branch is
    not looked at."""
    body = function.node.body
    statements = list(body.body) if isinstance(body, cst.IndentedBlock) else [body]
    passed = {key for key, _ in known.items}

    class Uses(cst.CSTVisitor):
        def __init__(self) -> None:
            self.harmless: set[int] = set()
            self.escapes = False

        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == name):
                return
            method = func.attr.value
            if method == "pop" and node.args:
                key = literal_value(node.args[0].value)
                if key is None or key[1] in passed:
                    return
            elif method not in _KEYWORD_READS:
                return
            self.harmless.add(id(func.value))

        def visit_Comparison(self, node: cst.Comparison) -> None:
            for target in node.comparisons:
                if isinstance(target.operator, (cst.In, cst.NotIn)) and isinstance(target.comparator, cst.Name):
                    self.harmless.add(id(target.comparator))

        def visit_Arg(self, node: cst.Arg) -> None:
            if node.star == "**" and isinstance(node.value, cst.Name):
                self.harmless.add(id(node.value))  # `f(**kwargs)` passes a copy

        def visit_StarredDictElement(self, node: cst.StarredDictElement) -> None:
            if isinstance(node.value, cst.Name):
                self.harmless.add(id(node.value))

        def visit_Attribute(self, node: cst.Attribute) -> None:
            self.harmless.add(id(node.attr))

        def visit_Name(self, node: cst.Name) -> None:
            if node.value == name and id(node) not in self.harmless:
                self.escapes = True

        def visit_If(self, node: cst.If) -> bool:
            decided = truth(node.test) if truth is not None else None
            if decided is None:
                return True
            syntax_walk.run(self, node.test)
            live = node.body if decided else node.orelse
            if live is not None:
                syntax_walk.run(self, live)
            return False

    for i, statement in enumerate(statements):
        uses = Uses()
        syntax_walk.run(uses, statement)
        if uses.escapes:
            return i
    return len(statements)
