"""The one analysis engine behind `tcl check`, flake8, pre-commit, the LSP and `tcl verify`.

Analyzer reads and parses a file (never crashing the process: a bad file is a one-line error),
indexes it, runs its FileAnalysis (tcl/file_analysis.py: what torch.compile traces, walked to a
fixpoint) and turns the candidates into findings: settings the program turns on, frames Dynamo
skips, `# noqa`, positions, and a library's findings moved to the user's line that reaches them."""

from __future__ import annotations

import ast
import dataclasses
import os
import threading
import warnings
from collections import defaultdict
from dataclasses import dataclass, field

import libcst as cst

from .config import Config
from .dataflow import join
from .findings import ERROR, WARNING, FileError, Finding, Note
from .files import SourceError, package_of, read_source
from .file_analysis import SETTLED_LIMIT, FileAnalysis
from .incremental_parse import parse_incrementally
from .dynamo_settings import FULLGRAPH_SETTINGS, settings_in_file
from .library_remedies import remedy
from .guards import boolean_operators, refusal
from .limits import interruption
from .module_index import FunctionInfo, ModuleIndex, build_index, mark_module_classes
from . import entries as entries_module
from .project import Project, ProjectScan, module_name_of
from .noqa import NoqaMap
from .positions import function_ranges, statement_ranges
from .rules import selected_rules
from .installed import hierarchy as installed_hierarchy
from .walker_findings import Candidate

# Text that every file torch.compile can trace must contain; anything else is skipped unparsed.
PREFILTER_WORDS = ("torch", "forward")  # `compile` alone would admit every re.compile() file


@dataclass
class FileReport:
    path: str
    findings: list[Finding] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    skipped: bool = False  # pre-filtered: no torch code
    dependencies: list[str] = field(default_factory=list)  # other files its findings depend on
    # Real path of another project file whose compiled entries this file compiles -> whether
    # this analysis traced them (that file was not checked in this run) or left them to it.
    other_entries: dict[str, bool] = field(default_factory=dict)
    # [real path, qualname] of the functions this file's compiled entries reach (not its public
    # API ones): another file's analysis of them as public API defers to that (RunResult.findings).
    compiled: list[list[str]] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)  # not findings: they do not fail the run


@dataclass
class NodeReport:
    """check_source's report plus what `tcl fix` needs: the parsed module, the analysis, and
    each finding in this file paired with the Candidate (libcst node) it was computed from."""

    report: FileReport
    module: cst.Module | None = None
    analysis: FileAnalysis | None = None
    pairs: list[tuple[Finding, Candidate]] = field(default_factory=list)
    foreign: list[tuple[Finding, Candidate]] = field(default_factory=list)  # in other files


def might_trace(source: str) -> bool:
    return any(word in source for word in PREFILTER_WORDS)


