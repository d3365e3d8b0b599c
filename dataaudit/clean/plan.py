"""Everything `clean` decides before a byte is written: the findings are read (the audit's report and flags, a
dedup keep-list, a contamination drop-list), every shard is checked against them (`safety`: refused when it changed
since the audit, ...), and the rows to drop are joined per shard (`selection`). Any reason not to clean is a
CleanRefused naming the file, and nothing is written."""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pyarrow as pa

from dataaudit import audit, contamination, dedup
from dataaudit.clean import STATE
from dataaudit.formats import format_of
from dataaudit.io import join, parent, read_parquet, read_text, relative, resolved
from dataaudit.sources.fingerprint import content_digest

from .safety import CleanRefused, audited, check_outputs, covered, output_paths
from .selection import DROPPED_SCHEMA, Selection, flag_drops, group, keep_drops, list_drops, reason_names

WRITER_VERSION = 1     # bump when a writer's output bytes change: older parts are then redone


# A clean that drops most of a shard usually means the audit misread its layout (issue 30: 0 of 300 preference
# pairs kept): refuse unless the user raises the limit.
DEFAULT_MAX_DROP = 0.5


def drop_share(plan: "ShardPlan") -> float:
    return plan.drop.size / plan.rows if plan.rows else 0.0


def _refuse_heavy_drops(shards: dict, max_drop: float) -> None:
    heavy = [(p, s) for p, s in shards.items() if drop_share(s) > max_drop]
    if heavy:
        p, s = max(heavy, key=lambda x: drop_share(x[1]))
        more = f" (and {len(heavy) - 1} more shard{'s' if len(heavy) > 2 else ''})" if len(heavy) > 1 else ""
        raise CleanRefused(f"{p} would lose {s.drop.size} of {s.rows} records ({drop_share(s):.1%}){more}, more "
                           f"than --max-drop {max_drop:.0%}: nothing written; check the audit's findings, or "
                           "raise --max-drop")


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
    out: str = ""
    text_unit: str = "line"    # plain-text shards: records as the audit read them (a line or a paragraph)

    @functools.cached_property
    def protected(self) -> frozenset[str]:
        """Resolved paths a referenced file is never copied to (or under): every shard's output and clean's own
        folder (STATE: record, page, dropped table, parts)."""
        own = [STATE] if self.out else []
        return frozenset([resolved(p.output) for p in self.shards.values()]
                         + [resolved(join(self.out, f)) for f in own])

    def fingerprint(self) -> dict:
        return {"writer": WRITER_VERSION, "selection": self.selection.to_json(), "reasons": self.reasons,
                "row_group_rows": self.row_group_rows, "dropped": DROPPED_SCHEMA.names, "text_records": self.text_unit}


def _read_json(path: str, what: str) -> dict:
    try:
        return json.loads(read_text(path))
    except FileNotFoundError:
        raise CleanRefused(f"{path}: not found: is {parent(path)} the --out folder of "
                           f"`dataaudit {what}`?") from None
    except (OSError, ValueError) as e:
        raise CleanRefused(f"{path}: cannot read it: {e}") from None


def _read_table(path: str, columns: list[str]) -> pa.Table:
    try:
        return read_parquet(path, columns)
    except FileNotFoundError:
        raise CleanRefused(f"{path}: not found") from None
    except (pa.ArrowException, OSError) as e:
        raise CleanRefused(f"{path}: cannot read it: {e}") from None


def same_records(audit_unit: str | None, unit: str, what: str) -> None:
    """Refuse findings that numbered a plain-text shard's records otherwise than the audit (by line, by paragraph):
    their rows would name other records. `audit_unit` None: no plain-text shard is cleaned, nothing to compare."""
    if audit_unit is not None and unit != audit_unit:
        raise CleanRefused(f"{what} read plain-text records per {unit}, the audit per {audit_unit}: run both with "
                           "the same --text-records")


def _dedup_drops(dirs: list[Path], paths: list[str], counts: list[int], fps: list[dict], code: int,
                 text_unit: str | None) -> list[tuple]:
    """(shard, row, code) of the records each dedup folder's keep-list leaves out, for the shards it covers (a
    text and an image dedup may cover the same shards: both apply). Refuses a shard no folder covers."""
    parts, seen = [], set()
    for d in dirs:
        report = _read_json(join(d, dedup.FILES.record), "dedup")
        same_records(text_unit, report.get("params", {}).get("text_unit", "line"), f"dedup ({d})")
        entries = {resolved(s["path"]) for s in report.get("shards", [])}
        idx = [i for i, p in enumerate(paths) if resolved(p) in entries]
        sub = [paths[i] for i in idx]
        covered(sub, report.get("shards", []), [counts[i] for i in idx], f"dedup ({d})", "samples",
                [fps[i] for i in idx])
        keep = _read_table(join(d, dedup.KEEP), ["shard", "row"])
        shard, rows, codes = keep_drops(keep, {resolved(p): j for j, p in enumerate(sub)},
                                        [counts[i] for i in idx], code)
        parts.append((np.asarray(idx, np.int64)[shard] if len(idx) else shard, rows, codes))
        seen.update(idx)
    missing = [p for i, p in enumerate(paths) if dirs and i not in seen]
    if missing:
        raise CleanRefused(f"{missing[0]}: not among the shards of any --dedup folder: no findings cover it")
    return parts


