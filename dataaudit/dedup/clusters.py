"""Stage 4, clusters: from candidate edges to clusters: exact Jaccard verification, connected components,
representatives, and the validation samples that have a copy in train.

Documents are identified by a global index (gid) in corpus order (shards in the order given, rows in shard
order), so "the first document of a cluster" is its smallest gid: deterministic, whatever the engine.
Only documents that appear in some edge enter the graph (relabelled densely), so memory follows the number
of duplicates, not the size of the corpus.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dataaudit.textops.hashing import numba_kernels

from .config import DedupSpec
from .corpus import Corpus, shingle_sets
from .signature_columns import signature_matrix


def unique_edges(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Edges with src < dst, self-loops and repeats dropped, sorted."""
    src = np.asarray(src, np.int64)
    dst = np.asarray(dst, np.int64)
    lo, hi = np.minimum(src, dst), np.maximum(src, dst)
    keep = lo != hi
    lo, hi = lo[keep], hi[keep]
    if len(lo) == 0:
        return lo, hi
    top = int(hi.max()) + 1
    if top <= 1 << 31:                  # one int64 key per pair: a sort, ~20x faster than unique(axis=0)
        key = sorted_unique(lo * top + hi)
        return key // top, key % top
    pairs = np.unique(np.stack([lo, hi], axis=1), axis=0)
    return pairs[:, 0].copy(), pairs[:, 1].copy()


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """np.unique of a 1-D array by a sort (numpy's unique is several times slower on large int arrays)."""
    v = np.sort(values)
    return v[np.r_[True, v[1:] != v[:-1]]] if len(v) else v


def jaccard_pairs(values: np.ndarray, offsets: np.ndarray, a: np.ndarray, b: np.ndarray,
                  chunk_elems: int = 1 << 22) -> np.ndarray:
    """Exact Jaccard |A & B| / |A | B| for pairs of sets, set k = values[offsets[k]:offsets[k+1]] (each set
    sorted and unique). Two empty sets -> 0 (empty documents are never duplicates). With numba one merge per pair
    (`_kernels.jaccard_kernel`, ~50x faster); else vectorized per chunk."""
    a = np.asarray(a, np.int64)
    b = np.asarray(b, np.int64)
    lens = np.diff(offsets)
    out = np.zeros(len(a), np.float64)
    if len(a) == 0:
        return out
    k = numba_kernels("dataaudit.dedup._kernels", work=int(lens[a].sum() + lens[b].sum()) * values.itemsize)
    if k is not None:
        k.jaccard_kernel(values, np.asarray(offsets, np.int64), a, b, out)
        return out
    la, lb = lens[a], lens[b]
    cost = np.cumsum(la + lb)
    start = 0
    while start < len(a):
        stop = int(np.searchsorted(cost, (cost[start - 1] if start else 0) + chunk_elems, side="right"))
        stop = max(stop, start + 1)
        ia, ib = a[start:stop], b[start:stop]
        na, nb = la[start:stop], lb[start:stop]
        m = stop - start
        pid = np.concatenate([np.repeat(np.arange(m), na), np.repeat(np.arange(m), nb)])
        idx_a = np.repeat(offsets[ia], na) + (np.arange(na.sum()) - np.repeat(np.cumsum(na) - na, na))
        idx_b = np.repeat(offsets[ib], nb) + (np.arange(nb.sum()) - np.repeat(np.cumsum(nb) - nb, nb))
        vals = np.concatenate([values[idx_a], values[idx_b]])
        order = np.lexsort((vals, pid))
        vs, ps = vals[order], pid[order]
        same = (vs[1:] == vs[:-1]) & (ps[1:] == ps[:-1])
        inter = np.bincount(ps[1:][same], minlength=m)
        union = na + nb - inter
        out[start:stop] = np.where(union > 0, inter / np.maximum(union, 1), 0.0)
        start = stop
    return out


