"""Exact and near-duplicate images (`dedup-images`): clusters from the per-shard image hashes, and the report.

A record's signature is the set of its images (all of them, not its first: dataaudit.dedup.image_hashes). Two
records are exact duplicates when the sets of their images' byte digests are equal, near duplicates when the sets of
their images' near classes are: an image's class is its connected component under "same bytes or perceptual hashes
within `max_distance` bits" (dataaudit.images.near: multi-index hashing, never all pairs). A set ignores order and
repeats: [a, b], [b, a] and [a, b, a] show the same pictures and are duplicates; [a] and [a, b] are not. Clusters
are the connected components of both, as in text dedup (dataaudit.dedup.clusters: the representative kept is the
first record in corpus order). 64-bit hashes: 16 bytes an image, grouped on the driver.
"""
from __future__ import annotations

import time

import numpy as np

from dataaudit.images.near import near_duplicate_edges

from .clusters import Clusters, cluster_table, components
from .corpus import Corpus
from .image_hashes import ImageDedupSpec, record_images
from .joint import SALT, mix64
from .report import SCHEMA_VERSION, shard_entries, size_histogram

def set_groups(owner: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the owners that hold a value, a group label per owner): owners holding the same set of values (order and
    repeats ignored) share a label. Each set is keyed by its size and two sums of mixed values (128 bits: a
    collision between two different sets has odds near 2**-128)."""
    if len(owner) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    pairs = np.unique(np.stack([np.asarray(owner, np.int64), np.asarray(values, np.uint64).view(np.int64)], 1),
                      axis=0)
    o, v = pairs[:, 0], pairs[:, 1].view(np.uint64)
    owners, at = np.unique(o, return_inverse=True)
    h1, h2 = np.zeros(len(owners), np.uint64), np.zeros(len(owners), np.uint64)
    np.add.at(h1, at, mix64(v))                 # wraps modulo 2**64, as a sum of hashes should
    np.add.at(h2, at, mix64(v ^ SALT))
    size = np.bincount(at, minlength=len(owners)).astype(np.uint64)
    _, label = np.unique(np.stack([size, h1, h2], 1), axis=0, return_inverse=True)
    return owners, label.ravel().astype(np.int64)


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


def corpus_images(corpus: Corpus) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(gid of each image's record, {digest, phash, flipped, decoded} per image) of the records with an image."""
    gids, cols = [], []
    for i in range(len(corpus.paths)):
        owner, c = record_images(corpus.read(i, ["has_image", "images"]))
        gids.append(owner + corpus.base[i])
        cols.append(c)
    names = {"digest": np.uint64, "phash": np.uint64, "flipped": np.uint64, "decoded": bool}
    if not cols:
        return np.zeros(0, np.int64), {k: np.zeros(0, t) for k, t in names.items()}
    return np.concatenate(gids).astype(np.int64), {k: np.concatenate([c[k] for c in cols]).astype(t)
                                                    for k, t in names.items()}


def image_classes(digest: np.ndarray, phash: np.ndarray, decoded: np.ndarray, max_distance: int
                  ) -> tuple[np.ndarray, int]:
    """A class per image (same bytes, or perceptual hashes within `max_distance`, transitively), and the number
    of near pairs found."""
    n = len(digest)
    idx = np.arange(n, dtype=np.int64)
    _, same = np.unique(digest, return_inverse=True)
    ex_s, ex_d = star_groups(same.ravel().astype(np.int64), idx)
    hashed = np.flatnonzero(decoded)
    s, d = near_duplicate_edges(phash[hashed], max_distance)
    nodes, labels = components(np.concatenate([ex_s, hashed[s]]), np.concatenate([ex_d, hashed[d]]))
    cls = idx + (int(labels.max()) + 1 if len(labels) else 0)    # an image alone is a class of its own
    cls[nodes] = labels
    return cls, int(len(s))


def image_clusters(corpus: Corpus, spec: ImageDedupSpec) -> tuple[Clusters, dict]:
    """Exact groups and near clusters of the corpus's records by the sets of their images (gids: corpus order)."""
    gid, img = corpus_images(corpus)
    t0 = time.time()
    cls, near_pairs = image_classes(img["digest"], img["phash"], img["decoded"], spec.max_distance)
    near_seconds = time.time() - t0
    owners, same_bytes = set_groups(gid, img["digest"])
    exact_src, exact_dst = star_groups(same_bytes, owners)
    owners, same_class = set_groups(gid, cls.astype(np.uint64))
    near_src, near_dst = star_groups(same_class, owners)
    ex_nodes, ex_labels = components(exact_src, exact_dst)
    ct = cluster_table(np.concatenate([exact_src, near_src]), np.concatenate([exact_dst, near_dst]))
    pos = np.searchsorted(ex_nodes, ct["gid"])
    pos = np.minimum(pos, max(len(ex_nodes) - 1, 0))
    in_exact = (ex_nodes[pos] == ct["gid"]) if len(ex_nodes) else np.zeros(len(ct["gid"]), bool)
    exact_group = np.where(in_exact, ex_labels[pos] if len(ex_nodes) else -1, -1)
    clusters = Clusters(ct, np.where(in_exact, "exact", "near"), exact_group, ex_nodes, ex_labels,
                        near_pairs, None)
    return clusters, {"hashed": int(img["decoded"].sum()), "near_edges": near_pairs,
                      "near_seconds": round(near_seconds, 3)}


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
             "a record's signature is the set of all its images (order and repeats ignored)"]
    no_image = sum(s["no_image"] for s in summaries)
    undecodable = sum(s["undecodable"] for s in summaries)
    if no_image:
        notes.append(f"{no_image} records have no image, or one without bytes (missing, zero-byte), or are "
                     "unreadable: kept, not clustered")
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