def _contamination_drops(folder: Path, paths: list[str], counts: list[int], fps: list[dict],
                         index_of: dict[str, int], code: int, text_unit: str | None) -> tuple:
    """(shard, row, code) of the training records a contamination drop-list names."""
    con = _read_json(join(folder, contamination.FILES.record), "contamination")
    if not con.get("decontaminate"):
        raise CleanRefused(f"{folder}: holds no {contamination.DECONTAMINATE}: run `dataaudit contamination` "
                           "with --decontaminate-train")
    same_records(text_unit, con.get("train", {}).get("text_records", "line"), f"contamination ({folder})")
    covered(paths, con.get("train", {}).get("shards", []), counts, "contamination", "records", fps)
    decon = _read_table(join(folder, con["decontaminate"]["file"]), ["shard", "row"])
    return list_drops(decon, index_of, code)


def plan_clean(paths: Sequence[str], args: Sequence[str], out: Path, selection: Selection, audit_dir: Path,
               dedup_dirs: Sequence[Path] = (), contamination_dir: Path | None = None, *,
               skip_unreadable: bool = False, row_group_rows: int | None = None,
               max_drop: float = DEFAULT_MAX_DROP) -> CleanJob:
    """Everything decided before a byte is written; CleanRefused (one line) for any reason not to clean, among
    them a shard that would lose more than `max_drop` (a share, 0..1) of its records."""
    report = _read_json(join(audit_dir, audit.FILES.record), "audit")
    if report.get("sample") is not None:     # its flags name the sampled records only: the others were not looked at
        raise CleanRefused(f"{audit_dir}: the audit is a sample (--sample, --sample-fraction): clean needs the "
                           "findings of every record; audit without --sample first")
    text_unit = report.get("config", {}).get("data", {}).get("text_records", "line")
    paths, skipped = audited(list(paths), report, skip_unreadable)
    if not paths:
        raise CleanRefused("no shard left to clean")
    outputs = output_paths(paths, out)
    dedup_dirs = list(dedup_dirs)
    findings_dirs = [d for d in (audit_dir, *dedup_dirs, contamination_dir) if d is not None]
    check_outputs(paths, list(args), out, outputs, findings_dirs)
    samples = {resolved(s["path"]): s["samples"] for s in report["shards"]}
    counts = [int(samples[resolved(p)]) for p in paths]
    entries = {resolved(s["path"]): s for s in report["shards"]}
    fps = [entries[resolved(p)]["fingerprint"] for p in paths]
    index_of = {resolved(p): i for i, p in enumerate(paths)}

    flags = _read_table(join(audit_dir, audit.FLAGS), ["shard", "row", "check", "severity"])
    flagged_checks = [c for c in flags.column("check").unique().to_pylist() if c is not None]
    names = reason_names(flagged_checks)
    parts = [flag_drops(flags, selection, index_of, names)]
    compared = text_unit if any(format_of(p).name == "text" for p in paths) else None
    parts += _dedup_drops(dedup_dirs, paths, counts, fps, names.index("dedup"), compared)
    if contamination_dir is not None:
        parts.append(_contamination_drops(contamination_dir, paths, counts, fps, index_of,
                                          names.index("contamination"), compared))
    try:
        drops = group(parts, counts, names)
    except ValueError as e:
        raise CleanRefused(f"the findings do not describe these shards: {e}") from None

    shards = {}
    for i, p in enumerate(paths):
        d = drops.shards[i]
        fp = fps[i]
        shards[p] = ShardPlan(p, outputs[i], relative(outputs[i], out), format_of(p).name, counts[i],
                              d.rows, d.offsets, d.codes, f"{d.digest()}-{content_digest(fp)}")
    _refuse_heavy_drops(shards, max_drop)
    findings = {"audit": str(audit_dir), "dedup": [str(d) for d in dedup_dirs],
                "contamination": None if contamination_dir is None else str(contamination_dir)}
    return CleanJob(shards, names, selection, findings, skipped, row_group_rows, str(out), text_unit)
