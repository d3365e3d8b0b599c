"""The shard runner of every job: each shard not finished in the part store goes through the job's stage (in
this process or on Ray), its result is saved as soon as it finishes, progress is told as work goes.

A stage is `stage(path, *args, on_batch=None, handler=...) -> (summary dict, table)`; the summary counts the
shard's records in `records`. `handler` is the job's error policy for a shard that cannot be read
(`dataaudit.handlers`), passed on to the stage's shard loop.
"""
from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Callable, Sequence

from dataaudit.errors import DataAuditError
from dataaudit.io import fingerprint
from dataaudit.pipelines.engine import EngineOptions, local_workers
from dataaudit.pipelines.tasks import run_tasks


class ShardFailed(DataAuditError):
    """A shard's stage failed outside what its shard loop isolates (the job's error policy re-raised, or the stage
    broke before reading): one line naming the shard."""


@dataclass(frozen=True)
class _Unit:
    """The stage as the runner runs it, wherever that is (a class, not a closure: it pickles for worker processes
    and Ray). It records the shard's fingerprint before reading it (unless the stage records its own), so a rerun
    can tell a changed shard from its part, and turns an error that escaped the stage into one line naming the
    shard."""

    stage: Callable
    fingerprints: bool

    def __call__(self, path, *args, **kwargs):
        fp = None
        if self.fingerprints:
            try:
                fp = fingerprint(path)
            except OSError:
                fp = None      # the reader says why the shard cannot be read
        try:
            summary, table = self.stage(path, *args, **kwargs)
        except (DataAuditError, OSError):
            raise
        except Exception as exc:   # noqa: BLE001  (one line, never a traceback; the parts finished so far stay)
            text = " ".join(str(exc).split())[:1000]
            raise ShardFailed(f"{path}: {type(exc).__name__}: {text}" if text else f"{path}: {type(exc).__name__}") \
                from None
        if self.fingerprints:
            summary = {**summary, "fingerprint": fp}
        return summary, table


def run_units(paths: Sequence[str], store, stage: Callable, args: tuple, *, engine: str,
              options: EngineOptions = EngineOptions(), on_progress: Callable[[int, int], None] | None = None,
              processes: bool = False, only: Sequence[int] | None = None,
              nodes: Counter | None = None) -> tuple[list, int]:
    """Run `stage(path, *args, handler=options.handler)` on every shard not finished in `store`.

    `store.load(index, path)` gives a finished shard's summary (None if unfinished) and `store.save(index, path,
    summary, table)` records one: reruns skip finished shards. `on_progress(shards_done, records)` is told as work
    finishes, `records` summing the summaries' `records` (per batch in-process, per shard on Ray). `options.workers`
    caps the shards in flight on Ray; with `processes` (a stage and args that pickle) it is also how many shards the
    local engine runs at once, in worker processes. `only`: the indexes of the shards to run (an array job's slice,
    `pipelines.slices`; each keeps its index in `paths`, so its part is the one a single job writes). `nodes`
    counts the shards each Ray node ran (`run_tasks`). Returns the
    summaries in shard order (of `only` when given) and how many shards were resumed from `store`.
    """
    summaries: dict[int, dict] = {}
    pending = []
    indexes = list(range(len(paths))) if only is None else list(only)
    # a part is reused only for the same file (store.load compares fingerprints): hashes read in parallel
    with ThreadPoolExecutor(max_workers=min(8, len(indexes) or 1)) as pool:
        loaded = dict(zip(indexes, pool.map(store.load, indexes, [paths[i] for i in indexes])))
    for index in indexes:
        path, done = paths[index], loaded[index]
        if done is None:
            pending.append((index, path))
        else:
            summaries[index] = done
    # Finished shards, plus what the shard under way has counted batch by batch (in-process engine).
    counted = {"finished": sum(s["records"] for s in summaries.values()), "current": 0}

    def tell():
        if on_progress:
            on_progress(len(summaries), counted["finished"] + counted["current"])

    def on_rows(rows):
        counted["current"] += rows
        tell()

    def on_done(index, path, result):
        summary, table = result
        store.save(index, path, summary, table)
        summaries[index] = summary
        counted["finished"] += summary["records"]
        counted["current"] = 0
        tell()

    tell()
    if engine == "local" and processes and options.workers is None:   # every core, for an input worth it
        options = replace(options, workers=local_workers([p for _, p in pending]))
    unit = _Unit(stage, store.fingerprints and not getattr(stage, "fingerprints", False))
    run_tasks(pending, unit, args, on_done, engine=engine, options=options, on_batch=on_rows,
              handler=options.handler, processes=processes, nodes=nodes)
    return [summaries[i] for i in indexes], len(indexes) - len(pending)
