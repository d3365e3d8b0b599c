"""What the audit, dedup and contamination jobs share, kept light (importing it loads neither torch nor the
checks): the engine choice and the version recorded in reports."""
from __future__ import annotations

import os
from typing import Sequence

LOCAL_MAX_BYTES = 512 * 2**20   # auto engine: below this much input, starting Ray costs more than it saves


def choose_engine(paths: Sequence[str], engine: str, ray_address: str | None) -> str:
    """"local" or "ray": as asked, else Ray when an address is given or the input is large and in several shards."""
    if engine != "auto":
        return engine
    if ray_address:
        return "ray"
    total = sum(os.path.getsize(p) for p in paths if os.path.exists(p))
    return "local" if total < LOCAL_MAX_BYTES or len(paths) < 2 else "ray"


def package_version() -> str:
    """The installed dataaudit version ("unknown" when it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("dataaudit")
    except PackageNotFoundError:
        return "unknown"


def ray_init(ray_address: str | None):
    """Join the cluster at `ray_address`, or start a local Ray (a no-op when Ray is already up); returns `ray`."""
    import ray

    if not ray.is_initialized():
        ray.init(address=ray_address, include_dashboard=False, log_to_driver=False, configure_logging=False)
    return ray


def _run_ray(pending, stage, args, on_done, ray_address, workers):
    ray = ray_init(ray_address)

    # max_retries: a worker that dies mid-shard gets its shard redone elsewhere, not a failed job.
    @ray.remote(max_retries=3)
    def unit_task(path, *args):
        return stage(path, *args)

    refs = [ray.put(a) for a in args]     # shared inputs (config, index) go to the object store once
    queue = list(pending)
    limit = workers or len(queue)
    futures: dict = {}
    # At most `limit` shards in flight: bounded driver memory, and a worker count the user controls.
    while queue or futures:
        while queue and len(futures) < limit:
            index, path = queue.pop(0)
            futures[unit_task.remote(path, *refs)] = (index, path)
        done, _ = ray.wait(list(futures), num_returns=1)
        index, path = futures.pop(done[0])
        on_done(index, path, *ray.get(done[0]))


def run_units(paths: Sequence[str], store, stage, args: tuple, *, engine: str, count: str,
              ray_address: str | None = None, workers: int | None = None, on_progress=None) -> tuple[list, int]:
    """Run `stage(path, *args, on_batch=None) -> (summary, table)` on every shard not finished in `store`.

    `store.load(index, path)` gives a finished shard's summary (None if unfinished) and `store.save(index, path,
    summary, table)` records one: reruns skip finished shards. `on_progress(shards_done, done)` is told as work
    finishes, `done` summing the summaries' `count` field (per batch in-process, per shard on Ray). Returns the
    summaries in shard order and how many shards were resumed from `store`.
    """
    summaries: dict[int, dict] = {}
    pending = []
    for index, path in enumerate(paths):
        done = store.load(index, path)
        if done is None:
            pending.append((index, path))
        else:
            summaries[index] = done
    # Finished shards, plus what the shard under way has counted batch by batch (in-process engine).
    counted = {"finished": sum(s[count] for s in summaries.values()), "current": 0}

    def tell():
        if on_progress:
            on_progress(len(summaries), counted["finished"] + counted["current"])

    def on_rows(rows):
        counted["current"] += rows
        tell()

    def on_done(index, path, summary, table):
        store.save(index, path, summary, table)
        summaries[index] = summary
        counted["finished"] += summary[count]
        counted["current"] = 0
        tell()

    tell()
    if pending and engine == "ray":
        _run_ray(pending, stage, args, on_done, ray_address, workers)
    else:
        for index, path in pending:
            on_done(index, path, *stage(path, *args, on_batch=on_rows))
    return [summaries[i] for i in range(len(paths))], len(paths) - len(pending)
