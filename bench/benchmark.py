#!/usr/bin/env python
"""How fast is `tcl check` on a large real tree, next to the tools users compare it with?

    python bench/benchmark.py --setup            # once: clean venvs for flake8 and TorchFix
    python bench/benchmark.py                    # the installed torch package's own source
    python bench/benchmark.py --tree ~/src/transformers/src --limit 1000
    python bench/benchmark.py --subset nn,distributed,_dynamo   # a bounded part of the tree

The chosen files are copied into a scratch directory first, so every tool reads exactly the
same files and tcl's cache never lands in site-packages. Each tool runs as its own subprocess;
wall time is measured around it, peak RSS two ways: the largest single process (GNU
`/usr/bin/time`, else getrusage(RUSAGE_CHILDREN)) and the whole process tree (worker pools
included), sampled from /proc every 0.2 s.

Rows (all on the same files):
  tcl -j1 / tcl all cores      `tcl check --no-cache`
  tcl cache: cold, warm        `tcl check --cache-dir ...`: a first run that writes the cache,
                               then the same tree again, unchanged
  flake8 --select F            flake8 in a clean venv (no plugins at all)
  flake8 --select F (here)     flake8 of this environment, where tcl's own plugin is registered
  TorchFix                     `flake8 --select TOR` in a venv holding only flake8 + TorchFix
                               (its plugin taxes every flake8 run, so it never goes in the
                               environment everyone uses)
  libcst.parse_module, ast.parse   one serial pass over every file, nothing else
Scaling: the first --scale-files files, copied 1x, 2x and 4x (each copy under its own top-level
package name), checked with `tcl check --no-cache`, -j1 and all cores.

Not a test: it takes minutes. Results go to stdout and, with --out, to a markdown file.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tcl.engine import might_trace  # noqa: E402
from tcl.files import DEFAULT_EXCLUDES, SourceError, read_source  # noqa: E402

DEFAULT_VENVS = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tcl-bench"
TORCHFIX = "torchfix==0.7.0"
PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

PARSE_SCRIPT = r"""
import sys, time
sys.path.insert(0, {repo!r})
from tcl.files import read_source, SourceError
kind = sys.argv[1]
if kind == "libcst":
    import libcst
    parse = libcst.parse_module
else:
    import ast
    parse = ast.parse
ok = failed = 0
for path in open(sys.argv[2], encoding="utf-8").read().splitlines():
    try:
        parse(read_source(path))
        ok += 1
    except Exception:
        failed += 1
