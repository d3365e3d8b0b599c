"""The audit job: which shards, which stage, how per-shard results merge into the report.

The stage (`dataaudit.audit.shard.audit_shard`) is the same function in both engines; Ray only decides where it
runs. Each finished shard is written to OUT/parts before the report is assembled, so a rerun with the same
`--out` and config redoes only unfinished shards.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Sequence

from dataaudit.atomic import write_parquet
from dataaudit.audit import FILES, FLAGS
from dataaudit.audit.batch import FLAG_SCHEMA
from dataaudit.audit.pieces import merge_pieces, split_parquet
from dataaudit.audit.report import build_report, write_report
from dataaudit.audit.sample import read_share
from dataaudit.audit.shard import EXAMPLES_PER_CHECK, audit_shard
from dataaudit.config import AuditConfig
from dataaudit.handlers import report_unreadable
from dataaudit.io import join
from dataaudit.pipelines.engine import EngineOptions
from dataaudit.pipelines.job import JobRun, Progress
from dataaudit.pipelines.parts import PartStore
from dataaudit.pipelines.slices import ShardSlice, assign, read_manifests, read_parts, write_manifest

FLAG_ORDER = [("row", "ascending"), ("check", "ascending"), ("field", "ascending")]


@dataclass(frozen=True)
class _Summarized:
    """An `audit_shard`-like stage as a unit: (summary dict, flags table in a fixed order), as the part store
    keeps them. A class, not a closure: it pickles, for the local engine's worker processes. The audit's own stage
    also runs a large Parquet shard in pieces (`dataaudit.audit.pieces`: `pieces`, `piece=`, `merge`)."""

    stage: Callable
    fingerprints = True    # the audit records each shard's fingerprint itself (report.json's, what clean checks)

    def __call__(self, path, config, on_batch=None, handler=report_unreadable, piece=None):
        extra = {} if piece is None else {"row_groups": piece}
        result, flags = self.stage(path, config, on_batch=on_batch, handler=handler, **extra)
        return result.summary(), flags.sort_by(FLAG_ORDER)

    def pieces(self, path, config, target: int):
        """The row groups of each piece of the shard (None: it runs whole); a replaced stage runs whole."""
        return split_parquet(path, config, target) if self.stage is audit_shard else None

    @staticmethod
    def merge(results: list) -> tuple | None:
        """A shard's result from its pieces', in order (None: they cannot stand for it; it runs whole)."""
        return merge_pieces(results, EXAMPLES_PER_CHECK)


def run_audit(paths: Sequence[str], config: AuditConfig, out_dir: str | os.PathLike,
              options: EngineOptions = EngineOptions(), on_progress: Callable[[Progress], None] | None = None, *,
              stage: Callable = audit_shard, read: str | None = None, shard_slice: ShardSlice | None = None,
              gates: list | None = None) -> dict:
    """Audit `paths` into `out_dir` (report.json, flags.parquet, report.html); returns the report.

    Progress comes per batch with the local engine, per shard otherwise. With the local engine, `options.workers`
    > 1 audits that many shards at once in worker processes. `stage` is the per-shard function (`audit_shard`'s
    signature), replaceable for fault tests. `read` (default: the config's, "all-columns"): "all-columns" decodes
    every column of every Parquet row group, as a training loader does, so a column that cannot be decoded makes
    its shard unreadable; "checked-columns" decodes only the columns the checks read (faster on wide shards; the
    others are named in a note). The mode is part of the config: report.json's `config.read`, and parts written
    under the other mode are not reused. `shard_slice`: run only that slice of an array job (`pipelines.slices`):
    its parts and its manifest, no report (`merge_audit` writes it); returns the slice's manifest. `gates`: the
    --fail-on rules, evaluated into report.json.
    """
    config = config.with_read(config.read if read is None else read)   # ValueError for an unknown mode
    run = JobRun(out_dir, paths, options, on_progress, own_folder=shard_slice is None,
                 share=1.0 if config.sample is None else read_share(config.sample), lanes=True)
    store = _store(out_dir, config)
    if shard_slice is not None:
        slices = assign(paths, shard_slice.count)
        mine = [i for i, s in enumerate(slices) if s == shard_slice.index]
        summaries = run.units("audit", paths, store, _Summarized(stage), (config,), processes=True, only=mine)
        extra = {"shards": len(mine), "records": sum(s["records"] for s in summaries), "run": run.record()}
        write_manifest(store.dir, shard_slice, store.digest, paths, slices, config.fingerprint(), extra)
        return extra
    summaries = run.units("audit", paths, store, _Summarized(stage), (config,), processes=True)
    return _write_outputs(run, store, paths, summaries, config, run.record(), gates)


def _store(out_dir, config: AuditConfig) -> PartStore:
    return PartStore(out_dir, {"config": config.fingerprint(), "schema": FLAG_SCHEMA.to_string()},
                     suffix=".flags.parquet", folder=FILES.parts)


def _write_outputs(run: JobRun, store: PartStore, paths, summaries, config, record: dict, gates) -> dict:
    """flags.parquet from the parts, then report.json and its page: the one report step of a job and a merge."""
    write_parquet(run.out(FLAGS), store.read_all(paths), FLAG_SCHEMA)
    report = build_report(summaries, config, record, gates)
    write_report(run.out_dir, report)
    return report


def merge_audit(out_dir: str | os.PathLike, gates: list | None = None) -> dict:
    """The report of an array job whose slices all finished in `out_dir`: the report.json (but its `run`),
    flags.parquet and report.html one job on the same input writes. SliceError (exit 2) for a slice not finished,
    a part missing, or slices run with other settings or on other shards."""
    manifest = read_manifests(join(out_dir, FILES.parts))
    paths = manifest["paths"]
    config = AuditConfig.from_fingerprint(manifest["config"])
    run = JobRun(out_dir, paths, EngineOptions(engine="local"))
    store = _store(out_dir, config)
    summaries = read_parts(store, paths, manifest, store.digest)
    record = run.record()
    record.update(engine="merge", slices=manifest["num_shards"], merged_shards=len(paths))
    return _write_outputs(run, store, paths, summaries, config, record, gates)