def components(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Connected components of the graph given by edges -> (nodes: sorted gids, label per node), labels
    numbered 0.. in order of each component's smallest gid."""
    src = np.asarray(src, np.int64)
    dst = np.asarray(dst, np.int64)
    if len(src) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    ends = np.concatenate([src, dst])
    order = np.argsort(ends, kind="stable")
    first = np.r_[True, ends[order][1:] != ends[order][:-1]]
    nodes = ends[order][first]
    inv = np.empty(len(ends), np.int64)
    inv[order] = np.cumsum(first) - 1
    root = min_roots(inv[:len(src)], inv[len(src):], len(nodes))
    # every component's root is its smallest node, so roots numbered in node order follow the smallest gid
    is_root = root == np.arange(len(nodes))
    return nodes, (np.cumsum(is_root) - 1)[root]


def min_roots(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """For nodes 0..n-1 joined by edges (a, b): the smallest node of each one's component. Vectorized
    hooking: each root hooks onto the smallest root it shares an edge with, then pointers are jumped to
    roots; a few rounds for the short chains of duplicate graphs (and no scipy.sparse import)."""
    parent = np.arange(n, dtype=np.int64)
    while True:
        ra, rb = parent[a], parent[b]
        differ = ra != rb
        if not differ.any():
            return parent
        ra, rb = ra[differ], rb[differ]
        np.minimum.at(parent, np.maximum(ra, rb), np.minimum(ra, rb))
        while True:                                   # pointer jumping until every node points at a root
            up = parent[parent]
            if np.array_equal(up, parent):
                break
            parent = up


def cluster_table(src: np.ndarray, dst: np.ndarray) -> dict[str, np.ndarray]:
    """{gid, cluster_id, is_representative, size} for every document in a cluster of size >= 2.
    The representative (the one kept) is the cluster's smallest gid; cluster ids follow corpus order."""
    nodes, labels = components(src, dst)
    if len(nodes) == 0:
        z = np.zeros(0, np.int64)
        return {"gid": z, "cluster_id": z.copy(), "is_representative": np.zeros(0, bool), "size": z.copy()}
    sizes = np.bincount(labels)
    rep = np.full(len(sizes), np.iinfo(np.int64).max, np.int64)
    np.minimum.at(rep, labels, nodes)
    return {"gid": nodes, "cluster_id": labels, "is_representative": nodes == rep[labels],
            "size": sizes[labels]}


def verify_pairs(src: np.ndarray, dst: np.ndarray, corpora: list[Corpus], threshold: float
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Keep the pairs whose exact Jaccard of shingle sets is >= threshold; also returns every Jaccard."""
    if len(src) == 0:
        return src, dst, np.zeros(0)
    gids, offsets, flat = shingle_sets(np.concatenate([src, dst]), corpora)
    j = jaccard_pairs(flat, offsets, np.searchsorted(gids, src), np.searchsorted(gids, dst))
    ok = j >= threshold
    return src[ok], dst[ok], j


def estimate_pairs(src: np.ndarray, dst: np.ndarray, corpora: list[Corpus], threshold: float
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Keep the pairs whose signatures agree on >= threshold of their values (MinHash's Jaccard estimate, as
    datasketch's `MinHash.jaccard`); also returns every estimate."""
    if len(src) == 0:
        return src, dst, np.zeros(0)
    gids = sorted_unique(np.concatenate([src, dst]))
    mine = [gids[(gids >= c.base0) & (gids < c.base0 + c.total)] for c in corpora]
    sig = np.concatenate([signature_matrix(c.take(g, "sig")) for c, g in zip(corpora, mine) if len(g)])
    a, b = sig[np.searchsorted(gids, src)], sig[np.searchsorted(gids, dst)]
    j = (a == b).mean(axis=1)
    ok = j >= threshold
    return src[ok], dst[ok], j


def check_pairs(src: np.ndarray, dst: np.ndarray, corpora: list[Corpus], spec: DedupSpec
                ) -> tuple[np.ndarray, np.ndarray]:
    """Near candidate pairs as `spec` wants them checked: exact Jaccard (verify), estimated (estimate), or all."""
    if spec.verify:
        return verify_pairs(src, dst, corpora, spec.threshold)[:2]
    if spec.estimate:
        return estimate_pairs(src, dst, corpora, spec.threshold)[:2]
    return src, dst


@dataclass
class Clusters:
    """The training documents in a cluster of 2 or more, one entry per document in gid order."""
    table: dict[str, np.ndarray]      # cluster_table: gid, cluster_id, is_representative, size
    kind: np.ndarray                  # "exact" (an identical normalized copy exists) or "near"
    exact_group: np.ndarray           # shared by documents with the same normalized text; -1 for none
    exact_nodes: np.ndarray           # gids with an exact copy, and their exact group
    exact_labels: np.ndarray
    candidates: int                   # near pairs between different exact groups, before verification
    verification: dict | None         # candidate/confirmed/rejected pairs when verified

    @property
    def dropped(self) -> np.ndarray:
        """The gids the keep-list drops: every member but the representative."""
        return self.table["gid"][~self.table["is_representative"]]


def find_clusters(edges: dict[str, tuple[np.ndarray, np.ndarray]], train: Corpus, spec: DedupSpec) -> Clusters:
    """Exact groups, near edges between them (verified when `spec.verify`), and their connected components."""
    exact_src, exact_dst = edges["exact"]
    near_src, near_dst = edges["near"]
    ex_nodes, ex_labels = components(exact_src, exact_dst)
    if len(ex_nodes) and train.total <= max(16 * len(ex_nodes), 1 << 20):
        # a table by gid (as large as 16x the exact copies, or 8 MB): a lookup, not a binary search, for each end of
        # the near edges (~750k in 100,000 short records: 0.1-0.2 s of searchsorted)
        table = np.full(train.total, -1, np.int64)
        table[ex_nodes] = ex_labels

        def exact_group(g):
            found = table[g]
            return np.where(found >= 0, found, -1 - g)                              # singleton: its own group
    else:
        def exact_group(g):
            pos = np.searchsorted(ex_nodes, g)
            pos = np.minimum(pos, max(len(ex_nodes) - 1, 0))
            hit = (ex_nodes[pos] == g) if len(ex_nodes) else np.zeros(len(g), bool)
            return np.where(hit, ex_labels[pos] if len(ex_nodes) else -1, -1 - g)   # singleton: its own group

    # near edges inside one exact group add nothing
    same = exact_group(near_src) == exact_group(near_dst)
    near_src, near_dst = near_src[~same], near_dst[~same]
    candidates = len(near_src)
    verification = None
    if spec.verify or spec.estimate:
        near_src, near_dst = check_pairs(near_src, near_dst, [train], spec)
        verification = {"candidate_pairs": candidates, "confirmed_pairs": int(len(near_src)),
                        "rejected_pairs": int(candidates - len(near_src)),
                        "by": "exact Jaccard" if spec.verify else "estimated Jaccard"}
    ct = cluster_table(np.concatenate([exact_src, near_src]), np.concatenate([exact_dst, near_dst]))
    has_exact = np.isin(ct["gid"], ex_nodes)
    return Clusters(ct, np.where(has_exact, "exact", "near"), np.where(has_exact, exact_group(ct["gid"]), -1),
                    ex_nodes, ex_labels, candidates, verification)


def validation_overlap(edges: dict[str, tuple[np.ndarray, np.ndarray]], train: Corpus, val: Corpus,
                       spec: DedupSpec) -> dict[str, np.ndarray]:
    """{"exact", "near"}: unique (validation gid, train gid) pairs; a near match that is also exact is listed
    once, as exact; near matches checked when `spec.verify` or `spec.estimate`."""
    ve_src, ve_dst = edges["val_exact"]
    vn_src, vn_dst = edges["val_near"]
    pe = np.unique(np.stack([ve_src, ve_dst], 1), axis=0) if len(ve_src) else np.zeros((0, 2), np.int64)
    pn = np.unique(np.stack([vn_src, vn_dst], 1), axis=0) if len(vn_src) else np.zeros((0, 2), np.int64)
    if len(pn) and len(pe):
        void = np.dtype((np.void, 16))
        pn = pn[~np.isin(np.ascontiguousarray(pn).view(void).ravel(), np.ascontiguousarray(pe).view(void).ravel())]
    if (spec.verify or spec.estimate) and len(pn):
        s, d = check_pairs(pn[:, 0], pn[:, 1], [train, val], spec)
        pn = np.stack([s, d], 1) if len(s) else np.zeros((0, 2), np.int64)
    return {"exact": pe, "near": pn}
