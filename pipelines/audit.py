"""The audit job: which shards, which engine, how per-shard results merge into the report.

The stage (`dataaudit.audit.shard.audit_shard`) is the same function in both engines; Ray only decides where it
runs. Each finished shard is written to OUT/parts before the report is assembled, so a rerun with the same
`--out` and config redoes only unfinished shards.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from dataaudit.audit.batch import FLAG_SCHEMA
from dataaudit.audit.shard import audit_shard
from dataaudit.config import AuditConfig
from dataaudit.handlers import report_unreadable
from dataaudit.report.atomic import remove_stale_temps, write_json, write_parquet
from dataaudit.report.model import build_report
from dataaudit.report.pages import write_report_html
from dataaudit.pipelines.engine import choose_engine
from dataaudit.pipelines.parts import PartStore
from dataaudit.pipelines.run_record import run_record
from dataaudit.pipelines.runner import run_units

FLAG_ORDER = [("row", "ascending"), ("check", "ascending"), ("field", "ascending")]


@dataclass(frozen=True)
class _Summarized:
    """An `audit_shard`-like stage as a unit: (summary dict, flags table in a fixed order), as the part store
    keeps them. A class, not a closure: it pickles, for the local engine's worker processes."""

    stage: Callable

    def __call__(self, path, config, on_batch=None, handler=report_unreadable):
        result, flags = self.stage(path, config, on_batch=on_batch, handler=handler)
        return result.summary(), flags.sort_by(FLAG_ORDER)


def run_audit(paths: Sequence[str], config: AuditConfig, out_dir: Path, engine: str = "auto",
              ray_address: str | None = None,
              on_progress: Callable[[int, int], None] | None = None,
              workers: int | None = None, stage: Callable = audit_shard,
              handler: Callable[[BaseException, str], str] = report_unreadable, read: str | None = None) -> dict:
    """Audit `paths` into `out_dir` (report.json, flags.parquet, report.html); returns the report.

    `on_progress(shards_done, samples_done)` is called as work finishes: per batch with the local engine,
    per shard with Ray. `workers` caps the shards in flight on Ray (default: all at once, Ray schedules them
    on its CPUs); with the local engine, `workers` > 1 audits that many shards at once in worker processes
    (progress then per shard). `stage` is the per-shard function (`audit_shard`'s signature), replaceable for fault tests;
    `handler` is the policy for a shard that cannot be read (default: reported unreadable, the job goes on).
    `read` (default: the config's, "all-columns"): "all-columns" decodes every column of every Parquet row group,
    as a training loader does, so a column that cannot be decoded makes its shard unreadable; "checked-columns"
    decodes only the columns the checks read (faster on wide shards; the others are named in a note). The mode is
    part of the config: report.json's `config.read`, and parts written under the other mode are not reused.
    """
    config = config.with_read(config.read if read is None else read)   # ValueError for an unknown mode
    out_dir = Path(out_dir)
    started = time.time()
    engine = choose_engine(paths, engine, ray_address)
    remove_stale_temps(out_dir)   # a killed run's half-written files; finished parts are kept and reused
    store = PartStore(out_dir, {"config": config.fingerprint(), "schema": FLAG_SCHEMA.to_string()},
                      suffix=".flags.parquet")
    ordered, resumed = run_units(paths, store, _Summarized(stage), (config,), engine=engine, count="samples",
                                 ray_address=ray_address, workers=workers, on_progress=on_progress,
                                 handler=handler, processes=True)
    write_parquet(out_dir / "flags.parquet", (store.read(i, p) for i, p in enumerate(paths)), FLAG_SCHEMA)
    run = run_record(engine, resumed, started, round(time.time() - started, 3))
    report = build_report(ordered, config, run)
    write_json(out_dir / "report.json", report)
    write_report_html(out_dir / "report.html", report)
    return report
