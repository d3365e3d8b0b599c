"""Which rows of which shard to drop, and why: audit flags (by severity or by check), a dedup keep-list, a
contamination drop-list, joined on (shard, row) with numpy; no Python loop over rows.

A reason is "check:<name>", "dedup" or "contamination"; a dropped row lists each of its reasons once, in a
fixed order (checks in registry order, then dedup, then contamination).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.checks import REGISTRY, SEVERITIES
from dataaudit.io import resolved

DROPPED_SCHEMA = pa.schema([("shard", pa.string()), ("key", pa.string()), ("row", pa.int64()), ("line", pa.int64()),
                            ("reasons", pa.list_(pa.string()))])


@dataclass(frozen=True)
class Selection:
    """What to drop: flags at `severity` or worse (None: none by severity), flags of `checks` whatever their
    severity, the records a dedup keep-list leaves out, the records a contamination drop-list names."""
    severity: str | None = "error"
    checks: tuple[str, ...] = ()
    dedup: bool = False
    contamination: bool = False

    def to_json(self) -> dict:
        return {"severity": self.severity, "checks": list(self.checks), "dedup": self.dedup,
                "contamination": self.contamination}


@dataclass
class ShardDrops:
    """One shard's dropped rows (sorted, unique) and the reasons of each (codes into `Drops.reasons`)."""
    rows: np.ndarray                     # int64, sorted
    offsets: np.ndarray                  # int32, len(rows) + 1: reasons of rows[i] are codes[offsets[i]:offsets[i+1]]
    codes: np.ndarray                    # int32

    def digest(self) -> str:
        h = hashlib.sha256()
        for a in (self.rows, self.offsets, self.codes):
            h.update(np.ascontiguousarray(a).tobytes())
            h.update(b"|")
        return h.hexdigest()[:16]


@dataclass
class Drops:
    reasons: list[str]                                   # code -> reason string
    shards: list[ShardDrops] = field(default_factory=list)


def reason_names(extra_checks: list[str] = ()) -> list[str]:
    names = list(REGISTRY) + sorted(set(extra_checks) - set(REGISTRY))
    return [f"check:{n}" for n in names] + ["dedup", "contamination"]


def shard_index(column: pa.ChunkedArray | pa.Array, index_of: dict[str, int]) -> np.ndarray:
    """For each value of a `shard` column, the index of that shard among the cleaned ones (-1: not cleaned).
    Paths are compared resolved (dataaudit.io.resolved: links, or a URI normalized; one Python call per distinct
    shard, not per row)."""
    enc = pc.dictionary_encode(column)
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.combine_chunks() if enc.num_chunks else pa.array([], pa.dictionary(pa.int32(), pa.string()))
    lut = np.array([index_of.get(resolved(s), -1) if s is not None else -1
                    for s in enc.dictionary.to_pylist()] + [-1], dtype=np.int64)
    idx = enc.indices.fill_null(len(lut) - 1).to_numpy(zero_copy_only=False).astype(np.int64)
    return lut[idx]


def _rows(table: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """(row, valid) of a table's `row` column."""
    col = table.column("row")
    valid = pc.is_valid(col).to_numpy(zero_copy_only=False) if col.null_count else np.ones(len(col), bool)
    return col.fill_null(-1).to_numpy().astype(np.int64), valid


def flag_drops(flags: pa.Table, sel: Selection, index_of: dict[str, int], names: list[str]
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(shard, row, code) of the flags the selection drops."""
    code_of = {n: i for i, n in enumerate(names)}
    sev_rank = {s: i for i, s in enumerate(SEVERITIES)}
    check_enc = pc.dictionary_encode(flags.column("check")).combine_chunks()
    check_codes = np.array([code_of[f"check:{c}"] for c in check_enc.dictionary.to_pylist()] + [-1], np.int64)
    chosen = set(sel.checks)
    picked = np.array([c in chosen for c in check_enc.dictionary.to_pylist()] + [False], bool)
    cidx = check_enc.indices.fill_null(len(check_codes) - 1).to_numpy(zero_copy_only=False)
    mask = picked[cidx]
    if sel.severity is not None:
        sev_enc = pc.dictionary_encode(flags.column("severity")).combine_chunks()
        ranks = np.array([sev_rank.get(s, -1) for s in sev_enc.dictionary.to_pylist()] + [-1], np.int64)
        sidx = sev_enc.indices.fill_null(len(ranks) - 1).to_numpy(zero_copy_only=False)
        mask |= ranks[sidx] >= sev_rank[sel.severity]
    shard = shard_index(flags.column("shard"), index_of)
    rows, valid = _rows(flags)
    mask &= (shard >= 0) & valid          # flags of other shards, and shard-level flags (no row), are not rows
    return shard[mask], rows[mask], check_codes[cidx][mask]


def list_drops(table: pa.Table, index_of: dict[str, int], code: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(shard, row, code) of every row of a drop-list (decontaminate.parquet)."""
    shard = shard_index(table.column("shard"), index_of)
    rows, valid = _rows(table)
    m = (shard >= 0) & valid
    return shard[m], rows[m], np.full(int(m.sum()), code, np.int64)


def keep_drops(keep: pa.Table, index_of: dict[str, int], counts: list[int], code: int
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(shard, row, code) of every row of the cleaned shards that a keep-list does not list."""
    shard = shard_index(keep.column("shard"), index_of)
    rows, valid = _rows(keep)
    m = (shard >= 0) & valid & (rows >= 0)
    shard, rows = shard[m], rows[m]
    base = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])
    m = rows < np.asarray(counts, np.int64)[shard] if len(shard) else np.zeros(0, bool)
    kept = np.zeros(int(base[-1]), bool)
    kept[base[shard[m]] + rows[m]] = True
    gid = np.flatnonzero(~kept)
    s = np.searchsorted(base, gid, side="right") - 1
    return s.astype(np.int64), gid - base[s], np.full(len(gid), code, np.int64)


def group(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]], counts: list[int], names: list[str]) -> Drops:
    """Per shard: unique dropped rows with their unique reasons in code order. Raises ValueError for a row
    outside its shard (the findings do not describe these shards)."""
    shard = np.concatenate([p[0] for p in parts] + [np.zeros(0, np.int64)])
    rows = np.concatenate([p[1] for p in parts] + [np.zeros(0, np.int64)])
    codes = np.concatenate([p[2] for p in parts] + [np.zeros(0, np.int64)])
    n = np.asarray(counts, np.int64)
    bad = (rows < 0) | (rows >= n[shard]) if len(shard) else np.zeros(0, bool)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"row {int(rows[i])} of shard {int(shard[i])} is outside the shard ({int(n[shard[i]])} rows)")
    order = np.lexsort((codes, rows, shard))
    shard, rows, codes = shard[order], rows[order], codes[order]
    if len(shard):
        first = np.r_[True, (shard[1:] != shard[:-1]) | (rows[1:] != rows[:-1]) | (codes[1:] != codes[:-1])]
        shard, rows, codes = shard[first], rows[first], codes[first]
    bounds = np.searchsorted(shard, np.arange(len(counts) + 1))
    out = Drops(names)
    for i in range(len(counts)):
        r, c = rows[bounds[i]:bounds[i + 1]], codes[bounds[i]:bounds[i + 1]]
        starts = np.flatnonzero(np.r_[True, r[1:] != r[:-1]]) if len(r) else np.zeros(0, np.int64)
        out.shards.append(ShardDrops(r[starts].astype(np.int64), np.append(starts, len(r)).astype(np.int32),
                                     c.astype(np.int32)))
    return out
