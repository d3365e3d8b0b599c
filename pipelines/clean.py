"""The clean job: every shard rewritten without the records the findings name, in its own format and layout.

1. plan    on the driver, before anything is written: the findings are read (the audit's report.json and
           flags.parquet, a dedup keep.parquet, a contamination decontaminate.parquet), every shard is checked
           against them (dataaudit.clean.safety: refused when it changed since the audit, ...), and the rows to
           drop are joined per shard (dataaudit.clean.selection).
2. write   one unit per shard through the shard runner (`run_units`: in-process or one Ray task per shard,
           resumed from parts): the writer of its format writes OUT/<relative path> atomically; the part
           (OUT/parts/clean/NNNNN-<digest>.dropped.parquet + marker) records the dropped rows, their keys and
           reasons, and the output's size and hash. A rerun trusts a finished shard only when its marker names
           this job and these drops and its output still has the recorded size and hash.
3. report  OUT/dropped.parquet (every dropped row, shard order) and OUT/clean.json, after checking that every
           shard's rows in = kept + dropped.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from dataaudit.clean.json_array import rewrite_json_array
from dataaudit.clean.jsonl import rewrite_jsonl
from dataaudit.clean.output import output_fingerprint
from dataaudit.clean.parquet import rewrite_parquet
from dataaudit.clean.referenced import copy_referenced
from dataaudit.clean.safety import PARTS, CleanRefused, audited, check_outputs, covered, output_paths
from dataaudit.clean.selection import (DROPPED_SCHEMA, Selection, flag_drops, group, keep_drops,
                                       list_drops, reason_names)
from dataaudit.clean.tar import rewrite_tar
from dataaudit.handlers import reraise
from dataaudit.report.atomic import remove_stale_temps, write_json, write_parquet
from dataaudit.sources import shard_format
from dataaudit.pipelines.engine import choose_engine
from dataaudit.pipelines.parts import PartStore
from dataaudit.pipelines.run_record import run_record
from dataaudit.pipelines.runner import run_units

SCHEMA_VERSION = 1
WRITER_VERSION = 1     # bump when a writer's output bytes change: older parts are then redone


@dataclass
class ShardPlan:
    path: str
    output: str                # absolute output path
    relative: str              # the output's path inside OUT
    format: str
    rows: int                  # records the audit read
    drop: np.ndarray           # sorted rows to drop
    offsets: np.ndarray        # reasons of drop[i]: codes[offsets[i]:offsets[i+1]]
    codes: np.ndarray
    digest: str                # of the drops and of the input's fingerprint


@dataclass
class CleanJob:
    shards: dict[str, ShardPlan]
    reasons: list[str]
    selection: Selection
    findings: dict
    skipped: list[dict] = field(default_factory=list)
    row_group_rows: int | None = None

    def fingerprint(self) -> dict:
        return {"writer": WRITER_VERSION, "selection": self.selection.to_json(), "reasons": self.reasons,
                "row_group_rows": self.row_group_rows, "dropped": DROPPED_SCHEMA.names}


def _read_json(path: Path, what: str) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CleanRefused(f"{path}: not found: is {path.parent} a {what} output folder?") from None
    except (OSError, ValueError) as e:
        raise CleanRefused(f"{path}: cannot read it: {e}") from None


def _read_table(path: Path, columns: list[str]) -> pa.Table:
    try:
        return pq.read_table(path, columns=columns)
    except FileNotFoundError:
        raise CleanRefused(f"{path}: not found") from None
    except (pa.ArrowException, OSError) as e:
        raise CleanRefused(f"{path}: cannot read it: {e}") from None


def _dedup_drops(dirs: list[Path], paths: list[str], counts: list[int], code: int) -> list[tuple]:
    """(shard, row, code) of the records each dedup folder's keep-list leaves out, for the shards it covers (a
    text and an image dedup may cover the same shards: both apply). Refuses a shard no folder covers."""
    parts, seen = [], set()
    for d in dirs:
        report = _read_json(d / "dedup.json", "dedup")
        entries = {os.path.realpath(s["path"]) for s in report.get("shards", [])}
        idx = [i for i, p in enumerate(paths) if os.path.realpath(p) in entries]
        sub = [paths[i] for i in idx]
        covered(sub, report.get("shards", []), [counts[i] for i in idx], f"dedup ({d})", "samples")
        keep = _read_table(d / "keep.parquet", ["shard", "row"])
        shard, rows, codes = keep_drops(keep, {os.path.realpath(p): j for j, p in enumerate(sub)},
                                        [counts[i] for i in idx], code)
        parts.append((np.asarray(idx, np.int64)[shard] if len(idx) else shard, rows, codes))
        seen.update(idx)
    missing = [p for i, p in enumerate(paths) if dirs and i not in seen]
    if missing:
        raise CleanRefused(f"{missing[0]}: not among the shards of any --dedup folder: no findings cover it")
    return parts


def plan_clean(paths: Sequence[str], args: Sequence[str], out: Path, selection: Selection, audit_dir: Path,
               dedup_dirs: Sequence[Path] = (), contamination_dir: Path | None = None, *,
               skip_unreadable: bool = False, row_group_rows: int | None = None) -> CleanJob:
    """Everything decided before a byte is written; CleanRefused (one line) for any reason not to clean."""
    audit_dir = Path(audit_dir)
    report = _read_json(audit_dir / "report.json", "audit")
    paths, skipped = audited(list(paths), report, skip_unreadable)
    if not paths:
        raise CleanRefused("no shard left to clean")
    outputs = output_paths(paths, out)
    dedup_dirs = [Path(d) for d in dedup_dirs]
    findings_dirs = [Path(d) for d in (audit_dir, *dedup_dirs, contamination_dir) if d is not None]
    check_outputs(paths, list(args), out, outputs, findings_dirs)
    samples = {os.path.realpath(s["path"]): s["samples"] for s in report["shards"]}
    counts = [int(samples[os.path.realpath(p)]) for p in paths]
    index_of = {os.path.realpath(p): i for i, p in enumerate(paths)}

    flags = _read_table(audit_dir / "flags.parquet", ["shard", "row", "check", "severity"])
    flagged_checks = [c for c in flags.column("check").unique().to_pylist() if c is not None]
    names = reason_names(flagged_checks)
    parts = [flag_drops(flags, selection, index_of, names)]
    parts += _dedup_drops(dedup_dirs, paths, counts, names.index("dedup"))
    if contamination_dir is not None:
        con = _read_json(Path(contamination_dir) / "contamination.json", "contamination")
        if not con.get("decontaminate"):
            raise CleanRefused(f"{contamination_dir}: holds no decontaminate.parquet: run `dataaudit contamination` "
                               "with --decontaminate-train")
        covered(paths, con.get("train", {}).get("shards", []), counts, "contamination", "records")
        decon = _read_table(Path(contamination_dir) / con["decontaminate"]["file"], ["shard", "row"])
        parts.append(list_drops(decon, index_of, names.index("contamination")))
    try:
        drops = group(parts, counts, names)
    except ValueError as e:
        raise CleanRefused(f"the findings do not describe these shards: {e}") from None

    entries = {os.path.realpath(s["path"]): s for s in report["shards"]}
    shards = {}
    for i, p in enumerate(paths):
        d = drops.shards[i]
        fp = entries[os.path.realpath(p)]["fingerprint"]
        shards[p] = ShardPlan(p, str(outputs[i]), str(outputs[i].relative_to(out)), shard_format(p), counts[i],
                              d.rows, d.offsets, d.codes, f"{d.digest()}-{fp['xxh3_128']}")
    findings = {"audit": str(audit_dir), "dedup": [str(d) for d in dedup_dirs],
                "contamination": None if contamination_dir is None else str(contamination_dir)}
    return CleanJob(shards, names, selection, findings, skipped, row_group_rows)


class CleanStore(PartStore):
    """Parts of the clean job; a finished shard counts only while its output is the one it wrote."""

    def __init__(self, out_dir: Path, job: CleanJob):
        super().__init__(out_dir, job.fingerprint(), suffix=".dropped.parquet", folder=f"{PARTS}/clean",
                         schema=DROPPED_SCHEMA)
        self.job = job

    def load(self, index: int, path: str) -> dict | None:
        done = super().load(index, path)
        plan = self.job.shards[path]
        if done is None or done.get("drops") != plan.digest or done.get("output") != plan.relative:
            return None
        try:
            if Path(plan.output).stat().st_size != done["bytes"] or \
                    output_fingerprint(Path(plan.output))["xxh3_128"] != done["xxh3_128"]:
                return None
        except OSError:
            return None
        return done


def clean_shard(path: str, job: CleanJob, on_batch: Callable[[int], None] | None = None,
                handler: Callable = reraise) -> tuple[dict, pa.Table]:
    """The unit: write one shard's cleaned copy; returns its summary and its dropped rows."""
    plan = job.shards[path]
    dst = Path(plan.output)
    if plan.format == "parquet":
        wrote = rewrite_parquet(path, dst, plan.drop, plan.rows, job.row_group_rows)
    elif plan.format == "webdataset":
        wrote = rewrite_tar(path, dst, plan.drop, plan.rows)
    elif plan.format == "jsonl":
        wrote = rewrite_jsonl(path, dst, plan.drop, plan.rows)
    else:
        wrote = rewrite_json_array(path, dst, plan.drop, plan.rows)
    referenced = copy_referenced(path, dst, plan.drop) if plan.format != "webdataset" else {}
    keys = pa.array(wrote["dropped_keys"], pa.string()) if "dropped_keys" in wrote else None
    if keys is None:
        keys = pc.cast(pa.array(plan.drop, pa.int64()), pa.string())
    reasons = pa.ListArray.from_arrays(pa.array(plan.offsets, pa.int32()),
                                       pa.array(job.reasons, pa.string()).take(pa.array(plan.codes, pa.int32())))
    n = len(plan.drop)
    lines = pa.array(wrote.get("dropped_lines", [None] * n), pa.int64())   # text formats only
    table = pa.table({"shard": pa.array([path] * n, pa.string()), "key": keys,
                      "row": pa.array(plan.drop, pa.int64()), "line": lines, "reasons": reasons},
                     schema=DROPPED_SCHEMA)
    by = np.bincount(plan.codes, minlength=len(job.reasons))
    summary = {"path": path, "output": plan.relative, "format": plan.format, "rows": plan.rows,
               "kept": wrote["kept"], "dropped": n,
               "dropped_by": {job.reasons[c]: int(by[c]) for c in np.flatnonzero(by)},
               **({"row_group_rows": wrote["row_group_rows"]} if "row_group_rows" in wrote else {}), **referenced,
               **output_fingerprint(dst), "drops": plan.digest}
    if on_batch is not None:
        on_batch(plan.rows)
    return summary, table


