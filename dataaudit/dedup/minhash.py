"""MinHash signatures for a whole batch of documents at once, with datasketch's permutation scheme.

For shingle hash h and permutation k (a_k, b_k drawn exactly as datasketch draws them from
`np.random.RandomState(seed)`), the permuted value is datasketch's "legacy" scheme (the only scheme before
datasketch 2.0, still `MinHash(..., scheme="legacy")`):

    ((a_k * h + b_k) mod 2**64) mod (2**61 - 1)  &  (2**32 - 1)

and the signature of a document is the minimum over its shingles, so given the same shingle hashes our
signature equals `datasketch.MinHash(num_perm, seed, hashfunc=..., scheme="legacy")` value for value. A
document without shingles gets datasketch's initial value 2**32 - 1 everywhere (it is never clustered: the
caller knows it from `NgramHashes.count == 0`).

Backends, all giving identical values:
  numba   a fused loop over (shingle, permutation): no temporaries, ~0.2-0.5 ns per pair on one core
  numpy   the same arithmetic in blocks of shingles (no per-document loop; ~20x slower than numba)
  torch   `signatures_torch`: int64 tensor arithmetic (wrapping multiply, masked shifts) with
          scatter_reduce(amin): runs unchanged on a GPU
The modulo by the Mersenne prime is done with shifts and masks (x mod p = (x & p) + (x >> 61), folded
once more), and only the low 32 bits are kept, so no division is ever executed.
"""
from __future__ import annotations

import functools

import numpy as np

from dataaudit.textops import NgramHashes, numba_kernels

MERSENNE_PRIME = (1 << 61) - 1
MAX_HASH = (1 << 32) - 1          # datasketch's initial hash value: the signature of an empty set
_P = np.uint64(MERSENNE_PRIME)
_M32 = np.uint64(MAX_HASH)
_S61 = np.uint64(61)
_ONE = np.uint64(1)


