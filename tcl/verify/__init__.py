"""`tcl verify`: run examples on the real compiler and check tcl's findings against what breaks.

Unlike `tcl check`, this imports and executes the code it verifies.  The parent (this package,
less `child`) never imports user code, nor torch on CPU: it runs the static analysis, hands the
examples to child processes (`examples`: sources, devices, the `Runner`; `child`: the process
that runs them; `recompiles` and `compile_trace`: the recompile exploration), matches findings to
what the compiler did (`matching`) and reports (`report`).  Examples: with ``--example SPEC``
exactly those functions run; without, every checked file that defines a module-level
``tcl_examples()``; ``--replay RECORDING`` adds the calls `pytest --tcl-record` recorded.  Each
example returns ``(callable_or_module, args, kwargs)``.  Exit status: 0 when no finding is
not-confirmed, nothing is missed (no runtime break, no persistent recompile in a checked file
that no finding predicted), every example ran and every file was analysed (shadowed and
not-reached count as explained); 1 otherwise; 2 for usage errors; 130 when interrupted (the
report of what finished is still written).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

from ..safe_files import private_temp_dir, remove_tree
from .common import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, UsageError, _display, _norm
from .examples import (ExampleRun, Runner, Source, discover_sources, parse_spec, replay_sources,
                       resolve_device)
from .matching import FileShape, analyse
from .report import STATUSES, summary_rows, write_json, write_text

__all__ = [
    "EXIT_OK", "EXIT_PROBLEMS", "EXIT_USAGE", "UsageError", "ExampleRun", "Runner", "Source",
    "FileShape", "STATUSES", "add_verify_parser", "analyse", "cmd_verify", "discover_sources",
    "parse_shard", "parse_spec", "replay_sources", "resolve_device", "summary_rows", "write_json",
    "write_text", "_display", "_norm",
]

BACKENDS = ("inductor", "aot_eager", "eager")
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune")
DEFAULT_TIMEOUT = 300.0


# --------------------------------------------------------------------------- command line


def add_verify_parser(commands) -> argparse.ArgumentParser:
    verify = commands.add_parser(
        "verify",
        help="run examples on the real compiler and confirm findings (IMPORTS AND RUNS the code)",
        description=(
            "Check findings against the installed PyTorch: run the static analysis on PATH, then "
            "compile and run examples in child processes and report, for each finding, whether "
            "the compiler breaks there (confirmed / not-confirmed / shadowed / not-reached), every "
            "runtime break no finding predicted (missed), and the recompiles when each dimension of "
            "the tensor arguments, the int arguments or list lengths change or train()/eval() is "
            "toggled; a persistent recompile (one automatic dynamic shapes did not absorb) comes "
            "with the line that pinned the size, the rule that predicted it or 'missed', and a "
            "remedy. Unlike `tcl check`, which only reads source, "
            "`tcl verify` IMPORTS AND EXECUTES the checked code and the examples. Exit status: "
            "0 all findings confirmed or explained and nothing missed, 1 otherwise, 2 usage errors."
        ),
    )
    verify.add_argument("paths", nargs="+", metavar="PATH", help="files or directories to check")
    verify.add_argument(
        "--example", action="append", default=[], metavar="SPEC",
        help="path/to/file.py:function or package.module:function; the function takes no "
        "arguments and returns (callable_or_module, args_tuple, kwargs_dict) items. Repeatable. "
        "Given: exactly these run. Not given: every checked file that defines tcl_examples().",
    )
    verify.add_argument(
        "--replay", action="append", default=[], metavar="RECORDING",
        help="a file written by `pytest --tcl-record`: each recorded nn.Module call becomes an "
        "example of the checked file defining its class, besides the examples above. Repeatable. "
        "Loading it unpickles code: replay only recordings you made.",
    )
    verify.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto",
                        help="auto: CUDA when available, else CPU (default: auto)")
    verify.add_argument("--backend", choices=BACKENDS, default="inductor", help="default: inductor")
    verify.add_argument("--mode", choices=COMPILE_MODES, default="default",
                        help="torch.compile mode (inductor only; default: default)")
    verify.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help=f"per example; a hung example is killed (default: {DEFAULT_TIMEOUT:g})")
    verify.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                        help="worker processes (default: one per visible GPU on CUDA, 1 on CPU)")
    verify.add_argument("--shard", default=None, metavar="I/N",
                        help="run only examples whose stable index %% N == I-1 (1 <= I <= N)")
    verify.add_argument("--format", choices=("text", "json"), default="text")
    verify.add_argument("--config", help="pyproject.toml to read [tool.tcl] from")
    verify.add_argument("--no-config", action="store_true", help="ignore pyproject.toml")
    return verify


def parse_shard(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not match:
        raise UsageError(f"--shard {text!r}: expected I/N, e.g. 1/4")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or not 1 <= index <= count:
        raise UsageError(f"--shard {text!r}: need 1 <= I <= N")
    return index, count


# --------------------------------------------------------------------------- the command


def cmd_verify(args: argparse.Namespace) -> int:
    try:
        return _verify(args)
    except UsageError as exc:
        sys.stderr.write(f"tcl verify: {exc}\n")
        return EXIT_USAGE


def _static(args, paths: list[str], device: str):
    from ..config import Config, find_pyproject, load
    from ..runner import run

    if args.no_config:
        config = Config()
    else:
        pyproject = Path(args.config) if args.config else find_pyproject(Path(paths[0]))
        if args.config and not pyproject.is_file():
            raise UsageError(f"{args.config}: no such file")
        config = load(pyproject)
    config.mode = "default"  # verify compiles in default mode; fullgraph errors are reported apart
    config.torch_version = None  # the torch that runs the examples
    # Findings are proven on this device: what breaks can differ between CPU and CUDA tensors.
    config.assume = {**config.assume, "device": device}
    root = str(config.source.parent) if config.source else "."
    return run(paths, config, root=root)


def _verify(args: argparse.Namespace) -> int:
    started = time.monotonic()
    shard = parse_shard(args.shard)
    if args.timeout <= 0:
        raise UsageError("--timeout must be positive")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if args.mode != "default" and args.backend != "inductor":
        raise UsageError(f"--mode {args.mode} needs --backend inductor")
    for path in args.paths:
        if not os.path.exists(path):
            raise UsageError(f"{path}: no such file or directory")
    specs = [parse_spec(spec) for spec in args.example]

    device, gpus = resolve_device(args.device)
    static = _static(args, args.paths, device)
    files = [report.path for report in static.reports]
    checked = {_norm(path) for path in files}
    replayed, notes = replay_sources(args.replay, files) if args.replay else ([], [])
    for note in notes:
        sys.stderr.write(f"tcl verify: {note}\n")
    sources = (specs or discover_sources(files)) + replayed
    if not sources:
        if args.replay:
            raise UsageError("no examples: no checked file defines tcl_examples() or a recorded class")
        raise UsageError("no examples: no checked file defines tcl_examples(); pass --example SPEC")
    sources = sorted(dict.fromkeys(sources), key=lambda s: s.sort_key)

    jobs = args.jobs or (max(1, len(gpus)) if device == "cuda" else 1)
    user_files = sorted({os.path.realpath(path) for path in files})
    workdir = private_temp_dir("tcl_verify_")
    runner = Runner(args, device, gpus, user_files, workdir, jobs)
    interrupted = False
    try:
        work, runs = _plan(runner, sources, shard)
        runs += runner.run_all(work)
    except KeyboardInterrupt:
        # Ctrl-C, or `timeout --signal=INT`: report what finished, marked incomplete.
        with runner.lock:
            runner.stopping = True
            runs = list(runner.finished)
        interrupted = True
        sys.stderr.write(f"tcl verify: interrupted; reporting the {len(runs)} examples that finished\n")
    finally:
        runner.kill_all()
        _remove_tree(workdir)
    order = {s.sort_key: i for i, s in enumerate(sources)}
    runs.sort(key=lambda r: (order[r.source.sort_key], -1 if r.index is None else r.index))

    report = analyse(static.findings, runs, checked)
    report["examples"] = [
        {"name": run.label, "status": run.status, "seconds": round(run.seconds, 3), "error": run.error,
         "source": run.source.label, "index": run.index,
         "fullgraph_error": run.result.get("fullgraph_error"),
         "breaks": len(run.result.get("breaks") or []),
         "recompile_error": run.result.get("recompile_error"), "warning": run.result.get("warning"),
         "varied": [v["what"] for v in (run.result.get("exploration") or {}).get("varied") or []],
         "not_varied": (run.result.get("exploration") or {}).get("not_varied") or [],
         "exploration_stopped": (run.result.get("exploration") or {}).get("stopped")}
        for run in runs
    ]
    env = runner.environment or {}
    report["environment"] = {
        "torch": env.get("torch") or _torch_metadata_version(),
        "device": device if device == "cpu" else f"cuda ({env.get('device_name', '?')})",
        "backend": args.backend, "mode": args.mode, "python": sys.version.split()[0],
        "jobs": jobs, "shard": args.shard, "gpus": gpus, "timeout": args.timeout,
        "examples": sum(1 for run in runs if run.index is not None),
        "wall_seconds": round(time.monotonic() - started, 2), "interrupted": interrupted,
        "recompile_limit": next((run.result["exploration"].get("recompile_limit") for run in runs
                                 if run.result.get("exploration")), None),
    }
    report["errors"] = [str(error) for error in static.all_errors]
    rows = summary_rows(report, runs, sources, runner.startup)
    report["summary"] = rows
    if args.format == "json":
        write_json(report, sys.stdout)
    else:
        write_text(report, rows, sys.stdout)
    for error in report["errors"]:
        sys.stderr.write(f"{error}\n")
    problems = (
        any(f["status"] == "not-confirmed" for f in report["findings"])
        or any(b["in_checked_file"] and not b["matched"] for b in report["runtime_breaks"])
        or any(e["status"] != "ok" for e in report["examples"])
        or any(g["in_checked_file"] and g["missed"] for g in report["persistent_recompiles"])
        or report["errors"]
    )
    if interrupted:
        return 130
    return EXIT_PROBLEMS if problems else EXIT_OK


def _plan(runner: Runner, sources: list[Source], shard):
    """(work items, runs already decided): all examples, or the shard's share of them."""
    if shard is None:
        return [(source, None) for source in sources], []
    index, count = shard
    work, runs, offset = [], [], 0
    counts = runner.count_examples(sources)
    for source in sources:  # sorted by path: the stable order
        n, error = counts[source]
        if error is not None:
            if index == 1:  # one shard reports a source that cannot load, not all of them
                run = ExampleRun(source, None, "(loading examples)", "error", 0.0, f"cannot load examples: {error}")
                runner._report(run)
                runs.append(run)
            continue
        mine = [i for i in range(n) if (offset + i) % count == index - 1]
        offset += n
        if mine:
            work.append((source, mine))
    return work, runs


def _torch_metadata_version() -> str | None:
    from importlib import metadata

    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


def _remove_tree(path: str) -> None:
    remove_tree(path)
