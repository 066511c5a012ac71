"""The `tcl` command line.

`tcl check` only reads source: it never imports or runs the code it checks.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

from . import __version__, torch_version
from .config import API_MODES, MODES, Config, ConfigError, check_codes, find_pyproject, load, parse_assumption, validate
from .report import write_github, write_json, write_sarif, write_text
from .rules import ALL_RULES, BY_CODE
from .verify import add_verify_parser, cmd_verify

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
# The name `tcl` on PyPI is another project's, so the hint names pygls itself (what the extra
# adds) and the extra as installed from a checkout; both work as written.
LSP_INSTALL_HINT = 'pip install "pygls>=2.1,<3" (or, in a tcl checkout: pip install -e ".[lsp]")'


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tcl",
        description="tcl, the torch.compile linter: finds graph breaks in source before anything runs.",
    )
    parser.add_argument("--version", action="version", version=f"tcl {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    check = commands.add_parser(
        "check",
        help="report graph-break hazards (reads source only, never imports or runs it)",
        description="Report graph-break hazards in Python files. Reads source only: the checked "
        "code is never imported or executed. Exit status: 0 no findings, 1 findings, 2 errors.",
    )
    check.add_argument("paths", nargs="*", default=["."], help="files or directories (default: .)")
    add_config_options(check)
    check.add_argument(
        "--format", choices=("text", "concise", "flake8", "json", "sarif", "github"), default="text",
        help="text (a finding's line, then what it costs, its fix and where a helper is reached from, "
        "indented; a summary at the end), concise (one short line a finding, a summary), flake8 (one "
        "line a finding with everything, exactly what `flake8 --select TCL` prints), json, sarif "
        "(SARIF 2.1.0, for code scanning) or github (workflow annotations)",
    )
    check.add_argument("-j", "--jobs", type=int, default=None, help="worker processes (default: all cores)")
    check.add_argument("--no-cache", action="store_true", help="analyse every file; neither read nor write .tcl_cache")
    check.add_argument("--cache-dir", help="where to keep the cache (default: .tcl_cache/ beside pyproject.toml, else in cwd)")
    check.add_argument(
        "--file-timeout", type=float, default=None, metavar="SECONDS",
        help="report a file whose reading or analysis takes longer (wall-clock seconds) as an error and go on "
        "(default: 20, or 120 with --follow-imports; 0: no limit)",
    )
    check.add_argument("--statistics", action="store_true", help="count findings per rule")
    check.add_argument(
        "-q", "--quiet", action="count", default=0,
        help="text output: -q names each file with findings once, -qq prints no findings (the exit status tells)",
    )
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings")

    rules = commands.add_parser("rules", help="list every rule")
    rules.add_argument("--format", choices=("text", "json"), default="text")

    explain = commands.add_parser("explain", help="explain one rule, with an example and its rewrite")
    explain.add_argument("code")

    add_verify_parser(commands)  # `tcl verify` imports and runs the code: see tcl/verify/
    from .fixing.command import add_parser as add_fix_parser

    add_fix_parser(commands, add_config_options)  # `tcl fix`: see tcl/fixes/
    from .bench import add_parser as add_bench_parser

    add_bench_parser(commands)  # `tcl bench` imports and runs the code: see tcl/bench.py
    commands.add_parser(
        "lsp", help="run the language server on stdin/stdout (needs pygls: the lsp extra)",
        description="Language server: tcl check's findings as diagnostics, tcl fix's rewrites as "
        "quick fixes. Speaks LSP on stdin/stdout; see docs/integrations.md.",
    )
    return parser


def add_config_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--select", help="comma-separated codes or prefixes to report")
    parser.add_argument("--extend-select", help="codes or prefixes added to the selection")
    parser.add_argument("--ignore", help="comma-separated codes or prefixes to skip")
    parser.add_argument("--exclude", help="comma-separated gitignore-style patterns to skip")
    parser.add_argument("--torch-version", help="torch release to target, X.Y (default: installed torch)")
    parser.add_argument("--mode", choices=MODES, help="what the user compiles with (default: default)")
    parser.add_argument(
        "--assume", action="append", default=[], metavar="KEY=VALUE",
        help="what the code is compiled under: training=false (inference) or training=true, "
        "dtype=bfloat16 (the dtype of floating tensors), device=cpu|cuda|xpu|mps; what Dynamo "
        "decides from them is then decided statically too",
    )
    parser.add_argument(
        "--entry", action="append", default=[], metavar="MODULE:NAME",
        help="also analyse what compiling this traces: pkg.mod:function, pkg.mod:Class (its forward / "
        "__call__), pkg.mod:Class.method or pkg.mod:make.<locals>.step (repeatable)",
    )
    parser.add_argument("--recorded-entries", metavar="PATH",
                        help="entries recorded by pytest --tcl-record (default: .tcl/recorded_entries.json when present)")
    parser.add_argument("--follow-imports", action="store_true",
                        help="follow calls from compiled code into installed packages (read, never imported)")
    parser.add_argument("--no-respect-gitignore", action="store_true",
                        help="also walk into what the git repository's .gitignore / .git/info/exclude ignore")
    parser.add_argument("--dynamo-config", action="append", default=[], metavar="SETTING",
                        help="a torch._dynamo.config setting the program turns on before compiling "
                        "(capture_scalar_outputs, capture_dynamic_output_shape_ops): what it keeps in the "
                        "graph is not reported (repeatable; a file's own `torch._dynamo.config.X = True` counts too)")
    parser.add_argument("--show-hidden", action="store_true",
                        help="also report the breaks an earlier break hides (Dynamo already runs their frame eagerly)")
    parser.add_argument("--api-entries", choices=API_MODES,
                        help="also take a library's public functions that take tensor data as compiled entries: "
                        "auto (default: library files, not scripts or tests), on, off")
    parser.add_argument("--config", help="pyproject.toml to read [tool.tcl] from")
    parser.add_argument("--no-config", action="store_true", help="ignore pyproject.toml")


def resolve_config(args: argparse.Namespace, paths: list[str]) -> Config:
    if args.no_config:
        config = Config()
    else:
        pyproject = Path(args.config) if args.config else find_pyproject(Path(paths[0]) if paths else Path("."))
        if args.config and not pyproject.is_file():
            raise ConfigError(f"{args.config}: no such file")
        config = load(pyproject)
    if args.select:
        config.select = _split(args.select, "--select")
    if args.extend_select:
        config.select = config.select + _split(args.extend_select, "--extend-select")
    if args.ignore:
        config.ignore = config.ignore + _split(args.ignore, "--ignore")
    if args.exclude:
        config.exclude = config.exclude + [p for p in args.exclude.split(",") if p]
    if args.torch_version:
        config.torch_version = args.torch_version
    if args.mode:
        config.mode = args.mode
    if getattr(args, "dynamo_config", None):
        from .dynamo_settings import check_names

        try:
            names = check_names(args.dynamo_config, "--dynamo-config")
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        config.dynamo_config = sorted(set(config.dynamo_config) | set(names))
    for text in getattr(args, "assume", None) or ():
        key, value = parse_assumption(text)
        config.assume = {**config.assume, key: value}
    if getattr(args, "entry", None):
        from .entries import EntryError, parse

        try:
            config.entries = config.entries + [parse(text, "--entry") for text in args.entry]
        except EntryError as exc:
            raise ConfigError(str(exc)) from None
    if getattr(args, "recorded_entries", None):
        config.recorded_entries = args.recorded_entries
    if getattr(args, "follow_imports", False):
        config.follow_imports = True
    if getattr(args, "no_respect_gitignore", False):
        config.respect_gitignore = False
    if getattr(args, "show_hidden", False):
        config.show_hidden = True
    if getattr(args, "api_entries", None):
        config.api_entries = args.api_entries
    validate(config, "command line")
    return config


def _split(text: str, option: str) -> list[str]:
    codes = [part.strip().upper() for part in text.split(",") if part.strip()]
    check_codes(codes, "command line", option)  # `--select ZZZ` is a typo, not an empty selection
    return codes


def file_timeout(given: float | None, config) -> float:
    """`--file-timeout` as given, else the default for how the run reads installed code
    (tcl.runner: 20 s, 120 s with --follow-imports)."""
    from .runner import DEFAULT_FILE_TIMEOUT, FOLLOW_IMPORTS_FILE_TIMEOUT

    if given is not None:
        return given
    return FOLLOW_IMPORTS_FILE_TIMEOUT if config.follow_imports else DEFAULT_FILE_TIMEOUT


def cmd_check(args: argparse.Namespace) -> int:
    from .runner import run

    config = resolve_config(args, args.paths)
    root = str(config.source.parent) if config.source else "."
    cache = None
    if not args.no_cache:
        from .cache import Cache, default_cache_dir

        cache = Cache(args.cache_dir or default_cache_dir(config, args.paths))
    result = run(args.paths, config, jobs=args.jobs, root=root, cache=cache,
                 file_timeout=file_timeout(args.file_timeout, config) or None)
    findings = sorted(result.findings, key=lambda f: f.sort_key())
    errors = result.all_errors
    notes = result.notes
    target = torch_version.format_version(config.target_version())
    if args.format in ("json", "sarif"):
        if args.format == "json":
            write_json(findings, errors, sys.stdout, target, config.mode, config.assume, notes)
        else:
            write_sarif(findings, errors, sys.stdout, target, config.mode, notes=notes)
        for error in errors:
            sys.stderr.write(f"{error}\n")
    elif args.format == "github":
        write_github(findings, errors, sys.stdout, notes)
    else:
        write_text(findings, errors, sys.stdout, sys.stderr, args.statistics, style=args.format,
                   quiet=args.quiet, checked=len(result.reports), notes=notes)
    if errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if findings and not args.exit_zero else EXIT_CLEAN


def cmd_rules(args: argparse.Namespace) -> int:
    if args.format == "json":
        json.dump([rule_summary(rule) for rule in ALL_RULES], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return EXIT_CLEAN
    rows = [("code", "name", "modes; torch versions", "graph-break ids")]
    for rule in ALL_RULES:
        modes = "all modes" if len(rule.modes) > 1 else f"{next(iter(rule.modes))} only"
        versions = f"torch {rule.versions}" if rule.versions else "all versions"
        rows.append((rule.code, rule.name, f"{modes}; {versions}", ", ".join(rule.gb_ids()) or "-"))
    # The GB list, the one column of no fixed width, comes last, so a long one never shifts the rest.
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[3])
    return EXIT_CLEAN


def rule_summary(rule) -> dict:
    return {
        "code": rule.code,
        "name": rule.name,
        "message": rule.message,
        "gb": list(rule.gb_ids()),
        "modes": sorted(rule.modes),
        "torch_versions": rule.versions or "all",
        "fix": rule.fix,
    }


def cmd_fix(args: argparse.Namespace) -> int:
    from .fixing.command import run_fix

    return run_fix(args, resolve_config(args, args.paths))


def cmd_lsp(args: argparse.Namespace) -> int:
    try:
        from .lsp import serve
    except ImportError as exc:
        if (exc.name or "").partition(".")[0] not in ("pygls", "lsprotocol", "cattrs"):
            raise
        sys.stderr.write(f"tcl: `tcl lsp` needs pygls, tcl's lsp extra: {LSP_INSTALL_HINT}\n")
        return EXIT_ERROR
    return serve()


def cmd_bench(args: argparse.Namespace) -> int:
    from .bench import cmd_bench as run_bench

    return run_bench(args)


def cmd_explain(args: argparse.Namespace) -> int:
    rule = BY_CODE.get(args.code.upper())
    if rule is None:
        sys.stderr.write(f"tcl: unknown rule {args.code!r}; `tcl rules` lists them\n")
        return EXIT_ERROR
    print(explain_text(rule))
    return EXIT_CLEAN


def explain_text(rule) -> str:
    modes = "every mode" if len(rule.modes) > 1 else f"{next(iter(rule.modes))} mode only (fullgraph=True traces it)"
    if rule.needs_settings:  # fullgraph=True raises there instead (a data-dependent guard)
        modes = "default mode under the setting below, and with fullgraph=True (which captures scalars itself)"
    parts = [
        f"{rule.code} {rule.name}",
        "",
        textwrap.fill(rule.rationale or rule.message, 88),
        "",
        f"Graph-break ids: {', '.join(rule.gb_ids()) or '-'}",
        f"Breaks in: {modes}; torch versions: {rule.versions or 'all'}",
        *([f"Not reported where the program sets: {', '.join(f'torch._dynamo.config.{s} = True' for s in sorted(rule.removed_by))}"]
          if rule.removed_by else []),
        *([f"Reported only where the program sets: {', '.join(f'torch._dynamo.config.{s} = True' for s in sorted(rule.needs_settings))}"]
          if rule.needs_settings else []),
        f"Fix: {rule.fix}",
        "",
        "Breaks:",
        textwrap.indent(rule.INVALID[0].code.strip("\n"), "    "),
        "",
        "Does not break:",
        textwrap.indent(rule.VALID[0].code.strip("\n"), "    "),
    ]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_ERROR
    handlers = {"check": cmd_check, "rules": cmd_rules, "explain": cmd_explain, "verify": cmd_verify}
    handlers["fix"] = cmd_fix
    handlers["bench"] = cmd_bench
    handlers["lsp"] = cmd_lsp
    try:
        return handlers[args.command](args)
    except ConfigError as exc:
        sys.stderr.write(f"tcl: {exc}\n")
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # the reader went away (`tcl check . | head`): no traceback, and none at exit either
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # as a shell reports a process ended by SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
