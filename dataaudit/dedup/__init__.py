"""Exact and MinHash near-duplicate detection (engine-free; pipelines/dedup.py runs its stages over shards).

    from dataaudit.dedup import minhash_signatures, optimal_params, band_hashes, cluster_table

The job's stages, one module each, all driven by one `DedupSpec` (`config`): `signatures` (per shard),
`buckets` (map, per shard), `reduce` (per partition), `clusters`, `outputs`, with `corpus` (gid <-> shard and
row), `examples` and `report` (dedup.json) beside them.
"""
from .clusters import cluster_table, components, jaccard_pairs, unique_edges
from .config import DedupSpec
from .exact import exact_hash_of, exact_hashes
from .interop import to_datasketch
from .lsh import all_pair_edges, band_hashes, optimal_params, runs, star_edges
from .minhash import MAX_HASH, MERSENNE_PRIME, minhash_signatures, permutations, signatures_torch, signatures_u32
from .signatures import SignStage, sign_batch, sign_shard

__all__ = ["minhash_signatures", "signatures_u32", "signatures_torch", "permutations", "MERSENNE_PRIME",
           "MAX_HASH", "optimal_params", "band_hashes", "runs", "star_edges", "all_pair_edges", "exact_hashes",
           "exact_hash_of", "jaccard_pairs", "components", "cluster_table", "unique_edges", "DedupSpec",
           "SignStage", "sign_batch", "sign_shard", "to_datasketch"]
