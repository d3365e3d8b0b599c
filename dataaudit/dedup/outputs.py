"""Stage 5, outputs: clusters.parquet, keep.parquet and overlap.parquet, streamed shard by shard from the
signature parts (keys and rows) and stage 4's clusters; written atomically."""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa

from dataaudit.atomic import write_parquet
from dataaudit.io import join

from . import CLUSTERS, KEEP, OVERLAP
from .clusters import Clusters
from .corpus import Corpus
from .reduce import MAX_MATCHES

EXAMPLE_OVERLAPS = 8             # validation overlaps shown with their text

CLUSTER_SCHEMA = pa.schema([pa.field("shard", pa.string()), pa.field("key", pa.string()),
                            pa.field("row", pa.int64()), pa.field("line", pa.int64()),
                            pa.field("cluster_id", pa.int64()),
                            pa.field("is_representative", pa.bool_()), pa.field("kind", pa.string()),
                            pa.field("cluster_size", pa.int64()), pa.field("exact_group", pa.int64())])
KEEP_SCHEMA = pa.schema([pa.field("shard", pa.string()), pa.field("key", pa.string()),
                         pa.field("row", pa.int64()), pa.field("line", pa.int64())])
_MATCH = pa.struct([pa.field("shard", pa.string()), pa.field("key", pa.string()), pa.field("row", pa.int64()),
                    pa.field("line", pa.int64()), pa.field("kind", pa.string())])
OVERLAP_SCHEMA = pa.schema([pa.field("shard", pa.string()), pa.field("key", pa.string()),
                            pa.field("row", pa.int64()), pa.field("line", pa.int64()), pa.field("match", pa.string()),
                            pa.field("train_matches", pa.int64()), pa.field("train", pa.list_(_MATCH))])


def _repeat(value: str, n: int) -> pa.Array:
    """A string column of n copies of `value` (no Python list of n items)."""
    return pa.repeat(pa.scalar(value, pa.string()), n)


def write_clusters(out_dir: str | os.PathLike, clusters: Clusters, train: Corpus) -> None:
    """The clusters table: one row per clustered document, in corpus order."""
    ct = clusters.table
    order = np.argsort(ct["gid"], kind="stable")
    c_shard = train.shard_of(ct["gid"][order])

    def tables():
        for s in np.unique(c_shard):
            sel = order[c_shard == s]
            local = ct["gid"][sel] - train.base[s]
            part = train.read(int(s), ["key", "line"]).take(pa.array(local))
            yield pa.table({"shard": _repeat(train.paths[s], len(sel)), "key": part.column("key"),
                            "row": pa.array(local), "line": part.column("line"),
                            "cluster_id": pa.array(ct["cluster_id"][sel]),
                            "is_representative": pa.array(ct["is_representative"][sel]),
                            "kind": pa.array(clusters.kind[sel]), "cluster_size": pa.array(ct["size"][sel]),
                            "exact_group": pa.array(clusters.exact_group[sel])}, schema=CLUSTER_SCHEMA)

    write_parquet(join(out_dir, CLUSTERS), tables(), CLUSTER_SCHEMA)


def write_keep(out_dir: str | os.PathLike, clusters: Clusters, train: Corpus, also_drop: np.ndarray | None = None
               ) -> int:
    """The keep-list: every training record but the non-representative cluster members (and the gids `also_drop`:
    training records with a copy in a validation set, for `dedup-images --against`); returns how many."""
    drop_sorted = np.unique(np.concatenate([clusters.dropped, also_drop])) if also_drop is not None \
        else np.sort(clusters.dropped)

    def tables():
        for i, p in enumerate(train.paths):
            t = train.read(i, ["row", "key", "line"])
            lo_i, hi_i = np.searchsorted(drop_sorted, [train.base[i], train.base[i] + t.num_rows])
            mask = np.ones(t.num_rows, bool)
            mask[drop_sorted[lo_i:hi_i] - train.base[i]] = False
            t = t.filter(pa.array(mask))
            yield pa.table({"shard": _repeat(p, t.num_rows), "key": t.column("key"),
                            "row": t.column("row"), "line": t.column("line")}, schema=KEEP_SCHEMA)

    return write_parquet(join(out_dir, KEEP), tables(), KEEP_SCHEMA)


