"""The image dedup job: exact (bytes) and near (perceptual hash) duplicate images across every shard.

1. hash     one unit per shard, through the shard runner (in-process or one Ray task per shard, resumed from
            parts): OUT/parts/img-NNNNN-<digest>.img.parquet (row, key, digest, phash, ...).
2. group    on the driver: exact groups and near clusters (dataaudit.dedup.images).
3. against  with validation shards: the training records whose images appear in them (dataaudit.dedup.image_against).
4. outputs  the clusters table and the keep-list (the same schemas as text dedup), overlap.parquet with validation
            shards, and the record.
"""
from __future__ import annotations

import os
from typing import Callable, Sequence

from dataaudit.dedup import FILES, OVERLAP
from dataaudit.dedup.corpus import Corpus
from dataaudit.dedup.image_hashes import PART_SCHEMA, ImageDedupSpec, hash_shard
from dataaudit.dedup.image_against import against_section, image_matches, record_matches, write_image_overlap
from dataaudit.dedup.images import corpus_images, image_clusters, image_report
from dataaudit.dedup.outputs import write_clusters, write_keep
from dataaudit.dedup.report import shard_entries, write_report
from dataaudit.pipelines.engine import EngineOptions
from dataaudit.pipelines.job import JobRun, Progress
from dataaudit.pipelines.parts import PartStore


class ImageHashStore(PartStore):
    def __init__(self, out_dir: str | os.PathLike, fingerprint: dict, train_shards: int):
        super().__init__(out_dir, fingerprint, suffix=".img.parquet", folder=FILES.parts, schema=PART_SCHEMA)
        self.train_shards = train_shards

    def name(self, index: int) -> str:
        if index < self.train_shards:
            return f"img-{index:05d}"
        return f"img-val-{index - self.train_shards:05d}"


def run_image_dedup(paths: Sequence[str], spec: ImageDedupSpec, out_dir: str | os.PathLike,
                    options: EngineOptions = EngineOptions(),
                    on_progress: Callable[[Progress], None] | None = None, against: Sequence[str] = ()) -> dict:
    """Deduplicate the images of `paths` into `out_dir`: dedup.json, clusters.parquet, keep.parquet (and, with
    `against` validation shards, overlap.parquet: the training records whose images appear in them, left out of the
    keep-list). Returns dedup.json's content."""
    paths, against = list(paths), list(against)
    shards = paths + against
    run = JobRun(out_dir, shards, options, on_progress)
    with run.timed("hash"):
        store = ImageHashStore(out_dir, spec.hash_fingerprint(), len(paths))
        summaries = run.units("hash", shards, store, hash_shard, (spec,))
    parts = [store.table_path(i, p) for i, p in enumerate(shards)]
    corpus = Corpus(paths, parts[:len(paths)], summaries[:len(paths)], 0)
    with run.timed("group"):
        clusters, stats = image_clusters(corpus, spec)
    leaked, against_json = None, None
    if against:
        with run.timed("against"):
            val = Corpus(against, parts[len(paths):], summaries[len(paths):], corpus.total)
            t_gid, t_img = corpus_images(corpus)
            v_gid, v_img = corpus_images(val)
            kind, other = image_matches(t_img, v_img, spec.max_distance)
            leaked, kinds, val_gids = record_matches(t_gid, kind, other, v_gid)
            write_image_overlap(out_dir, corpus, val, leaked, kinds, val_gids)
            against_json = against_section(val, len(v_gid), int((kind < 3).sum()), kinds)
    write_clusters(out_dir, clusters, corpus)
    kept = write_keep(out_dir, clusters, corpus, leaked)
    report = image_report(spec, corpus, clusters, kept, stats)
    report["against"] = against_json
    report["validation_shards"] = shard_entries(summaries[len(paths):]) if against else []
    report["unreadable_shards"] += sum(s["status"] != "ok" for s in summaries[len(paths):])
    if against:
        report["notes"].append(f"--against: a training record with an image of the same bytes as a validation "
                               f"image, or a pHash within {spec.max_distance} bits of its pHash or of its mirror "
                               f"image's, is left out of the keep-list ({OVERLAP} names it and a record it matches)")
    report["run"] = run.record(near_search=stats["near_seconds"], shards=[s.get("seconds") for s in summaries])
    write_report(out_dir, report, page=False)
    return report
