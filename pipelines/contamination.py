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
from dataaudit.contamination.image_results import add_image_report, merge_decontaminate, text_free_summaries
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


class _ImageParts(PartStore):
    """The training shards' image hashes (dataaudit.dedup.image_hashes), beside the text scan's parts."""

    def name(self, index: int) -> str:
        return f"img-{index:05d}"


def run_image_benchmarks(run: JobRun, train_paths: list[str], images: list, config: ContaminationConfig,
                         out_dir: str | os.PathLike) -> tuple[dict, list[dict], dict, list, Callable]:
    """Every training image hashed (one unit per shard, resumed from parts), each image benchmark matched against
    them: (summary per benchmark, the shards' hash summaries, clean_ids entries, the training records holding a
    leaked image, a reader of a shard's hash part)."""
    from dataaudit.contamination.image_results import (clean_ids_entry, decontaminate_rows, image_benchmark_outputs,
                                                       image_hashing, match_benchmark, train_images)

    spec, PART_SCHEMA, hash_shard = image_hashing(config.image_max_distance)
    store = _ImageParts(out_dir, spec.hash_fingerprint(), suffix=".img.parquet", folder=FILES.parts,
                        schema=PART_SCHEMA)
    summaries = run.units("images", train_paths, store, hash_shard, (spec,))
    train = train_images((i, store.read(i, p)) for i, p in enumerate(train_paths))
    reports, clean, decon = {}, {}, []

    def read_part(s: int):
        return store.read(s, train_paths[s])

    for bench in images:
        v = match_benchmark(bench, train, spec.max_distance)
        reports[bench.name] = image_benchmark_outputs(out_dir, bench, v, train, train_paths, read_part,
                                                      config.max_matches, spec.max_distance, spec.limits)
        clean[bench.name] = clean_ids_entry(bench, v)
        decon += decontaminate_rows(bench, v, train)
    return reports, summaries, clean, decon, read_part


def run_contamination(train_paths: Sequence[str], benchmarks: list[Benchmark], config: ContaminationConfig,
                      out_dir: str | os.PathLike, options: EngineOptions = EngineOptions(),
                      on_progress: Callable[[Progress], None] | None = None, *, decontaminate_train: bool = False,
                      stage: Callable = scan_shard, notes: list[str] | None = None, images: Sequence = ()) -> dict:
    """Check `benchmarks` against the training shards; writes contamination.json, contamination.html,
    <benchmark>/items.parquet and clean subsets (and decontaminate.parquet) into `out_dir`; returns the report.
    `images`: image benchmarks (dataaudit.contamination.image_bench), matched against the training images.
    Progress comes per batch with the local engine, per shard with Ray."""
    train_paths = list(train_paths)
    run = JobRun(out_dir, train_paths, options, on_progress)
    index = build_index(benchmarks, config)
    store = PartStore(out_dir, {"index": index.digest, "config": config.fingerprint(),
                                "schema": MATCH_SCHEMA.to_string()},
                      folder=FILES.parts, suffix=".matches.parquet", schema=MATCH_SCHEMA)
    if benchmarks or not images:
        # The benchmark index is broadcast once (Ray object store), training shards stream through it.
        summaries = run.units("scan", train_paths, store, _as_unit(stage), (index, config))
    else:   # image benchmarks only: no text to read
        summaries = None

    acc = Accumulator(index, config)
    for i, path in enumerate(train_paths):
        if summaries is not None:
            acc.add(i, summaries[i], store.read(i, path))
    v = acc.verdicts()
    matches = matches_by_item(acc.top, index)
    leak_forms(v, matches, index)
    bench_reports = write_benchmark_folders(out_dir, benchmarks, index, v, matches, config, acc.longest_at)
    image_reports, image_summaries, image_clean, image_decon, read_part = {}, None, {}, [], None
    if images:
        image_reports, image_summaries, image_clean, image_decon, read_part = run_image_benchmarks(
            run, train_paths, list(images), config, out_dir)
    clean_ids_file = write_clean_ids(out_dir, benchmarks, index, v, image_clean)

    decon = None
    if decontaminate_train:
        parts = ((path, store.read(i, path)) for i, path in enumerate(train_paths)) if summaries is not None else ()
        tables = decontaminate_tables(v["contaminated"], index, decontaminate_labels(benchmarks), parts)
        n = write_parquet(run.out(DECONTAMINATE), merge_decontaminate(tables, image_decon, train_paths,
                                                                             read_part), DECON_SCHEMA)
        decon = {"file": DECONTAMINATE, "records": n}
    report = contamination_report(benchmarks, index, config, v, bench_reports,
                                  summaries if summaries is not None else text_free_summaries(image_summaries),
                                  decon, notes or [], run.record())
    report["clean_ids"] = clean_ids_file
    if images:
        add_image_report(report, image_reports, image_summaries, config.image_max_distance)
    write_report(out_dir, report)
    return report