class Analyzer:
    def __init__(self, config: Config | None = None, project: ProjectScan | None = None) -> None:
        self.config = config or Config()
        self.scan = project or ProjectScan()
        self.known_modules = self.scan.known_modules  # nn.Module subclasses across the tree
        self.installed = None
        self.version = self.config.target_version()
        if self.config.follow_imports:
            from .installed import InstalledPackages
            from .rules.side_effects import skipped_modules

            self.installed = InstalledPackages(skipped=skipped_modules(self.version))
        self.project = Project(self.scan, self._load_foreign, self.installed)
        self.rules = selected_rules(self.config, self.version)
        self.hooks: dict[str, list] = defaultdict(list)
        self.plans: dict = {}  # node type -> walk plan, shared by every function walked
        self._wrappers: dict[int, FunctionInfo] = {}  # decorator wrapper node id -> its info
        self.settled: dict = {}  # (helper node id, argument kinds) -> (node, FunctionResult)
        self._ranges: dict[int, tuple] = {}  # another file's function node id -> (node, positions)
        self._noqas: dict[int, tuple] = {}  # another file's index id -> (index, NoqaMap)
        # `tcl fix`: functions of a file that other files' compiled code reaches, as entries of
        # that file's own analysis (real path -> qualname -> (parameter kinds, reached from)).
        self.reached_entries: dict[str, dict[str, tuple[dict, tuple[str, ...]]]] = {}
        self.memo = None  # an incremental.EditMemo: the language server keeps work across edits
        # Entries named by the user or a recording (tcl/entries.py); a recording that cannot
        # be read is reported once by the runner (entries.problems), not by every worker.
        try:
            self.entry_specs = entries_module.configured(self.config)
        except entries_module.EntryError:
            self.entry_specs = list(self.config.entries)
        self._entries_by_file: dict[str, list] = {}
        self.installed_errors: list[FileError] = []  # installed files that do not parse, once each
        self._installed_reported: set[str] = set()
        # Installed files a declared entry lives in: analysed from that entry only, read-only.
        self.entry_only_files: set[str] = set()
        # Real paths of the files this run reports (tcl.runner); None: every file of the
        # project is checked (the language server, callers of the API). A compile call that
        # traces a forward in a project file outside this set traces it from here.
        self.checked: frozenset[str] | None = None
        self._installed_hierarchy = None  # tcl.installed.hierarchy(), on first use
        for rule in self.rules:
            instance = rule()
            for node_type, method in rule.hooks().items():
                self.hooks[node_type].append((instance, method))

    # -- entry points ----------------------------------------------------------------------
    def check_source(self, source: str, path: str, package: str = "", nodes: NodeReport | None = None) -> FileReport:
        report = FileReport(path)
        if (not might_trace(source) and not self.reached_entries.get(os.path.realpath(path))
                and not self.entries_for(path)):
            report.skipped = True
            return report
        # A file traced code called into was parsed then: its own check takes that parse (not
        # with the language server's edit memo, which parses statement by statement).
        loaded = self.project.loaded(path) if self.memo is None else None
        if loaded is not None and loaded.source == source:
            module, problem, tree = loaded.module, None, loaded.python_tree
        else:
            module, problem, tree = parse_source(path, source, self.memo.statements if self.memo else None)
        if module is None:
            report.errors.append(problem)
            return report
        try:
            index = self._index(module, package, source, path, tree)
            if self.memo is not None:
                self.memo.adopt(index, path)
            analysis = FileAnalysis(index, self)
            candidates = analysis.run()
            if nodes is not None:  # `tcl fix` also wants the module, the analysis, the nodes
                nodes.module, nodes.analysis = module, analysis
            report.findings = self._to_findings(candidates, index, nodes.pairs if nodes is not None else None,
                                                analysis)
            report.dependencies = sorted({i.path for i in analysis.foreign_indexes()})
            report.compiled = analysis.compiled_functions()
            report.other_entries = dict(analysis.other_entries)
            report.notes = self._unfollowed_notes(analysis, index)
            if self.installed_errors:
                report.errors.extend(self.installed_errors)
                self.installed_errors = []
        except RecursionError:
            report.findings = []
            report.errors.append(FileError(path, 0, "internal error: expression nesting too deep to analyse"))
        except BaseException as exc:  # a tcl bug: one line that names the rule; the run goes on
            if not _is_bug(exc) or isinstance(exc, MemoryError):  # a limit, for the caller to report
                raise
            stop = interruption(exc)
            if stop is not None:  # a timeout that the code it interrupted turned into another error
                raise stop from None
            report.findings = []
            report.errors.append(_internal_error(path, module, exc))
        return report

    def _index(self, module: cst.Module, package: str, source: str, path: str, tree=None) -> ModuleIndex:
        index = build_index(module, package, source, self.known_modules,
                            self.memo.compile_calls if self.memo is not None else None,
                            self.scan.known_optimizers)
        index.path, index.source, index.module, index.python_tree = path, source, module, tree
        # `class Model(somelib.Base)`: a module when the installed Base is one (its class
        # headers are read whether or not calls into somelib are followed)
        packages = self.installed if self.installed is not None else self._hierarchy()
        extra = frozenset(base for cls in index.classes.values() for base in cls.bases
                          if base and base not in index.known_modules and not base.startswith("torch.")
                          and packages.is_module_class(base))
        if extra:
            mark_module_classes(index, extra)
        return index

    def _unfollowed_notes(self, analysis: FileAnalysis, index: ModuleIndex) -> list[Note]:
        """One note per compile call whose target is installed code, which tcl reads only with
        --follow-imports: without it, "No findings" would say nothing about what is compiled."""
        if not analysis.unfollowed_compiles:
            return []
        ranges = statement_ranges(index.module, {id(top) for _, top, _ in analysis.unfollowed_compiles})
        notes = []
        for call, _, origin in analysis.unfollowed_compiles:
            where = ranges.get(call)
            if where is None:
                continue
            package = origin.split(".")[0]
            notes.append(Note(index.path, where.start.line, where.start.column + 1,
                              f"this compiles code of the installed package {package} ({origin}), which "
                              "tcl reads only with --follow-imports: its graph breaks are not checked"))
        return sorted(set(notes), key=lambda n: (n.line, n.col))

    def _hierarchy(self):
        """Installed packages, for their class hierarchies only (tcl.installed.hierarchy)."""
        if self._installed_hierarchy is None:
            self._installed_hierarchy = installed_hierarchy()
        return self._installed_hierarchy

    def check_source_with_nodes(self, source: str, path: str, package: str = "") -> NodeReport:
        """`check_source` for `tcl fix`: the same findings (those of this file), each with its node."""
        result = NodeReport(FileReport(path))
        result.report = self.check_source(source, path, package, nodes=result)
        result.foreign = [p for p in result.pairs if p[0].path != path]
        result.pairs = sorted((p for p in result.pairs if p[0].path == path), key=lambda p: p[0].sort_key())
        return result

    def note_reached(self, report: "NodeReport") -> None:
        """Remember which functions of other files `report`'s compiled code reaches, and with
        what arguments, so that fixing those files sees the same findings `tcl check` reports."""
        if report.analysis is None:
            return
        for finding, candidate in report.foreign:
            function = candidate.function
            kinds = report.analysis.param_kinds.get(id(function))
            if kinds is None or function.index is None or "<locals>" in function.name:
                continue
            entries = self.reached_entries.setdefault(os.path.realpath(function.index.path), {})
            known_kinds, known_from = entries.get(function.qualname, ({}, ()))
            merged = {name: join(known_kinds[name], kind) if name in known_kinds else kind
                      for name, kind in kinds.items()}
            entries[function.qualname] = (merged, tuple(sorted(set(known_from) | set(finding.reached_from))))

    def entries_for(self, path: str, name: str = "") -> list:
        """The declared and recorded entries whose module is the file at `path`."""
        if not self.entry_specs:
            return []
        real = os.path.realpath(path)
        if real not in self._entries_by_file:
            name = name or module_name_of(path)
            named = self.project.paths.get
            self._entries_by_file[real] = [
                spec for spec in self.entry_specs
                if spec.module == name or (spec.file and os.path.realpath(spec.file) == real)
                or (named(spec.module) and os.path.realpath(named(spec.module)) == real)
            ]
            if self.installed is not None:
                for spec in self.entry_specs:
                    found = None if named(spec.module) else self.installed.find(spec.module)
                    if found and os.path.realpath(found) == real:
                        if spec not in self._entries_by_file[real]:
                            self._entries_by_file[real].append(spec)
                        self.entry_only_files.add(real)
        return self._entries_by_file[real]

    def wrapper_info(self, decorator: FunctionInfo, node: cst.FunctionDef) -> FunctionInfo:
        """One FunctionInfo per wrapper node, shared by every file decorated with it."""
        info = self._wrappers.get(id(node))
        if info is None or info.node is not node:
            info = FunctionInfo(f"{decorator.name}.<locals>.{node.name.value}", node, decorator.top,
                                None, (), decorator.index)
            self._wrappers[id(node)] = info
        return info

    def load_index(self, path: str) -> ModuleIndex | None:
        return self._load_foreign(path, module_name_of(path))

    def _load_foreign(self, path: str, name: str) -> ModuleIndex | None:
        """Another checked file, parsed when traced code calls into it."""
        try:
            source = read_source(path)
        except SourceError:
            return None  # reported when that file itself is checked
        module, problem, tree = parse_source(path, source)  # the same crash guards as the file's own check
        if module is None:
            if self.installed is not None and name not in self.project.paths and path not in self._installed_reported:
                # A broken installed package: said once, and calls into it are not followed.
                self._installed_reported.add(path)
                self.installed_errors.append(FileError(problem.path, problem.line,
                                                       f"{problem.message} (installed package: calls into it are not followed)"))
            return None
        index = self._index(module, package_of(path), source, path, tree)
        index.name = name
        # Found through --follow-imports, not among the checked files: read-only library code.
        index.installed = self.installed is not None and name not in self.project.paths
        return index

    def _to_findings(self, candidates, current: ModuleIndex, pairs: list | None = None,
                     analysis: FileAnalysis | None = None) -> list[Finding]:
        if not candidates:
            return []
        settings = frozenset(self.config.dynamo_config) | settings_in_file(current)
        if self.config.mode == "fullgraph":
            settings |= FULLGRAPH_SETTINGS
        by_module: dict[int, list] = defaultdict(list)
        default_mode = self.config.mode != "fullgraph"

        def standing(rules) -> bool:  # a frame-skipping break that no setting removes
            return any(rule is None or rule.holds_under(settings) for rule in rules)

        hidden: dict[int, set[int]] = defaultdict(set)  # masking break's node -> masked nodes
        hidden_behind: dict[int, Candidate | None] = {}  # --show-hidden: candidate -> what hides it
        for candidate, reached_from in candidates:
            if not candidate.holds_under(settings):  # a setting the program turns on removes it
                continue
            if candidate.eager_frame and default_mode and standing(candidate.eager_frame):
                continue  # a loop's break makes Dynamo skip the frame: it never recompiles
            if candidate.guarded_at is not None:
                # An earlier use fixed this size already: the recompile cites that line.
                if not self.config.show_hidden:
                    continue
                hidden_behind[id(candidate)] = ("guard", candidate.guarded_at)
            elif candidate.masked_by and default_mode and standing(candidate.masked_by):
                # An earlier break makes Dynamo run this frame eagerly: this one is never
                # reached while it stands. The earlier finding says how many wait behind it.
                if candidate.masked_at is not None:
                    hidden[id(candidate.masked_at.node)].add(id(candidate.node))
                if not self.config.show_hidden:
                    continue
                hidden_behind[id(candidate)] = candidate.masked_at
            by_module[id(candidate.function.index)].append((candidate, reached_from))
        findings = {}
        for group in by_module.values():
            index = group[0][0].function.index
            functions = list({id(c.function): c.function for c, _ in group}.values())
            if index is current and self.memo is not None:
                ranges = self.memo.function_ranges(index, functions)
            elif index is current:
                ranges = function_ranges(index.module, index.source, functions, index.python_tree)
            else:
                ranges = self._foreign_ranges(index, functions)
            noqa = self._noqa(index) if index is not current else NoqaMap(index.source)
            for candidate, reached_from in group:
                finding = self._finding(candidate, reached_from, ranges, noqa, index.path,
                                        len(hidden.get(id(candidate.node), ())))
                if finding is not None and id(candidate) in hidden_behind:
                    finding = _as_hidden(finding, hidden_behind[id(candidate)], ranges)
                if finding is not None and index.installed and analysis is not None and self.installed is not None:
                    finding = self._at_user_line(finding, candidate, analysis, current)
                if finding is not None:
                    kept = findings.setdefault((finding.path, finding.code, finding.line, finding.col,
                                                finding.library), finding)
                    if pairs is not None and kept is finding:
                        pairs.append((finding, candidate))
        return sorted(findings.values(), key=Finding.sort_key)

    def _at_user_line(self, finding: Finding, candidate, analysis: FileAnalysis, current: ModuleIndex):
        """A finding in an installed package, moved to the user's call that reaches it (the
        library's own location kept in `library`); None when the user silenced that line."""
        library = f"{self.installed.short(finding.path)}:{finding.line}:{finding.col}"
        # The rule's rewrite is for code the user owns; this is a library's.
        applies = bool(candidate.removed_settings) or not candidate.rule.removed_by
        finding = dataclasses.replace(finding, fix=remedy(finding.code, self.installed.version_of(finding.path),
                                                          candidate.rule.category, applies))
        anchor, path = analysis.call_path(candidate.function)
        trail = self._trail(path)
        if anchor is None:  # an installed function named as an entry itself: no user line
            return dataclasses.replace(finding, library=library, library_path=finding.path,
                                       library_line=finding.line, library_end_line=finding.end_line,
                                       function=finding.function or candidate.function.qualname, trail=trail)
        index, node, function = anchor
        if isinstance(function, FunctionInfo):
            ranges = (function_ranges(index.module, index.source, [function], index.python_tree)
                      if index is current else self._foreign_ranges(index, [function]))
        else:  # a module-level statement holding the torch.compile call (one codegen per statement)
            kept = self._ranges.get(id(function))
            if kept is None or kept[0] is not function:
                kept = self._ranges[id(function)] = (function, statement_ranges(index.module, {id(function)}))
            ranges = kept[1]
        where = ranges.get(node)
        if where is None:
            return finding
        noqa = self._noqa(index) if index is not current else NoqaMap(index.source)
        if noqa.suppressed(finding.code, where.start.line, where.end.line):
            return None
        return dataclasses.replace(
            finding, path=index.path, line=where.start.line, col=where.start.column + 1,
            end_line=where.end.line, end_col=where.end.column + 1, library=library, library_path=finding.path,
            library_line=finding.line, library_end_line=finding.end_line,
            function=finding.function or candidate.function.qualname, trail=trail,
        )

    def _trail(self, path) -> tuple:
        """Finding.trail of the calls `FileAnalysis.call_path` found inside installed code."""
        trail = []
        for caller, node in path:
            index = caller.index
            if index is None:
                continue
            where = self._foreign_ranges(index, [caller]).get(node)
            if where is None:
                continue
            short = self.installed.short(index.path)
            trail.append((f"{short}:{where.start.line}:{where.start.column + 1}", index.path, where.start.line,
                          caller.qualname))
        return tuple(trail)

    def _foreign_ranges(self, index: ModuleIndex, functions) -> dict:
        """Positions in another file's helpers: the same few (transformers' loss functions)
        hold findings for many checked files, and generating positions is a codegen pass."""
        ranges = {}
        for function in functions:
            kept = self._ranges.get(id(function.node))
            if kept is None or kept[0] is not function.node:
                if len(self._ranges) > SETTLED_LIMIT:
                    self._ranges.clear()
                kept = (function.node, function_ranges(index.module, index.source, [function], index.python_tree))
                self._ranges[id(function.node)] = kept
            ranges.update(kept[1])
        return ranges

    def _noqa(self, index: ModuleIndex) -> NoqaMap:
        kept = self._noqas.get(id(index))
        if kept is None or kept[0] is not index:
            if len(self._noqas) > SETTLED_LIMIT:
                self._noqas.clear()
            kept = self._noqas[id(index)] = (index, NoqaMap(index.source))
        return kept[1]

    @staticmethod
    def _finding(candidate, reached_from, ranges, noqa, path, hidden: int = 0) -> Finding | None:
        where = ranges.get(candidate.node)
        if where is None:
            return None
        start, end = where.start, where.end
        lpar = getattr(candidate.node, "lpar", None)
        opening = ranges.get(lpar[0]) if lpar else None
        if opening is not None:
            # `if (\n    a\n    and t.any()\n):`: Dynamo may name the line of the `(` (where the
            # `if` is), so the finding covers it (and its line and column are the `(`'s)
            start = opening.start
        if noqa.suppressed(candidate.rule.code, start.line, end.line):
            return None
        message, note = _message(candidate, hidden)
        evidence = _evidence_text(candidate.evidence, ranges)
        return Finding(
            code=candidate.rule.code,
            path=path,
            line=start.line,
            col=start.column + 1,
            end_line=end.line,
            end_col=end.column + 1,
            message=message,
            note=note,
            gb=candidate.gb,
            # A crash is an error wherever it is: the compiled function raises.
            severity=ERROR if candidate.amplifier or candidate.rule.category == "crash" else WARNING,
            fix=candidate.rule.fix,
            reached_from=reached_from,
            function=candidate.function.qualname if reached_from else "",
            evidence=evidence,
        )


