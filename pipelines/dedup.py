"""The dedup job: which shards, which stage of `dataaudit.dedup` runs where, how the results merge.

1. sign    one unit per shard, through the shard runner (`run_units`: in-process or one Ray task per shard,
           resumed from parts): OUT/parts/{train,val}-NNNNN-<digest>.sig.parquet (+ .shingles.arrow with
           verification, and a .json marker written last). A rerun with the same signature settings skips
           finished shards, whatever the threshold (verification signs again a part that has no shingle sets).
2. map     one unit per shard (`run_tasks`, the runner's local/Ray loop; recomputed every run, no parts): band
           and exact hashes hash-partitioned into P partitions, OUT/work/{bands,exact}-<side>-NNNNN.arrow.
3. reduce  one unit per partition, the same way: exact edges, near (band) edges, validation->train matches.
4. cluster on the driver, from edges only; then the outputs, dedup.json and dedup.html.

A document is known by its global index (gid): train shards in the order given, rows in shard order, then
the validation shards. Empty documents (no shingle after normalization) and unreadable records never enter
stages 2-4: they are counted, and kept in the keep-list, never clustered.

With --engine ray on a multi-node cluster, OUT must be on storage that every node sees (stage 2 and 3
exchange the partition files through it).
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from typing import Callable, Sequence

import pyarrow as pa

from dataaudit.atomic import write_arrow
from dataaudit.dedup import FILES
from dataaudit.dedup.buckets import map_shard, map_units, partition_count
from dataaudit.dedup.clusters import find_clusters, validation_overlap
from dataaudit.dedup.config import DedupSpec
from dataaudit.dedup.corpus import Corpus, shingles_file
from dataaudit.dedup.examples import examples
from dataaudit.dedup.outputs import write_clusters, write_keep, write_overlap
from dataaudit.dedup.reduce import merge_partitions, reduce_partition
from dataaudit.dedup.report import dedup_report, write_report
from dataaudit.dedup.signatures import sign_shard, warm_kernels
from dataaudit.io import exists, join, makedirs, remove_tree
from dataaudit.outputs import WORK
from dataaudit.pipelines.engine import EngineOptions
from dataaudit.pipelines.job import JobRun, Progress
from dataaudit.pipelines.parts import PartStore, fingerprint_digest
from dataaudit.pipelines.slices import ShardSlice, SliceError, assign, read_manifests, read_parts, write_manifest


class SignatureStore(PartStore):
    """OUT/parts/{train,val}-NNNNN-<path digest>.sig.parquet + .json: one store over the train shards then the
    validation shards (shard index = position in train + validation), so one runner call signs both sides.
    The shingle sets (with verification) go beside, to an Arrow IPC file (`corpus.shingles_file`): the
    clusters read a few documents' sets from it memory-mapped, with no decode (100k documents: 0.07 s to
    write and 0.09 s to read as a Parquet list column, 0.02 s and 0.01 s so). Parts signed without shingle sets
    are not reused when verification needs them."""

    def __init__(self, out_dir: str | os.PathLike, fingerprint: dict, train_shards: int, need_shingles: bool = False):
        super().__init__(out_dir, fingerprint, suffix=".sig.parquet", folder=FILES.parts)
        self.train_shards = train_shards
        self.need_shingles = need_shingles

    def name(self, index: int) -> str:
        if index < self.train_shards:
            return f"train-{index:05d}"
        return f"val-{index - self.train_shards:05d}"

    def accepts(self, marker: dict) -> bool:
        return bool(marker.get("shingles")) or not self.need_shingles

    def load(self, index: int, path: str, check_input: bool = True) -> dict | None:
        summary = super().load(index, path, check_input)
        if summary is not None and self.need_shingles and not exists(shingles_file(self.table_path(index, path))):
            return None
        return summary

    def marker(self, table: pa.Table) -> dict:
        return {"shingles": "shingles" in table.column_names}

    def write_table(self, index: int, path: str, table: pa.Table) -> None:
        if "shingles" in table.column_names:
            write_arrow(shingles_file(self.table_path(index, path)), table.select(["shingles"]))
            table = table.drop_columns(["shingles"])
        super().write_table(index, path, table)


def run_dedup(paths: Sequence[str], spec: DedupSpec, out_dir: str | os.PathLike, against: Sequence[str] = (),
              options: EngineOptions = EngineOptions(), on_progress: Callable[[Progress], None] | None = None, *,
              partitions: int | str = "auto", html: bool = True, shard_slice: ShardSlice | None = None) -> dict:
    """Deduplicate `paths` (and compare `against` validation shards with them) into `out_dir`:
    dedup.json, clusters.parquet, keep.parquet, dedup.html (+ overlap.parquet with `against`).
    Returns dedup.json's content. Progress: the signature stage per batch (local) or per shard (Ray), then the
    later stages per unit. `options.workers` caps the units in flight on Ray. `shard_slice`: sign only that slice
    of an array job's shards (`pipelines.slices`) and write its manifest, no report (`merge_dedup` bands, reduces
    and clusters once every slice is done); returns the slice's manifest."""
    paths, against = list(paths), list(against)
    shards = paths + against
    run = JobRun(out_dir, shards, options, on_progress, own_folder=shard_slice is None)
    store = SignatureStore(out_dir, spec.signature_fingerprint(), len(paths), spec.verify)
    if shard_slice is not None:
        slices = assign(shards, shard_slice.count)
        mine = [i for i, s in enumerate(slices) if s == shard_slice.index]
        summaries = _sign(run, store, shards, spec, mine)
        extra = {"command": "dedup", "train_shards": len(paths), "partitions": partitions, "shards": len(mine),
                 "records": sum(s["records"] for s in summaries), "run": run.record()}
        write_manifest(store.dir, shard_slice, _job_digest(store, spec, len(paths), partitions), shards, slices,
                       asdict(spec), extra)
        return extra
    with run.timed("sign"):
        summaries = _sign(run, store, shards, spec)
    return _finish(run, store, paths, against, summaries, spec, partitions, html)


