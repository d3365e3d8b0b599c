"""The contamination job: benchmark index built once and broadcast, training shards streamed through it (in this
process or one Ray task per shard), per-shard parts merged into the outputs.

Each finished shard's result (a small JSON summary and its match rows) is written to OUT/parts/contamination/
before the report is assembled, so a rerun with the same --out, benchmarks and config redoes only unfinished
shards. The merge reads the parts in shard order, so both engines give identical outputs.
"""
from __future__ import annotations

import os
from typing import Callable, Sequence

from dataaudit.atomic import write_parquet
from dataaudit.contamination import DECONTAMINATE, FILES
from dataaudit.contamination.config import ContaminationConfig
from dataaudit.contamination.index import build_index
from dataaudit.contamination.load import Benchmark
from dataaudit.contamination.report import (contamination_report, decontaminate_labels, write_benchmark_folders,
                                            write_clean_ids, write_report)
from dataaudit.contamination.results import (DECON_SCHEMA, Accumulator, decontaminate_tables, leak_forms,
                                             matches_by_item)
from dataaudit.contamination.scan import MATCH_SCHEMA
from dataaudit.contamination.shard import scan_shard
from dataaudit.handlers import report_unreadable
from dataaudit.pipelines.engine import EngineOptions
from dataaudit.pipelines.job import JobRun, Progress
from dataaudit.pipelines.parts import PartStore


def _as_unit(stage: Callable) -> Callable:
    """A `scan_shard`-like stage as a unit: (summary dict, matches table), as the part store keeps them."""
    def unit(path, index, config, on_batch=None, handler=report_unreadable):
        result = stage(path, index, config, on_batch=on_batch, handler=handler)
        return result.summary, result.matches
    return unit


def run_contamination(train_paths: Sequence[str], benchmarks: list[Benchmark], config: ContaminationConfig,
                      out_dir: str | os.PathLike, options: EngineOptions = EngineOptions(),
                      on_progress: Callable[[Progress], None] | None = None, *, decontaminate_train: bool = False,
                      stage: Callable = scan_shard, notes: list[str] | None = None) -> dict:
    """Check `benchmarks` against the training shards; writes contamination.json, contamination.html,
    <benchmark>/items.parquet and clean subsets (and decontaminate.parquet) into `out_dir`; returns the report.
    Progress comes per batch with the local engine, per shard with Ray."""
    train_paths = list(train_paths)
    run = JobRun(out_dir, train_paths, options, on_progress)
    index = build_index(benchmarks, config)
    store = PartStore(out_dir, {"index": index.digest, "config": config.fingerprint(),
                                "schema": MATCH_SCHEMA.to_string()},
                      folder=FILES.parts, suffix=".matches.parquet", schema=MATCH_SCHEMA)
    # The benchmark index is broadcast once (Ray object store), training shards stream through it.
    summaries = run.units("scan", train_paths, store, _as_unit(stage), (index, config))

    acc = Accumulator(index, config)
    for i, path in enumerate(train_paths):
        acc.add(i, summaries[i], store.read(i, path))
    v = acc.verdicts()
    matches = matches_by_item(acc.top, index)
    leak_forms(v, matches, index)
    bench_reports = write_benchmark_folders(out_dir, benchmarks, index, v, matches, config, acc.longest_at)
    clean_ids_file = write_clean_ids(out_dir, benchmarks, index, v)

    decon = None
    if decontaminate_train:
        parts = ((path, store.read(i, path)) for i, path in enumerate(train_paths))
        n = write_parquet(run.out(DECONTAMINATE), decontaminate_tables(
            v["contaminated"], index, decontaminate_labels(benchmarks), parts), DECON_SCHEMA)
        decon = {"file": DECONTAMINATE, "records": n}
    report = contamination_report(benchmarks, index, config, v, bench_reports, summaries, decon, notes or [],
                                  run.record())
    report["clean_ids"] = clean_ids_file
    write_report(out_dir, report)
    return report