def _as_hidden(finding: Finding, behind, ranges) -> Finding:
    """A finding --show-hidden keeps: a warning that says which break hides it today, or which
    earlier use already fixed the size it uses (`("guard", candidate)`)."""
    if isinstance(behind, tuple):
        where = ranges.get(behind[1].node)
        earlier = f"line {where.start.line}" if where is not None else "an earlier use"
        note = f"{finding.note} (no recompile of its own: {earlier} already fixes this size to one value)"
        return dataclasses.replace(finding, note=note.strip(), severity=WARNING)
    where = ranges.get(behind.node) if behind is not None else None
    earlier = f"the break at line {where.start.line}" if where is not None else "an earlier break"
    frame = behind.function.qualname if behind is not None else "this frame"
    note = f"{finding.note} (hidden today: {earlier} makes Dynamo run {frame}() eagerly before it)"
    return dataclasses.replace(finding, note=note.strip(), severity=WARNING)


EVIDENCE_CODE_CHARS = 40  # longer origins are cut: the clause must keep the first line short


def _evidence_text(evidence, ranges) -> str:
    """`scale: x.sum() at line 12`, `mask: parameter, assumed a tensor`: which value a finding
    judged tensor data, and why, so a wrong inference shows at a glance."""
    if evidence is None:
        return ""
    name, origin, basis = evidence
    if basis in ("assigned", "element") and origin is not None:
        code = " ".join(cst.Module([]).code_for_node(origin).split())
        if len(code) > EVIDENCE_CODE_CHARS:
            code = code[: EVIDENCE_CODE_CHARS - 3] + "..."
        where = ranges.get(origin)
        what = f"an element of {code}" if basis == "element" else code
        return f"{name}: {what}" + (f" at line {where.start.line}" if where is not None else "")
    if basis == "attribute":
        return f"{name}: a tensor attribute of the module"
    if basis == "local":
        return f"{name}: tensor data"
    if basis == "call":
        return f"{name} returns tensor data"
    return f"{name}: {basis}"