def merge_dedup(out_dir: str | os.PathLike) -> dict:
    """The dedup of an array job whose slices all signed their shards into `out_dir`: the bands, partitions,
    clusters and outputs, on this machine's cores, from the slices' signatures; the dedup.json (but its `run`),
    clusters, keep list, overlap and page one job on the same input writes. SliceError (exit 2) for a slice not
    finished, a signature part missing, or slices run with other settings or on other shards."""
    manifest = read_manifests(join(out_dir, FILES.parts))
    try:
        spec = DedupSpec(**{k: tuple(v) if isinstance(v, list) else v for k, v in manifest["config"].items()})
    except (TypeError, ValueError):    # settings this version does not have
        raise SliceError(f"{join(out_dir, FILES.parts)}: the slices were written by another version of dataaudit: "
                         "run them again") from None
    shards, n_train = manifest["paths"], manifest["train_shards"]
    run = JobRun(out_dir, shards, EngineOptions(engine="local"))
    store = SignatureStore(out_dir, spec.signature_fingerprint(), n_train, spec.verify)
    with run.timed("sign"):
        summaries = read_parts(store, shards, manifest, _job_digest(store, spec, n_train, manifest["partitions"]))
    return _finish(run, store, shards[:n_train], shards[n_train:], summaries, spec, manifest["partitions"], True,
                   {"engine": "merge", "slices": manifest["num_shards"], "merged_shards": len(shards)})


def _job_digest(store: SignatureStore, spec: DedupSpec, train_shards: int, partitions) -> str:
    """What the slices of one array job share: the signature parts' digest (settings and code) and every setting
    of the later stages, so that the merge refuses slices run with another threshold or other validation shards."""
    return fingerprint_digest({"signatures": store.digest, "spec": asdict(spec), "train_shards": train_shards,
                               "partitions": partitions})


def _sign(run: JobRun, store: SignatureStore, shards: list, spec: DedupSpec, only=None) -> list[dict]:
    """Stage 1 through the shard runner: the signatures of `shards` (of the indexes `only`), resumed from parts."""
    threads = sign_threads() if run.engine == "local" else 1      # a Ray task has one CPU
    if run.engine == "local":   # numba loads the cached kernels while this thread opens the first shard
        threading.Thread(target=warm_kernels, args=(spec, spec.verify), daemon=True).start()
    return run.units("sign", shards, store, sign_shard, (spec, spec.verify, threads), only=only)


def _finish(run: JobRun, store: SignatureStore, paths: list, against: list, summaries: list[dict],
            spec: DedupSpec, partitions, html: bool, merged: dict | None = None) -> dict:
    """Stages 2-4 and the outputs, from every shard's signature summary: the one finishing step of a job and a
    merge. `merged`: the merge's entries for the run record."""
    shards = paths + against
    parts = [store.table_path(i, p) for i, p in enumerate(shards)]
    train = Corpus(paths, parts[:len(paths)], summaries[:len(paths)], 0)
    val = Corpus(against, parts[len(paths):], summaries[len(paths):], train.total)
    records = train.total + val.total

    # 2 + 3. partitioned band hashes -> edges
    with run.timed("lsh"):
        bands, rows = spec.bands()
        n_parts = partition_count(sum(s["records"] - s["empty"] for s in summaries), bands, partitions)
        work = run.out(WORK)
        remove_tree(work)
        makedirs(work)
        units = map_units({"train": train, "val": val}, work)
        run.tasks("map", units, map_shard, (bands, rows, n_parts), records)
        results = run.tasks("reduce", list(range(n_parts)), reduce_partition,
                            ([u.band_file for u in units], [u.exact_file for u in units], train.total,
                             spec.verify or spec.estimate), records)
        remove_tree(work)
        edges = merge_partitions(results)

    # 4. verification and clusters
    with run.timed("cluster"):
        clusters = find_clusters(edges, train, spec)
        overlap = validation_overlap(edges, train, val, spec) if against else None

    # outputs
    with run.timed("outputs"):
        against_json, val_examples = write_overlap(run.out_dir, train, val, overlap) if overlap is not None \
            else (None, [])
        with ThreadPoolExecutor(1) as pool:      # the examples' texts are read while the tables are written
            found = pool.submit(examples, clusters, train, val, val_examples, spec.text_field, spec.text_unit)
            write_clusters(run.out_dir, clusters, train)
            kept = write_keep(run.out_dir, clusters, train)
            report = dedup_report(spec, n_parts, train, val, clusters, kept, against_json)
            report["examples"] = found.result()
    report["run"] = run.record(shards=[s.get("seconds") for s in summaries])
    if merged:
        report["run"].update(merged)
    write_report(run.out_dir, report, page=html)
    return report


def sign_threads() -> int:
    """Threads signing one shard's batches in-process: NUMBA_NUM_THREADS if set, else the usable CPUs."""
    env = os.environ.get("NUMBA_NUM_THREADS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
