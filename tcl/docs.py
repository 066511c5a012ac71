"""`python -m tcl.docs`: write docs/rules.md, the rule reference, and one page per rule
(docs/rules/TCLxxx.md) from the rule classes.

Every fact in docs/rules.md comes from tcl/rules/ (code, name, message, rationale, GB ids, modes,
torch versions, fix, the first INVALID and VALID example), so the reference cannot drift from
the code: tests/test_docs.py fails when the committed file is not what this module renders.
`python -m tcl.docs --check` does the same check and exits 1 when the file is stale.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .report import gb_url
from .rules import ALL_RULES

ROOT = Path(__file__).resolve().parent.parent
RULES_MD = ROOT / "docs" / "rules.md"
BREAK_MARK = "# BREAK"


def recompiles(rule) -> bool:
    return getattr(rule, "category", "graph-break") == "recompile"


HAZARDS = {"graph-break": "graph break", "recompile": "recompile", "crash": "crash"}


def hazard(rule) -> str:
    return HAZARDS[getattr(rule, "category", "graph-break")]


def anchor(rule) -> str:
    """GitHub's heading anchor for `## TCL101 print-in-compiled-region`."""
    return f"{rule.code.lower()}-{rule.name.lower()}"


def modes_text(rule) -> str:
    if len(rule.modes) > 1:
        return "every mode (`mode = \"default\"` and `\"fullgraph\"`)"
    mode = next(iter(rule.modes))
    return f"`{mode}` mode only (not reported with `--mode {'fullgraph' if mode == 'default' else 'default'}`)"


def settings_text(rule) -> str:
    """What the Dynamo settings a program turns on do to the rule (tcl/dynamo_settings.py)."""
    text = ""
    if rule.removed_by:
        from .dynamo_settings import IGNORED_LOGGING, statement

        ignored = [s for s in sorted(rule.removed_by) if s.startswith(IGNORED_LOGGING + ":")]
        ways = [f"`{statement(s)}`" for s in sorted(rule.removed_by) if s not in ignored]
        if ignored:
            ways.append(f"`torch._dynamo.config.{IGNORED_LOGGING}.add(...)` with the logging function "
                        "the finding calls (`logging.Logger.debug`, `logging.info`, ...)")
        text += ("; not reported where the program runs " + " or ".join(ways)
            + {"recompile": " (measured: the compilations of its examples stop growing with the calls then;"
                            " examples the setting does not reach are still reported)",
               "crash": " (measured: its examples run then)"}.get(
                   rule.category, " (measured: its examples do not break then" + (
                       "; examples the setting does not reach still break and are still reported)"
                       if any(e.removed_by == () for e in rule.INVALID) else ")")))
    if rule.needs_settings:
        text += ("; in default mode only where the program sets " + " and ".join(
            f"`torch._dynamo.config.{s} = True`" for s in sorted(rule.needs_settings))
            + " (`--mode fullgraph` captures them itself)")
    return text


def versions_text(spec: str | None) -> str:
    return f"torch {spec}" if spec else "every torch release"


def gb_links(rule) -> str:
    return ", ".join(f"[{gb_id}]({gb_url(gb_id)})" for gb_id in rule.gb_ids()) or "none"


def source_link(rule, depth: int = 1) -> str:
    module = rule.__module__.replace(".", "/") + ".py"
    return f"[`{module}`]({'../' * depth}{module})"


def _example(title: str, example) -> list[str]:
    note = f" (torch {example.versions})" if example.versions else ""
    if example.assume:
        note += " (with `assume = " + str(example.assume).replace("'", '"') + "`)"
    if example.settings:
        note += " (with " + ", ".join(f"`torch._dynamo.config.{s} = True`" for s in example.settings) + ")"
    return [f"{title}{note}:", "", "```python", example.code.strip("\n"), "```", ""]


