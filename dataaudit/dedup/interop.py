"""Our MinHash signatures as datasketch objects, for an existing `datasketch.MinHashLSH` index.

Our signatures are datasketch's legacy scheme value for value (same `a, b` from `RandomState(seed)`, same
`((a*h + b) mod 2**64) mod (2**61-1) & (2**32-1)`), with our 64-bit shingle hash (`textops.ngram_hash_of`,
`char_ngram_hash_of`) in place of datasketch's SHA-1. So an exported signature:

- mixes with other exported ones, and with `datasketch.MinHash(num_perm, seed, hashfunc=ngram_hash_of,
  scheme="legacy")` sketches of normalized shingle text (`update("w1 w2 w3 w4 w5")`): same values;
- does not mix with sketches made with datasketch's default hash or scheme (SHA-1, `affine32`): those are
  another random sample, and datasketch's LSH refuses to mix schemes. Re-sign such an index with ours.

datasketch is optional (`pip install 'dataaudit[datasketch]'`); it is imported here only.
"""
from __future__ import annotations

import inspect

import numpy as np


def to_datasketch(signatures: np.ndarray, seed: int = 1, lean: bool = True, shingles: str = "word") -> list:
    """One `datasketch.LeanMinHash` (or, with lean=False, `MinHash` that can still be updated with shingle
    text) per row of `signatures` ((n, num_perm), uint32 or uint64 values < 2**32: `signatures_u32`, or a
    signature part's `sig` column through `signatures.signature_matrix`), legacy scheme, `seed` = the seed they
    were made with."""
    from dataaudit.extras import require

    datasketch = require("datasketch", "to_datasketch")
    from dataaudit.textops import char_ngram_hash_of, ngram_hash_of

    sig = np.asarray(signatures)
    if sig.ndim != 2:
        raise ValueError(f"signatures must be (documents, num_perm), got shape {sig.shape}")
    if sig.size and int(sig.max()) >= 1 << 32:
        raise ValueError("signature values must be < 2**32 (the legacy scheme keeps 32 bits)")
    sig = sig.astype(np.uint64)
    num_perm = sig.shape[1]
    if shingles not in ("word", "char"):
        raise ValueError(f"shingles must be 'word' or 'char', got {shingles!r}")
    hashfunc = ngram_hash_of if shingles == "word" else char_ngram_hash_of
    # datasketch < 2.0 has no `scheme`: its only scheme is the legacy one
    scheme = {"scheme": "legacy"} if "scheme" in inspect.signature(datasketch.MinHash).parameters else {}
    # one template: its permutations are shared by every copy instead of drawn again per document
    template = datasketch.MinHash(num_perm=num_perm, seed=seed, hashfunc=hashfunc, **scheme)
    out = []
    for row in sig:
        m = datasketch.MinHash(num_perm=num_perm, seed=seed, hashfunc=hashfunc, hashvalues=row,
                               permutations=template.permutations, **scheme)
        out.append(datasketch.LeanMinHash(m) if lean else m)
    return out