print(ok, failed)
"""


@dataclass
class Row:
    name: str
    command: str
    files: int
    wall: float | None
    cpu: float | None
    rss_max_mb: float | None
    rss_tree_mb: float | None
    exit: int | str
    lines: int | None
    note: str = ""
    load: float | None = None  # 1-minute load average when the run started

    def cells(self) -> list[str]:
        wall = f"{self.wall:.1f}" if self.wall is not None else "-"
        rate = f"{self.files / self.wall:.0f}" if self.wall else "-"
        return [
            self.name, f"`{self.command}`", str(self.files), wall, rate,
            f"{self.cpu:.1f}" if self.cpu is not None else "-",
            f"{self.rss_max_mb:.0f}" if self.rss_max_mb is not None else "-",
            f"{self.rss_tree_mb:.0f}" if self.rss_tree_mb is not None else "-",
            str(self.exit), str(self.lines) if self.lines is not None else "-",
            f"{self.load:.1f}" if self.load is not None else "-",
        ]


HEADER = ["run", "command", "files", "wall s", "files/s", "CPU s", "peak RSS MB (largest process)",
          "peak RSS MB (process tree)", "exit", "output lines", "load avg at start"]


# -- measuring one subprocess ----------------------------------------------------------------
def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
            ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    return children


def _tree_rss(root: int) -> int:
    children = _children_map()
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        stack.extend(children.get(pid, ()))
        try:
            with open(f"/proc/{pid}/statm", "rb") as handle:
                total += int(handle.read().split()[1]) * PAGE
        except (OSError, ValueError, IndexError):
            pass
    return total


def measure(name: str, argv: list[str], files: int, cwd: Path, timeout: float, env=None, display=None) -> Row:
    gnu_time = shutil.which("time") if os.path.exists("/usr/bin/time") else None
    with tempfile.TemporaryDirectory() as scratch:
        rss_file = Path(scratch) / "rss"
        out_file = Path(scratch) / "out"
        command = (["/usr/bin/time", "-f", "%M %U %S", "-o", str(rss_file)] if gnu_time else []) + argv
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        before, cpu_before = usage.ru_maxrss, usage.ru_utime + usage.ru_stime
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        peak_tree = 0
        stop = threading.Event()
        start = time.perf_counter()
        with open(out_file, "wb") as out:
            proc = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env)

            def sample() -> None:
                nonlocal peak_tree
                if not os.path.isdir("/proc"):
                    return
                while not stop.wait(0.2):
                    peak_tree = max(peak_tree, _tree_rss(proc.pid))

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            try:
                code: int | str = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                code = f"killed after {timeout:.0f} s"
            wall = time.perf_counter() - start
            stop.set()
            sampler.join()
        rss_max = cpu = None
        if gnu_time and rss_file.exists():
            try:
                kb, user, system = rss_file.read_text().split()[-3:]
                rss_max, cpu = int(kb) / 1024, float(user) + float(system)
            except (ValueError, IndexError):
                rss_max = None
        if rss_max is None:
            usage = resource.getrusage(resource.RUSAGE_CHILDREN)
            rss_max = usage.ru_maxrss / 1024 if usage.ru_maxrss > before else None  # only when it grew
            cpu = usage.ru_utime + usage.ru_stime - cpu_before
        lines = sum(1 for _ in open(out_file, "rb"))
        tail = out_file.read_bytes()[-2000:].decode("utf-8", "replace")
    row = Row(name, display or " ".join(shlex.quote(a) for a in argv), files,
              None if isinstance(code, str) else wall, cpu, rss_max, peak_tree / 2**20 if peak_tree else None, code, lines)
    if isinstance(code, str):
        row.note = f"killed after {timeout:.0f} s"
    row.load = load
    print(f"  {name}: {wall:.1f} s wall, {cpu or 0:.1f} s CPU, exit {code}, {lines} lines, load before {load}", flush=True)
    if code not in (0, 1, 2) or lines and "Traceback" in tail:
        print("    " + tail.strip().replace("\n", "\n    ")[-1500:], flush=True)
    return row


# -- the tree -------------------------------------------------------------------------------
def default_tree() -> Path:
    spec = importlib.util.find_spec("torch")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        sys.exit("torch is not installed: pass --tree PATH")
    return Path(list(spec.submodule_search_locations)[0])


def python_files(tree: Path, subset: list[str]) -> list[Path]:
    roots = [tree / s for s in subset] if subset else [tree]
    excluded = {e for e in DEFAULT_EXCLUDES if "*" not in e}
    found = []
    for root in roots:
        if root.is_file():
            found.append(root)
            continue
        for directory, dirs, names in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in excluded and not d.endswith(".egg-info"))
            found.extend(Path(directory) / n for n in sorted(names) if n.endswith(".py"))
    return sorted(dict.fromkeys(found))


def copy_tree(files: list[Path], tree: Path, destination: Path, rename_top: str | None = None) -> list[Path]:
    """Copy `files` (and the __init__.py files above them) under `destination`/<tree name>."""
    top = rename_top or tree.name
    copied = []
    wanted = set(files)
    for path in files:
        for parent in path.relative_to(tree).parents:
            init = tree / parent / "__init__.py"
            if init.exists():
                wanted.add(init)
    for path in sorted(wanted):
        target = destination / top / path.relative_to(tree)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        if path in files:
            copied.append(target)
    return copied


# -- tools ----------------------------------------------------------------------------------
def venv_python(venvs: Path, name: str) -> Path:
    return venvs / name / ("Scripts" if os.name == "nt" else "bin") / "python"


def setup(venvs: Path) -> None:
    """Clean venvs (no system site-packages): flake8 alone, and flake8 + TorchFix."""
    from importlib import metadata

    try:
        flake8_pin = f"flake8=={metadata.version('flake8')}"
    except metadata.PackageNotFoundError:
        flake8_pin = "flake8"
    for name, requirements in (("flake8", [flake8_pin]), ("torchfix", [TORCHFIX])):
        python = venv_python(venvs, name)
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(venvs / name)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *requirements], check=True)
        print(f"{name}: {python}")


def tool_version(python: Path, package: str) -> str:
    result = subprocess.run([str(python), "-c", f"from importlib import metadata; print(metadata.version({package!r}))"],
                            capture_output=True, text=True)
    return result.stdout.strip() or "?"


def run_all(args, venvs: Path) -> tuple[list[Row], list[Row], dict]:
    tree = Path(args.tree).resolve() if args.tree else default_tree()
    subset = [s for s in (args.subset or "").split(",") if s]
    all_files = python_files(tree, subset)
    files = all_files[: args.limit] if args.limit else all_files
    cores = os.cpu_count() or 1
    work = Path(tempfile.mkdtemp(prefix="tcl-bench-"))
    facts: dict = {"tree": str(tree), "subset": subset, "files_in_tree": len(all_files), "cores": cores}
    try:
        copied = copy_tree(files, tree, work / "src")
        target = str((work / "src" / tree.name).relative_to(work))
        n = len(copied)
        sources = []
        unreadable = 0
        for path in copied:
            try:
                sources.append(read_source(str(path)))
            except SourceError:
                unreadable += 1
        facts.update(
            files=n, lines=sum(s.count("\n") for s in sources), megabytes=sum(len(s) for s in sources) / 1e6,
            prefilter_skipped=sum(1 for s in sources if not might_trace(s)), unreadable=unreadable,
        )
        print(f"{n} files, {facts['lines']} lines, {facts['prefilter_skipped']} skipped by the pre-filter; "
              f"scratch copy in {work}", flush=True)
        file_list = work / "files.txt"
        file_list.write_text("\n".join(str(p) for p in copied) + "\n")
        # tcl is run from a snapshot of this checkout, so edits made while the benchmark runs
        # (which change the cache key) cannot mix two versions into one table
        code = work / "code"
        shutil.copytree(REPO / "tcl", code / "tcl", ignore=shutil.ignore_patterns("__pycache__"))
        for plugin in (REPO / "plugins").glob("*.py"):
            shutil.copyfile(plugin, code / plugin.name)
        tcl = [sys.executable, "-m", "tcl", "check", "--no-config"]
        env = dict(os.environ, PYTHONPATH=str(code) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        rows = []
        t = args.tool_timeout

        def tcl_row(name, extra, display):
            return measure(name, tcl + extra + [target], n, work, t, env, display)

        if "tcl" not in args.skip:
            rows.append(tcl_row("tcl, 1 process", ["--no-cache", "-j1"], f"tcl check --no-cache -j1 {target}"))
            rows.append(tcl_row(f"tcl, all cores ({cores})", ["--no-cache"], f"tcl check --no-cache {target}"))
            cache = str(work / "cache")
            rows.append(tcl_row("tcl, cache cold (writes it)", ["--cache-dir", cache], f"tcl check --cache-dir CACHE {target}"))
            rows.append(tcl_row("tcl, cache warm (unchanged tree)", ["--cache-dir", cache], f"tcl check --cache-dir CACHE {target}"))
        flake8_clean = venv_python(venvs, "flake8")
        if "flake8" not in args.skip:
            if flake8_clean.exists():
                facts["flake8"] = tool_version(flake8_clean, "flake8")
                rows.append(measure("flake8 --select F (clean venv)", [str(flake8_clean), "-m", "flake8", "--select", "F", target],
                                    n, work, t, display=f"flake8 --select F {target}"))
            else:
                rows.append(Row("flake8 --select F (clean venv)", "run with --setup", n, None, None, None, None, "-", None))
            if shutil.which("flake8") and "flake8-here" not in args.skip:
                rows.append(measure("flake8 --select F (this env: tcl plugin registered)", [sys.executable, "-m", "flake8", "--select", "F", target],
                                    n, work, t, env, display=f"flake8 --select F {target}"))
        torchfix = venv_python(venvs, "torchfix")
        if "torchfix" not in args.skip:
            if torchfix.exists():
                facts["torchfix"] = tool_version(torchfix, "torchfix")
                facts["torchfix_libcst"] = tool_version(torchfix, "libcst")
                rows.append(measure("TorchFix (flake8 --select TOR)", [str(torchfix), "-m", "flake8", "--select", "TOR", target],
                                    n, work, t, display=f"flake8 --select TOR {target}"))
            else:
                rows.append(Row("TorchFix (flake8 --select TOR)", "run with --setup", n, None, None, None, None, "-", None))
        if "parse" not in args.skip:
            script = work / "parse.py"
            script.write_text(PARSE_SCRIPT.format(repo=str(code)))
            rows.append(measure("libcst.parse_module, every file", [sys.executable, str(script), "libcst", str(file_list)], n, work, t,
                                display="libcst.parse_module(read(f)) for f in files"))
            rows.append(measure("ast.parse, every file", [sys.executable, str(script), "ast", str(file_list)], n, work, t,
                                display="ast.parse(read(f)) for f in files"))
        scaling = []
        if args.scale_files and "scaling" not in args.skip:
            base = files[: args.scale_files]
            for factor in (1, 2, 4):
                root = work / f"scale{factor}"
                total = 0
                for copy in range(factor):
                    total += len(copy_tree(base, tree, root, rename_top=f"{tree.name}_copy{copy}"))
                for jobs, label in (("-j1", "1 process"), (None, f"all cores ({cores})")):
                    extra = ["--no-cache"] + ([jobs] if jobs else [])
                    display = f"tcl check --no-cache {jobs + ' ' if jobs else ''}scale{factor}"
                    row = measure(f"{factor}x ({total} files), {label}", tcl + extra + [f"scale{factor}"], total, work, t, env, display)
                    scaling.append(row)
                shutil.rmtree(root, ignore_errors=True)
        return rows, scaling, facts
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def table(rows: list[Row]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(row.cells()) + " |" for row in rows]
    return "\n".join(lines)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    from importlib import metadata

    versions = []
    for package in ("torch", "libcst"):
        try:
            versions.append(f"{package} {metadata.version(package)}")
        except metadata.PackageNotFoundError:
            pass
    return f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, " + ", ".join(versions)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", help="directory to lint (default: the installed torch package)")
    parser.add_argument("--subset", help="comma-separated paths inside the tree, e.g. nn,distributed,_dynamo")
    parser.add_argument("--limit", type=int, help="only the first N files (sorted by path)")
    parser.add_argument("--scale-files", type=int, default=400, help="files in the 1x scaling tree (0: no scaling)")
    parser.add_argument("--skip", default="", help="comma-separated: tcl,flake8,flake8-here,torchfix,parse,scaling")
    parser.add_argument("--tool-timeout", type=float, default=3600, help="seconds before a tool is killed")
    parser.add_argument("--venvs", default=str(DEFAULT_VENVS), help=f"where --setup puts the tool venvs (default {DEFAULT_VENVS})")
    parser.add_argument("--setup", action="store_true", help="create the flake8 and TorchFix venvs, then exit")
    parser.add_argument("--out", help="write the results as markdown to this file")
    parser.add_argument("--json", help="write the raw results as JSON to this file")
    parser.add_argument("--keep", action="store_true", help="keep the scratch copy")
    args = parser.parse_args(argv)
    args.skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    venvs = Path(args.venvs)
    if args.setup:
        setup(venvs)
        return 0
    command = "python bench/benchmark.py " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    started = time.time()
    rows, scaling, facts = run_all(args, venvs)
    facts["machine"] = machine()
    facts["seconds"] = round(time.time() - started)
    facts["date"] = time.strftime("%Y-%m-%d %H:%M", time.localtime(started))
    text = render(command.strip(), rows, scaling, facts)
    print()
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    if args.json:
        Path(args.json).write_text(json.dumps({"facts": facts, "rows": [r.__dict__ for r in rows],
                                               "scaling": [r.__dict__ for r in scaling]}, indent=2))
    return 0


def render(command: str, rows: list[Row], scaling: list[Row], facts: dict) -> str:
    subset = f" (subset: {', '.join(facts['subset'])})" if facts["subset"] else ""
    out = [
        f"Tree: `{facts['tree']}`{subset}: {facts['files']} files of {facts['files_in_tree']}, "
        f"{facts['lines']:,} lines, {facts['megabytes']:.1f} MB.",
        f"Machine: {facts['machine']}.",
        f"Pre-filter: {facts['prefilter_skipped']} of {facts['files']} files "
        f"({100 * facts['prefilter_skipped'] / max(facts['files'], 1):.0f}%) contain none of "
        "`torch`, `forward`, `compile` and are skipped unparsed.",
        "",
        table(rows),
    ]
    if scaling:
        out += ["", "Scaling (`tcl check --no-cache`, copies of the first files of the tree):", "", table(scaling)]
    extra = []
    if "flake8" in facts:
        extra.append(f"flake8 {facts['flake8']}")
    if "torchfix" in facts:
        extra.append(f"TorchFix {facts['torchfix']} (with libcst {facts.get('torchfix_libcst', '?')}, its pin)")
    if extra:
        out += ["", "Tools: " + ", ".join(extra) + "."]
    out += ["", f"Command: `{command}` ({facts['seconds']} s in all, started {facts['date']})."]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main())
