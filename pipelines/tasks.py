"""One function run over many items, in this process or as Ray tasks: the only Ray task code of every job.

Items are numbered (`(index, item)` pairs) so results can be put back in order whatever order Ray finishes
them in; `on_done(index, item, result)` always runs in this process, as each item finishes.
"""
from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, Callable, Sequence

from dataaudit.pipelines.ray_session import ray_init


def run_tasks(pending: Sequence[tuple[int, Any]], task: Callable, args: tuple,
              on_done: Callable[[int, Any, Any], None], *, engine: str, ray_address: str | None = None,
              workers: int | None = None, on_batch: Callable[[int], None] | None = None, processes: bool = False,
              **kwargs) -> None:
    """`task(item, *args, **kwargs)` for every pending item, in this process (`engine="local"`, told
    `on_batch=on_batch` as well when given) or one Ray task each (`engine="ray"`; `workers` caps the tasks in
    flight, default all). With `processes` and `workers` > 1 the local engine runs `workers` items at once in
    worker processes (task and args must pickle; progress then comes per item, as on Ray)."""
    if not pending:
        return
    if engine == "ray":
        _run_on_ray(pending, task, args, kwargs, on_done, ray_address, workers)
        return
    if processes and workers and workers > 1 and len(pending) > 1:
        _run_in_processes(pending, task, args, kwargs, on_done, workers)
        return
    if on_batch is not None:
        kwargs = {**kwargs, "on_batch": on_batch}
    for index, item in pending:
        on_done(index, item, task(item, *args, **kwargs))


def _run_in_processes(pending, task, args, kwargs, on_done, workers) -> None:
    # spawn, not fork: a forked child would inherit Arrow's and numba's thread pools in whatever state they are
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(workers, len(pending)), mp_context=context) as pool:
        futures = {pool.submit(task, item, *args, **kwargs): (index, item) for index, item in pending}
        for future in as_completed(futures):
            index, item = futures[future]
            on_done(index, item, future.result())


def _run_on_ray(pending, task, args, kwargs, on_done, ray_address, workers) -> None:
    ray = ray_init(ray_address)

    # max_retries: a worker that dies mid-task gets its item redone elsewhere, not a failed job.
    @ray.remote(max_retries=3)
    def run_one(item, *args):
        return task(item, *args, **kwargs)

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
        on_done(index, item, ray.get(done[0]))
