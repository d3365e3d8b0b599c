"""The local engine's lanes: this process and N - 1 spawned worker processes share a job's items, each taking the
next item when it is free.

A worker spends about a second starting (the interpreter, the job's code, the imports its first item makes). A
command that knows early it will run in lanes starts them at once (`early_lanes`): their start-up then runs on the
cores that the command's own start-up (imports, listing, planning: most of a second) leaves idle, instead of taking
a core from this process's first items.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections import deque
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Callable

from dataaudit.errors import DataAuditError


class WorkerDied(DataAuditError):
    """A worker process or Ray worker died under a unit (the system killed it): one line naming the unit."""


@dataclass
class _Early:
    pool: ProcessPoolExecutor
    workers: int


_EARLY: list[_Early] = []   # the workers `early_lanes` started, while its block runs


def _new_pool(workers: int, warm: Callable[[], None] | None) -> ProcessPoolExecutor:
    # spawn, not fork: a forked child would inherit Arrow's and numba's thread pools in whatever state they are
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_worker_start, initargs=(os.getpid(), warm))


@contextmanager
def early_lanes(lanes: int, warm: Callable[[], None] | None = None):
    """Start the `lanes - 1` worker processes of a job's lanes now; `run_in_lanes` within the block uses them. Each
    worker runs `warm` (a module-level function: the imports its first item would make) as it starts. Nothing is
    started for fewer than two lanes. The workers stop when the block ends (at once if still starting: a job that
    turned out to need no lanes, everything resumed, an error)."""
    if lanes < 2:
        yield
        return
    early = _Early(_new_pool(lanes - 1, warm), lanes - 1)
    try:   # a Ctrl-C held back below arrives as the block is left: the workers are stopped all the same
        with _sigint_blocked():   # as in run_in_lanes: the workers start with Ctrl-C held back
            for _ in range(early.workers):   # spawn starts a worker on each submit while none is idle
                early.pool.submit(_started)
        _EARLY.append(early)
        yield
    finally:
        if early in _EARLY:
            _EARLY.remove(early)
        _stop_workers(early.pool)


def _started() -> None:
    """The no-op that makes an early worker start."""


def run_in_lanes(pending, task, args, kwargs, on_done, workers) -> None:
    """`workers` lanes: this process and workers - 1 worker processes (the early ones when `early_lanes` started
    enough, else new ones), each taking the next item when it is free. This process starts at once."""
    queue = deque(pending)
    lock = threading.Lock()
    futures: dict = {}
    size = min(workers - 1, len(pending) - 1)
    early = next((e.pool for e in reversed(_EARLY) if e.workers >= size), None)
    with ExitStack() as stack:
        # new workers are shut down here; early ones stay for the rest of their block
        pool = early or stack.enter_context(_new_pool(size, None))

        def submit_next(_done=None) -> None:   # one item per worker at a time: the rest is for whoever is free
            with lock:   # taking an item and recording its future are one step (the wait below sees every one)
                if not queue:
                    return
                index, item = queue.popleft()
                try:
                    future = pool.submit(task, item, *args, **kwargs)
                except RuntimeError:   # the pool is broken or shut down: the item stays for this process
                    queue.appendleft((index, item))
                    return
                futures[future] = (index, item)
            future.add_done_callback(submit_next)

        def finish(future) -> None:   # results are recorded in this thread, as they come
            with lock:
                index, item = futures.pop(future)
            try:
                result = future.result()
            except BrokenProcessPool:
                raise WorkerDied(f"{item}: a worker process died while on it (killed by the system: out of "
                                 "memory?); a rerun with the same --out keeps the finished shards") from None
            on_done(index, item, result)

        try:
            with _sigint_blocked():   # the workers start with Ctrl-C held back, until their first step ignores it
                for _ in range(size):
                    submit_next()
            while True:
                with lock:
                    nxt = queue.popleft() if queue else None
                if nxt is None:
                    break
                on_done(nxt[0], nxt[1], task(nxt[1], *args, **kwargs))
                for future in [f for f in _snapshot(futures, lock) if f.done()]:
                    finish(future)
            while futures:
                for future in as_completed(_snapshot(futures, lock)):
                    finish(future)
        except BaseException:
            with lock:   # no new item for the workers while the error unwinds
                queue.clear()
            _stop_workers(pool)   # an interrupted or failed job does not wait for the shards under way
            raise


@contextmanager
def _sigint_blocked():
    """SIGINT blocked in this thread (and in the threads and processes started meanwhile: the pool's manager thread,
    which starts the later workers, and the spawned workers, which inherit the mask across exec): a Ctrl-C while a
    worker still imports is held, then dropped by `_worker_start`, never a traceback. This process gets it as it
    leaves the block."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _worker_start(parent: int, warm: Callable[[], None] | None = None) -> None:
    """A worker process's first step: Ctrl-C is the parent's to handle (it stops the workers; no traceback from
    each), and the worker exits when its parent is gone (killed, even with SIGKILL), never left orphaned. Then
    `warm`, whose failure is left for the first item to meet and report (a broken pool would say less)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})   # a Ctrl-C held since the start is dropped
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True, name="parent-watch").start()
    if warm is not None:
        try:
            warm()
        except Exception:   # noqa: BLE001  (only a head start: the item that needs it fails with its own error)
            pass


def _exit_with_parent(parent: int, every: float = 0.5) -> None:
    while os.getppid() == parent:
        time.sleep(every)
    os._exit(1)


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """End the workers now (no public way: their shards are abandoned, not awaited), then shut the pool down
    waiting for its manager thread, which sees them gone at once (not waiting leaves it to race the exit)."""
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        if process.is_alive():
            process.terminate()
    pool.shutdown(wait=True, cancel_futures=True)


def _snapshot(futures: dict, lock) -> list:
    with lock:   # the workers' callbacks add futures from another thread
        return list(futures)
