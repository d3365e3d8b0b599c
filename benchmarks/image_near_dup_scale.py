#!/usr/bin/env python
"""Near-duplicate image search over 64-bit perceptual hashes: wall time, peak memory and recall of
`near_duplicate_groups` on --hashes hashes, against a brute-force all-pairs popcount (imagededup's brute-force
search) timed on --peer-subset hashes and extrapolated quadratically.

Hashes are random uint64 with planted near duplicates: --planted-frac of the items are copies of another
(never itself a copy) with 1..--max-distance distinct random bits flipped, so every planted pair is within the
distance and must end in one group (recall 1.0 is required: the search is exact), plus --identical items with
one hash (0x8000000000000000, the pHash of a blank image). On the subset the peer's groups (all close pairs,
joined by a union-find) are compared with ours. The numba kernels are compiled (or loaded from cache) before
the timings. Exit 3 when over --max-seconds or when recall or the subset agreement is not exact.

    .venv/bin/python benchmarks/image_near_dup_scale.py --hashes 1000000 --max-distance 8
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

_common.single_core_env()

import argparse  # noqa: E402
import resource  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, str(_common.REPO))

import numba  # noqa: E402
import numpy as np  # noqa: E402

from dataaudit.images.near import near_duplicate_groups  # noqa: E402
from dataaudit.textops.swar import popcount  # noqa: E402

BLANK = np.uint64(0x8000000000000000)


@numba.njit(nogil=True)
def _peer_union(parent, i, j):
    while parent[i] != i:
        i = parent[i]
    while parent[j] != j:
        j = parent[j]
    if i != j:
        parent[max(i, j)] = min(i, j)


@numba.njit(nogil=True, boundscheck=False)
def brute_force(h, k, parent):
    """The peer: popcount of every pair, the close ones counted and joined (imagededup keeps them in a dict)."""
    n = h.shape[0]
    close = 0
    for i in range(n):
        a = h[i]
        for j in range(i + 1, n):
            if popcount(a ^ h[j]) <= k:
                close += 1
                _peer_union(parent, i, j)
    return close


def peer_groups(h: np.ndarray, k: int) -> tuple[np.ndarray, int]:
    parent = np.arange(len(h), dtype=np.int64)
    close = brute_force(h, np.uint64(k), parent)
    while True:                                          # flatten: every item points at its root
        nxt = parent[parent]
        if (nxt == parent).all():
            return parent, int(close)
        parent = nxt


def make_hashes(args) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Hashes, planted (copy, origin) pairs, and the indices of the identical block."""
    rng = np.random.default_rng(args.seed)
    n = args.hashes
    h = rng.integers(0, 2**64, n, dtype=np.uint64)
    perm = rng.permutation(n)
    block = np.sort(perm[:args.identical])
    copies = perm[args.identical:args.identical + int(args.planted_frac * n)]
    pool = perm[args.identical + len(copies):]
    origins = pool[rng.integers(0, len(pool), len(copies))]
    flips = rng.integers(1, args.max_distance + 1, len(copies))
    # `flips` distinct bits per copy: the bits of the `flips` smallest random keys of its 64
    rank = np.argsort(np.argsort(rng.random((len(copies), 64)), axis=1), axis=1)
    weights = np.uint64(1) << np.arange(64, dtype=np.uint64)
    mask = np.bitwise_or.reduce(np.where(rank < flips[:, None], weights, np.uint64(0)), axis=1)
    h[copies] = h[origins] ^ mask
    h[block] = BLANK
    return h, copies, origins, block


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run(args) -> int:
    print(_common.machine_line())
    k = args.max_distance
    with _common.Timer() as t:
        h, copies, origins, block = make_hashes(args)
    print(f"generated {len(h)} hashes ({len(copies)} planted near copies with 1-{k} bits flipped, "
          f"{len(block)} identical) in {t.s:.1f} s")
    with _common.Timer() as warm:
        near_duplicate_groups(h[:2000], k)
        peer_groups(h[:100], k)
    floor = rss_mib()

    cpu0 = time.process_time()
    with _common.Timer() as ours:
        groups = near_duplicate_groups(h, k)
    ours_cpu = time.process_time() - cpu0
    peak = rss_mib()
    recall = float((groups[copies] == groups[origins]).mean()) if len(copies) else 1.0
    blank_one = len(block) == 0 or bool((groups[block] == block[0]).all())

    s = min(args.peer_subset, len(h))
    sub = h[:s]
    with _common.Timer() as ours_sub:
        sub_groups = near_duplicate_groups(sub, k)
    with _common.Timer() as peer:
        pg, close = peer_groups(sub, k)
    agree = bool((pg == sub_groups).all())
    scale = len(h) * (len(h) - 1) / max(s * (s - 1), 1)
    peer_full = peer.s * scale

    rows = [["ours: near_duplicate_groups (bands + union-find)", len(h), f"{ours.s:.2f}", "measured"],
            ["peer: brute-force all-pairs popcount (imagededup method)", len(h), f"{peer_full:.0f}",
             f"extrapolated x{scale:.0f} from {s}"],
            ["ours on the subset", s, f"{ours_sub.s:.3f}", "measured"],
            ["peer on the subset", s, f"{peer.s:.2f}", f"measured, {close} close pairs"]]
    print()
    print(_common.fmt_table(["method", "hashes", "seconds", "how"], rows,
                            title=f"near-duplicate groups at max_distance {k}"))
    print(f"ratio peer / ours: {peer_full / ours.s:.0f}x at {len(h)} hashes (extrapolated), "
          f"{peer.s / ours_sub.s:.1f}x at {s} (measured)")
    print(f"ours: {ours.s:.2f} s wall, {ours_cpu:.2f} s CPU (target < {args.max_seconds:g} s); "
          f"{len(np.unique(groups))} groups; kernels compiled/loaded in {warm.s:.1f} s before")
    print(f"peak RSS {peak:.0f} MiB (before the call: {floor:.0f} MiB, imports + data)")
    print(f"recall of the planted pairs {recall:.4f}; identical block in one group: {blank_one}; "
          f"subset groups equal to the peer's: {agree}")
    _common.write_json_result(args.json, {
        "hashes": len(h), "max_distance": k, "seconds": ours.s, "cpu_seconds": ours_cpu, "peak_rss_mib": peak,
        "rss_before_mib": floor, "groups": int(len(np.unique(groups))), "recall": recall,
        "identical_one_group": blank_one, "peer_subset": s, "peer_subset_seconds": peer.s,
        "ours_subset_seconds": ours_sub.s, "peer_extrapolated_seconds": peer_full,
        "ratio": peer_full / ours.s, "subset_agree": agree})
    ok = ours.s < args.max_seconds and recall == 1.0 and blank_one and agree
    return 0 if ok else 3


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hashes", type=int, default=1_000_000)
    ap.add_argument("--max-distance", type=int, default=8)
    ap.add_argument("--planted-frac", type=float, default=0.05, help="share of items that are near copies")
    ap.add_argument("--identical", type=int, default=20_000, help="items sharing one hash (blank images)")
    ap.add_argument("--peer-subset", type=int, default=50_000, help="hashes the brute-force peer is timed on")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--max-seconds", type=float, default=60.0, help="exit 3 above this many seconds")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    if args.identical + int(args.planted_frac * args.hashes) >= args.hashes:
        ap.error("--identical plus the planted copies must leave some hashes as origins")
    return _common.run_guarded("image_near_dup_scale", run, args)


if __name__ == "__main__":
    raise SystemExit(main())
