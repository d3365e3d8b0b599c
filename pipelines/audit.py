"""The audit job: which shards, which stage, how per-shard results merge into the report.

The stage (`dataaudit.audit.shard.audit_shard`) is the same function in both engines; Ray only decides where it
runs. Each finished shard is written to OUT/parts before the report is assembled, so a rerun with the same
`--out` and config redoes only unfinished shards.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Sequence

from dataaudit.atomic import write_parquet
from dataaudit.audit import FILES, FLAGS
from dataaudit.audit.batch import FLAG_SCHEMA
from dataaudit.audit.report import build_report, write_report
from dataaudit.audit.shard import audit_shard
from dataaudit.config import AuditConfig
from dataaudit.handlers import report_unreadable
from dataaudit.pipelines.engine import EngineOptions
from dataaudit.pipelines.job import JobRun, Progress
from dataaudit.pipelines.parts import PartStore

FLAG_ORDER = [("row", "ascending"), ("check", "ascending"), ("field", "ascending")]


@dataclass(frozen=True)
class _Summarized:
    """An `audit_shard`-like stage as a unit: (summary dict, flags table in a fixed order), as the part store
    keeps them. A class, not a closure: it pickles, for the local engine's worker processes."""

    stage: Callable
    fingerprints = True    # the audit records each shard's fingerprint itself (report.json's, what clean checks)

    def __call__(self, path, config, on_batch=None, handler=report_unreadable):
        result, flags = self.stage(path, config, on_batch=on_batch, handler=handler)
        return result.summary(), flags.sort_by(FLAG_ORDER)


def run_audit(paths: Sequence[str], config: AuditConfig, out_dir: str | os.PathLike,
              options: EngineOptions = EngineOptions(), on_progress: Callable[[Progress], None] | None = None, *,
              stage: Callable = audit_shard, read: str | None = None) -> dict:
    """Audit `paths` into `out_dir` (report.json, flags.parquet, report.html); returns the report.

    Progress comes per batch with the local engine, per shard otherwise. With the local engine, `options.workers`
    > 1 audits that many shards at once in worker processes. `stage` is the per-shard function (`audit_shard`'s
    signature), replaceable for fault tests. `read` (default: the config's, "all-columns"): "all-columns" decodes
    every column of every Parquet row group, as a training loader does, so a column that cannot be decoded makes
    its shard unreadable; "checked-columns" decodes only the columns the checks read (faster on wide shards; the
    others are named in a note). The mode is part of the config: report.json's `config.read`, and parts written
    under the other mode are not reused.
    """
    config = config.with_read(config.read if read is None else read)   # ValueError for an unknown mode
    run = JobRun(out_dir, paths, options, on_progress)
    store = PartStore(out_dir, {"config": config.fingerprint(), "schema": FLAG_SCHEMA.to_string()},
                      suffix=".flags.parquet", folder=FILES.parts)
    summaries = run.units("audit", paths, store, _Summarized(stage), (config,), processes=True)
    write_parquet(run.out(FLAGS), (store.read(i, p) for i, p in enumerate(paths)), FLAG_SCHEMA)
    report = build_report(summaries, config, run.record())
    write_report(out_dir, report)
    return report
