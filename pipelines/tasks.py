"""One function run over many items, in this process or as Ray tasks: the only Ray task code of every job.

Items are numbered (`(index, item)` pairs) so results can be put back in order whatever order Ray finishes
them in; `on_done(index, item, result)` always runs in this process, as each item finishes.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Sequence

from dataaudit.errors import DataAuditError
from dataaudit.pipelines.engine import EngineOptions
from dataaudit.pipelines.lanes import WorkerDied, run_in_lanes
from dataaudit.pipelines.ray_session import ray_init
from dataaudit.pipelines.run_record import package_version


class NodeMismatch(DataAuditError):
    """A Ray node that cannot run this job's code: dataaudit missing there, or another version of it."""


MAX_RETRIES = 3   # a Ray task whose worker process dies (OOM kill, node lost) is run again up to this many times


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
        run_in_lanes(pending, task, args, kwargs, on_done, workers)
        return
    if on_batch is not None:
        kwargs = {**kwargs, "on_batch": on_batch}
    for index, item in pending:
        on_done(index, item, task(item, *args, **kwargs))


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

    # SPREAD: the units go to every node in turn. Ray's default packs the node the command runs on first and queues
    # there what it cannot start: on a 2-node cluster of 1 CPU each, 13 units split 5/8, 1/12, 5/8, 3/10 (5.2-7.0 s)
    # against 6/7 spread (4.6-4.8 s).
    remote = run_one.options(scheduling_strategy="SPREAD")
    refs = [ray.put(a) for a in args]     # shared inputs (config, index) go to the object store once
    queue = iter(pending)
    limit = workers or len(pending)
    futures: dict = {}
    # At most `limit` items in flight: bounded driver memory, and a worker count the user controls.
    while True:
        for index, item in queue:
            futures[remote.remote(item, *refs)] = (index, item)
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