@functools.lru_cache(maxsize=16)
def permutations(num_perm: int = 128, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(a, b), uint64 arrays of num_perm: datasketch's `MinHash._init_permutations` for the legacy scheme."""
    if num_perm < 1:
        raise ValueError(f"num_perm must be >= 1, got {num_perm}")
    gen = np.random.RandomState(seed)
    ab = np.array([(gen.randint(1, _P, dtype=np.uint64), gen.randint(0, _P, dtype=np.uint64))
                   for _ in range(num_perm)], dtype=np.uint64).T
    a, b = np.ascontiguousarray(ab[0]), np.ascontiguousarray(ab[1])
    a.flags.writeable = False
    b.flags.writeable = False
    return a, b


def writable_permutations(num_perm: int = 128, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Copies of `permutations` (cached, read-only) for a kernel: a compiled kernel takes writable arrays only
    (`textops.compiled`)."""
    a, b = permutations(num_perm, seed)
    return a.copy(), b.copy()


def permute(h: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """uint64 (len(h), len(a)): ((a*h + b) mod 2**64) mod (2**61-1) & (2**32-1), with shifts, no division."""
    x = np.multiply.outer(h, a)
    x += b
    lo = x & _P
    x >>= _S61
    lo += x                                   # < 2**61 + 8, congruent to x mod p
    np.add(lo, _ONE, out=x)
    x >>= _S61                                # 1 exactly when lo >= p; lo - p has the low 32 bits of lo + 1
    lo += x
    lo &= _M32
    return lo


# ----------------------------------------------------------------------------------------------- backends

_BLOCK_PAIRS = 1 << 16                        # (shingle, permutation) pairs per numpy block: fits in L2


def _signatures_numpy(h: np.ndarray, offsets: np.ndarray, a: np.ndarray, b: np.ndarray,
                      out: np.ndarray) -> None:
    n = len(h)
    step = max(1, _BLOCK_PAIRS // len(a))
    doc = np.repeat(np.arange(len(offsets) - 1, dtype=np.int64), np.diff(offsets))
    for s in range(0, n, step):
        d = doc[s:s + step]
        v = permute(h[s:s + step], a, b)
        starts = np.flatnonzero(np.r_[True, d[1:] != d[:-1]])
        ids = d[starts]
        out[ids] = np.minimum(out[ids], np.minimum.reduceat(v, starts, axis=0))


def _numba_kernel(work: int | None = None):
    """The compiled kernel, or None when numba is not installed (or DATAAUDIT_NO_NUMBA is set, or `work` is small:
    `numba_kernels`)."""
    k = numba_kernels("dataaudit.dedup._kernels", work)
    return None if k is None else k.minhash_kernel


def backend() -> str:
    """'numba' when the compiled kernel is available, else 'numpy'."""
    return "numba" if _numba_kernel() is not None else "numpy"


def signatures_u32(hash_: np.ndarray, offsets: np.ndarray, num_perm: int = 128, seed: int = 1,
                   use: str = "auto") -> np.ndarray:
    """uint32 (num_docs, num_perm) signatures of documents whose shingle hashes are
    hash_[offsets[i]:offsets[i+1]] (the values fit 32 bits: this is the compact storage form)."""
    a, b = writable_permutations(num_perm, seed)
    num_docs = len(offsets) - 1
    h = np.ascontiguousarray(hash_, dtype=np.uint64)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    kernel = None
    if use in ("auto", "numba"):                    # "numba": the kernel whatever the size
        kernel = _numba_kernel(None if use == "numba" else h.nbytes * num_perm)
    if use == "numba" and kernel is None:
        raise RuntimeError("numba backend requested but numba is not installed")
    if kernel is not None:
        out = np.empty((num_docs, num_perm), np.uint32)
        kernel(h, offsets, a, b, out)
        return out
    out64 = np.full((num_docs, num_perm), _M32, np.uint64)
    _signatures_numpy(h, offsets, a, b, out64)
    return out64.astype(np.uint32)


def word_signatures(normalized, n: int, num_perm: int = 128, seed: int = 1, with_sets: bool = False
                    ) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray] | None] | None:
    """(uint32 (docs, num_perm) signatures, int64 shingle count per document, (offsets, values) of each
    document's sorted unique shingle hashes when `with_sets`) of the word n-grams of a string array in one numba
    pass (`_kernels.word_minhash`): the values of `signatures_u32(word_ngram_hashes(...))`. None without numba
    or for a small input (`numba_kernels`): the caller then takes the separate steps."""
    k = numba_kernels("dataaudit.dedup._kernels", work=normalized.nbytes * num_perm)
    if k is None:
        return None
    from dataaudit.textops.arrow import as_string_array, string_buffers
    from dataaudit.textops.hashing import POLY, WS_CLASS, powers

    if n < 1:
        raise ValueError(f"n-gram size must be >= 1, got {n}")
    off, data = string_buffers(as_string_array(normalized))
    a, b = writable_permutations(num_perm, seed)
    nd = len(off) - 1
    out = np.empty((nd, num_perm), np.uint32)
    count = np.empty(nd, np.int64)
    sets = np.empty(len(data) // 2 + nd + 1 if with_sets else 0, np.uint64)
    set_off = np.zeros(nd + 1, np.int64)
    k.word_minhash(data, off, WS_CLASS, powers(256), POLY, n, a, b, out, count, sets, set_off[1:])
    return out, count, ((set_off, sets[:set_off[-1]]) if with_sets else None)


def minhash_signatures(hashes: NgramHashes, num_docs: int | None = None, num_perm: int = 128, seed: int = 1,
                       use: str = "auto") -> np.ndarray:
    """uint64 (num_docs, num_perm) MinHash signatures, equal to datasketch's legacy-scheme `MinHash.hashvalues`
    given the same shingle hashes. Documents without shingles get 2**32 - 1 everywhere."""
    num_docs = hashes.num_docs if num_docs is None else num_docs
    if num_docs != hashes.num_docs:
        raise ValueError(f"num_docs={num_docs} but the hashes describe {hashes.num_docs} documents")
    return signatures_u32(hashes.hash, hashes.offsets(), num_perm, seed, use).astype(np.uint64)


def signatures_torch(hash_, doc, num_docs: int, num_perm: int = 128, seed: int = 1, block: int = 1 << 14):
    """The same signatures with torch, on whatever device `hash_` lives (CPU or GPU).

    hash_: int64 tensor (the uint64 shingle hashes viewed as int64: `torch.from_numpy(h.view(np.int64))`),
    doc: int64 tensor, the document of each shingle. Returns int64 (num_docs, num_perm). Two's-complement
    int64 multiplication wraps exactly like uint64, and the arithmetic right shift is masked to 3 bits.
    """
    import torch

    a_np, b_np = permutations(num_perm, seed)
    dev = hash_.device
    a = torch.from_numpy(a_np.view(np.int64).copy()).to(dev)
    b = torch.from_numpy(b_np.view(np.int64).copy()).to(dev)
    p, m32 = MERSENNE_PRIME, MAX_HASH
    out = torch.full((num_docs, num_perm), m32, dtype=torch.int64, device=dev)
    for s in range(0, hash_.shape[0], block):
        h = hash_[s:s + block, None]
        x = h * a + b
        lo = (x & p) + ((x >> 61) & 7)
        v = (lo + ((lo + 1) >> 61)) & m32
        idx = doc[s:s + block, None].expand_as(v)
        out.scatter_reduce_(0, idx, v, reduce="amin", include_self=True)
    return out
