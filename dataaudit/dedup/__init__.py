"""Exact and MinHash near-duplicate detection (engine-free; pipelines/dedup.py runs its stages over shards).

    from dataaudit.dedup import minhash_signatures, optimal_params, band_hashes, cluster_table

The job's stages, one module each, all driven by one `DedupSpec` (`config`): `signatures` (per shard),
`buckets` (map, per shard), `reduce` (per partition), `clusters`, `outputs`, with `corpus` (gid <-> shard and
row), `examples` and `report` (dedup.json) beside them; `images` clusters images (dedup-images). The names below
load on first use: importing the package for FILES loads no kernel.
"""
from dataaudit.extras import lazy_exports
from dataaudit.outputs import JobFiles

# What `dedup` and `dedup-images` write in --out (dedup-images writes no overlap and no page).
CLUSTERS = "clusters.parquet"   # every record in a cluster, its representative marked
KEEP = "keep.parquet"           # the records to keep: every record but the duplicates
OVERLAP = "overlap.parquet"     # validation records with a copy in train (--against)
FILES = JobFiles("dedup.json", (CLUSTERS, KEEP, OVERLAP), "dedup.html")

__getattr__ = lazy_exports(__name__, {
    ".clusters": ("cluster_table", "components", "jaccard_pairs", "unique_edges"),
    ".config": ("DedupSpec",),
    ".exact": ("exact_hash_of", "exact_hashes"),
    ".interop": ("to_datasketch",),
    ".lsh": ("all_pair_edges", "band_hashes", "optimal_params", "runs", "star_edges"),
    ".minhash": ("MAX_HASH", "MERSENNE_PRIME", "minhash_signatures", "permutations", "signatures_torch",
                 "signatures_u32"),
    ".signatures": ("SignStage", "sign_batch", "sign_shard"),
})