def _message(candidate: Candidate, hidden: int = 0) -> tuple[str, str]:
    """(what was found, what it costs): the rule's message up to its `consequence_after`, and the
    rest of it plus, for a break in a loop/with/try, the frame that falls back to eager (and how
    many later breaks of that frame it hides). The two joined are the whole one-line message;
    where a helper is reached from is kept apart too (Finding.function, .reached_from)."""
    message, note = candidate.message, ""
    marker = candidate.rule.consequence_after
    if marker and marker in message:
        at = message.index(marker)
        message, note = message[:at], message[at:]
    later = (f"; {hidden} later break{'s' if hidden > 1 else ''} in it show{'' if hidden > 1 else 's'}"
             " once this one is fixed") if hidden else ""
    if candidate.amplifier:
        note += (
            f" (inside a {candidate.amplifier}: Dynamo drops the whole frame"
            f" {candidate.function.qualname}() to eager{later})"
        )
    elif not candidate.resumes and not candidate.nested:
        note += f" (Dynamo cannot resume after it: the rest of {candidate.function.qualname}() runs eagerly{later})"
    return message, note


# libcst's native parser recurses once per nesting level; what it cannot take is refused first by
# tcl.guards.refusal. The one shape CPython keeps flat but libcst nests that tcl still parses is
# a boolean chain: `a and a and ...` with 10,000 terms overflows the 8 MB main-thread stack, which
# is a segfault, not an exception. A file with many `and`/`or` is parsed in a thread with this
# much (virtual, lazily committed) stack, measured to hold 100,000 levels; a fresh stack costs
# ~2 ms a parse, so other files are parsed where they are.
PARSE_STACK_BYTES = 512 * 2**20
DEEP_STACK_BOOLEAN_OPERATORS = 2_000  # more `and`/`or` than this in a file: the big stack
_STACK_LOCK = threading.Lock()


