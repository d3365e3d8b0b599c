"""The audit job: which shards, which engine, how per-shard results merge into the report.

The stage (`dataaudit.audit.shard.audit_shard`) is the same function in both engines; Ray only decides where it
runs. Each finished shard is written to OUT/parts before the report is assembled, so a rerun with the same
`--out` and config redoes only unfinished shards.
"""
from __future__ import annotations

import platform
import time
from pathlib import Path
from typing import Callable, Sequence

from dataaudit.audit.batch import FLAG_SCHEMA
from dataaudit.audit.shard import audit_shard
from dataaudit.config import AuditConfig
from dataaudit.report.atomic import remove_stale_temps, write_json, write_parquet
from dataaudit.report.html import write_report_html
from dataaudit.report.model import build_report
from pipelines.engine import choose_engine, package_version
from pipelines.units import PartStore


def _run_local(pending, config, on_done, on_rows, stage):
    for index, path in pending:
        result, flags = stage(path, config, on_batch=on_rows)
        on_done(index, path, result.summary(), flags)


def _run_ray(pending, config, on_done, ray_address, stage, workers):
    import ray

    if not ray.is_initialized():
        ray.init(address=ray_address, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)

    # max_retries: a worker that dies mid-shard gets its shard redone elsewhere, not a failed job.
    @ray.remote(max_retries=3)
    def shard_task(path, config):
        result, flags = stage(path, config)
        return result.summary(), flags

    config_ref = ray.put(config)
    queue = list(pending)
    limit = workers or len(queue)
    futures: dict = {}
    # At most `limit` shards in flight: bounded driver memory, and a worker count the user controls.
    while queue or futures:
        while queue and len(futures) < limit:
            index, path = queue.pop(0)
            futures[shard_task.remote(path, config_ref)] = (index, path)
        done, _ = ray.wait(list(futures), num_returns=1)
        index, path = futures.pop(done[0])
        summary, flags = ray.get(done[0])
        on_done(index, path, summary, flags)


def run_audit(paths: Sequence[str], config: AuditConfig, out_dir: Path, engine: str = "auto",
              ray_address: str | None = None,
              on_progress: Callable[[int, int], None] | None = None,
              workers: int | None = None, stage: Callable = audit_shard) -> dict:
    """Audit `paths` into `out_dir` (report.json, flags.parquet, report.html); returns the report.

    `on_progress(shards_done, samples_done)` is called as work finishes: per batch with the local engine,
    per shard with Ray. `workers` caps the shards in flight on Ray (default: all at once, Ray schedules them
    on its CPUs). `stage` is the per-shard function (`audit_shard`'s signature), replaceable for fault tests.
    """
    out_dir = Path(out_dir)
    started = time.time()
    engine = choose_engine(paths, engine, ray_address)
    remove_stale_temps(out_dir)   # a killed run's half-written files; finished parts are kept and reused
    store = PartStore(out_dir, {"config": config.fingerprint(), "schema": FLAG_SCHEMA.to_string()})
    summaries: dict[int, dict] = {}
    pending = []
    for index, path in enumerate(paths):
        done = store.load(index, path)
        if done is None:
            pending.append((index, path))
        else:
            summaries[index] = done
    # Samples of finished shards, plus those counted batch by batch in the shard under way (local engine).
    counted = {"finished": sum(s["samples"] for s in summaries.values()), "current": 0}

    def tell():
        if on_progress:
            on_progress(len(summaries), counted["finished"] + counted["current"])

    def on_rows(rows):
        counted["current"] += rows
        tell()

    def on_done(index, path, summary, flags):
        store.save(index, path, summary, flags)
        summaries[index] = summary
        counted["finished"] += summary["samples"]
        counted["current"] = 0
        tell()

    tell()
    if pending:
        if engine == "ray":
            _run_ray(pending, config, on_done, ray_address, stage, workers)
        else:
            _run_local(pending, config, on_done, on_rows, stage)

    ordered = [summaries[i] for i in range(len(paths))]
    write_parquet(out_dir / "flags.parquet", (store.flags(i, p) for i, p in enumerate(paths)), FLAG_SCHEMA)
    run = {"engine": engine, "resumed_shards": len(paths) - len(pending), "started": started,
           "seconds": round(time.time() - started, 3), "host": platform.node(),
           "python": platform.python_version(), "dataaudit": package_version()}
    report = build_report(ordered, config, run)
    write_json(out_dir / "report.json", report)
    write_report_html(out_dir / "report.html", report)
    return report
