"""dataaudit.images.phash: phash64 equals imagehash.phash's algorithm (a per-image scipy.fftpack reference
written here, and values imagehash itself gave), hamming counts differing bits."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.fftpack
from PIL import Image, ImageDraw

from dataaudit.images.phash import hamming, phash64, resize_grey


def reference_phash(pixels: np.ndarray) -> int:
    """imagehash.phash (hash_size=8, highfreq_factor=4) after its resize, one image at a time."""
    dct = scipy.fftpack.dct(scipy.fftpack.dct(pixels, axis=0), axis=1)
    low = dct[:8, :8]
    bits = (low > np.median(low)).flatten()
    return int("".join("1" if b else "0" for b in bits), 2)


def _constructed() -> np.ndarray:
    rng = np.random.default_rng(3)
    ramp = np.arange(32, dtype=np.uint8) * 8
    out = [np.zeros((32, 32), np.uint8), np.full((32, 32), 200, np.uint8),
           np.tile(ramp, (32, 1)), np.tile(ramp, (32, 1)).T, np.tile(255 - ramp, (32, 1)),
           ((np.add.outer(np.arange(32) // 4, np.arange(32) // 4) % 2) * 255).astype(np.uint8)]
    out += list(rng.integers(0, 256, (40, 32, 32), dtype=np.uint8))
    blocks = np.kron(rng.integers(0, 256, (20, 4, 4)), np.ones((8, 8))).astype(np.uint8)   # coarse mosaics
    out += list(blocks)
    return np.stack(out)


def test_phash64_equals_reference_per_image():
    grey = _constructed()
    got = phash64(grey)
    assert got.dtype == np.uint64 and got.shape == (len(grey),)
    assert got.tolist() == [reference_phash(p) for p in grey]
    # float32 pixels of the same values give the same bits
    assert phash64(grey.astype(np.float32)).tolist() == got.tolist()


def test_phash64_hand_known_values():
    ramp = np.arange(32, dtype=np.uint8) * 8
    # a left-to-right ramp: only row 0 of the DCT is non-zero (exactly), DC > 0 and odd terms < 0 = median
    assert phash64(np.tile(ramp, (32, 1))[None])[0] == 0x8000000000000000
    # the same ramp falling: DC and the odd terms 1, 3, 5, 7 of row 0 are positive -> 0b11010101 on top
    assert phash64(np.tile(255 - ramp, (32, 1))[None])[0] == 0xD500000000000000
    assert phash64(np.zeros((1, 32, 32)))[0] == 0
    # an image whose low 8x8 DCT block is +-1 by design: the hash is the design
    pattern = 0xF0F0F0F0F0F0F0F0
    bits = np.array([(pattern >> (63 - i)) & 1 for i in range(64)]).reshape(8, 8)
    coef = np.zeros((32, 32))
    coef[:8, :8] = np.where(bits, 1.0, -1.0)
    img = scipy.fftpack.idct(scipy.fftpack.idct(coef, axis=0), axis=1)
    assert phash64(img[None])[0] == pattern


def test_phash64_through_resize_matches_imagehash():
    """Hex values from imagehash 4.3.2 (`str(imagehash.phash(img))`) with Pillow 13; if Pillow's Lanczos ever
    changes, the reference comparison above still pins the transform."""
    shapes = Image.new("RGB", (120, 80), (250, 250, 250))
    draw = ImageDraw.Draw(shapes)
    draw.rectangle((10, 10, 60, 50), fill=(200, 30, 30))
    draw.ellipse((70, 20, 110, 70), fill=(20, 40, 200))
    stripes = Image.fromarray((np.indices((50, 70)).sum(0) % 17 * 15).astype(np.uint8))
    images = [Image.linear_gradient("L"), Image.radial_gradient("L"), shapes, stripes]
    grey = np.stack([resize_grey(im) for im in images])
    assert grey.shape == (4, 32, 32) and grey.dtype == np.uint8
    assert [hex(int(h)) for h in phash64(grey)] == ["0x8000800080008000", "0xee989837e69ac819",
                                                    "0xeb3794c4b4c8c83b", "0xd5005500550000aa"]
    assert phash64(grey).tolist() == [reference_phash(p) for p in grey]


def test_phash64_shapes():
    assert phash64(np.zeros((0, 32, 32), np.uint8)).shape == (0,)
    with pytest.raises(ValueError):
        phash64(np.zeros((32, 32), np.uint8))
    with pytest.raises(ValueError):
        phash64(np.zeros((2, 16, 16), np.uint8))


def test_hamming():
    a = np.array([0, 0xFFFFFFFFFFFFFFFF, 0x8000000000000001, 5], np.uint64)
    b = np.array([0, 0, 0x0000000000000001, 3], np.uint64)
    d = hamming(a, b)
    assert d.dtype == np.int64 and d.tolist() == [0, 64, 1, 2]
    assert hamming(a, np.uint64(0)).tolist() == [0, 64, 2, 2]     # broadcast
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 2**64, (2, 1000), dtype=np.uint64)
    assert hamming(x, y).tolist() == [bin(int(p) ^ int(q)).count("1") for p, q in zip(x, y)]