def parse_source(path: str, source: str, statements=None):
    """libcst.parse_module that never crashes the process.

    Returns (module, None, python_tree) or (None, one-line error, None). `python_tree` is the
    `ast` tree the crash guard builds anyway; positions reuse it instead of parsing again.
    `statements`: an incremental_parse.StatementMemo, to re-parse only changed statements.
    """
    refused, tree = refusal(path, source)
    if refused is not None:
        return None, refused, None
    try:
        if boolean_operators(source) > DEEP_STACK_BOOLEAN_OPERATORS:
            return _parse_with_deep_stack(source), None, tree
        if statements is not None:
            return parse_incrementally(source, tree, statements, path), None, tree
        return cst.parse_module(source), None, tree
    except cst.ParserSyntaxError as exc:
        return None, _syntax_error(path, source, exc), None
    except (RecursionError, MemoryError) as exc:
        return None, FileError(path, 0, f"cannot parse: {type(exc).__name__} (input too deeply nested or too large)"), None
    except BaseException as exc:  # a libcst bug (pyo3 panics are BaseExceptions)
        if not _is_bug(exc):
            raise
        return None, FileError(path, 0, f"cannot parse: internal error in libcst: {_describe(exc)}"), None


def _parse_with_deep_stack(source: str) -> cst.Module:
    outcome: dict[str, object] = {}

    def parse() -> None:
        try:
            outcome["module"] = cst.parse_module(source)
        except BaseException as exc:
            outcome["error"] = exc

    thread = None
    with _STACK_LOCK:
        try:
            previous = threading.stack_size(PARSE_STACK_BYTES)
        except (ValueError, RuntimeError):  # platform without settable stacks
            previous = None
        if previous is not None:
            try:
                thread = threading.Thread(target=parse, name="tcl-parse", daemon=True)
                thread.start()
            except RuntimeError:  # no memory for the stack: parse here, as before
                thread = None
            finally:
                threading.stack_size(previous)
    if thread is None:
        return cst.parse_module(source)
    thread.join()
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["module"]  # type: ignore[return-value]


