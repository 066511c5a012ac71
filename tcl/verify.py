"""`tcl verify`: run examples on the real compiler and check tcl's findings against what breaks.

Unlike `tcl check`, this imports and executes the code it verifies.

Examples: with ``--example SPEC`` exactly those functions run; without, every checked file that
defines a module-level ``tcl_examples()``.  Each returns ``(callable_or_module, args, kwargs)``.
``--replay RECORDING`` adds the calls `pytest --tcl-record` recorded (plugins/tcl_pytest.py, tcl/recording.py): each
recorded nn.Module class becomes an example of the checked file that defines it, and the child
unpickles the module and its inputs (which executes pickled code: replay your own recordings).

Processes.  The parent (this module) never imports user code, nor torch on CPU.  It runs the
static analysis, then hands the examples to child processes (tcl/verify_child.py, fresh
interpreters started with subprocess: CUDA does not survive fork).  One child runs all examples of
one source (a file's ``tcl_examples()`` or one SPEC): Dynamo's warm-up (2-3 s) is paid once per
source, ``torch._dynamo.reset()`` and deep copies of module targets separate the examples, and a
source's module-level state cannot leak into another source's.  Isolation goes down to one
example only where needed: an example that segfaults, hangs past ``--timeout`` (per example; the
import and ``tcl_examples()`` call get max(timeout, 120 s)), is killed for memory or hits a CUDA
error that poisons the context gets that error, and a new child runs the source's remaining
examples.  ``--jobs N`` runs N sources at once (default: one per visible GPU on CUDA, each
worker pinned with CUDA_VISIBLE_DEVICES when there are several; 1 on CPU).  ``--shard I/N`` first
counts every source's examples in one child, then keeps the examples whose stable index (sources
sorted by path, then position) % N == I-1; a source that cannot load is reported by shard 1 only.

Per example the child runs it eagerly with line coverage, compiled in default mode with the
graph_breaks log (every break, with its user frame), with ``fullgraph=True`` (its first error is
reported per example), then calls a fresh compiled copy again: same inputs, batch (dim 0 of the
tensor arguments) +1 and +2, int arguments +1 and +2, ``train()``/``eval()`` toggled.  The first
batch and int change recompile by design (Dynamo makes the size dynamic), as does the training
toggle; the report marks those ``expected``.  On CUDA, an example that fails eagerly because its
code creates CPU tensors is verified again under ``torch.device("cuda")`` and carries a warning.

Each finding gets a status:

* ``confirmed``      a runtime break at the finding's line (rules with ``runtime_line_offset``,
                     the lazily formatted f-string, break at the next code line that uses it);
                     for recompile rules (category "recompile"), a recompile whose failed guard
                     points at the line or tests a name used on it, in the same function.
* ``not-confirmed``  its line ran in an example and nothing broke (or recompiled) there.
* ``shadowed``       its line ran, nothing broke there, and Dynamo logged that it gave up on
                     that function's frame ("Skipping the function and falling back to eager",
                     "frame skipped: ...") at a break earlier in it: a break inside a for/while
                     loop, a ``try`` or a ``with`` it cannot re-enter, also one in a helper called
                     from there.  The rest of the frame ran eagerly, so the line never reached the
                     compiler: neither confirmed nor refuted.  Recompile findings are shadowed by
                     any skip of the frame that holds them (an eager frame sets up no guards).
* ``not-reached``    its line never ran (eager line coverage): the examples did not exercise it.

A runtime break in a checked file that no finding matches is ``missed``; breaks in other files are
listed with ``in_checked_file: false``.  Exit status: 0 when no finding is not-confirmed, nothing
is missed, every example ran and every file was analysed (shadowed and not-reached count as
explained); 1 otherwise; 2 for usage errors; 130 when interrupted (the report of what finished is
still written).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

from .safe_files import open_new, private_temp_dir, read_regular, remove_tree

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2
BACKENDS = ("inductor", "aot_eager", "eager")
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune")
DEFAULT_TIMEOUT = 300.0
# Importing torch, the checked file and calling its examples function is not one example's work:
# it gets its own allowance, at least this long.
LOAD_ALLOWANCE = 120.0
POLL = 0.05
TCL_ROOT = str(Path(__file__).resolve().parent.parent)  # the directory that holds tcl/
_DEFINES_EXAMPLES = re.compile(r"^def\s+tcl_examples\s*\(", re.MULTILINE)


class UsageError(Exception):
    pass


# --------------------------------------------------------------------------- command line


def add_verify_parser(commands) -> argparse.ArgumentParser:
    verify = commands.add_parser(
        "verify",
        help="run examples on the real compiler and confirm findings (IMPORTS AND RUNS the code)",
        description=(
            "Check findings against the installed PyTorch: run the static analysis on PATH, then "
            "compile and run examples in child processes and report, for each finding, whether "
            "the compiler breaks there (confirmed / not-confirmed / shadowed / not-reached), every "
            "runtime break no finding predicted (missed), and recompiles when the batch size "
            "changes or train()/eval() is toggled. Unlike `tcl check`, which only reads source, "
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


# --------------------------------------------------------------------------- example sources


@dataclass(frozen=True)
class Source:
    """Where examples come from: a function in a file or in an importable module."""

    label: str  # what the user sees: "fixtures/mlp.py" or "pkg.mod:make"
    kind: str  # "file" or "module"
    path: str | None  # absolute, for "file"
    module: str | None  # dotted name, for "module"
    function: str
    sort_key: str
    recording: str | None = None  # for "replay": the `pytest --tcl-record` file
    entries: tuple[str, ...] = ()  # for "replay": its records of classes defined in `path`

    def to_job(self) -> dict:
        return {"label": self.label, "kind": self.kind, "path": self.path, "module": self.module,
                "function": self.function, "recording": self.recording, "entries": list(self.entries)}


def _display(path: str) -> str:
    """A path relative to the working directory when it is under it, else absolute."""
    if path.startswith("<"):
        return path
    absolute = os.path.abspath(path)
    try:
        relative = os.path.relpath(absolute)
    except ValueError:
        return absolute
    return absolute if relative.startswith("..") else relative


def parse_spec(spec: str) -> Source:
    target, sep, function = spec.rpartition(":")
    if not sep or not target or not function.isidentifier():
        raise UsageError(f"--example {spec!r}: expected path/to/file.py:function or package.module:function")
    if target.endswith(".py") or "/" in target or os.sep in target:
        if not os.path.isfile(target):
            raise UsageError(f"--example {spec!r}: no such file {target!r}")
        path = os.path.realpath(target)
        label = f"{_display(path)}:{function}"
        return Source(label, "file", path, None, function, f"{path}:{function}")
    if not all(part.isidentifier() for part in target.split(".")):
        raise UsageError(f"--example {spec!r}: {target!r} is neither a .py file nor a module name")
    return Source(spec, "module", None, target, function, spec)


def discover_sources(files: list[str]) -> list[Source]:
    sources = []
    for path in files:
        try:
            text = read_regular(path).decode("utf-8", "replace")
        except OSError:
            continue
        if _DEFINES_EXAMPLES.search(text):
            real = os.path.realpath(path)
            sources.append(Source(_display(real), "file", real, None, "tcl_examples", real))
    return sources


def replay_sources(recordings: list[str], files: list[str]) -> tuple[list[Source], list[str]]:
    """One "replay" source per checked file that defines recorded classes, and a note for each
    recording about the classes it holds from files that are not checked.

    Reads only the recording's index (JSON): the parent never unpickles.  A record belongs to a
    checked file with the same real path, or, for a project that moved since it was recorded (a
    CI checkout), to the checked file whose path ends as its module name says (pkg/models.py).
    """
    import zipfile

    by_path = {_norm(path): os.path.realpath(path) for path in files}
    sources, notes = [], []
    for recording in recordings:
        try:
            with zipfile.ZipFile(recording) as archive:
                index = json.loads(archive.read("index.json"))
        except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
            raise UsageError(f"--replay {recording}: not a `pytest --tcl-record` file ({exc})") from None
        if index.get("format") != "tcl-recorded-inputs" or not isinstance(index.get("records"), list):
            raise UsageError(f"--replay {recording}: not a `pytest --tcl-record` file")
        grouped: dict[str, list[str]] = {}
        elsewhere = []
        for record in index["records"]:
            path = by_path.get(_norm(record.get("file", "")))
            if path is None:
                tail = record.get("module", "").replace(".", os.sep)
                endings = (tail + ".py", os.path.join(tail, "__init__.py"))
                path = next((real for real in by_path.values() if real.endswith(tuple(os.sep + e for e in endings))), None)
            if path is None:
                elsewhere.append(record.get("class", "?"))
            else:
                grouped.setdefault(path, []).append(record["entry"])
        real = os.path.realpath(recording)
        for path, entries in grouped.items():
            sources.append(Source(f"{_display(path)} (replay)", "replay", path, None, "", f"{path}:replay:{real}",
                                  real, tuple(entries)))
        if elsewhere:
            notes.append(f"--replay {recording}: {len(elsewhere)} recorded classes are defined in files not "
                         f"checked here: {', '.join(elsewhere[:5])}{', ...' if len(elsewhere) > 5 else ''}")
    return sources, notes


# --------------------------------------------------------------------------- device


def resolve_device(requested: str) -> tuple[str, list[str]]:
    """("cuda" | "cpu", visible GPU ids); says on stderr when auto falls back to CPU."""
    if requested == "cpu":
        return "cpu", []
    try:
        import torch
    except ImportError as exc:
        raise UsageError(f"tcl verify needs torch: {exc}") from None
    available = torch.cuda.is_available()
    if requested == "cuda" and not available:
        raise UsageError("--device cuda: CUDA is not available to this torch "
                         f"({torch.__version__}); use --device cpu")
    if not available:
        sys.stderr.write("tcl verify: CUDA not available, running on CPU "
                         "(--backend eager is much faster there)\n")
        return "cpu", []
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip():
        ids = [part.strip() for part in visible.split(",") if part.strip()]
        ids = ids[: torch.cuda.device_count()] or ids
    else:
        ids = [str(i) for i in range(torch.cuda.device_count())]
    return "cuda", ids


# --------------------------------------------------------------------------- running children


@dataclass
class ExampleRun:
    source: Source
    index: int | None  # None: the source itself failed to load
    name: str
    status: str = "pending"  # ok | error | timeout | crashed
    seconds: float = 0.0
    error: str | None = None
    result: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        where = f"[{self.index}]" if self.index is not None else ""
        return f"{self.source.label}{where} {self.name}".strip()


class _Stopped(Exception):
    """The run was interrupted: start no more children."""


class Runner:
    """Starts children, watches their events, applies timeouts, restarts after crashes."""

    def __init__(self, args, device: str, gpus: list[str], user_files: list[str], workdir: str,
                 jobs: int) -> None:
        self.args = args
        self.device = device
        self.gpus = gpus
        self.user_files = user_files
        self.workdir = workdir
        self.jobs = jobs
        self.lock = threading.Lock()
        self.live: set[subprocess.Popen] = set()
        self.counter = 0
        self.done = 0
        self.finished: list[ExampleRun] = []  # every reported run, in order (kept on interrupt)
        self.startup: dict[str, float] = {}  # source label -> seconds its children spent loading
        self.stopping = False
        self.environment: dict = {}

    # -- one child -----------------------------------------------------------------------
    def _env(self, slot: int) -> dict:
        env = dict(os.environ)
        old = env.get("PYTHONPATH")
        env["PYTHONPATH"] = TCL_ROOT + (os.pathsep + old if old else "")
        if self.device == "cuda" and len(self.gpus) > 1:
            env["CUDA_VISIBLE_DEVICES"] = self.gpus[slot % len(self.gpus)]
        if self.device == "cpu" and self.jobs > 1 and "OMP_NUM_THREADS" not in os.environ:
            env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // self.jobs))
        return env

    def _start(self, job: dict, slot: int):
        with self.lock:
            self.counter += 1
            stem = os.path.join(self.workdir, f"child{self.counter}")
        job = dict(job, events=stem + ".events.jsonl")
        # Created new (O_EXCL|O_NOFOLLOW) in the private work directory: never through a link.
        with open_new(stem + ".job.json") as f:
            json.dump(job, f)
        open_new(job["events"]).close()
        stderr = open_new(stem + ".stderr", "wb")
        try:
            with self.lock:  # so that kill_all, once stopping is set, sees every child
                if self.stopping:
                    raise _Stopped()
                proc = subprocess.Popen(
                    [sys.executable, "-m", "tcl.verify_child", stem + ".job.json"],
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
                    env=self._env(slot), cwd=os.getcwd(), start_new_session=(os.name == "posix"),
                )
                self.live.add(proc)
        finally:
            stderr.close()
        return proc, job["events"], stem + ".stderr"

    def _kill(self, proc) -> None:
        try:
            if os.name == "posix":
                os.killpg(proc.pid, signal.SIGKILL)  # also inductor's compile workers
            else:  # pragma: no cover
                proc.kill()
        except (ProcessLookupError, PermissionError, OSError):
            pass
        proc.wait()

    def kill_all(self) -> None:
        with self.lock:
            live = list(self.live)
        for proc in live:
            self._kill(proc)

    def _watch(self, proc, events_path: str, on_event, load_allowance: float):
        """Feed events to on_event until the child exits; returns (rc, "timeout" | None, index).

        on_event returns the index of the example now running, or None between examples.
        """
        offset, buffer = 0, ""
        current, since = None, time.monotonic()
        timed_out = False
        try:
            while True:
                exited = proc.poll() is not None  # before reading: nothing written is then lost
                with open(events_path, encoding="utf-8") as f:
                    f.seek(offset)
                    chunk = f.read()
                    offset = f.tell()
                if chunk:
                    buffer += chunk
                    *lines, buffer = buffer.split("\n")
                    for line in lines:
                        if line.strip():
                            event = json.loads(line)
                            before = current
                            current = on_event(event, current)
                            if current != before or event.get("event") in ("loaded", "done"):
                                since = time.monotonic()
                if exited and not chunk:
                    break
                limit = self.args.timeout if current is not None else load_allowance
                if time.monotonic() - since > limit:
                    timed_out = True
                    self._kill(proc)
                    break
                if not chunk:
                    time.sleep(POLL)
        finally:
            if proc.poll() is None:
                self._kill(proc)
            with self.lock:
                self.live.discard(proc)
        return proc.returncode, ("timeout" if timed_out else None), current

    def _job(self, source: Source, indices) -> dict:
        return {"source": source.to_job(), "indices": indices, "user_files": self.user_files,
                "backend": self.args.backend, "mode": self.args.mode, "device": self.device,
                "recompiles": True}

    def _hello(self, event: dict) -> None:
        with self.lock:
            if not self.environment:
                self.environment = {"torch": event.get("torch"), "device_name": event.get("device")}

    # -- one source, with restarts -------------------------------------------------------
    def run_source(self, source: Source, indices: list[int] | None, slot: int) -> list[ExampleRun]:
        runs: dict[int, ExampleRun] = {}
        names: list[str] = []
        pending = None if indices is None else list(indices)
        load_allowance = max(self.args.timeout, LOAD_ALLOWANCE)
        while pending is None or pending:
            state = {"loaded": False, "load_error": None, "poisoned": False}

            def on_event(event, current):
                kind = event.get("event")
                if kind == "hello":
                    self._hello(event)
                elif kind == "loaded":
                    state["loaded"] = True
                    names[:] = event.get("names", [])
                    with self.lock:  # child start, torch import, module import, tcl_examples()
                        self.startup[source.label] = self.startup.get(source.label, 0.0) + float(event.get("seconds") or 0)
                elif kind == "load_error":
                    state["load_error"] = event.get("error")
                elif kind == "start":
                    return event["index"]
                elif kind == "done":
                    index = event["index"]
                    run = self._finish(source, index, names, event["result"])
                    runs[index] = run
                    return None
                elif kind == "poisoned":
                    state["poisoned"] = True
                return current

            job = self._job(source, pending)
            proc, events_path, stderr_path = self._start(job, slot)
            rc, why, current = self._watch(proc, events_path, on_event, load_allowance)
            if pending is None:
                pending = list(range(len(names))) if state["loaded"] else []
            pending = [i for i in pending if i not in runs]
            if state["load_error"] or not state["loaded"]:
                error = state["load_error"] or _crash_text(rc, why, stderr_path, load_allowance, "loading")
                if not runs:  # the source itself cannot load: one error for it
                    run = ExampleRun(source, None, "(loading examples)", "error", 0.0,
                                     f"cannot load examples: {error}")
                    self._report(run)
                    return [run]
                for i in pending:  # a restart could not load again: the rest get the error
                    runs[i] = ExampleRun(source, i, _name(names, i), "error", 0.0, f"cannot load examples: {error}")
                    self._report(runs[i])
                break
            if current is not None and current not in runs:
                status = "timeout" if why == "timeout" else "crashed"
                text = (f"timed out after {self.args.timeout:g}s (killed)" if why == "timeout"
                        else _crash_text(rc, why, stderr_path, self.args.timeout, "running"))
                runs[current] = ExampleRun(source, current, _name(names, current), status,
                                           self.args.timeout if why == "timeout" else 0.0, text)
                self._report(runs[current])
                pending = [i for i in pending if i != current]
            elif rc != 0 and not state["poisoned"] and pending:
                # Died between examples: give the rest one error rather than loop forever.
                text = _crash_text(rc, why, stderr_path, self.args.timeout, "between examples")
                for i in pending:
                    runs[i] = ExampleRun(source, i, _name(names, i), "crashed", 0.0, text)
                    self._report(runs[i])
                break
        return [runs[i] for i in sorted(runs)]

    def _finish(self, source: Source, index: int, names: list[str], result: dict) -> ExampleRun:
        error = result.get("error")
        run = ExampleRun(source, index, _name(names, index), "error" if error else "ok",
                         float(result.get("seconds") or 0.0), error, result)
        self._report(run)
        return run

    def _report(self, run: ExampleRun) -> None:
        with self.lock:
            if self.stopping:  # interrupted: what dies now was killed by us
                return
            self.done += 1
            n = self.done
            self.finished.append(run)
        if run.status == "ok":
            result = run.result
            recompiles = result.get("recompiles") or []
            real = sum(1 for r in recompiles if not r.get("expected"))
            detail = f"ok, {len(result.get('breaks') or [])} breaks, {len(recompiles)} recompiles"
            if real:
                detail += f" ({real} unexpected)"
            if result.get("warning"):
                detail += f"; WARNING: {result['warning']}"
        else:
            detail = f"{run.status.upper()}: {run.error}"
        sys.stderr.write(f"tcl verify: [{n}] {run.label}: {detail} ({run.seconds:.1f}s)\n")
        sys.stderr.flush()

    # -- discovery for --shard -----------------------------------------------------------
    def count_examples(self, sources: list[Source]) -> dict[Source, tuple[int, str | None]]:
        """How many examples each source has: one child loads them all (restarted after a source
        that crashes or hangs while loading, which then counts as failed)."""
        counts: dict[Source, tuple[int, str | None]] = {}
        remaining = list(sources)
        load_allowance = max(self.args.timeout, LOAD_ALLOWANCE)
        while remaining:
            job = dict(self._job(remaining[0], []), discover_only=True,
                       sources=[source.to_job() for source in remaining])
            batch = list(remaining)

            def on_event(event, current):
                kind = event.get("event")
                if kind == "hello":
                    self._hello(event)
                elif kind == "discovering":
                    return event["source"]
                elif kind == "loaded":
                    counts[batch[event["source"]]] = (event.get("count", 0), None)
                    return None
                elif kind == "load_error":
                    counts[batch[event["source"]]] = (0, event.get("error"))
                    return None
                return current

            proc, events_path, stderr_path = self._start(job, 0)
            # Loading gets the load allowance, not the per-example timeout.
            saved, self.args.timeout = self.args.timeout, load_allowance
            try:
                rc, why, current = self._watch(proc, events_path, on_event, load_allowance)
            finally:
                self.args.timeout = saved
            if current is not None and batch[current] not in counts:
                counts[batch[current]] = (0, _crash_text(rc, why, stderr_path, load_allowance, "loading"))
            elif current is None and not any(source in counts for source in batch):
                for source in batch:  # the child died before loading anything
                    counts[source] = (0, _crash_text(rc, why, stderr_path, load_allowance, "starting"))
            remaining = [source for source in batch if source not in counts]
        return counts

    # -- everything ----------------------------------------------------------------------
    def run_all(self, work: list[tuple[Source, list[int] | None]]) -> list[ExampleRun]:
        tasks: queue.Queue = queue.Queue()
        for item in work:
            tasks.put(item)
        results: list[ExampleRun] = []
        errors: list[BaseException] = []

        def worker(slot: int) -> None:
            while True:
                try:
                    source, indices = tasks.get_nowait()
                except queue.Empty:
                    return
                try:
                    runs = self.run_source(source, indices, slot)
                except _Stopped:
                    return
                except BaseException as exc:  # noqa: BLE001 -- surfaced below
                    errors.append(exc)
                    return
                with self.lock:
                    results.extend(runs)

        threads = [threading.Thread(target=worker, args=(slot,), daemon=True)
                   for slot in range(max(1, min(self.jobs, len(work))))]
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():
                thread.join(0.2)
        if errors:
            raise errors[0]
        return results


def _name(names: list[str], index: int) -> str:
    return names[index] if 0 <= index < len(names) else "?"


def _crash_text(rc, why, stderr_path: str, limit: float, phase: str) -> str:
    if why == "timeout":
        return f"timed out after {limit:g}s while {phase} (killed)"
    if rc is not None and rc < 0:
        try:
            what = f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            what = f"killed by signal {-rc}"
        if rc == -signal.SIGKILL:
            what += " (out of memory?)"
    else:
        what = f"exited with status {rc}"
    tail = _stderr_tail(stderr_path)
    return f"child process {what} while {phase}" + (f": {tail}" if tail else "")


def _stderr_tail(path: str) -> str:
    """The fatal error line and the innermost user frame faulthandler printed, else the last line."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 20000))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    fatal = next((line for line in reversed(lines) if line.startswith("Fatal Python error")), None)
    if fatal is None:
        return lines[-1][:300] if lines else ""
    frames = re.findall(r'File "([^"]+)", line (\d+) in (\S+)', text[text.rfind("Fatal Python error"):])
    # faulthandler lists the innermost frame first; skip library frames.
    for file, line, function in frames:
        if "site-packages" not in file and "/lib/python" not in file and not file.startswith("<"):
            return f"{fatal} in {function}() at {_display(file)}:{line}"
    return fatal


