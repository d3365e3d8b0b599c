"""Which images of one set (training) appear in another (validation, benchmark): the one matching rule of
`dedup-images --against` and of `contamination`'s image benchmarks.

An image of `a` matches an image of `b` when it has the same bytes (`exact`), a perceptual hash within
`max_distance` bits of b's (`near`: re-encodes, resizes), or within `max_distance` bits of the hash of b's mirror image (`flipped`: a
horizontally flipped copy). When b carries `crops` (n, V) and `crops_flipped`, the hashes of its picture with a few
percent cut from every border (`border_crop_hashes`), a training image within `max_distance` bits of one of them is
a near (or flipped) copy too: pHash alone finds under half of the copies cut 2-5% at the borders at 6 bits
(benchmarks/image_benchmark_recall.py). Each set is a dict of parallel arrays, one entry per
image: digest (xxh3-64 of the bytes), phash, flipped (the mirror image's phash), decoded (bool: the hashes are
only compared where both images decoded). The multi-index search (dataaudit.images.near) only proposes
candidates, over the distinct hashes, so a million identical blank images cost one comparison; every pair it
returns is checked by its own distance.
"""
from __future__ import annotations

import numpy as np

from .phash import hamming

KINDS = ("exact", "near", "flipped")
# A nearly flat picture (grey std under this, of 255, at 32x32) has a generic pHash: in
# benchmarks/image_benchmark_recall.py one such crop (std 11.6, the lowest of 300) matched 9 of 1,000 unrelated
# textures. A benchmark image that flat is matched by its bytes only (said in the benchmark's warnings).
LOW_DETAIL = 14.0
_BLOCK = 1 << 22                        # hash pairs compared at once (bytes of the distance matrix: 8x)
BORDER_CROPS = (0.02, 0.035, 0.05)      # share of each side cut from every border of b's picture


def border_crop_hashes(data: bytes, max_pixels: int) -> tuple[np.ndarray, np.ndarray, float] | None:
    """(pHash, pHash of the mirror image) of the picture in `data` with each of BORDER_CROPS cut from every border
    (uint64, one per crop), and the grey standard deviation of the whole picture reduced to 32x32 (its detail: see
    LOW_DETAIL); None when it does not decode within `max_pixels` (checked before decoding)."""
    import io

    from PIL import Image

    from .phash import phash64, resize_grey
    from .probe import decode_formats, quiet

    with quiet():
        try:
            with Image.open(io.BytesIO(data), formats=decode_formats()) as im:
                w, h = im.size
                if w * h > max_pixels or w < 8 or h < 8:
                    return None
                im.load()
                grey = np.stack([resize_grey(im.crop((round(w * c), round(h * c), w - round(w * c),
                                                      h - round(h * c)))) for c in BORDER_CROPS])
                detail = float(resize_grey(im).std())
        except Exception:   # noqa: BLE001  (a hostile file: no crop hashes, its other hashes still count)
            return None
    return phash64(grey), phash64(grey[:, :, ::-1]), detail


def _components(src: np.ndarray, dst: np.ndarray, n: int) -> np.ndarray:
    """Component label of each of n nodes (a node without an edge: its own label)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    graph = coo_matrix((np.ones(len(src), np.int8), (src, dst)), shape=(n, n)).tocsr()
    return connected_components(graph, directed=False)[1]


def near_pairs(a: np.ndarray, b: np.ndarray, max_distance: int) -> tuple[np.ndarray, np.ndarray]:
    """(index into a, index into unique(b)) of every a hash and distinct b hash within `max_distance` bits,
    sorted by a then by b's hash."""
    none = np.zeros(0, np.int64)
    if len(a) == 0 or len(b) == 0:
        return none, none
    from .near import near_duplicate_edges   # numba: loaded when there are hashes to compare, not on import

    ua, a_inv = np.unique(a, return_inverse=True)
    ub = np.unique(b)
    s, d = near_duplicate_edges(np.concatenate([ua, ub]), max_distance)
    label = _components(s, d, len(ua) + len(ub))
    a_lab, b_lab = label[:len(ua)], label[len(ua):]
    shared = np.intersect1d(a_lab, b_lab)
    pa_, pb_ = [], []
    order = np.argsort(a_lab, kind="stable")
    lo, hi = np.searchsorted(a_lab[order], shared), np.searchsorted(a_lab[order], shared, side="right")
    for c, x, y in zip(shared.tolist(), lo.tolist(), hi.tolist()):   # one component holding both sides at a time
        tb = np.flatnonzero(b_lab == c)
        step = max(1, _BLOCK // len(tb))          # a chained component of many hashes: compared a block at a time
        for z in range(x, y, step):
            ta = order[z:min(y, z + step)]
            i, j = np.nonzero(hamming(ua[ta][:, None], ub[tb][None, :]) <= max_distance)
            pa_.append(ta[i])
            pb_.append(tb[j])
    if not pa_:
        return none, none
    ua_i, ub_j = np.concatenate(pa_), np.concatenate(pb_)
    # unique a hash -> every a image holding it
    a_order = np.argsort(a_inv.ravel(), kind="stable")
    starts = np.searchsorted(a_inv.ravel()[a_order], np.arange(len(ua) + 1))
    counts = starts[ua_i + 1] - starts[ua_i]
    at = np.repeat(starts[ua_i], counts) + (np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts))
    ai, bj = a_order[at], np.repeat(ub_j, counts)
    o = np.lexsort((bj, ai))
    return ai[o].astype(np.int64), bj[o].astype(np.int64)


