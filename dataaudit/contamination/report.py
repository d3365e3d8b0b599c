"""contamination.json: totals, each method's settings and rule, every benchmark's summary, the training shards,
notes; each benchmark's own folder (its items table and clean subset); the exit rule."""
from __future__ import annotations

import os

import numpy as np

from dataaudit.atomic import write_json, write_parquet
from dataaudit.io import join

from . import CLEAN_IDS, CLEAN_SUBSET, FILES, ITEMS
from .config import ContaminationConfig
from .grams import NORMALIZE
from .index import ContaminationIndex
from .load import Benchmark, write_clean
from .results import ITEMS_SCHEMA, SCHEMA_VERSION, benchmark_summary, items_table

RULES = {
    "ngram": "at least `threshold` of the item's distinct word n-grams occur in the training data (score "
             "\"longest\": one record holds a contiguous copy of at least `threshold` of the item's words; an item "
             "shorter than n words: its whole text occurs)",
    "exact": "the whole normalized item occurs inside one training record",
    "minhash": "a training record's estimated Jaccard similarity (word shingles) with the item is at least "
               "`threshold`",
}
SHARD_KEYS = ("path", "status", "error", "records", "unreadable_records", "text_field", "words", "matches",
              "fingerprint")


def write_benchmark_folders(out_dir: str | os.PathLike, benchmarks: list[Benchmark], index: ContaminationIndex,
                            v: dict, matches, config: ContaminationConfig,
                            longest_at: dict[int, dict] | None = None) -> dict[str, dict]:
    """Each benchmark's folder: its items table and its clean subset; returns each benchmark's summary."""
    reports = {}
    longest_at = longest_at or {}
    for b, bench in enumerate(benchmarks):
        folder = join(out_dir, bench.name)
        write_parquet(join(folder, ITEMS), [items_table(b, bench, index, v, matches, longest_at)], ITEMS_SCHEMA)
        lo, hi = int(index.offsets[b]), int(index.offsets[b + 1])
        files = [ITEMS] + write_clean(bench, ~v["contaminated"][lo:hi], folder, CLEAN_SUBSET)
        reports[bench.name] = benchmark_summary(b, bench, index, v, config, matches, files)
    return reports


def _methods(config: ContaminationConfig, index: ContaminationIndex, v: dict) -> dict:
    out = {}
    for name, settings in config.methods().items():
        entry = dict(settings)
        entry["contaminated"] = int((v[name] & v["counted"]).sum()) if settings["enabled"] else None
        entry["rule"] = RULES[name]
        if name == "minhash" and index.minhash is not None:
            entry["lsh"] = {"bands": index.minhash.bands, "rows": index.minhash.rows}
        out[name] = entry
    return out


def _leak_notes(benchmarks: list[Benchmark]) -> list[str]:
    """Benchmarks whose answers or choices were not looked for: said, never an implied all-clear."""
    notes = []
    for bench in benchmarks:
        if bench.answers is None:
            notes.append(f"{bench.name}: answer and choices leaks not checked (no preset with an answer field; "
                         "answer_contaminated and choices_contaminated are null)")
        else:
            missing = sum(not a for a in bench.answers)
            if missing:
                notes.append(f"{bench.name}: {missing} item(s) without a reference answer: answer leak not checked")
    return notes


def _item_notes(index: ContaminationIndex, v: dict) -> list[str]:
    notes = []
    short = int(((index.words > 0) & (index.words < index.n)).sum())
    if short:
        notes.append(f"{short} item(s) have fewer than {index.n} words: each is matched on its whole "
                     "normalized text")
    found = int(v["short_found"].sum())
    if found:
        counted = "counted" if bool(v["contaminated"][v["short_found"]].any()) else "not counted"
        notes.append(f"{found} item(s) of fewer than {index.min_item_words} words found as a whole sentence or "
                     f"turn: listed as short items, {counted} (--count-short-items)")
    empty = int(v["empty"].sum())
    if empty:
        notes.append(f"{empty} empty item(s) (no words after normalization): reported, never matched")
    return notes


