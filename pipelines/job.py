"""The one job skeleton: every job (audit, dedup, dedup-images, contamination, clean) runs through a JobRun.

    run = JobRun(out_dir, shards, options, on_progress)     # stale temporaries cleared, the engine chosen
    summaries = run.units("audit", shards, store, stage, args)   # the shard runner: resume, progress, handler
    report = <the command's package builds it>(summaries, ..., run.record())
    write_json(run.out(FILES.record), report)

The job's module says which shards, which stage and how the results merge; the model of its report, its exit rule
and its output names live in its command's package. Progress has one shape for every job and stage (`Progress`).
"""
from __future__ import annotations

import os
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Sequence

from dataaudit.io import join, remove_stale_temps
from dataaudit.pipelines.engine import EngineOptions, choose_engine
from dataaudit.pipelines.run_record import run_record
from dataaudit.pipelines.runner import run_units
from dataaudit.pipelines.tasks import run_tasks


@dataclass(frozen=True)
class Progress:
    """Where a job is: `done` of `total` units of `stage` finished ("audit", "sign", "map", "reduce", "hash",
    "scan", "clean"), `records` read so far."""

    stage: str
    done: int
    total: int
    records: int


class JobRun:
    """One run of a job into `out_dir`: the engine chosen for `shards`, the units it ran, how long each stage took."""

    def __init__(self, out_dir: str | os.PathLike, shards: Sequence[str], options: EngineOptions = EngineOptions(),
                 on_progress: Callable[[Progress], None] | None = None, *, own_folder: bool = True,
                 share: float = 1.0, lanes: bool = False):
        self.out_dir = out_dir
        # a killed run's half-written files; finished parts are kept and reused. An array job's slice does not own
        # the folder (the other slices write their parts beside its own at the same time): the merge clears them.
        if own_folder:
            remove_stale_temps(out_dir)
        self.started = time.time()
        self.options = options
        # share: of the input's bytes the job reads; lanes: the job runs worker processes locally
        self.engine = choose_engine(shards, options, share, lanes)
        self.on_progress = on_progress
        self.resumed = 0
        self.seconds: dict[str, float] = {}
        self.nodes: Counter = Counter()   # Ray node id -> units it ran

    def out(self, *names: str) -> str:
        """A location in the output folder."""
        return join(self.out_dir, *names)

    def tell(self, stage: str, done: int, total: int, records: int) -> None:
        if self.on_progress is not None:
            self.on_progress(Progress(stage, done, total, records))

    def units(self, stage_name: str, paths: Sequence[str], store, stage: Callable, args: tuple, *,
              processes: bool = False, options: EngineOptions | None = None,
              only: Sequence[int] | None = None) -> list[dict]:
        """The shard runner over `paths` (`runner.run_units`): each unfinished shard through `stage`, its result
        saved in `store`; the summaries in shard order. `options` overrides the run's (a job's own error policy);
        `only`: the indexes of an array job's slice."""
        total = len(paths) if only is None else len(only)
        summaries, resumed = run_units(paths, store, stage, args, engine=self.engine, options=options or self.options,
                                       on_progress=lambda done, n: self.tell(stage_name, done, total, n),
                                       processes=processes, only=only, nodes=self.nodes)
        self.resumed += resumed
        return summaries

    def tasks(self, stage_name: str, items: list, task: Callable, args: tuple, records: int = 0) -> list:
        """`task(item, *args)` for every item where the shards ran (in-process or Ray); results in item order.
        Progress counts items; `records` is what the job has read in all."""
        results: dict[int, object] = {}

        def on_done(index, item, result):
            results[index] = result
            self.tell(stage_name, len(results), len(items), records)

        run_tasks(list(enumerate(items)), task, args, on_done, engine=self.engine, options=self.options,
                  nodes=self.nodes)
        return [results[i] for i in range(len(items))]

    @contextmanager
    def timed(self, stage: str):
        """Seconds the block takes, recorded as `stage` in the run record."""
        t0 = time.time()
        try:
            yield
        finally:
            self.seconds[stage] = round(time.time() - t0, 3)

    def record(self, **extra) -> dict:
        """The report's `run` section: engine, shards resumed, start, seconds (the total, or each timed stage and
        the total, with `extra` such as per-shard seconds), host and versions; on Ray, the units each node ran."""
        total = round(time.time() - self.started, 3)
        seconds = {**self.seconds, "total": total, **extra} if self.seconds or extra else total
        return run_record(self.engine, self.resumed, self.started, seconds, self.nodes)