def image_pairs(a: dict, b: dict, max_distance: int, every_b: bool = False
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a image, b image, kind: 0 exact, 1 near, 2 flipped) of the matching pairs, sorted by a image, kind, b image.

    Each (a, b) pair once, with its first kind. By default the b image of a pair stands for every b image with
    the same digest (exact) or hash (near, flipped): the first of them, so a b set holding many copies of one
    picture does not multiply the pairs. `every_b` names each of them (a benchmark lists every leaked image)."""
    ud, first, d_inv = np.unique(b["digest"], return_index=True, return_inverse=True)
    exact = np.zeros(0, np.int64)
    if len(ud):
        pos = np.minimum(np.searchsorted(ud, a["digest"]), len(ud) - 1)
        exact = np.flatnonzero(ud[pos] == a["digest"])
    out_a, out_b, out_k = [exact], [first[pos[exact]] if len(ud) else exact], [np.zeros(len(exact), np.int8)]
    a_dec, b_dec = np.flatnonzero(a["decoded"]), np.flatnonzero(b["decoded"])
    for kind, column in ((1, "phash"), (2, "flipped")):
        for hb, rows in _hash_columns(b, column, b_dec):
            ai, uj = near_pairs(a["phash"][a_dec], hb, max_distance)
            _, ufirst = np.unique(hb, return_index=True)
            out_a.append(a_dec[ai])
            out_b.append(rows[ufirst[uj]])
            out_k.append(np.full(len(ai), kind, np.int8))
    ai, bj, kind = (np.concatenate(x) for x in (out_a, out_b, out_k))
    if every_b and len(ai):
        ai, bj, kind = _every_b(ai, bj, kind, b, d_inv)
    o = np.lexsort((bj, kind, ai))
    ai, bj, kind = ai[o], bj[o], kind[o]
    first_of = np.ones(len(ai), bool)          # each (a, b) pair once, with its first kind
    if len(ai):
        key = ai.astype(np.int64) * (len(b["digest"]) + 1) + bj
        _, at = np.unique(key, return_index=True)
        first_of[:] = False
        first_of[at] = True
    return ai[first_of].astype(np.int64), bj[first_of].astype(np.int64), kind[first_of]


def _hash_columns(b: dict, column: str, b_dec: np.ndarray):
    """(hashes, their b images) to compare for a kind: b's own hash, then each border crop's (where computed)."""
    yield b[column][b_dec], b_dec
    crops = b.get("crops" if column == "phash" else "crops_flipped")
    if crops is not None and len(b_dec):
        has = b_dec[b["has_crops"][b_dec]]
        for v in range(crops.shape[1]):
            yield crops[has, v], has


def _every_b(ai, bj, kind, b: dict, d_inv: np.ndarray):
    """Each pair repeated for every b image that its b image stands for (same digest, or same hash and decoded)."""
    group = np.empty(len(bj), np.int64)
    labels = {}
    for k, column in ((0, None), (1, "phash"), (2, "flipped")):
        if column is None:
            lab = d_inv.ravel().astype(np.int64)
        else:   # decoded images by hash; an undecoded one is never a hash match
            _, inv = np.unique(b[column], return_inverse=True)
            lab = np.where(b["decoded"], inv.ravel(), -1 - np.arange(len(inv)))
        labels[k] = lab
        sel = kind == k
        group[sel] = lab[bj[sel]]
    xa, xb, xk = [], [], []
    for k, lab in labels.items():
        sel = np.flatnonzero(kind == k)
        if not len(sel):
            continue
        order = np.argsort(lab, kind="stable")
        lo = np.searchsorted(lab[order], group[sel])
        hi = np.searchsorted(lab[order], group[sel], side="right")
        counts = hi - lo
        at = np.repeat(lo, counts) + (np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts))
        xa.append(np.repeat(ai[sel], counts))
        xb.append(order[at])
        xk.append(np.repeat(kind[sel], counts))
    return np.concatenate(xa), np.concatenate(xb), np.concatenate(xk)


def image_matches(a: dict, b: dict, max_distance: int) -> tuple[np.ndarray, np.ndarray]:
    """(kind per image of a: 0 exact, 1 near, 2 flipped, 3 none; a b image it matches, or -1): its first pair."""
    n = len(a["digest"])
    kind, other = np.full(n, 3, np.int8), np.full(n, -1, np.int64)
    ai, bj, k = image_pairs(a, b, max_distance)
    if len(ai):
        _, at = np.unique(ai, return_index=True)     # sorted by a, kind, b: the first pair of each a image
        kind[ai[at]], other[ai[at]] = k[at], bj[at]
    return kind, other
