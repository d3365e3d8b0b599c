"""Stage 3, reduce: one unit per partition, then the partitions' edges merged.

A unit reads every shard's batch p (stage 2's files), sorted by key; runs of equal keys give exact edges,
near (band) edges and validation->train matches. Only this partition is in memory, so the peak is about 1/P
of the band entries.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from dataaudit.io import open_arrow

from .clusters import unique_edges
from .lsh import all_pair_edges, key_order, runs, star_edges

VERIFY_ALL_PAIRS = 32            # with verification, runs up to this size give every pair (else a star)
MAX_MATCHES = 20                 # train matches listed per validation sample (all are counted)
EDGE_KINDS = ("exact", "near", "val_exact", "val_near")


def _read_partition(files: list[str], p: int, names: list[str]) -> dict[str, np.ndarray]:
    cols: dict[str, list[np.ndarray]] = {n: [] for n in names}
    for f in files:
        with open_arrow(f) as source:
            batch = pa.ipc.open_file(source).get_batch(p)
            for n in names:
                cols[n].append(batch.column(batch.schema.get_field_index(n)).to_numpy(zero_copy_only=False).copy())
    return {n: (np.concatenate(v) if v else np.zeros(0, np.uint64 if n != "gid" else np.int64))
            for n, v in cols.items()}


def _val_pairs(gid: np.ndarray, bounds: np.ndarray, n_train: int, cap: int) -> tuple[np.ndarray, np.ndarray]:
    """(val gid, train gid) for every validation entry of a run that holds train entries (first `cap` of them).
    Within a run entries are in gid order, so its train entries come first."""
    is_val = gid >= n_train
    if not is_val.any():                 # no validation side: skip the run bookkeeping
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    sizes = np.diff(bounds)
    run_id = np.repeat(np.arange(len(sizes)), sizes)
    ntrain = np.bincount(run_id, weights=~is_val, minlength=len(sizes)).astype(np.int64)
    v = np.flatnonzero(is_val & (ntrain[run_id] > 0))
    if len(v) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    cnt = np.minimum(ntrain[run_id[v]], cap)
    src = np.repeat(gid[v], cnt)
    start = np.repeat(bounds[:-1][run_id[v]], cnt)
    off = np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    return src, gid[start + off]


def reduce_partition(p: int, band_files: list[str], exact_files: list[str], n_train: int,
                     all_pairs: bool) -> dict[str, np.ndarray]:
    """Partition p: exact and near edges among train documents, validation->train matches."""
    out = {}
    e = _read_partition(exact_files, p, ["hi", "lo", "gid"])
    order = np.lexsort((e["gid"], e["lo"], e["hi"]))
    hi, lo, gid = e["hi"][order], e["lo"][order], e["gid"][order]
    if len(gid):
        change = np.flatnonzero((hi[1:] != hi[:-1]) | (lo[1:] != lo[:-1])) + 1
        bounds = np.concatenate(([0], change, [len(gid)])).astype(np.int64)
    else:
        bounds = np.zeros(1, np.int64)
    out["val_exact_src"], out["val_exact_dst"] = _val_pairs(gid, bounds, n_train, MAX_MATCHES)
    tr = gid < n_train
    if len(gid):
        t_hi, t_lo, t_gid = hi[tr], lo[tr], gid[tr]
        if len(t_gid):
            change = np.flatnonzero((t_hi[1:] != t_hi[:-1]) | (t_lo[1:] != t_lo[:-1])) + 1
            tb = np.concatenate(([0], change, [len(t_gid)])).astype(np.int64)
        else:
            tb = np.zeros(1, np.int64)
        out["exact_src"], out["exact_dst"] = star_edges(t_gid, tb)
    else:
        out["exact_src"], out["exact_dst"] = np.zeros(0, np.int64), np.zeros(0, np.int64)
    del e, hi, lo, gid, order

    b = _read_partition(band_files, p, ["key", "gid"])
    order = key_order(b["key"])                                    # gid order inside a run
    key, gid = b["key"][order], b["gid"][order]
    del b, order
    bounds = runs(key)
    out["val_near_src"], out["val_near_dst"] = _val_pairs(gid, bounds, n_train, MAX_MATCHES)
    tr = gid < n_train
    if not tr.all():                     # validation entries: matched above, not clustered
        key, gid = key[tr], gid[tr]
    bounds = runs(key)
    if all_pairs:
        src, dst = all_pair_edges(gid, bounds, VERIFY_ALL_PAIRS)
    else:
        src, dst = star_edges(gid, bounds)
    out["near_src"], out["near_dst"] = unique_edges(src, dst)
    return out


def merge_partitions(results: list[dict[str, np.ndarray]]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Every partition's edges (in partition order) as {kind: (src, dst)}: train edges `exact` and `near`
    deduplicated and sorted, validation->train matches `val_exact` and `val_near` as found."""
    def cat(name):
        return np.concatenate([r[name] for r in results]) if results else np.zeros(0, np.int64)

    edges = {kind: (cat(f"{kind}_src"), cat(f"{kind}_dst")) for kind in EDGE_KINDS}
    for kind in ("exact", "near"):
        edges[kind] = unique_edges(*edges[kind])
    return edges