# --------------------------------------------------------------------------- file shapes


_LOOPS_AND_TRIES = (ast.For, ast.AsyncFor, ast.While, ast.Try) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())


def _resumable_names() -> frozenset:
    try:
        from .walker import RESUMABLE_CONTEXTS
    except Exception:  # noqa: BLE001 -- the static analyzer unavailable: keep a copy
        RESUMABLE_CONTEXTS = frozenset({"torch.no_grad", "torch.enable_grad", "torch.set_grad_enabled",
                                        "torch.inference_mode", "torch.autocast", "torch.amp.autocast"})
    return frozenset(RESUMABLE_CONTEXTS) | {name.rsplit(".", 1)[-1] for name in RESUMABLE_CONTEXTS}


class FileShape:
    """Functions, amplifying statements (loop / try / non-resumable with) and code lines of a file."""

    def __init__(self, path: str) -> None:
        self.functions: list[tuple[int, int, str]] = []
        self.amplifiers: list[tuple[int, int, str]] = []  # (start, end, kind)
        self.code_lines: list[int] = []
        self.lines: list[str] = []
        try:
            data = read_regular(path)
            tree = ast.parse(data, path)
        except (OSError, SyntaxError, ValueError):
            return
        self.lines = data.decode("utf-8", "replace").splitlines()
        resumable = _resumable_names()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.append((node.lineno, node.end_lineno or node.lineno, node.name))
            elif isinstance(node, _LOOPS_AND_TRIES):
                kind = "try block" if "Try" in type(node).__name__ else (
                    "while loop" if isinstance(node, ast.While) else "for loop")
                self.amplifiers.append((node.lineno, node.end_lineno or node.lineno, kind))
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                if not all(isinstance(item.context_expr, ast.Call)
                           and _dotted(item.context_expr.func) in resumable for item in node.items):
                    self.amplifiers.append((node.lineno, node.end_lineno or node.lineno, "with block"))
        try:
            import io

            lines = set()
            for tok in tokenize.tokenize(io.BytesIO(data).readline):
                if tok.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                                    tokenize.DEDENT, tokenize.ENCODING, tokenize.ENDMARKER):
                    lines.update(range(tok.start[0], tok.end[0] + 1))
            self.code_lines = sorted(lines)
        except (tokenize.TokenError, SyntaxError):
            self.code_lines = []

    def function_at(self, line: int):
        inner = None
        for start, end, name in self.functions:
            if start <= line <= end and (inner is None or start >= inner[0]):
                inner = (start, end, name)
        return inner

    def amplifier_at(self, line: int, function) -> tuple[int, int, str] | None:
        """The innermost loop/try/with of `function` (not of a nested def) around `line`."""
        inner = None
        for start, end, kind in self.amplifiers:
            if start <= line <= end and function[0] < start <= function[1]:
                if self.function_at(start) == function and (inner is None or start >= inner[0]):
                    inner = (start, end, kind)
        return inner

    def def_line(self, line: int) -> int:
        """A decorator's line -> the `def` line it decorates (code objects and tcl's findings
        on decorators start there; the ast range of a function starts at `def`)."""
        while self.line_text(line).lstrip().startswith("@") and line < len(self.lines):
            line += 1
        return line

    def line_text(self, line: int) -> str:
        return self.lines[line - 1] if 0 < line <= len(self.lines) else ""

    def next_code_line(self, line: int) -> int:
        return next((n for n in self.code_lines if n >= line), line)


