"""`dedup-images --against`: the training records whose images appear in a validation or benchmark set.

A training image matches a validation image by the one rule of dataaudit.images.overlap (`image_matches`: same
bytes, near pHash, near pHash of the mirror image; contamination's image benchmarks use it too). A training record
matches when any of its images does (its kind: the first of exact, near, flipped among them); the keep-list leaves
it out.
"""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa

from dataaudit.atomic import write_parquet
from dataaudit.images.overlap import KINDS, image_matches  # noqa: F401  (image_matches: the rule, for the job)
from dataaudit.io import join

from . import OVERLAP
from .corpus import Corpus

OVERLAP_SCHEMA = pa.schema([pa.field("shard", pa.string()), pa.field("key", pa.string()),
                            pa.field("row", pa.int64()), pa.field("line", pa.int64()), pa.field("match", pa.string()),
                            pa.field("val_shard", pa.string()), pa.field("val_key", pa.string()),
                            pa.field("val_row", pa.int64())])


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
