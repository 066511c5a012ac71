"""Per-file limits on time and memory: the wall-clock timer of `tcl check`, and the child process
that bounds one file's `tcl fix`.

`time_limit` raises AnalysisTimeout in the main thread after N seconds of wall-clock time
(ITIMER_REAL), so a read that blocks fires as surely as a slow analysis; native code (libcst's
parser) is interrupted when it returns to Python, which the pre-parse guards (tcl/guards.py)
keep short. An exception raised by the timer can be masked by code it interrupts (libcst's
position codegen turns it into a KeyError in a context manager's exit): `interruption` finds it
in the chain, so a timeout is reported as one. `run_bounded` runs a function in a forked child
with an address-space limit (RLIMIT_AS) and a deadline after which the child is killed: a fix
that loops, grows without bound or crashes natively costs that file, not the run.
"""

from __future__ import annotations

import faulthandler
import os
import pickle
import select
import signal
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator


class AnalysisTimeout(BaseException):
    """Raised by the timer signal in the process analysing a file. A BaseException, so that no
    `except Exception` inside the analyzer swallows it."""


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise AnalysisTimeout after `seconds` of wall-clock time. POSIX main thread only;
    elsewhere no limit. A timer already running (an outer limit, pytest-timeout) is resumed
    afterwards with what was left of it."""
    if (
        not seconds or seconds <= 0 or not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
    ):
        yield
        return

    def expired(signum, frame):
        raise AnalysisTimeout()

    previous = signal.signal(signal.SIGALRM, expired)
    started = time.monotonic()
    outer, outer_interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)
        finally:
            signal.signal(signal.SIGALRM, previous)
            if outer:
                left = outer - (time.monotonic() - started)
                signal.setitimer(signal.ITIMER_REAL, max(left, 0.001), outer_interval)


def interruption(exc: BaseException) -> BaseException | None:
    """The AnalysisTimeout or KeyboardInterrupt behind `exc`, if code it interrupted raised
    something else on the way out (`finally`, `__exit__`)."""
    seen = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, (AnalysisTimeout, KeyboardInterrupt)):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


# -- one file's work in a child process -------------------------------------------------------
DEEP_STACK_BYTES = 256 * 2**20  # the child's worker thread: deep trees under a raised recursion limit
DEEP_RECURSION_LIMIT = 20_000  # Python frames; libcst's visitors take ~3 per nesting level


@dataclass
class Bounded:
    """What became of `run_bounded(fn, ...)`: kind is "ok" (value is fn's result), "timeout",
    "memory" (the address-space limit was hit), "crash" (the child died: detail says how) or
    "error" (fn raised: detail is the exception in one line)."""

    kind: str
    value: Any = None
    detail: str = ""


def isolation_available() -> bool:
    return hasattr(os, "fork") and sys.platform != "win32"


def run_bounded(fn: Callable[[], Any], timeout: float | None, memory_mb: int | None) -> Bounded:
    """fn() in a forked child (which inherits everything, so fn needs no pickling; its result
    must pickle), killed after `timeout` wall-clock seconds, with `memory_mb` MiB more address
    space than the parent has. Without fork: fn() here, under time_limit only."""
    if not isolation_available():
        return _run_here(fn, timeout)
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except OSError:  # no process to be had (a process limit, no memory): here, under the alarm
        os.close(read_end)
        os.close(write_end)
        return _run_here(fn, timeout)
    if pid == 0:  # the child: never returns
        os.close(read_end)
        _child(fn, write_end, memory_mb)
    os.close(write_end)
    deadline = time.monotonic() + timeout if timeout else None
    chunks: list[bytes] = []
    timed_out = finished = False
    try:
        while True:
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([read_end], [], [], wait)
            if not ready:
                continue
            chunk = os.read(read_end, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        finished = True
    finally:
        os.close(read_end)
        if timed_out or not finished:  # over time, or Ctrl-C here: the child goes too
            _kill(pid)
        _, status = os.waitpid(pid, 0)
    if timed_out:
        return Bounded("timeout")
    try:
        return pickle.loads(b"".join(chunks))
    except Exception:
        pass
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        name = signal.Signals(number).name if number in signal.Signals._value2member_map_ else str(number)
        if number in (signal.SIGKILL, signal.SIGABRT) and memory_mb:
            return Bounded("memory", detail=f"killed by {name}")
        return Bounded("crash", detail=f"killed by {name}")
    return Bounded("crash", detail=f"exited with status {os.WEXITSTATUS(status) if os.WIFEXITED(status) else status}")


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _child(fn: Callable[[], Any], write_end: int, memory_mb: int | None) -> None:
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
        quiet = os.open(os.devnull, os.O_WRONLY)  # the result goes through the pipe; a native
        os.dup2(quiet, 1)  # abort's message ("memory allocation of 64 bytes failed") is not
        os.dup2(quiet, 2)  # tcl's output: the parent reports it in one line
        faulthandler.disable()  # nor is a traceback dump of the child (pytest enables it)
        _limit_memory(memory_mb)
        outcome = _in_deep_thread(fn)
        try:
            data = pickle.dumps(outcome)
        except MemoryError:
            data = pickle.dumps(Bounded("memory"))
        except Exception as exc:
            data = pickle.dumps(Bounded("error", detail=_one_line(exc)))
        view = memoryview(data)
        while view:
            view = view[os.write(write_end, view):]
    except BaseException:
        code = 1
    finally:
        os._exit(code)  # no atexit handlers, no flushing of the parent's buffered output


def _limit_memory(memory_mb: int | None) -> None:
    if not memory_mb:
        return
    try:
        import resource

        with open("/proc/self/statm") as statm:  # the address space already in use
            used = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        limit = used + memory_mb * 2**20
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ImportError, OSError, ValueError, AttributeError):
        pass  # no /proc or no RLIMIT_AS (macOS): the deadline still bounds the child


def _in_deep_thread(fn: Callable[[], Any]) -> Bounded:
    """fn() under a raised recursion limit, in a thread whose stack can hold it: libcst's
    visitors recurse per nesting level, so a tree Python compiles can still exhaust 1,000."""
    outcome: list[Bounded] = []

    def work() -> None:
        try:
            outcome.append(Bounded("ok", fn()))
        except MemoryError:
            outcome.append(Bounded("memory"))
        except BaseException as exc:
            outcome.append(Bounded("error", detail=_one_line(exc)))

    try:
        threading.stack_size(DEEP_STACK_BYTES)
        sys.setrecursionlimit(max(sys.getrecursionlimit(), DEEP_RECURSION_LIMIT))
        thread = threading.Thread(target=work, name="tcl-fix", daemon=True)
        thread.start()
        thread.join()
    except (ValueError, RuntimeError, MemoryError):  # no settable stack, or no memory for it
        if not outcome:
            work()
    return outcome[0] if outcome else Bounded("error", detail="worker thread ended without a result")


def _run_here(fn: Callable[[], Any], timeout: float | None) -> Bounded:
    try:
        with time_limit(timeout):
            return Bounded("ok", fn())
    except AnalysisTimeout:
        return Bounded("timeout")
    except MemoryError:
        return Bounded("memory")
    except Exception as exc:
        stop = interruption(exc)
        if isinstance(stop, AnalysisTimeout):
            return Bounded("timeout")
        if stop is not None:
            raise stop from None
        return Bounded("error", detail=_one_line(exc))


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if len(text) > 300:
        text = text[:297] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
