"""`dedup --with-images`: a record's identity is its text plus its images, so that records with the same text and
different images are not duplicates (a VLM dataset asks the same question of many pictures).

Each image is identified by the xxh3-64 digest of its bytes: identity, not similarity, is the question here (two
records are the same training example only with the same pictures; a re-encoded or resized copy is another file,
which `dedup-images` finds). A record's images are taken in order (field order, then list order) and with repeats:
[a, b], [b, a] and [a] are three different records, because a conversation's `<image>` placeholders bind its
images by position ("the first image ..."). An image whose bytes cannot be read (missing, outside the folder, over
max_image_bytes) is identified by its reference instead, so two records naming the same missing file still match.

The images' key (two 64-bit sums of order-mixed digests; 0 for a record without images) is folded into the text's
exact hash and into every MinHash value of its signature (XOR with a per-permutation mask derived from the key):
records with the same images keep exactly the same agreement between their signatures as their texts have, and
records with different images share no band (but by a 2**-32 chance per value), so LSH never pairs them.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from dataaudit.fields import FieldSpec, resolve_schema
from dataaudit.images.batch import Limits, flat_images
from dataaudit.images.media import Media

SALT = np.uint64(0x5851F42D4C957F2D)


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer of each uint64 (a bijection that spreads every bit over all 64)."""
    z = np.asarray(x, np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def image_digests(batch: pa.RecordBatch, folder: str, limits: Limits = Limits(),
                  image_field: tuple[str, ...] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(record, order key, digest) of every image of the batch's image fields, and how many were not read (their
    digest is that of their reference). Files are read a window of bytes at a time (dataaudit.images.media), only
    inside `folder`, each once."""
    fields = resolve_schema(batch.schema, FieldSpec(image=image_field), batch).images
    media = Media(folder, limits.max_bytes)
    rows, order, refs = [], [], []
    for f, col in enumerate(fields):
        values, r, p = flat_images(batch.column(col.name), col.many)
        rows.append(r)
        order.append(f * (1 << 32) + np.maximum(p, 0))
        if col.image == "struct":
            idx = values.type.get_field_index("path")
            paths = pc.struct_field(values, "path").to_pylist() if idx >= 0 else [None] * len(values)
            media.add_bytes(pc.struct_field(values, "bytes"), paths)
        elif col.image == "bytes":
            paths = [None] * len(values)
            media.add_bytes(values, paths)
        else:
            paths = values.to_pylist()
            for path in paths:
                media.add_path(path)
        refs += paths
    n = len(media.where)
    digest = np.zeros(n, np.uint64)
    read = np.zeros(n, bool)
    for window in media.windows(limits.in_flight):
        for k in window:
            data = media.fetch(k)
            if isinstance(data, bytes):
                digest[k], read[k] = xxhash.xxh3_64_intdigest(data), True
    for k, first in media.same.items():
        digest[k], read[k] = digest[first], read[first]
    unread = np.flatnonzero(~read)
    for k in unread.tolist():
        digest[k] = xxhash.xxh3_64_intdigest(b"\0unread\0" + str(refs[k] or "").encode("utf-8", "replace"))
    cat = lambda parts: np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)  # noqa: E731
    return cat(rows), cat(order), digest, int(len(unread))


def images_key(n: int, rows: np.ndarray, order: np.ndarray, digest: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(k1, k2): 128 bits per record keyed on its images' digests in order, repeats counted; 0 for no image."""
    k1, k2 = np.zeros(n, np.uint64), np.zeros(n, np.uint64)
    if len(rows) == 0:
        return k1, k2
    o = np.lexsort((order, rows))
    r = rows[o]
    start = np.r_[True, r[1:] != r[:-1]]
    rank = np.arange(len(r)) - np.maximum.accumulate(np.where(start, np.arange(len(r)), 0))
    v = digest[o] ^ mix64(rank.astype(np.uint64) + np.uint64(1))     # the same image at another place differs
    np.add.at(k1, r, mix64(v))
    np.add.at(k2, r, mix64(v ^ SALT))
    none = np.bincount(r, minlength=n) == 0
    k1[~none] |= np.uint64(1)      # a record with images never has the key of one without (0)
    return k1, k2


def fold(count: np.ndarray, hi: np.ndarray, lo: np.ndarray, sig: np.ndarray, k1: np.ndarray, k2: np.ndarray
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(hi, lo, sig) of `dataaudit.dedup.signatures.sign_batch` with the images' key folded in: the exact hash XORed
    with it, every MinHash value XORed with a mask derived from it (none for a record without images, nor for an
    empty text: it is never clustered, images or not)."""
    has = (k1 != 0) & (count > 0)
    if not has.any():
        return hi, lo, sig
    hi, lo, sig = hi.copy(), lo.copy(), np.array(sig, dtype=np.uint32)
    hi[has] ^= k1[has]
    lo[has] ^= k2[has]
    perm = mix64(np.arange(sig.shape[1], dtype=np.uint64) + SALT)
    mask = mix64(k1[has][:, None] ^ perm[None, :]) ^ k2[has][:, None]
    sig[has] ^= (mask & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    return hi, lo, sig
