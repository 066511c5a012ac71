"""`tcl fix PATH... [--apply] [--diff] [--unsafe-fixes]`.

Without --apply: print unified diffs (stdout; a clean patch, notes as `#` lines patch ignores)
and write nothing. With --apply: rewrite files atomically, print the findings that remain;
files tcl.safe_files refuses to rewrite (symlinks, hard links, read-only, another user's, out
of the checked tree through a link) are one error line each unless --force-write.
A run fixes what `tcl check` on the same paths reports: the named files, seen with the callers
the rest of their project has (as check sees them), and the other files of the project that
the named files' compiled code reaches (`tcl check model.py` reports the findings in the
helpers.py its forward calls, so `tcl fix model.py` fixes them there; their diff header says
which named file reaches them). Installed packages are never written.
Fixes that are not applied (unsafe without --unsafe-fixes, suggestions) go to stderr with
their own diffs. Exit status as `tcl check`, mirroring ruff: 0 nothing to fix and nothing
left, 1 files changed (or would change) or findings remain, 2 errors.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TextIO

from .bounded import DEFAULT_FILE_MEMORY_MB, DEFAULT_FILE_TIMEOUT

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def add_parser(commands, add_config_options) -> argparse.ArgumentParser:
    fix = commands.add_parser(
        "fix",
        help="rewrite graph-break hazards (diffs by default; --apply writes)",
        description="Rewrite graph-break hazards so the graph stays whole and eager results stay "
        "identical. Prints unified diffs and writes nothing unless --apply is given. "
        "Exit status: 0 nothing to fix, 1 files changed or findings remain, 2 errors.",
    )
    fix.add_argument("paths", nargs="*", default=["."], help="files or directories (default: .)")
    add_config_options(fix)
    fix.add_argument("--apply", action="store_true", help="write the fixes to the files")
    fix.add_argument("--diff", action="store_true", help="print unified diffs (the default without --apply)")
    fix.add_argument("--unsafe-fixes", action="store_true",
                     help="also apply fixes tcl cannot prove keep eager results identical")
    fix.add_argument("--verify", action="store_true",
                     help="try the fixes tcl cannot prove on the compiler with the file's tcl_examples() "
                     "(imports and RUNS the code, needs torch): each is kept only when eager outputs stay "
                     "identical, compiled outputs match, graph breaks go down and nothing recompiles more")
    fix.add_argument("--force-write", action="store_true",
                     help="with --apply, also rewrite files that are refused by default: symlinks "
                     "(the target is rewritten, the link kept), hard-linked files (the other names "
                     "keep the old text), read-only files, other users' files and files reached "
                     "through a directory symlink out of the checked paths")
    fix.add_argument("--file-timeout", type=float, default=DEFAULT_FILE_TIMEOUT, metavar="SECONDS",
                     help="leave a file whose fix takes longer (wall-clock seconds) unchanged, report it "
                     "and go on (default: 20; 0: no limit)")
    fix.add_argument("--file-memory", type=int, default=DEFAULT_FILE_MEMORY_MB, metavar="MIB",
                     help="leave a file whose fix needs more memory unchanged, report it and go on "
                     "(default: 4096; 0: no limit)")
    return fix


def run_fix(args: argparse.Namespace, config, out: TextIO = None, err: TextIO = None) -> int:
    from ..files import SourceError, package_of
    from ..findings import FileError
    from ..report import text_line
    from ..project_root import project_root
    from ..runner import _per_file_ignores, collect_files, project_context
    from .bounded import fix_file, read_within
    from .writer import ChangedOnDisk, Refused, write_atomic

    out = out or sys.stdout
    err = err or sys.stderr
    root = str(config.source.parent) if config.source else "."
    files, errors = collect_files(args.paths, config, root)
    scanned, reaching = project_context(files, config, root)  # the project, as `tcl check` reads it
    analyzer = _analyzer(config, scanned)
    analyzer.checked = frozenset(os.path.realpath(path) for path in files)
    timeout, memory = getattr(args, "file_timeout", None) or None, getattr(args, "file_memory", None) or None
    reached_from = _note_cross_file_reach(analyzer, files, reaching, timeout) if len(scanned) > 1 else {}
    extra = [path for path in scanned[len(files):]
             if os.path.realpath(path) in reached_from and os.path.realpath(path) not in analyzer.checked]
    show_diff = args.diff or not args.apply
    roots = _checked_roots(args.paths)
    if args.apply:
        _sweep_stale_temps(files, roots, err)
    force = getattr(args, "force_write", False)
    changed_files = fixed = unsafe_pending = suggestions = 0
    remaining = []
    verifying = getattr(args, "verify", False)
    session = _session() if verifying else None
    for path in files + extra:
        reached_by = reached_from.get(os.path.realpath(path)) if path in extra else None
        try:
            source = read_within(path, timeout)
        except SourceError as exc:
            errors.append(FileError(path, 0, str(exc)))
            continue
        options = dict(package=package_of(path), ignored=tuple(_per_file_ignores(path, config)),
                       timeout=timeout, memory_mb=memory)
        result = fix_file(source.text, path, analyzer, unsafe=args.unsafe_fixes and not verifying, **options)
        if verifying and not result.errors:
            try:
                result, verdicts = _verified(session, path, source.text, result, analyzer, options)
            except Exception as exc:  # a bug in verification must not cost the proven fixes
                verdicts = [f"{path}: --verify failed ({type(exc).__name__}: {exc}); only proven fixes applied"]
            for line in verdicts:
                err.write(f"{line}\n")
        errors.extend(result.errors)
        for warning in result.warnings:
            err.write(f"{warning}\n")
        remaining.extend(result.remaining)
        if result.changed:
            if show_diff:
                out.write(_header(path, result.applied, reached_by))
                out.write(result.diff)
            if args.apply:
                # A reached file is written only inside its own project (a link out of it is
                # refused as one out of the checked paths is).
                allowed = roots if reached_by is None else [os.path.realpath(project_root(path) or os.path.dirname(path))]
                try:
                    write_atomic(path, source.encode(result.fixed), source.digest, roots=allowed, force=force)
                except Refused as refusal:
                    errors.append(FileError(path, 0, f"not written: {refusal}; --force-write writes it anyway"))
                    continue
                except ChangedOnDisk:
                    errors.append(FileError(path, 0, "changed on disk since read, skipped"))
                    continue
                except (OSError, UnicodeEncodeError) as exc:
                    errors.append(FileError(path, 0, f"cannot write: {exc}"))
                    continue
            changed_files += 1
            # findings gone, not fixes applied: one setting at the compile call removes every
            # print and warnings.warn of a library
            fixed += max(result.before - len(result.remaining), 0)
        for label, description, diff in result.pending:
            if verifying and label == "unsafe":
                continue  # its verdict is above
            if label == "unsafe":
                unsafe_pending += 1
                why = "unsafe, applied with --unsafe-fixes"
            else:
                suggestions += 1
                why = "suggestion, never applied"
            err.write(f"# {path}: not applied ({why}): {description}\n{diff}")
    if session is not None:
        session.close()
    if args.apply:
        for finding in sorted(remaining, key=lambda f: f.sort_key()):
            out.write(text_line(finding) + "\n")
    for error in errors:
        err.write(f"{error}\n")
    verb = "fixed" if args.apply else "would fix"
    summary = f"tcl fix: {verb} {fixed} finding{'s' * (fixed != 1)} in {changed_files} file{'s' * (changed_files != 1)}"
    if args.apply:
        summary += f"; {len(remaining)} remaining"
    extra = []
    if unsafe_pending:
        extra.append(f"{unsafe_pending} more with --unsafe-fixes")
    if suggestions:
        extra.append(f"{suggestions} suggestion{'s' * (suggestions != 1)} shown above")
    if extra:
        summary += f" ({', '.join(extra)})"
    err.write(summary + "\n")
    if errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if changed_files or remaining else EXIT_CLEAN


def _session():
    from .verification import Session

    return Session()


# Unsafe fixes tried one at a time when, together, they fail verification.
MAX_SINGLE_CANDIDATES = 8


def _verified(session, path: str, text: str, proven, analyzer, options):
    """(the fix summary to keep, one verdict line per fix) for `tcl fix --verify`: the proven
    (safe) fixes, plus the unsafe ones the compiler confirms (tcl/fixing/verification.py)."""
    from ..fixes.settings import settings_for_breaks
    from .bounded import fix_file
    from .verification import has_examples

    def verdict_line(key, outcome: str) -> str:
        code, line, col = key[:3]
        if not line:  # a setting the examples' breaks call for: the file's, not one finding's
            return f"{path}: {code} at run time: {outcome}"
        return f"{path}:{line}:{col}: {code} {outcome}"

    def verified(verdict) -> str:
        recompiles = (f", recompiles {verdict.recompiles_before} -> {verdict.recompiles_after}"
                      if verdict.recompiles_before != verdict.recompiles_after else "")
        return (f"fixed (verified on {verdict.examples} example{'s' * (verdict.examples != 1)}: "
                f"breaks {verdict.breaks_before} -> {verdict.breaks_after}{recompiles})")

    lines = [verdict_line(key, "fixed (proven)") for key in proven.applied_keys]
    observed = None
    if has_examples(text):  # the breaks the examples hit as written may call for a setting
        observed = settings_for_breaks(session.observed_breaks(path, text), analyzer.version,
                                       session.observed_break_sites(path, text)) or None
    options = dict(options, observed=observed)
    candidate = fix_file(text, path, analyzer, unsafe=True, **options)
    unsafe = [key[:3] for key in candidate.applied_keys if key[3] == "unsafe"]
    if candidate.errors or not unsafe:
        return proven, lines
    if not has_examples(text):
        lines += [verdict_line(key, "not fixed: unsafe, and the file has no tcl_examples() to verify it on")
                  for key in unsafe]
        return proven, lines
    verdict = session.verify(path, text, candidate.fixed)
    if verdict.ok:
        return candidate, lines + [verdict_line(key, verified(verdict)) for key in unsafe]
    if len(unsafe) == 1:
        return proven, lines + [verdict_line(unsafe[0], f"not fixed: {verdict.why}")]
    kept, accepted = proven, []
    for number, key in enumerate(unsafe):
        if number >= MAX_SINGLE_CANDIDATES:
            lines.append(verdict_line(key, f"not fixed: not tried (more than {MAX_SINGLE_CANDIDATES} "
                                           "unsafe fixes in one file)"))
            continue
        variant = fix_file(text, path, analyzer, unsafe=True, unsafe_keys=frozenset(accepted + [key]), **options)
        if variant.errors or key not in {k[:3] for k in variant.applied_keys}:
            lines.append(verdict_line(key, "not fixed: it does not apply on its own"))
            continue
        single = session.verify(path, text, variant.fixed)
        if single.ok:
            accepted.append(key)
            kept = variant
            lines.append(verdict_line(key, verified(single)))
        else:
            lines.append(verdict_line(key, f"not fixed: {single.why}"))
    return kept, lines


def _checked_roots(paths: list[str]) -> list[str]:
    """The real paths `fix --apply` may write below: each directory argument, and the directory
    of each file argument (a file named explicitly may sit behind a directory link)."""
    import os

    roots = []
    for path in paths:
        directory = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
        roots.append(os.path.realpath(directory))
    return roots


def _sweep_stale_temps(files: list[str], roots: list[str], err: TextIO) -> None:
    """Remove the `.NAME.py.XXXXXXXX.tcl-fix` files an interrupted `fix --apply` left beside the
    files it rewrote (only in directories inside the checked paths; see safe_files)."""
    import os

    from ..safe_files import FIX_TEMP, is_within, sweep_stale_temps

    directories = dict.fromkeys(os.path.dirname(path) or "." for path in files)
    for directory in directories:
        if not any(is_within(os.path.realpath(directory), root) for root in roots):
            continue
        for removed in sweep_stale_temps(directory, FIX_TEMP):
            err.write(f"tcl fix: removed {removed}, a temporary file an interrupted run left behind\n")


def _note_cross_file_reach(analyzer, files: list[str], reaching: list[str], timeout) -> dict[str, list[str]]:
    """A helper in one file that another file's compiled code calls is a finding of that other
    file's analysis; fixing the helper's file needs those callers' view (a first pass, under
    the wall-clock limit), from the named files and from the project files that may call into
    them. Returns, for each other file the named files' compiled code has findings in, the
    named files that reach it (real paths)."""
    from ..files import SourceError, package_of
    from .bounded import note_reach, read_within

    reached_from: dict[str, list[str]] = {}
    if not hasattr(analyzer, "note_reached"):
        return reached_from
    named = len(files)
    for number, path in enumerate(files + reaching):
        try:
            text = read_within(path, timeout).text
        except SourceError:
            continue  # reported by the fixing pass
        foreign = note_reach(text, path, analyzer, package_of(path), timeout)
        if number < named:
            for other in foreign:
                reached_from.setdefault(os.path.realpath(other), []).append(path)
    return reached_from


def _analyzer(config, files):
    from ..engine import Analyzer

    try:
        from ..project import ProjectScan, scan
    except ImportError:  # an engine without the cross-file scan
        return Analyzer(config)
    project = scan(files) if len(files) > 1 else ProjectScan()
    return Analyzer(config, project)


def _header(path: str, applied: list[str], reached_by: list[str] | None = None) -> str:
    reached = f" (reached from {', '.join(reached_by)})" if reached_by else ""
    lines = [f"# tcl fix {path}{reached}: {len(applied)} fix{'es' * (len(applied) != 1)}"]
    lines.extend(f"#   {description}" for description in applied)
    return "\n".join(lines) + "\n"