def _must(ok: bool, what: str) -> None:
    """An accounting invariant (not an assert: it holds under python -O too)."""
    if not ok:
        raise RuntimeError(f"clean: {what}: nothing written to clean.json")


def _totals(shards: list[dict], reasons: list[str]) -> dict:
    by: dict[str, int] = {}
    for s in shards:
        _must(s["rows"] == s["kept"] + s["dropped"], f"{s['path']}: rows in != kept + dropped")
        for r, c in s["dropped_by"].items():
            by[r] = by.get(r, 0) + c
    totals = {"shards": len(shards), "rows": sum(s["rows"] for s in shards),
              "kept": sum(s["kept"] for s in shards), "dropped": sum(s["dropped"] for s in shards),
              "dropped_by": {r: by[r] for r in reasons if r in by}}
    _must(totals["rows"] == totals["kept"] + totals["dropped"], "total rows in != kept + dropped")
    return totals


def run_clean(job: CleanJob, out_dir: Path, engine: str = "auto", ray_address: str | None = None,
              workers: int | None = None, on_progress: Callable[[int, int], None] | None = None) -> dict:
    """Write the cleaned shards, OUT/dropped.parquet and OUT/clean.json; returns clean.json's content."""
    out_dir = Path(out_dir)
    remove_stale_temps(out_dir)
    started = time.time()
    paths = list(job.shards)
    engine = choose_engine(paths, engine, ray_address)
    store = CleanStore(out_dir, job)
    summaries, resumed = run_units(paths, store, clean_shard, (job,), engine=engine, count="rows",
                                   ray_address=ray_address, workers=workers, on_progress=on_progress,
                                   handler=reraise)
    shards = [{k: v for k, v in s.items() if k != "drops"} for s in summaries]
    totals = _totals(shards, job.reasons)
    rows = write_parquet(out_dir / "dropped.parquet", (store.read(i, p) for i, p in enumerate(paths)),
                         DROPPED_SCHEMA)
    _must(rows == totals["dropped"], f"dropped.parquet has {rows} rows, the shards dropped {totals['dropped']}")
    report = {
        "schema_version": SCHEMA_VERSION,
        "selection": job.selection.to_json(),
        "findings": job.findings,
        "totals": {**totals, "skipped_shards": len(job.skipped)},
        "shards": shards,
        "skipped": job.skipped,
        "files": {"dropped": "dropped.parquet"},
        "run": run_record(engine, resumed, started, round(time.time() - started, 3)),
    }
    write_json(out_dir / "clean.json", report)
    return report
