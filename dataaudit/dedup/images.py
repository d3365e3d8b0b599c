"""Exact and near-duplicate images (`dedup-images`): clusters from the per-shard image hashes, and the report.

Exact groups are records whose image bytes have the same digest; near pairs are perceptual hashes within
`max_distance` bits, found by multi-index hashing (dataaudit.images.near), never all pairs; clusters are the
connected components of both, as in text dedup (dataaudit.dedup.clusters: the representative kept is the first
record in corpus order). 64-bit hashes: 16 bytes a record, 16 MB for a million, grouped on the driver.
"""
from __future__ import annotations

import time

import numpy as np

from dataaudit.images.near import near_duplicate_edges

from .clusters import Clusters, cluster_table, components
from .corpus import Corpus
from .image_hashes import ImageDedupSpec
from .report import SCHEMA_VERSION, shard_entries, size_histogram


def star_groups(labels: np.ndarray, gids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Edges joining each member of a group (same label) to the group's first gid."""
    if len(gids) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.lexsort((gids, labels))
    lab, g = labels[order], gids[order]
    start = np.r_[True, lab[1:] != lab[:-1]]
    head = g[np.maximum.accumulate(np.where(start, np.arange(len(g)), 0))]
    keep = ~start
    return head[keep], g[keep]


def image_clusters(corpus: Corpus, spec: ImageDedupSpec) -> tuple[Clusters, dict]:
    """Exact groups and near clusters of the corpus's images (gids: corpus order)."""
    has, decoded, digest, phash = [], [], [], []
    for i in range(len(corpus.paths)):
        t = corpus.read(i, ["has_image", "decoded", "digest", "phash"])
        has.append(t.column("has_image").to_numpy(zero_copy_only=False))
        decoded.append(t.column("decoded").to_numpy(zero_copy_only=False))
        digest.append(t.column("digest").to_numpy(zero_copy_only=False))
        phash.append(t.column("phash").to_numpy(zero_copy_only=False))
    cat = lambda parts, dtype: np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)  # noqa: E731
    has, decoded = cat(has, bool), cat(decoded, bool)
    digest, phash = cat(digest, np.uint64), cat(phash, np.uint64)
    gids = np.arange(len(has), dtype=np.int64) + corpus.base0
    with_image = np.flatnonzero(has)
    _, groups = np.unique(digest[with_image], return_inverse=True)
    exact_src, exact_dst = star_groups(groups.astype(np.int64), gids[with_image])
    hashed = np.flatnonzero(decoded)
    t0 = time.time()
    s, d = near_duplicate_edges(phash[hashed], spec.max_distance)
    near_seconds = time.time() - t0
    near_src, near_dst = gids[hashed[s]], gids[hashed[d]]
    ex_nodes, ex_labels = components(exact_src, exact_dst)
    ct = cluster_table(np.concatenate([exact_src, near_src]), np.concatenate([exact_dst, near_dst]))
    pos = np.searchsorted(ex_nodes, ct["gid"])
    pos = np.minimum(pos, max(len(ex_nodes) - 1, 0))
    in_exact = (ex_nodes[pos] == ct["gid"]) if len(ex_nodes) else np.zeros(len(ct["gid"]), bool)
    exact_group = np.where(in_exact, ex_labels[pos] if len(ex_nodes) else -1, -1)
    clusters = Clusters(ct, np.where(in_exact, "exact", "near"), exact_group, ex_nodes, ex_labels,
                        int(len(s)), None)
    return clusters, {"hashed": int(len(hashed)), "near_edges": int(len(s)), "near_seconds": round(near_seconds, 3)}


def image_report(spec: ImageDedupSpec, corpus: Corpus, clusters: Clusters, kept: int, stats: dict) -> dict:
    """dedup.json of `dedup-images`, without its `run` section."""
    ct, kind = clusters.table, clusters.kind
    exact_groups = int(len(np.unique(clusters.exact_labels))) if len(clusters.exact_labels) else 0
    exact_docs = int(len(clusters.exact_nodes))
    removed = int(len(clusters.dropped))
    near_docs = int((kind == "near").sum())
    sizes = np.bincount(ct["cluster_id"]) if len(ct["cluster_id"]) else np.zeros(0, np.int64)
    summaries = corpus.summaries
    records = corpus.total
    notes = [f"near duplicates: perceptual hashes (pHash, 64 bits) within {spec.max_distance} bits of each other; "
             "a record's image is its first image"]
    no_image = sum(s["no_image"] for s in summaries)
    undecodable = sum(s["undecodable"] for s in summaries)
    if no_image:
        notes.append(f"{no_image} records have no image (none, a zero-byte one, or an unreadable record): kept, "
                     "not clustered")
    if undecodable:
        notes.append(f"{undecodable} images do not decode: compared by their bytes only (see the audit's flags)")
    for s in summaries:
        if s["status"] != "ok":
            notes.append(f"unreadable shard {s['path']}: {s['error']} (records read before the break are included)")
        elif s.get("error"):
            notes.append(f"{s['path']}: {s['error']}")
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "images",
        "documents": records,
        "images": sum(s["images"] for s in summaries),
        "hashed": stats["hashed"],
        "no_image": no_image,
        "undecodable": undecodable,
        "unreadable_shards": sum(s["status"] != "ok" for s in summaries),
        "exact": {"groups": exact_groups, "documents": exact_docs, "duplicates": exact_docs - exact_groups},
        "near": {"clusters": int(len(np.unique(ct["cluster_id"][kind == "near"]))) if near_docs else 0,
                 "documents": near_docs, "duplicates": removed - (exact_docs - exact_groups),
                 "hash_pairs": stats["near_edges"]},
        "clusters": {"count": int(ct["is_representative"].sum()), "documents": int(len(ct["gid"])),
                     "size_histogram": size_histogram(sizes), "largest": int(sizes.max()) if len(sizes) else 0},
        "duplicates": removed,
        "duplicate_rate": round(removed / records, 6) if records else 0.0,
        "kept": kept,
        "params": {"max_distance": spec.max_distance, "image_field": list(spec.image_field or []) or None,
                   "hash": "pHash 64-bit (imagehash's phash)", "exact": "xxh3-64 of the image bytes",
                   "max_image_pixels": spec.limits.max_pixels, "max_image_bytes": spec.limits.max_bytes},
        "shards": shard_entries(summaries),
        "notes": notes,
    }
