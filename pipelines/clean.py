"""The clean job: every shard rewritten without the records the findings name, in its own format and layout.

1. plan    on the driver, before anything is written (dataaudit.clean.plan).
2. write   one unit per shard through the shard runner (in-process or one Ray task per shard, resumed from
           parts): the writer of its format writes OUT/<relative path> atomically (dataaudit.clean.shard); the part
           (OUT/parts/clean/NNNNN-<digest>.dropped.parquet + marker) records the dropped rows, their keys and
           reasons, and the output's size and hash. A rerun trusts a finished shard only when its marker names
           this job and these drops and its output still has the recorded size and hash.
3. sidecars dataset_info.json and *.yaml beside the shards, copied naming only the files written
           (dataaudit.clean.sidecars).
4. report  the dropped table (every dropped row, shard order) and the record and its page (dataaudit.clean.report),
           after checking that every shard's rows in = kept + dropped.
"""
from __future__ import annotations

import os
from typing import Callable

from dataaudit.atomic import write_parquet
from dataaudit.clean import DROPPED, FILES
from dataaudit.clean.plan import CleanJob
from dataaudit.clean.report import clean_report, first_dropped, write_report
from dataaudit.clean.selection import DROPPED_SCHEMA
from dataaudit.clean.shard import clean_shard, output_intact
from dataaudit.clean.sidecars import copy_sidecars
from dataaudit.pipelines.engine import EngineOptions
from dataaudit.pipelines.job import JobRun, Progress
from dataaudit.pipelines.parts import PartStore


class CleanStore(PartStore):
    """Parts of the clean job; a finished shard counts only while its output is the one it wrote."""

    fingerprints = False   # the job digest holds each input's hash already (the plan refused changed shards)

    def __init__(self, out_dir: str | os.PathLike, job: CleanJob):
        super().__init__(out_dir, job.fingerprint(), suffix=".dropped.parquet", folder=FILES.parts,
                         schema=DROPPED_SCHEMA)
        self.job = job

    def load(self, index: int, path: str) -> dict | None:
        done = super().load(index, path)
        return done if done is not None and output_intact(self.job.shards[path], done) else None


def run_clean(job: CleanJob, out_dir: str | os.PathLike, options: EngineOptions = EngineOptions(),
              on_progress: Callable[[Progress], None] | None = None) -> dict:
    """Write the cleaned shards, the dropped table and the record; returns clean.json's content. A shard the writer
    cannot get through is left without output, listed in `failed` with its error (the job's handler), and the
    others are cleaned; an OSError (the output's: a full disk) stops the job."""
    paths = list(job.shards)
    run = JobRun(out_dir, paths, options, on_progress)
    store = CleanStore(out_dir, job)
    summaries = run.units("clean", paths, store, clean_shard, (job,))
    sidecars = copy_sidecars(job)
    first: list[dict] = []
    rows = write_parquet(run.out(DROPPED), first_dropped((store.read(i, p) for i, p in enumerate(paths)), first),
                         DROPPED_SCHEMA)
    failed = [{"path": s["path"], "error": s["failed"]} for s in summaries if "failed" in s]
    report = clean_report(job, [s for s in summaries if "failed" not in s], rows, run.record(), failed, first,
                          sidecars)
    write_report(out_dir, report)
    return report
