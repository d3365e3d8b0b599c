"""Long texts: what the n-gram and repetition statistics see of them (the `long_document` check, beside
`repetition` in checks/text.py, flags a text they saw only the start of).

The repetition statistics hold ~65 bytes of working arrays per byte of text (lines, sentences, word hashes and
n-gram groups), so a 200 MB text would need 13 GB. They see at most LONG_DOCUMENT_BYTES of each text (its
first bytes, cut back to a character boundary) and at most CHUNK_BYTES of a batch at once (texts are
independent, so a batch cut into runs of texts gives the same values): a text longer than that is flagged
`long_document`, so nobody reads its repetition statistics as covering all of it.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.textops.arrow import as_string_array


# Constants, not check params: they bound memory (~65x the bytes, see above), they do not change what is
# checked in a text under them. A whole novel is ~1 MB.
LONG_DOCUMENT_BYTES = 8 << 20
CHUNK_BYTES = 8 << 20


def byte_lengths(arr: pa.Array) -> np.ndarray:
    """UTF-8 bytes of each text (0 for a null)."""
    if len(arr) == 0:
        return np.zeros(0, np.int64)
    return pc.fill_null(pc.binary_length(arr), 0).to_numpy(zero_copy_only=False).astype(np.int64)


def head(arr: pa.Array, limit: int = LONG_DOCUMENT_BYTES) -> pa.Array:
    """`arr` with every text longer than `limit` bytes cut to its first `limit` bytes, back to the start of the
    character the cut falls in (the others untouched; `arr` itself when none is longer)."""
    arr = as_string_array(arr)
    lengths = byte_lengths(arr)
    long = np.flatnonzero(lengths > limit)
    if long.size == 0:
        return arr
    pieces, at = [], 0
    for i in long.tolist():
        pieces.append(arr.slice(at, i - at))
        text = arr.slice(i, 1).cast(pa.large_binary())
        cut = pc.binary_slice(text, 0, limit + 4)[0].as_buffer()   # the cut and the bytes just after it
        data = memoryview(cut)
        stop = limit
        while stop > 0 and data[stop] & 0xC0 == 0x80:   # a continuation byte: the character began earlier
            stop -= 1
        pieces.append(pa.array([bytes(data[:stop])], pa.large_binary()).cast(pa.large_string()))
        at = i + 1
    pieces.append(arr.slice(at))
    return pa.concat_arrays([p.cast(pa.large_string()) for p in pieces if len(p)] or [arr.slice(0, 0)])


def chunks(arr: pa.Array, budget: int = CHUNK_BYTES) -> Iterator[tuple[int, int]]:
    """(start, stop) runs of texts holding at most `budget` bytes together (a longer text alone), in order."""
    cum = np.cumsum(byte_lengths(arr))
    n, start = len(arr), 0
    if n == 0 or cum[-1] <= budget:
        yield 0, n
        return
    while start < n:
        before = int(cum[start - 1]) if start else 0
        stop = max(int(np.searchsorted(cum, before + budget, side="right")), start + 1)
        yield start, stop
        start = stop
