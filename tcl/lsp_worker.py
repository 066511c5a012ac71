"""The language server's analysis thread: bounded, interruptible work off the event loop.

The server reads messages on its event loop; analysing a document (parse, walk, fixes) runs
here, on one thread, one job at a time, so that a long analysis never leaves a request, a
shutdown or a newer edit unread. A job runs under a wall-clock budget; past it, or when the
document it analyses has changed since (a newer edit supersedes it), the job is interrupted
by an exception raised in this thread (CPython's PyThreadState_SetAsyncExc, checked between
bytecodes: libcst's native parser finishes the statement it is in first). Both exceptions are
BaseExceptions, which the engine lets through as it does `tcl check`'s timeout.
"""

from __future__ import annotations

import asyncio
import ctypes
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, TypeVar

T = TypeVar("T")


class Superseded(BaseException):
    """The document changed while it was being analysed: the result would be stale."""


class OverBudget(BaseException):
    """The job ran past its wall-clock budget."""


class _Job:
    def __init__(self, key: str, started: asyncio.Future) -> None:
        self.key = key
        self.started = started  # resolved from the analysis thread when the job begins
        self.thread: int | None = None
        self.pending: type[BaseException] | None = None  # interrupted before it started
        self.done = False


class AnalysisWorker:
    def __init__(self, budget_s: float) -> None:
        self.budget_s = budget_s
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tcl-analysis")
        self._lock = threading.Lock()
        self._jobs: set[_Job] = set()  # submitted and not finished

    async def run(self, key: str, work: Callable[[], T]) -> T:
        """`work()` on the analysis thread; raises OverBudget or Superseded if interrupted."""
        loop = asyncio.get_running_loop()
        job = _Job(key, loop.create_future())
        with self._lock:
            self._jobs.add(job)
        timer = None
        try:
            future = loop.run_in_executor(self._executor, self._call, job, work, loop)
            # The budget counts from the job's start, not from when it was queued.
            await asyncio.wait([job.started, future], return_when=asyncio.FIRST_COMPLETED)
            timer = loop.call_later(self.budget_s, self.interrupt, job, OverBudget)
            return await future
        finally:
            if timer is not None:
                timer.cancel()
            with self._lock:
                self._jobs.discard(job)

    def supersede(self, key: str) -> None:
        """Interrupt every job for `key` (a document's URI), running or waiting."""
        with self._lock:
            jobs = [job for job in self._jobs if job.key == key]
        for job in jobs:
            self.interrupt(job, Superseded)

    def interrupt(self, job: _Job, error: type[BaseException]) -> None:
        with self._lock:
            if job.done:
                return
            if job.thread is None:
                job.pending = error
                return
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(job.thread), ctypes.py_object(error))

    def _call(self, job: _Job, work: Callable[[], T], loop: asyncio.AbstractEventLoop) -> T:
        try:
            with self._lock:
                if job.pending is not None:
                    raise job.pending()
                job.thread = threading.get_ident()
            loop.call_soon_threadsafe(_set, job.started)
            return work()
        finally:
            # After `done`, no interrupt is sent; one sent just before lands here, and is moot.
            while True:
                try:
                    with self._lock:
                        job.done = True
                    break
                except (Superseded, OverBudget):
                    continue

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)


def _set(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)
