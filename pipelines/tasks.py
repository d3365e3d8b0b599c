"""One function run over many items, in this process or as Ray tasks: the only Ray task code of every job.

Items are numbered (`(index, item)` pairs) so results can be put back in order whatever order Ray finishes
them in; `on_done(index, item, result)` always runs in this process, as each item finishes.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections import Counter, deque
from contextlib import contextmanager
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Sequence

from dataaudit.errors import DataAuditError
from dataaudit.pipelines.engine import EngineOptions
from dataaudit.pipelines.ray_session import ray_init
from dataaudit.pipelines.run_record import package_version


class NodeMismatch(DataAuditError):
    """A Ray node that cannot run this job's code: dataaudit missing there, or another version of it."""


MAX_RETRIES = 3   # a Ray task whose worker process dies (OOM kill, node lost) is run again up to this many times


class WorkerDied(DataAuditError):
    """A worker process or Ray worker died under a unit (the system killed it): one line naming the unit."""


def run_tasks(pending: Sequence[tuple[int, Any]], task: Callable, args: tuple,
              on_done: Callable[[int, Any, Any], None], *, engine: str, options: EngineOptions = EngineOptions(),
              on_batch: Callable[[int], None] | None = None, processes: bool = False, nodes: Counter | None = None,
              **kwargs) -> None:
    """`task(item, *args, **kwargs)` for every pending item, in this process (`engine="local"`, told
    `on_batch=on_batch` as well when given) or one Ray task each (`engine="ray"`, on the cluster at
    `options.address`; `options.workers` caps the tasks in flight, default all; `nodes` counts the items each Ray
    node ran, by node id). With `processes` and `workers` > 1 the local engine runs `workers` items at once, in this
    process and workers - 1 worker processes (task and args must pickle; progress then comes per item, as on Ray)."""
    if not pending:
        return
    workers = options.workers
    if engine == "ray":
        _run_on_ray(pending, task, args, kwargs, on_done, options.address, workers,
                    Counter() if nodes is None else nodes)
        return
    if processes and workers and workers > 1 and len(pending) > 1:
        _run_in_processes(pending, task, args, kwargs, on_done, workers)
        return
    if on_batch is not None:
        kwargs = {**kwargs, "on_batch": on_batch}
    for index, item in pending:
        on_done(index, item, task(item, *args, **kwargs))


def _run_in_processes(pending, task, args, kwargs, on_done, workers) -> None:
    """`workers` lanes: this process and workers - 1 worker processes, each taking the next item when it is free.
    This process starts at once, while a spawned worker spends about a second importing before its first item."""
    # spawn, not fork: a forked child would inherit Arrow's and numba's thread pools in whatever state they are
    context = multiprocessing.get_context("spawn")
    queue = deque(pending)
    lock = threading.Lock()
    futures: dict = {}
    size = min(workers - 1, len(pending) - 1)
    with ProcessPoolExecutor(max_workers=size, mp_context=context, initializer=_worker_start,
                             initargs=(os.getpid(),)) as pool:
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


def _worker_start(parent: int) -> None:
    """A worker process's first step: Ctrl-C is the parent's to handle (it stops the workers; no traceback from
    each), and the worker exits when its parent is gone (killed, even with SIGKILL), never left orphaned."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})   # a Ctrl-C held since the start is dropped
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True, name="parent-watch").start()


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


def _run_on_ray(pending, task, args, kwargs, on_done, ray_address, workers, nodes: Counter) -> None:
    ray = ray_init(ray_address)
    from ray.exceptions import RayError, RayTaskError

    here = package_version()

    # max_retries: a worker that dies mid-task gets its item redone elsewhere, not a failed job. The node that ran
    # it comes back with the result: the run record says where a job ran. Every node runs its own installed
    # dataaudit (nothing is shipped): one of another version would write other results under this one's name.
    @ray.remote(max_retries=MAX_RETRIES)
    def run_one(item, *args):
        from dataaudit.pipelines.run_record import package_version as installed

        node = ray.get_runtime_context().get_node_id()
        if installed() != here:
            raise NodeMismatch(f"Ray node {node} has dataaudit {installed()}, this machine {here}: install the "
                               "same version on every node of the cluster")
        return node, task(item, *args, **kwargs)

    refs = [ray.put(a) for a in args]     # shared inputs (config, index) go to the object store once
    queue = iter(pending)
    limit = workers or len(pending)
    futures: dict = {}
    # At most `limit` items in flight: bounded driver memory, and a worker count the user controls.
    while True:
        for index, item in queue:
            futures[run_one.remote(item, *refs)] = (index, item)
            if len(futures) >= limit:
                break
        if not futures:
            return
        done, _ = ray.wait(list(futures), num_returns=1)
        index, item = futures.pop(done[0])
        try:
            node, result = ray.get(done[0])
        except RayTaskError as exc:   # the task's own error (a one-line DataAuditError, an OSError), not Ray's text
            cause = getattr(exc, "cause", None)
            if _import_failed(cause):   # a node without dataaudit (or one of its dependencies)
                why = str(cause).strip().splitlines()[-1][:300]
                raise NodeMismatch(f"{item}: a Ray worker could not load the job's code ({why}): every node of the "
                                   "cluster needs dataaudit installed, the same version as here") from None
            if isinstance(cause, Exception):
                raise cause from None
            raise WorkerDied(f"{item}: {' '.join(str(exc).split())[:500]}") from None
        except RayError as exc:   # a worker that died every retry, an object lost with its node
            raise WorkerDied(f"{item}: Ray could not run it: {type(exc).__name__}: "
                             f"{' '.join(str(exc).split())[:500]}") from None
        nodes[node] += 1
        on_done(index, item, result)


def _import_failed(cause) -> bool:
    """Ray's error for a task whose code the worker could not import (it wraps the ImportError in a RuntimeError
    of its own when the function itself fails to load)."""
    return isinstance(cause, ImportError) or (isinstance(cause, RuntimeError) and
                                              "failed to import on the worker" in str(cause))
