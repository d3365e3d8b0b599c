"""One function run over many items, in this process or as Ray tasks: the only Ray task code of every job.

Items are numbered (`(index, item)` pairs) so results can be put back in order whatever order Ray finishes
them in; `on_done(index, item, result)` always runs in this process, as each item finishes.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from dataaudit.pipelines.ray_session import ray_init


def run_tasks(pending: Sequence[tuple[int, Any]], task: Callable, args: tuple,
              on_done: Callable[[int, Any, Any], None], *, engine: str, ray_address: str | None = None,
              workers: int | None = None, on_batch: Callable[[int], None] | None = None, **kwargs) -> None:
    """`task(item, *args, **kwargs)` for every pending item, in this process (`engine="local"`, told
    `on_batch=on_batch` as well when given) or one Ray task each (`engine="ray"`; `workers` caps the tasks in
    flight, default all)."""
    if not pending:
        return
    if engine == "ray":
        _run_on_ray(pending, task, args, kwargs, on_done, ray_address, workers)
        return
    if on_batch is not None:
        kwargs = {**kwargs, "on_batch": on_batch}
    for index, item in pending:
        on_done(index, item, task(item, *args, **kwargs))


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