def _dotted(node) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.insert(0, node.id)
        return ".".join(parts)
    return ""


# --------------------------------------------------------------------------- matching


def _norm(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


@dataclass
class Break:
    path: str  # normalized
    line: int
    gb: str | None
    reason: str
    examples: list[str] = field(default_factory=list)
    matched_by: list[str] = field(default_factory=list)


@dataclass
class Skip:
    """A frame Dynamo gave up on: `function` (a FileShape function) of `path` ran eagerly from
    `frame_line` on, because of the break at (break_path, break_line)."""

    path: str
    function: tuple
    frame_line: int
    kind: str  # "for loop", "try block", ... or "frame" when the reason is not structural
    break_path: str
    break_line: int
    gb: str | None
    named_start: int | None = None  # the skipped code's first line when Dynamo names it
    frame_start: int = 0  # first line of the skipped frame (a resume function starts after a break)


def _skips(run_skips: list[dict], shape) -> list[Skip]:
    """Which user function each frame-skip record took down.

    Dynamo names the frame for breaks in loops ("frame skipped: forward (m.py line 62)"); for the
    rest (try, with) it is the innermost user frame of the traceback that sits inside a loop, try
    or non-resumable with of its function, else the outermost user frame.
    """
    out = []
    for item in run_skips:
        stack = [(_norm(p), n) for p, n in item.get("stack") or []]
        if not stack:
            stack = [(_norm(item["path"]), item["line"])]
        chosen, named = None, None
        if item.get("skipped_path") and item.get("skipped_line"):
            path = _norm(item["skipped_path"])
            function = shape(path).function_at(item["skipped_line"])
            if function is not None:
                lines = [n for p, n in stack if p == path and shape(path).function_at(n) == function]
                frame_line = lines[-1] if lines else item["skipped_line"]
                amplifier = shape(path).amplifier_at(frame_line, function)
                chosen = (path, function, frame_line, amplifier[2] if amplifier else "for loop")
                named = item["skipped_line"]
        if chosen is None:
            for path, line in reversed(stack):
                function = shape(path).function_at(line)
                amplifier = shape(path).amplifier_at(line, function) if function else None
                if amplifier is not None:
                    chosen = (path, function, line, amplifier[2])
                    break
        if chosen is None:
            path, line = stack[0]
            function = shape(path).function_at(line)
            if function is not None:
                chosen = (path, function, line, "frame")
        if chosen is not None:
            out.append(Skip(*chosen, _norm(item["path"]), item["line"], item.get("gb"), named))
    return out


_GUARD_NAMES = re.compile(r"[A-Za-z_][\w.]*")
_REFERENCES = re.compile(r"([^\s#'\"]+\.py):(\d+)")


def _recompile_matches(finding_path: str, line: int, rec: dict, shape, persistent: bool = False) -> bool:
    """Whether a recompile is the one a recompile-hazard finding predicts.

    Its guard's source reference names the finding's line, or: it recompiled the function that
    holds the finding, and a name its guard tests (self.step, n) is on the finding's line. For a
    size the finding says Python specialises on (`persistent` rules, TCL505), a size guard of
    that function that fails on a change after the first (automatic dynamic shapes made the
    size symbolic on the first, so a later size recompile is the specialisation).
    """
    reason = rec.get("reason") or ""
    for fragment, number in _REFERENCES.findall(reason):
        if int(number) == line and finding_path.endswith(fragment.lstrip(".")):
            return True
    if not rec.get("path") or _norm(rec["path"]) != finding_path or not rec.get("line"):
        return False
    file = shape(finding_path)
    function = file.function_at(file.def_line(line))
    if function is None or file.function_at(file.def_line(rec["line"])) != function:
        return False
    if file.def_line(line) != line or line == function[0]:
        # A finding on the function's header (`@torch.compile(dynamic=False)`): the hazard is
        # the frame's static shapes, so any size guard of that frame is the predicted one.
        return "size mismatch" in reason or "stride mismatch" in reason
    if persistent and not rec.get("expected") and ("size mismatch" in reason or rec["line"] == line):
        return True
    guard = re.sub(r"'[^']*'|\"[^\"]*\"", "", reason.split(": ", 1)[-1].split(" # ", 1)[0])
    text = file.line_text(line)
    names = {n for n in _GUARD_NAMES.findall(guard) if n not in ("L", "G", "self", "tensor", "size",
                                                                "mismatch", "at", "index", "expected",
                                                                "actual", "and", "or", "not", "True",
                                                                "False", "None", "len", "type")}
    return any(re.search(rf"(?<![\w.]){re.escape(n)}(?![\w])", text) for n in names)


def _shadow_info(skip: Skip, by_line) -> dict:
    brk = next(iter(by_line.get((skip.break_path, skip.break_line), [])), None)
    return {"path": _display(skip.break_path), "line": skip.break_line, "gb": skip.gb,
            "reason": brk.reason if brk else None, "frame_line": skip.frame_line,
            "frame_start": skip.frame_start, "function": skip.function[2], "function_line": skip.function[0],
            "inside": skip.kind}


def analyse(findings, runs: list[ExampleRun], checked: set[str]) -> dict:
    """Statuses for findings, missed breaks, recompiles."""
    from .rules import BY_CODE

    shapes: dict[str, FileShape] = {}

    def shape(path: str) -> FileShape:
        if path not in shapes:
            shapes[path] = FileShape(path)
        return shapes[path]

    breaks: dict[tuple, Break] = {}
    executed: dict[str, set[int]] = {}
    skips: list[Skip] = []
    recompiles = []
    for run in runs:
        for item in run.result.get("breaks") or []:
            key = (_norm(item["path"]), item["line"], item.get("gb"))
            brk = breaks.setdefault(key, Break(key[0], key[1], key[2], item.get("reason", "")))
            if run.label not in brk.examples:
                brk.examples.append(run.label)
        if run.status != "ok":
            # Its compiled run failed part-way: a line that ran eagerly and did not break proves
            # nothing, so its coverage does not count (its breaks, logged before the failure, do).
            continue
        for path, lines in (run.result.get("executed") or {}).items():
            executed.setdefault(_norm(path), set()).update(lines)
        skips.extend(_skips(run.result.get("frame_skips") or [], shape))
        for item in run.result.get("recompiles") or []:
            recompiles.append(dict(item, example=run.label, findings=[]))
    by_line: dict[tuple[str, int], list[Break]] = {}
    for brk in breaks.values():
        by_line.setdefault((brk.path, brk.line), []).append(brk)
    for skip in skips:
        # Without a name from Dynamo, the skipped frame is the function or, after an earlier break
        # in it, the resume function that starts at that break.
        earlier = [line for (path, line) in by_line if path == skip.path and line < skip.frame_line
                   and shape(path).function_at(line) == skip.function]
        skip.frame_start = skip.named_start or max(earlier, default=skip.function[0])

    out_findings = []
    for finding in findings:
        path = _norm(finding.path)
        rule = BY_CODE.get(finding.code)
        offset = getattr(rule, "runtime_line_offset", 0) if rule else 0
        is_recompile = getattr(rule, "category", "") == "recompile"
        if offset:
            lines = [shape(path).next_code_line(finding.end_line + offset)]
        else:
            lines = list(range(finding.line, min(finding.end_line, finding.line + 10) + 1))
        entry = {
            "code": finding.code, "path": _display(finding.path), "line": finding.line,
            "col": finding.col, "status": None, "gb": None, "runtime_reason": None,
            "static_gb": finding.gb, "runtime_line": lines[0] if offset else finding.line,
            "kind": "recompile" if is_recompile else "graph-break", "message": finding.full_message,
        }
        ran = any(line in executed.get(path, ()) for line in range(finding.line, finding.end_line + 1))
        if is_recompile:
            persistent = getattr(rule, "persistent", False)
            hits = [r for r in recompiles if _recompile_matches(path, finding.line, r, shape, persistent)]
            for rec in hits:
                rec["findings"].append(f"{finding.code}@{finding.line}")
            function = shape(path).function_at(shape(path).def_line(finding.line))
            if function is not None and shape(path).def_line(finding.line) != finding.line:
                # On a decorator: the hazard "ran" when the function's body did.
                ran = any(function[0] <= n <= function[1] for n in executed.get(path, ()))
            # A recompile hazard anywhere in a frame that runs eagerly never sets up a guard.
            skip = next((k for k in skips if k.path == path and k.function == function
                         and k.frame_start <= shape(path).def_line(finding.line)), None)
            if hits:
                best = next((r for r in hits if not r.get("expected")), hits[0])
                entry.update(status="confirmed", runtime_reason=best["reason"],
                             recompile={"trigger": best["trigger"], "example": best["example"]},
                             examples=sorted({r["example"] for r in hits}))
            elif ran and skip is not None:
                entry.update(status="shadowed", shadowed_by=_shadow_info(skip, by_line))
            else:
                entry["status"] = "not-confirmed" if ran else "not-reached"
            out_findings.append(entry)
            continue
        hits = [b for line in lines for b in by_line.get((path, line), [])]
        if hits:
            expected = set(rule.gb_ids()) if rule else set()
            best = next((b for b in hits if b.gb in expected), hits[0])
            for b in hits:
                b.matched_by.append(f"{finding.code}@{finding.line}")
            entry.update(status="confirmed", gb=best.gb, runtime_reason=best.reason,
                         runtime_line=best.line, examples=best.examples)
        elif ran:
            function = shape(path).function_at(finding.line)
            skip = next((k for k in skips if k.path == path and k.function == function
                         and k.frame_line < finding.line), None)
            if skip is not None:
                entry.update(status="shadowed", shadowed_by=_shadow_info(skip, by_line))
            else:
                entry["status"] = "not-confirmed"
        else:
            entry["status"] = "not-reached"
        out_findings.append(entry)

    runtime = []
    for brk in sorted(breaks.values(), key=lambda b: (b.path, b.line, b.gb or "")):
        runtime.append({
            "path": _display(brk.path), "line": brk.line, "gb": brk.gb, "reason": brk.reason,
            "matched": bool(brk.matched_by), "in_checked_file": brk.path in checked,
            "findings": brk.matched_by, "examples": brk.examples,
        })
    for rec in recompiles:
        if rec.get("path"):
            rec["path"] = _display(rec["path"])
    return {"findings": out_findings, "runtime_breaks": runtime, "recompiles": recompiles}


# --------------------------------------------------------------------------- output


STATUSES = ("confirmed", "not-confirmed", "shadowed", "not-reached")


def summary_rows(report: dict, runs: list[ExampleRun], sources: list[Source],
                 startup: dict[str, float] | None = None) -> list[dict]:
    rows: dict[str, dict] = {}

    def row(path: str) -> dict:
        return rows.setdefault(path, {"file": path, "examples": 0, "errors": 0, "seconds": 0.0, "startup": 0.0,
                                      **{s: 0 for s in STATUSES}, "missed": 0, "recompiles": 0,
                                      "unexpected_recompiles": 0})

    for source in sources:
        row(_display(source.path) if source.path else source.label)["startup"] += (startup or {}).get(source.label, 0.0)
    for run in runs:
        r = row(_display(run.source.path) if run.source.path else run.source.label)
        if run.index is not None:
            r["examples"] += 1
            r["seconds"] += run.seconds
        if run.status != "ok":
            r["errors"] += 1
    for finding in report["findings"]:
        row(finding["path"])[finding["status"]] += 1
    for brk in report["runtime_breaks"]:
        if brk["in_checked_file"] and not brk["matched"]:
            row(brk["path"])["missed"] += 1
    for rec in report["recompiles"]:
        path = rec.get("path") or "?"
        if path in rows:
            rows[path]["recompiles"] += 1
            rows[path]["unexpected_recompiles"] += 0 if rec.get("expected") else 1
    for r in rows.values():
        r["seconds"] = round(r["seconds"], 2)
        r["startup"] = round(r["startup"], 2)
    return sorted(rows.values(), key=lambda r: r["file"])


def write_text(report: dict, rows: list[dict], out) -> None:
    for f in report["findings"]:
        head = f"{f['path']}:{f['line']}:{f['col']}: {f['code']} {f['status']}"
        if f["status"] == "confirmed" and f["kind"] == "recompile":
            out.write(f"{head} (recompiled on {f['recompile']['trigger']}) {f['runtime_reason']}\n")
        elif f["status"] == "confirmed":
            at = "" if f["runtime_line"] == f["line"] else f" at line {f['runtime_line']}"
            out.write(f"{head} [{f['gb']}] {f['runtime_reason']}{at}\n")
        elif f["status"] == "shadowed":
            s = f["shadowed_by"]
            via = ("" if (s["frame_line"] == s["line"] and s["path"] == f["path"]) or s["frame_line"] <= s["function_line"]
                   else f" (reached from line {s['frame_line']})")
            inside = f" inside a {s['inside']}" if s["inside"] != "frame" else ""
            frame = f"{s['function']}()" + (f" from line {s['frame_start']} on" if s["frame_start"] > s["function_line"] else "")
            out.write(f"{head}: the break at {s['path']}:{s['line']} [{s['gb']}]{via}{inside} made Dynamo "
                      f"run {frame} eagerly; this line never reached the compiler\n")
        elif f["status"] == "not-confirmed" and f["kind"] == "recompile":
            out.write(f"{head}: the line ran and no recompile traced back to it\n")
        elif f["status"] == "not-confirmed":
            out.write(f"{head}: the line ran and nothing broke there (expected {f['static_gb']})\n")
        else:
            out.write(f"{head}: the line never ran in the examples\n")
    for brk in report["runtime_breaks"]:
        if brk["in_checked_file"] and not brk["matched"]:
            out.write(f"{brk['path']}:{brk['line']}: missed [{brk['gb']}] {brk['reason']} "
                      f"(in {', '.join(brk['examples'][:3])})\n")
    outside = [b for b in report["runtime_breaks"] if not b["in_checked_file"]]
    for brk in outside:
        out.write(f"{brk['path']}:{brk['line']}: break outside the checked files [{brk['gb']}] {brk['reason']}\n")
    unexpected = [r for r in report["recompiles"] if not r.get("expected")]
    expected = len(report["recompiles"]) - len(unexpected)
    if report["recompiles"]:
        out.write(f"\nrecompiles: {len(report['recompiles'])} ({expected} by design: first batch change, "
                  "train/eval toggle)\n")
        for r in unexpected:
            out.write(f"  {r.get('path')}:{r.get('line')} {r.get('function')}() on {r['trigger']} "
                      f"[{r['example']}]: {r['reason']}\n")
    bad = [e for e in report["examples"] if e["status"] != "ok" or e.get("recompile_error") or e.get("warning")]
    if bad:
        out.write("\nexamples with problems:\n")
        for e in bad:
            if e["status"] != "ok":
                out.write(f"  {e['name']}: {e['status']}: {e['error']}\n")
                continue
            if e.get("warning"):
                out.write(f"  {e['name']}: warning: {e['warning']}\n")
            if e.get("recompile_error"):
                out.write(f"  {e['name']}: recompile check failed: {e['recompile_error']}\n")
    columns = ("examples", "errors", "seconds", "startup", *STATUSES, "missed", "recompiles")
    width = max([len(r["file"]) for r in rows] + [5])

    def line(name, values) -> str:
        cells = "".join(f" {values[c]:>{max(len(c), 7)}}" for c in columns)
        return name.ljust(width) + cells + "\n"

    out.write("\n" + line("file", {c: c for c in columns}))
    totals = {c: 0 for c in columns}
    for r in rows:
        out.write(line(r["file"], r))
        for c in columns:
            totals[c] += r[c]
    totals["seconds"] = round(totals["seconds"], 2)
    totals["startup"] = round(totals["startup"], 2)
    out.write(line("total", totals))
    env = report["environment"]
    out.write(f"torch {env['torch']} on {env['device']}, backend {env['backend']}, mode {env['mode']}: "
              f"{env['examples']} examples in {env['wall_seconds']:.1f}s wall, jobs {env['jobs']}\n")


# --------------------------------------------------------------------------- the command


def cmd_verify(args: argparse.Namespace) -> int:
    try:
        return _verify(args)
    except UsageError as exc:
        sys.stderr.write(f"tcl verify: {exc}\n")
        return EXIT_USAGE


def _static(args, paths: list[str], device: str):
    from .config import Config, find_pyproject, load
    from .runner import run

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
         "recompile_error": run.result.get("recompile_error"), "warning": run.result.get("warning")}
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
    }
    report["errors"] = [str(error) for error in static.all_errors]
    rows = summary_rows(report, runs, sources, runner.startup)
    report["summary"] = rows
    if args.format == "json":
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        write_text(report, rows, sys.stdout)
    for error in report["errors"]:
        sys.stderr.write(f"{error}\n")
    problems = (
        any(f["status"] == "not-confirmed" for f in report["findings"])
        or any(b["in_checked_file"] and not b["matched"] for b in report["runtime_breaks"])
        or any(e["status"] != "ok" for e in report["examples"])
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