def render_rule(rule, depth: int = 1, heading: str = "##") -> list[str]:
    lines = [
        f"{heading} {rule.code} {rule.name}",
        "",
        f"**{rule.message}.**",
        "",
    ]
    if rule.rationale:
        lines += [rule.rationale, ""]
    lines += [
        f"- **Graph-break ids:** {gb_links(rule)}",
        f"- **Applies to:** {modes_text(rule)}; {versions_text(rule.versions)}{settings_text(rule)}",
        f"- **Fix:** {rule.fix}",
        f"- **Suppress:** `# noqa: {rule.code}` on any line of the flagged expression",
        f"- **Defined in:** {source_link(rule, depth)}",
        "",
    ]
    if recompiles(rule):
        bad, good = f"Recompiles (because of each line marked `{BREAK_MARK}`)", "Does not recompile"
    elif rule.category == "crash":
        bad, good = (f"Raises (the compiled function, from its second call, at the line marked `{BREAK_MARK}`)",
                     "Runs")
    else:
        bad, good = f"Breaks (torch.compile breaks the graph at each line marked `{BREAK_MARK}`)", "Does not break"
    if rule.INVALID:
        lines += _example(bad, rule.INVALID[0])
    if rule.VALID:
        lines += _example(good, rule.VALID[0])
    more = len(rule.INVALID) + len(rule.VALID) - (1 if rule.INVALID else 0) - (1 if rule.VALID else 0)
    if more:
        lines += [f"{more} more example{'s' if more > 1 else ''} in {source_link(rule, depth)}.", ""]
    return lines


def render_rule_page(rule) -> str:
    """docs/rules/TCLxxx.md: the rule's section as a page of its own (editors and SARIF viewers
    link one rule, not the whole reference)."""
    lines = [
        f"<!-- Generated by `python -m tcl.docs` from {rule.__module__}; do not edit. -->",
        "",
        *render_rule(rule, depth=2, heading="#"),
        f"All rules: [the rule reference](../rules.md#{anchor(rule)}).",
    ]
    return "\n".join(lines).rstrip("\n") + "\n"


def rendered_files(reference: Path = RULES_MD) -> dict[Path, str]:
    """Every generated file -> its text: the reference and, next to it, rules/TCLxxx.md."""
    files = {reference: render_rules()}
    for rule in ALL_RULES:
        files[reference.parent / "rules" / f"{rule.code}.md"] = render_rule_page(rule)
    return files


def _count(kind: str) -> int:
    return sum(1 for rule in ALL_RULES if hazard(rule) == kind)


def render_rules() -> str:
    lines = [
        "# Rule reference",
        "",
        "<!-- Generated by `python -m tcl.docs` from the rule classes in tcl/rules/; do not edit.",
        "     tests/test_docs.py fails when this file and the code disagree. -->",
        "",
        f"tcl has {len(ALL_RULES)} rules ({_count('graph break')} for graph breaks, {_count('recompile')} for recompiles, "
        f"{_count('crash')} for code the compiler gets wrong). Each one names",
        "the ids (GBxxxx) that PyTorch reports for the hazard, links them to PyTorch's graph-break site,",
        "and carries the examples below: the test suite compiles every flagged and unflagged example",
        "with the installed torch, so a rule that the compiler disagrees with fails the build.",
        "`tcl explain CODE` prints the rationale, fix and examples in the terminal.",
        "",
        "A finding is a *warning*; it is an *error* when the break sits inside a loop, `with` or `try`",
        "block, where Dynamo gives up on the whole frame and runs it eagerly, and always for a crash",
        "(the compiled function raises where eager Python runs).",
        "",
        "| Code | Name | Hazard | Graph-break ids | Modes | Torch |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for rule in ALL_RULES:
        modes = "all" if len(rule.modes) > 1 else f"{next(iter(rule.modes))} only"
        lines.append(
            f"| [{rule.code}](#{anchor(rule)}) ([page](rules/{rule.code}.md)) | {rule.name} "
            f"| {hazard(rule)} "
            f"| {', '.join(rule.gb_ids()) or '-'} | {modes} "
            f"| {rule.versions or 'all'} |"
        )
    lines.append("")
    for rule in ALL_RULES:
        lines += render_rule(rule)
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tcl.docs", description="Write docs/rules.md and docs/rules/TCLxxx.md from the rule classes.")
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/rules.md is not up to date; write nothing")
    parser.add_argument("--output", type=Path, default=RULES_MD, help=f"where to write (default: {RULES_MD})")
    args = parser.parse_args(argv)
    files = rendered_files(args.output)
    if args.check:
        stale = [path for path, text in files.items()
                 if not path.exists() or path.read_text(encoding="utf-8") != text]
        for path in stale:
            sys.stderr.write(f"{path} is out of date: run `python -m tcl.docs`\n")
        return 1 if stale else 0
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
    print(f"wrote {args.output} and {len(files) - 1} rule pages ({len(ALL_RULES)} rules)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
