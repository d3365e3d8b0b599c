"""`dedup-images --against`: the training records whose images appear in a validation or benchmark set.

A training image matches a validation image when it has the same bytes (`exact`), a perceptual hash within
`max_distance` bits of it (`near`: re-encodes, resizes), or within `max_distance` bits of the hash of its mirror
image (`flipped`: a horizontally flipped copy). Every pair reported is checked by its own distance: the multi-index
search (dataaudit.images.near) only proposes candidates, over the distinct hashes, so a million identical blank
images cost one comparison. A training record matches when any of its images does (its kind: the first of exact,
near, flipped among them); the keep-list leaves it out.
"""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa

from dataaudit.atomic import write_parquet
from dataaudit.images.near import near_duplicate_edges
from dataaudit.images.phash import hamming
from dataaudit.io import join

from . import OVERLAP
from .clusters import components
from .corpus import Corpus

KINDS = ("exact", "near", "flipped")
OVERLAP_SCHEMA = pa.schema([pa.field("shard", pa.string()), pa.field("key", pa.string()),
                            pa.field("row", pa.int64()), pa.field("line", pa.int64()), pa.field("match", pa.string()),
                            pa.field("val_shard", pa.string()), pa.field("val_key", pa.string()),
                            pa.field("val_row", pa.int64())])


def cross_near(train: np.ndarray, val: np.ndarray, max_distance: int) -> np.ndarray:
    """For each hash of `train`, the index of a hash of `val` within `max_distance` bits of it, or -1."""
    if len(train) == 0 or len(val) == 0:
        return np.full(len(train), -1, np.int64)
    ut, t_inv = np.unique(train, return_inverse=True)
    uv, v_first = np.unique(val, return_index=True)
    s, d = near_duplicate_edges(np.concatenate([ut, uv]), max_distance)
    nodes, labels = components(s, d)
    label = np.full(len(ut) + len(uv), -1, np.int64)
    label[nodes] = labels
    t_lab, v_lab = label[:len(ut)], label[len(ut):]
    match = np.full(len(ut), -1, np.int64)
    order = np.argsort(t_lab, kind="stable")
    shared = np.intersect1d(t_lab[t_lab >= 0], v_lab[v_lab >= 0])
    lo, hi = np.searchsorted(t_lab[order], shared), np.searchsorted(t_lab[order], shared, side="right")
    for c, a, b in zip(shared.tolist(), lo.tolist(), hi.tolist()):   # one component holding both sides at a time
        tr, vs = order[a:b], np.flatnonzero(v_lab == c)
        close = hamming(ut[tr][:, None], uv[vs][None, :]) <= max_distance
        hit = close.any(axis=1)
        match[tr[hit]] = vs[close[hit].argmax(axis=1)]
    out = np.where(match >= 0, v_first[np.maximum(match, 0)], -1)
    return out[t_inv.ravel()]


def image_matches(train_img: dict, val_img: dict, max_distance: int) -> tuple[np.ndarray, np.ndarray]:
    """(kind per training image: 0 exact, 1 near, 2 flipped, 3 none; the matched validation image, or -1)."""
    n = len(train_img["digest"])
    kind, other = np.full(n, 3, np.int8), np.full(n, -1, np.int64)
    ud, first = np.unique(val_img["digest"], return_index=True)
    if len(ud):
        pos = np.minimum(np.searchsorted(ud, train_img["digest"]), len(ud) - 1)
        hit = ud[pos] == train_img["digest"]
        kind[hit], other[hit] = 0, first[pos[hit]]
    t_dec, v_dec = np.flatnonzero(train_img["decoded"]), np.flatnonzero(val_img["decoded"])
    for k, column in ((1, "phash"), (2, "flipped")):
        m = cross_near(train_img["phash"][t_dec], val_img[column][v_dec], max_distance)
        new = (m >= 0) & (kind[t_dec] == 3)
        kind[t_dec[new]], other[t_dec[new]] = k, v_dec[m[new]]
    return kind, other


def record_matches(train_gid: np.ndarray, kind: np.ndarray, other: np.ndarray, val_gid: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(training gids with a match, sorted; their kind (the first of exact, near, flipped among their images);
    the validation gid of that image's match)."""
    hit = np.flatnonzero(kind < 3)
    order = hit[np.lexsort((kind[hit], train_gid[hit]))]
    gids, first = np.unique(train_gid[order], return_index=True)
    best = order[first]
    return gids, kind[best], val_gid[other[best]]


def write_image_overlap(out_dir: str | os.PathLike, train: Corpus, val: Corpus, gids: np.ndarray,
                        kinds: np.ndarray, val_gids: np.ndarray) -> None:
    """overlap.parquet of `dedup-images --against`: one row per training record with a copy in the validation set,
    in corpus order, with the kind and one validation record it matches."""
    t_shard = train.shard_of(gids)
    v_shard = val.shard_of(val_gids)
    names = np.array(KINDS, object)

    def tables():
        for s in np.unique(t_shard) if len(gids) else []:
            sel = np.flatnonzero(t_shard == s)
            local = gids[sel] - train.base[s]
            part = train.read(int(s), ["key", "line"]).take(pa.array(local))
            vs = v_shard[sel]
            yield pa.table({"shard": pa.repeat(pa.scalar(train.paths[s], pa.string()), len(sel)),
                            "key": part.column("key"), "row": pa.array(local), "line": part.column("line"),
                            "match": pa.array(names[kinds[sel]].tolist(), pa.string()),
                            "val_shard": pa.array([val.paths[v] for v in vs.tolist()], pa.string()),
                            "val_key": val.take(val_gids[sel], "key"),
                            "val_row": pa.array(val_gids[sel] - val.base[vs])}, schema=OVERLAP_SCHEMA)

    write_parquet(join(out_dir, OVERLAP), tables(), OVERLAP_SCHEMA)


def against_section(val: Corpus, images: int, matched_images: int, kinds: np.ndarray) -> dict:
    """dedup.json's `against` of `dedup-images`."""
    counts = np.bincount(kinds.astype(np.int64), minlength=len(KINDS)) if len(kinds) else np.zeros(3, np.int64)
    return {"validation_records": val.total, "validation_images": images, "train_images_matched": matched_images,
            "train_records_matched": int(len(kinds)), **{k: int(c) for k, c in zip(KINDS, counts.tolist())}}