def write_overlap(out_dir: str | os.PathLike, train: Corpus, val: Corpus, overlap: dict) -> tuple[dict, list]:
    """The overlap table: one row per validation sample with its match status and (up to MAX_MATCHES) train
    samples, exact matches first; built with array operations (no loop over samples). Returns dedup.json's
    `against` section and the first few overlapping samples (for the examples)."""
    pe, pn = overlap["exact"], overlap["near"]
    pairs = np.concatenate([pe, pn]).astype(np.int64) if len(pe) + len(pn) else np.zeros((0, 2), np.int64)
    is_near = np.r_[np.zeros(len(pe), bool), np.ones(len(pn), bool)]
    order = np.lexsort((pairs[:, 1], is_near, pairs[:, 0]))
    pairs, is_near = pairs[order], is_near[order]
    vloc = pairs[:, 0] - val.base0                                   # validation sample index (0..total)
    n_val = val.total
    n_matches = np.bincount(vloc, minlength=n_val).astype(np.int64)
    n_exact = np.bincount(vloc[~is_near], minlength=n_val)
    status = np.where(n_exact > 0, "exact", np.where(n_matches > 0, "near", "none"))
    first = np.concatenate(([0], np.cumsum(n_matches)[:-1]))
    rank = np.arange(len(pairs)) - first[vloc] if len(pairs) else np.zeros(0, np.int64)
    listed = rank < MAX_MATCHES
    lp, lnear = pairs[listed], is_near[listed]
    t_shard = train.shard_of(lp[:, 1]) if len(lp) else np.zeros(0, np.int64)
    shard_names = pa.array(train.paths, pa.string()).take(pa.array(t_shard)) if len(lp) else pa.array([], pa.string())
    structs = pa.StructArray.from_arrays(
        [shard_names, train.take(lp[:, 1], "key"), pa.array(lp[:, 1] - train.base[t_shard] if len(lp) else
                                                               np.zeros(0, np.int64)),
         train.take(lp[:, 1], "line"), pa.array(np.where(lnear, "near", "exact"), pa.string())], fields=list(_MATCH))
    list_offsets = np.zeros(n_val + 1, np.int64)
    np.cumsum(np.minimum(n_matches, MAX_MATCHES), out=list_offsets[1:])
    lists = pa.ListArray.from_arrays(pa.array(list_offsets.astype(np.int32)), structs)

    def tables():
        for i, p in enumerate(val.paths):
            t = val.read(i, ["row", "key", "line"])
            lo = int(val.base[i] - val.base0)
            hi = lo + t.num_rows
            yield pa.table({"shard": _repeat(p, t.num_rows), "key": t.column("key"),
                            "row": t.column("row"), "line": t.column("line"),
                            "match": pa.array(status[lo:hi], pa.string()),
                            "train_matches": pa.array(n_matches[lo:hi]), "train": lists.slice(lo, hi - lo)},
                           schema=OVERLAP_SCHEMA)

    write_parquet(join(out_dir, OVERLAP), tables(), OVERLAP_SCHEMA)
    exact_n, near_n = int((status == "exact").sum()), int((status == "near").sum())
    examples = []
    for v in np.flatnonzero(n_matches > 0)[:EXAMPLE_OVERLAPS].tolist():
        g = v + val.base0
        vs = int(val.shard_of(np.array([g]))[0])
        t = int(pairs[first[v], 1])
        ts = int(train.shard_of(np.array([t]))[0])
        examples.append({"val": (val.paths[vs], g - int(val.base[vs])), "train": (train.paths[ts], t - int(train.base[ts])),
                         "kind": str(status[v]), "train_key": train.take(np.array([t]), "key")[0].as_py()})
    samples = val.total
    return ({"validation_samples": samples, "exact": exact_n, "near": near_n, "overlapping": exact_n + near_n,
             "overlap_rate": round((exact_n + near_n) / samples, 6) if samples else 0.0,
             "max_matches_listed": MAX_MATCHES}, examples)
