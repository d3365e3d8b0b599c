"""dedup.json's content: totals of stage 4's clusters and the validation overlap, every setting, per-shard
summaries and notes (the examples and the `run` section are added by the job)."""
from __future__ import annotations

import os

import numpy as np

from dataaudit.atomic import write_json
from dataaudit.io import join

from . import FILES
from .clusters import Clusters
from .config import DedupSpec
from .corpus import Corpus

SCHEMA_VERSION = 1


def size_histogram(sizes: np.ndarray) -> dict[str, int]:
    """How many clusters have 2, 3, 4, 5-9, 10-99, 100-999 and 1000+ members."""
    bins = [(2, 2), (3, 3), (4, 4), (5, 9), (10, 99), (100, 999), (1000, None)]
    out = {}
    for lo, hi in bins:
        sel = (sizes >= lo) & ((sizes <= hi) if hi is not None else True)
        label = str(lo) if lo == hi else (f"{lo}-{hi}" if hi is not None else f"{lo}+")
        out[label] = int(sel.sum())
    return out


def _notes(summaries: list[dict], spec: DedupSpec) -> list[str]:
    bands, rows = spec.bands()
    notes = [f"LSH: {bands} bands x {rows} rows of {spec.num_perm} permutations for Jaccard threshold "
             f"{spec.threshold}: a pair with Jaccard exactly {spec.threshold} becomes a candidate with probability "
             f"{1 - (1 - spec.threshold ** rows) ** bands:.2f}, one at {min(spec.threshold + 0.1, 1.0):.2f} with "
             f"{1 - (1 - min(spec.threshold + 0.1, 1.0) ** rows) ** bands:.2f}"]
    if spec.with_images:
        images = sum(s.get("images", 0) for s in summaries)
        unread = sum(s.get("images_unread", 0) for s in summaries)
        if not images:
            notes.append("--with-images: no image found in any shard (no image field, or none filled): the "
                         "identity of every record is its text alone")
        else:
            notes.append(f"--with-images: a record is its text plus its images' bytes (xxh3-64 of each of {images} "
                         "images), in order: records with the same text and other images are not duplicates; a "
                         "re-encoded or resized image is another image (dedup-images compares pictures)"
                         + (f"; {unread} images could not be read (missing, outside the folder, too large): each "
                            "is identified by its reference" if unread else ""))
    for s in summaries:
        if s["status"] != "ok":
            notes.append(f"unreadable shard {s['path']}: {s['error']} (records read before the break are included)")
        elif s.get("error"):
            notes.append(f"{s['path']}: {s['error']}")
    return notes


def shard_entries(summaries: list[dict]) -> list[dict]:
    """The shards as dedup.json lists them: each summary without its timing (timings belong to `run`: everything
    else must be identical between two runs on the same input), its records counted as `samples`."""
    return [{"samples" if k == "records" else k: v for k, v in s.items() if k != "seconds"} for s in summaries]


def dedup_report(spec: DedupSpec, partitions: int, train: Corpus, val: Corpus, clusters: Clusters, kept: int,
                 against: dict | None) -> dict:
    """dedup.json without `examples` and `run`."""
    ct, kind = clusters.table, clusters.kind
    exact_groups = int(len(np.unique(clusters.exact_labels))) if len(clusters.exact_labels) else 0
    exact_docs = int(len(clusters.exact_nodes))
    removed = int(len(clusters.dropped))
    near_docs = int((kind == "near").sum())
    near_clusters = int(len(np.unique(ct["cluster_id"][kind == "near"]))) if near_docs else 0
    sizes = np.bincount(ct["cluster_id"]) if len(ct["cluster_id"]) else np.zeros(0, np.int64)
    samples = train.total
    return {
        "schema_version": SCHEMA_VERSION,
        "documents": samples,
        "empty_documents": sum(s["empty"] - s["unreadable_records"] for s in train.summaries),
        "unreadable_records": sum(s["unreadable_records"] for s in train.summaries),
        "unreadable_shards": sum(s["status"] != "ok" for s in train.summaries + val.summaries),
        "exact": {"groups": exact_groups, "documents": exact_docs, "duplicates": exact_docs - exact_groups},
        "near": {"clusters": near_clusters, "documents": near_docs, "duplicates": removed - (exact_docs - exact_groups),
                 "candidate_pairs": clusters.candidates, "verification": clusters.verification},
        "clusters": {"count": int(ct["is_representative"].sum()), "documents": int(len(ct["gid"])),
                     "size_histogram": size_histogram(sizes), "largest": int(sizes.max()) if len(sizes) else 0},
        "duplicates": removed,
        "duplicate_rate": round(removed / samples, 6) if samples else 0.0,
        "kept": kept,
        "against": against,
        "params": {**spec.as_dict(), "partitions": partitions, "minhash_scheme": "datasketch legacy (mod 2^61-1)"},
        "shards": shard_entries(train.summaries),
        "validation_shards": shard_entries(val.summaries),
        "notes": _notes(train.summaries + val.summaries, spec),
    }


def write_report(out_dir: str | os.PathLike, report: dict, page: bool = True) -> None:
    """The record, and its page when `page` (dedup-images has none)."""
    write_json(join(out_dir, FILES.record), report)
    if page:
        from dataaudit.report.pages import write_dedup_html   # rendering loads Jinja2

        write_dedup_html(join(out_dir, FILES.page), report)