def _is_bug(exc: BaseException) -> bool:
    """An exception that is a defect to report, not a request to stop (Ctrl-C, a timeout)."""
    return isinstance(exc, Exception) or type(exc).__name__ == "PanicException"


def _describe(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if len(text) > 300:
        text = text[:297] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _internal_error(path: str, module: cst.Module, exc: BaseException) -> FileError:
    """`path:line: internal error in TCLxxx (rule-name): ExcType: message`; the walker tags an
    exception raised in a rule hook with the rule and the node it was visiting."""
    rule = getattr(exc, "tcl_rule", None)
    node = getattr(exc, "tcl_node", None)
    line = 0
    if node is not None:
        try:
            from .positions import node_ranges

            where = node_ranges(module, {id(stmt) for stmt in module.body}).get(node)
            line = where.start.line if where is not None else 0  # 0: in another file's helper
        except Exception:
            line = 0
    name = f" in {rule.code} ({rule.name})" if rule is not None else ""
    return FileError(path, line, f"internal error{name}: {_describe(exc)}")


def _syntax_error(path: str, source: str, exc: cst.ParserSyntaxError) -> FileError:
    """Python's own message when it has one ("'(' was never closed"), else libcst's."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(source, path, "exec", ast.PyCF_ONLY_AST)
    except SyntaxError as python_error:
        return FileError(path, python_error.lineno or exc.raw_line, f"cannot parse: {python_error.msg}")
    except (ValueError, RecursionError, MemoryError):
        pass
    return FileError(path, exc.raw_line, f"cannot parse: {_first_line(exc.message)}")


def _first_line(text: str) -> str:
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return lines[0] if lines else "syntax error"