def contamination_report(benchmarks: list[Benchmark], index: ContaminationIndex, config: ContaminationConfig,
                         v: dict, bench_reports: dict, summaries: list[dict], decontaminate: dict | None,
                         notes: list[str], run: dict) -> dict:
    """contamination.json's content."""
    shards = [{k: s.get(k) for k in SHARD_KEYS} for s in summaries]
    return {
        "schema_version": SCHEMA_VERSION,
        "totals": {"benchmarks": len(benchmarks), "items": index.num_items,
                   "contaminated": int(v["contaminated"].sum()), "short_items_found": int(v["short_found"].sum()),
                   "empty_items": int(v["empty"].sum()),
                   "train_shards": len(shards), "train_records": sum(s["records"] for s in shards),
                   "unreadable_shards": sum(s["status"] != "ok" for s in shards),
                   "unreadable_records": sum(s["unreadable_records"] for s in shards)},
        "methods": _methods(config, index, v),
        "normalization": NORMALIZE,
        "benchmarks": bench_reports,
        "train": {"text_field": config.text_field, "text_records": config.text_unit, "shards": shards},
        "decontaminate": decontaminate,
        "notes": list(notes) + _item_notes(index, v) + _leak_notes(benchmarks),
        "config": {"source": config.source, "methods": config.methods(), "text_field": config.text_field,
                   "batch_rows": config.batch_rows, "max_matches": config.max_matches,
                   "min_item_words": config.min_item_words, "count_short_items": config.count_short_items},
        "run": run,
    }


def clean_ids(benchmarks: list[Benchmark], index: ContaminationIndex, v: dict, images: dict | None = None) -> dict:
    """clean_ids.json's content: per benchmark, the items with no counted leak, as ids (with the field they come
    from, or how they were numbered) and as 0-based rows of the benchmark file, for filtering an evaluation.
    `images`: the image benchmarks' entries (dataaudit.contamination.image_results.clean_ids_entry)."""
    out = {}
    for b, bench in enumerate(benchmarks):
        lo, hi = int(index.offsets[b]), int(index.offsets[b + 1])
        clean = np.flatnonzero(~v["contaminated"][lo:hi])
        short = np.flatnonzero(v["short_found"][lo:hi] & ~v["contaminated"][lo:hi])
        numbered = None if bench.id_field else ("line" if any(x is not None for x in bench.lines) else "row")
        out[bench.name] = {
            "path": bench.path, "id_field": bench.id_field,
            "id_is": "field" if bench.id_field else f"{numbered} number",   # no id field: the line (1-based) or row
            "items": len(bench), "clean": len(clean),
            "ids": [bench.ids[i] for i in clean], "rows": clean.tolist(),
            # found as a whole sentence or turn but not counted (under min_item_words): drop these too to be strict
            "short_items_found": [bench.ids[i] for i in short]}
    out.update(images or {})
    return {"schema_version": SCHEMA_VERSION, "rows_are": "0-based record index in the benchmark file",
            "benchmarks": out}


def write_clean_ids(out_dir: str | os.PathLike, benchmarks: list[Benchmark], index: ContaminationIndex,
                    v: dict, images: dict | None = None) -> str:
    write_json(join(out_dir, CLEAN_IDS), clean_ids(benchmarks, index, v, images))
    return CLEAN_IDS


def decontaminate_labels(benchmarks: list[Benchmark]) -> np.ndarray:
    """`<benchmark>/<item id>` of every item, in index order (what a drop-list row names)."""
    return np.array([f"{bench.name}/{i}" for bench in benchmarks for i in bench.ids], dtype=object)


def write_report(out_dir: str | os.PathLike, report: dict) -> None:
    """The record and its page."""
    from dataaudit.report.pages import write_contamination_html   # rendering loads Jinja2

    write_json(join(out_dir, FILES.record), report)
    write_contamination_html(join(out_dir, FILES.page), report)


def has_errors(report: dict) -> bool:
    """Exit 1: some benchmark item is contaminated, or a training shard could not be read to the end."""
    t = report["totals"]
    return bool(t["contaminated"] or t["unreadable_shards"])
