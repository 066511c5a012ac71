"""What a rule is: data (code, message, GB ids, fix, examples) plus small visit hooks.

Borrowed from Fixit 2: each rule carries its VALID and INVALID examples inline, one generic
harness (tests/test_rule_examples.py) runs every example through the analyzer *and* through the
installed compiler, and the rule reference in docs/ is generated from the same classes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

Version = tuple[int, int]

DEFAULT_MODE = "default"
FULLGRAPH_MODE = "fullgraph"
ALL_MODES = frozenset({DEFAULT_MODE, FULLGRAPH_MODE})


@dataclass(frozen=True)
class Example:
    """A small module. INVALID examples mark each line that must break with `# BREAK`.

    `entry` names the function or nn.Module class the compiler test calls; `args` is a Python
    expression for its inputs (default: one torch.randn(4, 4) per parameter). `versions` limits
    the example to torch releases, e.g. "<2.14" or ">=2.14".
    """

    code: str
    entry: str = "fn"
    args: str | None = None
    versions: str | None = None
    fullgraph_breaks: bool | None = None  # None: as the rule's modes say
    # False: default mode logs no break (the frame silently runs eagerly); the `# BREAK` line
    # is then where fullgraph=True raises.
    default_breaks: bool = True
    # What the static check assumes, as `[tool.tcl] assume` (the compiler test runs on CPU):
    # {"device": "cpu"} for behaviour only CPU tensors have.
    assume: dict | None = None
    # Recompile rules: an expression giving a list of argument tuples, one per call.
    calls: str | None = None
    # torch._dynamo.config settings the example runs under, statically and on the compiler
    # (tcl/dynamo_settings.py): ("capture_scalar_outputs",).
    settings: tuple[str, ...] = ()
    # The settings that remove this example's hazard where they differ from its rule's
    # `removed_by` (None: the rule's): () for TCL501's module-level dict, which
    # allow_unspec_int_on_nn_module does not reach.
    removed_by: tuple[str, ...] | None = None

    def expected_lines(self) -> list[int]:
        return [i for i, line in enumerate(self.code.splitlines(), 1) if "# BREAK" in line]

    def applies_to(self, version: Version) -> bool:
        return version_matches(self.versions, version)


def version_matches(spec: str | None, version: Version) -> bool:
    if not spec:
        return True
    for clause in spec.split(","):
        clause = clause.strip()
        for op in (">=", "<=", "==", "<", ">"):
            if clause.startswith(op):
                major, minor = (int(p) for p in clause[len(op):].split("."))
                other = (major, minor)
                ok = {
                    ">=": version >= other, "<=": version <= other, "==": version == other,
                    "<": version < other, ">": version > other,
                }[op]
                if not ok:
                    return False
                break
        else:
            raise ValueError(f"bad version clause {clause!r}")
    return True


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    message: ClassVar[str]
    fix: ClassVar[str]
    # GB ids by the first torch release that reports them, newest last: ((2, 0), "GB0059"), ...
    gb: ClassVar[tuple[tuple[Version, str], ...]] = ()
    alt_gb: ClassVar[tuple[str, ...]] = ()  # ids the compiler may also report (dtype-dependent)
    modes: ClassVar[frozenset[str]] = ALL_MODES
    # "graph-break": the compiler breaks at the finding; "recompile": calls recompile.
    category: ClassVar[str] = "graph-break"
    versions: ClassVar[str | None] = None  # torch releases the rule applies to
    rationale: ClassVar[str] = ""
    # Where a long message turns from what was found to what it costs (e.g. ": every call"):
    # text output puts the rest on a line of its own, one-line outputs keep the whole message.
    consequence_after: ClassVar[str] = ""
    # A recompile rule whose hazard survives automatic dynamic shapes: each new value compiles
    # again (its examples' tests: INVALID compiles once per call, VALID at most twice).
    persistent: ClassVar[bool] = False
    # False: the hazard needs the caller to pass a different Python value on each call (an int
    # argument), so it is not reported in code reached only from public functions tcl guesses
    # users compile (tcl/api_entries.py): there an int argument is a setting (`niters=2`,
    # `shifts`), and the finding would rest on two guesses. Sizes follow the data and stay.
    on_guessed_entries: ClassVar[bool] = True
    # A rule about tensor data: its findings name the value judged tensor data and why.
    explains_value: ClassVar[bool] = False
    # Where the compiler reports the break relative to the finding (f-strings: at the use).
    runtime_line_offset: ClassVar[int] = 0
    # False: Dynamo cannot resume after this break (it happens at an attribute load or a formatted
    # value, not at a call it can split): it compiles the graph so far and runs the
    # rest of the frame eagerly, so later breaks and recompile hazards of the frame never reach
    # it (tcl/frame_skips.py). A report can say so for one finding (`ctx.report(resumes=False)`).
    # tests/test_frame_skips.py checks the skip on the compiler for each INVALID example.
    resumes: ClassVar[bool] = True
    # Dynamo settings (tcl/dynamo_settings.py) under which the rule's breaks do not happen: its
    # findings are dropped where the checked program turns one on. The examples' test checks
    # that every INVALID example stops breaking under them.
    removed_by: ClassVar[frozenset[str]] = frozenset()
    # Settings without which the rule's hazard does not exist: it reports only where they are on.
    needs_settings: ClassVar[frozenset[str]] = frozenset()
    # `tcl fix`: fixer(finding, node, ctx) -> tcl.fixes.Fix | None (see tcl/fixes/).
    fixer: ClassVar[object] = None
    VALID: ClassVar[list[Example]] = []
    INVALID: ClassVar[list[Example]] = []

    @classmethod
    def gb_for(cls, version: Version) -> str | None:
        chosen = None
        for first, gb_id in cls.gb:
            if version >= first:
                chosen = gb_id
        return chosen

    @classmethod
    def gb_ids(cls) -> tuple[str, ...]:
        return tuple(dict.fromkeys([gb_id for _, gb_id in cls.gb] + list(cls.alt_gb)))

    @classmethod
    def applies(cls, version: Version, mode: str) -> bool:
        return mode in cls.modes and version_matches(cls.versions, version)

    @classmethod
    def holds_under(cls, settings: frozenset[str], removed_by: frozenset[str] | None = None) -> bool:
        """Whether the rule's hazard exists when the program turns on `settings` (`removed_by`:
        a finding's own, where it narrows the rule's: walker_findings.Candidate.removed_by)."""
        removed = cls.removed_by if removed_by is None else removed_by
        return not (removed & settings) and cls.needs_settings <= settings

    @classmethod
    def hooks(cls) -> dict[str, str]:
        """Node type name -> method name, for every `visit_<Node>` this rule defines."""
        return {
            attr[len("visit_"):]: attr
            for attr in dir(cls)
            if attr.startswith("visit_") and callable(getattr(cls, attr))
        }
