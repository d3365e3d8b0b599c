"""Perceptual hashes: imagehash's `phash` (hash_size=8, highfreq_factor=4) on a stack of 32x32 greyscale
images at once, and Hamming distances between hashes.

Same bits as `imagehash.phash(img)`: the DCT-II (scipy's, default norm) of the 32x32 "L" pixels along the rows
axis then the columns axis, its top-left 8x8, bit = coefficient > median of those 64, row-major, first bit the
most significant bit of the uint64 (so `int(str(imagehash.phash(img)), 16) == phash64(...)[0]`).
"""
from __future__ import annotations

import numpy as np

SIDE = 32       # hash_size * highfreq_factor
_LOW = 8        # hash_size

# popcount of every byte, for numpy < 2 (no np.bitwise_count)
_BYTE_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).sum(axis=1).astype(np.uint8)


def resize_grey(img) -> np.ndarray:
    """What imagehash does before hashing: greyscale ("L"), then 32x32 Lanczos -> uint8 (32, 32)."""
    from PIL import Image
    return np.asarray(img.convert("L").resize((SIDE, SIDE), Image.Resampling.LANCZOS))


def phash64(grey: np.ndarray) -> np.ndarray:
    """pHash of each image of `grey` (N, 32, 32), uint8 or float pixels -> uint64 (N,).

    Pixels are taken as float64, as scipy.fftpack does with imagehash's uint8 array: the same transform in the
    same order keeps the coefficients bit-identical, so no bit next to the median flips."""
    from scipy.fft import dct

    x = np.asarray(grey)
    if x.ndim != 3 or x.shape[1:] != (SIDE, SIDE):
        raise ValueError(f"phash64: expected shape (N, {SIDE}, {SIDE}), got {x.shape}")
    if len(x) == 0:
        return np.zeros(0, np.uint64)
    coef = dct(dct(x.astype(np.float64), axis=1), axis=2)[:, :_LOW, :_LOW].reshape(len(x), _LOW * _LOW)
    bits = coef > np.median(coef, axis=1)[:, None]
    # packbits is big-endian within each byte and bytes go row-major, so reading them as ">u8" puts bit 0 on top
    return np.packbits(bits, axis=1).view(">u8").ravel().astype(np.uint64)


def hamming(a, b) -> np.ndarray:
    """Bits that differ between uint64 hashes a and b (broadcast) -> int64."""
    x = np.bitwise_xor(np.asarray(a, np.uint64), np.asarray(b, np.uint64))
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x).astype(np.int64)
    x = np.ascontiguousarray(x)
    return _BYTE_BITS[x.reshape(x.shape + (1,)).view(np.uint8)].sum(axis=-1, dtype=np.int64)
