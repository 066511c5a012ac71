"""Running examples: where they come from (``--example`` specs, files that define ``tcl_examples()``,
``--replay`` recordings), which device they run on, and the `Runner` that hands them to child
processes (`tcl.verify.child`, fresh interpreters started with subprocess: CUDA does not survive
fork).  One child runs all examples of one source: Dynamo's warm-up (2-3 s) is paid once per
source, ``torch._dynamo.reset()`` and deep copies of module targets separate the examples, and a
source's module-level state cannot leak into another source's.  Isolation goes down to one
example only where needed: an example that segfaults, hangs past ``--timeout`` (per example; the
import and ``tcl_examples()`` call get max(timeout, 120 s)), is killed for memory or hits a CUDA
error that poisons the context gets that error, and a new child runs the source's remaining
examples.  ``--jobs N`` runs N sources at once (each worker pinned with CUDA_VISIBLE_DEVICES when
there are several GPUs); for ``--shard`` one child first counts every source's examples.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..safe_files import open_new, read_regular
from .common import UsageError, _display, _norm

# Importing torch, the checked file and calling its examples function is not one example's work:
# it gets its own allowance, at least this long.
LOAD_ALLOWANCE = 120.0
POLL = 0.05
TCL_ROOT = str(Path(__file__).resolve().parent.parent.parent)  # the directory that holds tcl/
_DEFINES_EXAMPLES = re.compile(r"^def\s+tcl_examples\s*\(", re.MULTILINE)


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
                    [sys.executable, "-m", "tcl.verify.child", stem + ".job.json"],
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
                "recompiles": True, "timeout": getattr(self.args, "timeout", None)}

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
            persistent = sum(1 for r in recompiles if r.get("persistent"))
            detail = f"ok, {len(result.get('breaks') or [])} breaks, {len(recompiles)} recompiles"
            if real:
                detail += f" ({real} unexpected, {persistent} persistent)"
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
