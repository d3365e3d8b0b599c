"""The image dedup job: exact (bytes) and near (perceptual hash) duplicate images across every shard.

1. hash     one unit per shard, through the shard runner (in-process or one Ray task per shard, resumed from
            parts): OUT/parts/img-NNNNN-<digest>.img.parquet (row, key, digest, phash, ...).
2. group    on the driver: exact groups and near clusters (dataaudit.dedup.images).
3. outputs  the clusters table and the keep-list (the same schemas as text dedup), and the record.
"""
from __future__ import annotations

import os
from typing import Callable, Sequence

from dataaudit.dedup import FILES
from dataaudit.dedup.corpus import Corpus
from dataaudit.dedup.image_hashes import PART_SCHEMA, ImageDedupSpec, hash_shard
from dataaudit.dedup.images import image_clusters, image_report
from dataaudit.dedup.outputs import write_clusters, write_keep
from dataaudit.dedup.report import write_report
from dataaudit.pipelines.engine import EngineOptions
from dataaudit.pipelines.job import JobRun, Progress
from dataaudit.pipelines.parts import PartStore


class ImageHashStore(PartStore):
    def __init__(self, out_dir: str | os.PathLike, fingerprint: dict):
        super().__init__(out_dir, fingerprint, suffix=".img.parquet", folder=FILES.parts, schema=PART_SCHEMA)

    def name(self, index: int) -> str:
        return f"img-{index:05d}"


def run_image_dedup(paths: Sequence[str], spec: ImageDedupSpec, out_dir: str | os.PathLike,
                    options: EngineOptions = EngineOptions(),
                    on_progress: Callable[[Progress], None] | None = None) -> dict:
    """Deduplicate the images of `paths` into `out_dir`: dedup.json, clusters.parquet, keep.parquet.
    Returns dedup.json's content."""
    paths = list(paths)
    run = JobRun(out_dir, paths, options, on_progress)
    with run.timed("hash"):
        store = ImageHashStore(out_dir, spec.hash_fingerprint())
        summaries = run.units("hash", paths, store, hash_shard, (spec,))
    corpus = Corpus(paths, [store.table_path(i, p) for i, p in enumerate(paths)], summaries, 0)
    with run.timed("group"):
        clusters, stats = image_clusters(corpus, spec)
    write_clusters(out_dir, clusters, corpus)
    kept = write_keep(out_dir, clusters, corpus)
    report = image_report(spec, corpus, clusters, kept, stats)
    report["run"] = run.record(near_search=stats["near_seconds"], shards=[s.get("seconds") for s in summaries])
    write_report(out_dir, report, page=False)
    return report
