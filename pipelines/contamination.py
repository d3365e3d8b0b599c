"""The contamination job: benchmark index built once and broadcast, training shards streamed through it (in this
process or one Ray task per shard), per-shard parts merged into the outputs.

Each finished shard's result (a small JSON summary and its match rows) is written to OUT/parts/contamination/
before the report is assembled, so a rerun with the same --out, benchmarks and config redoes only unfinished
shards. The merge reads the parts in shard order, so both engines give identical outputs.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from dataaudit.contamination.config import ContaminationConfig
from dataaudit.contamination.grams import NORMALIZE
from dataaudit.contamination.index import ContaminationIndex, build_index
from dataaudit.contamination.load import Benchmark, write_clean
from dataaudit.contamination.results import (DECON_SCHEMA, ITEMS_SCHEMA, SCHEMA_VERSION, Accumulator,
                                             matches_by_item, benchmark_summary, decontaminate_tables,
                                             items_table)
from dataaudit.contamination.scan import MATCH_SCHEMA
from dataaudit.contamination.shard import scan_shard
from dataaudit.handlers import report_unreadable
from dataaudit.report.atomic import remove_stale_temps, write_json, write_parquet
from dataaudit.report.pages import write_contamination_html
from dataaudit.pipelines.engine import choose_engine
from dataaudit.pipelines.parts import PartStore
from dataaudit.pipelines.run_record import run_record
from dataaudit.pipelines.runner import run_units

RULES = {
    "ngram": "at least `threshold` of the item's distinct word n-grams occur in the training data (an item "
             "shorter than n words: its whole text occurs)",
    "exact": "the whole normalized item occurs inside one training record",
    "minhash": "a training record's estimated Jaccard similarity (word shingles) with the item is at least "
               "`threshold`",
}


def _as_unit(stage: Callable) -> Callable:
    """A `scan_shard`-like stage as a unit: (summary dict, matches table), as the part store keeps them."""
    def unit(path, index, config, on_batch=None, handler=report_unreadable):
        result = stage(path, index, config, on_batch=on_batch, handler=handler)
        return result.summary, result.matches
    return unit


def _methods_report(config: ContaminationConfig, index: ContaminationIndex, v: dict) -> dict:
    out = {}
    for name, settings in config.methods().items():
        entry = dict(settings)
        entry["contaminated"] = int(v[name].sum()) if settings["enabled"] else None
        entry["rule"] = RULES[name]
        if name == "minhash" and index.minhash is not None:
            entry["lsh"] = {"bands": index.minhash.bands, "rows": index.minhash.rows}
        out[name] = entry
    return out


def run_contamination(train_paths: Sequence[str], benchmarks: list[Benchmark], config: ContaminationConfig,
                      out_dir: Path, engine: str = "auto", ray_address: str | None = None,
                      decontaminate_train: bool = False, on_progress: Callable[[int, int], None] | None = None,
                      workers: int | None = None, stage: Callable = scan_shard,
                      notes: list[str] | None = None,
                      handler: Callable[[BaseException, str], str] = report_unreadable) -> dict:
    """Check `benchmarks` against the training shards; writes contamination.json, contamination.html,
    <benchmark>/items.parquet and clean subsets (and decontaminate.parquet) into `out_dir`; returns the report.

    `on_progress(shards_done, records_done)` is called as work finishes: per batch with the local engine, per
    shard with Ray. `workers` caps the shards in flight on Ray. `handler` is the policy for a training shard
    that cannot be read (default: reported unreadable, the job goes on).
    """
    out_dir = Path(out_dir)
    remove_stale_temps(out_dir)   # a killed run's half-written files; finished parts are reused
    started = time.time()
    index = build_index(benchmarks, config)
    engine = choose_engine(train_paths, engine, ray_address)
    # OUT/parts/contamination/<index>-<path digest>.{json,matches.parquet}
    store = PartStore(out_dir, {"index": index.digest, "config": config.fingerprint(),
                                "schema": MATCH_SCHEMA.to_string()},
                      folder="parts/contamination", suffix=".matches.parquet", schema=MATCH_SCHEMA)
    # The benchmark index is broadcast once (Ray object store), training shards stream through it.
    summaries, resumed = run_units(train_paths, store, _as_unit(stage), (index, config), engine=engine,
                                   count="records", ray_address=ray_address, workers=workers,
                                   on_progress=on_progress, handler=handler)

    acc = Accumulator(index, config)
    for i, path in enumerate(train_paths):
        acc.add(i, summaries[i], store.read(i, path))
    v = acc.verdicts()
    matches = matches_by_item(acc.top, index)

    bench_reports = {}
    for b, bench in enumerate(benchmarks):
        folder = out_dir / bench.name
        table = items_table(b, bench, index, v, matches)
        write_parquet(folder / "items.parquet", [table], ITEMS_SCHEMA)
        lo, hi = int(index.offsets[b]), int(index.offsets[b + 1])
        files = ["items.parquet"] + write_clean(bench, ~v["contaminated"][lo:hi], folder)
        bench_reports[bench.name] = benchmark_summary(b, bench, index, v, config, matches, files)

    decon = None
    if decontaminate_train:
        labels = np.array([f"{bench.name}/{i}" for bench in benchmarks for i in bench.ids], dtype=object)
        parts = ((path, store.read(i, path)) for i, path in enumerate(train_paths))
        n = write_parquet(out_dir / "decontaminate.parquet",
                          decontaminate_tables(v["contaminated"], index, labels, parts), DECON_SCHEMA)
        decon = {"file": "decontaminate.parquet", "records": n}

    shards = [{k: s[k] for k in ("path", "status", "error", "records", "unreadable_records", "text_field",
                                 "words", "matches")} for s in (summaries[i] for i in range(len(train_paths)))]
    all_notes = list(notes or [])
    short = int(((index.words > 0) & (index.words < index.n)).sum())
    if short:
        all_notes.append(f"{short} item(s) have fewer than {index.n} words: each is matched on its whole "
                         "normalized text")
    tiny = int(((index.words > 0) & (index.words < 4)).sum())
    if tiny:
        all_notes.append(f"{tiny} item(s) have fewer than 4 words: their matches may be coincidental")
    empty = int(v["empty"].sum())
    if empty:
        all_notes.append(f"{empty} empty item(s) (no words after normalization): reported, never matched")
    run = run_record(engine, resumed, started, round(time.time() - started, 3))
    report = {
        "schema_version": SCHEMA_VERSION,
        "totals": {"benchmarks": len(benchmarks), "items": index.num_items,
                   "contaminated": int(v["contaminated"].sum()), "empty_items": empty,
                   "train_shards": len(train_paths), "train_records": sum(s["records"] for s in shards),
                   "unreadable_shards": sum(s["status"] != "ok" for s in shards),
                   "unreadable_records": sum(s["unreadable_records"] for s in shards)},
        "methods": _methods_report(config, index, v),
        "normalization": NORMALIZE,
        "benchmarks": bench_reports,
        "train": {"text_field": config.text_field, "shards": shards},
        "decontaminate": decon,
        "notes": all_notes,
        "config": {"source": config.source, "methods": config.methods(), "text_field": config.text_field,
                   "batch_rows": config.batch_rows, "max_matches": config.max_matches},
        "run": run,
    }
    write_json(out_dir / "contamination.json", report)
    write_contamination_html(out_dir / "contamination.html", report)
    return report


def has_errors(report: dict) -> bool:
    """Exit 1: some benchmark item is contaminated, or a training shard could not be read to the end."""
    t = report["totals"]
    return bool(t["contaminated"] or t["unreadable_shards"])
