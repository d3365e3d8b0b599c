"""Token-length statistics with a HF `tokenizers` tokenizer.json (batch-encoded in the library's threads).

The library holds ~100 bytes per token of every text it is given until the call returns (ids, offsets, masks), and
aborts the process on texts of a few hundred MB: texts go to it in runs of at most CHUNK_BYTES, and a text longer
than LONG_DOCUMENT_BYTES is encoded in pieces cut at whitespace (its count may then differ from the whole text's
by at most a token per cut; the text is flagged `long_document` by the text checks).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.checks.text_long import CHUNK_BYTES, LONG_DOCUMENT_BYTES, byte_lengths, chunks
from dataaudit.textops.arrow import as_string_array

# How far back from a piece's end a whitespace is looked for (a cut inside a word splits one token at most).
_WHITESPACE_LOOKBACK = 4096


def token_lengths(tokenizer, texts: pa.Array) -> np.ndarray:
    """Number of tokens of each text, without special tokens (what the text itself costs in context)."""
    out = np.zeros(len(texts), dtype=np.int64)
    if len(texts) == 0:
        return out
    texts = pc.fill_null(as_string_array(texts), "")   # a missing text costs no token
    sizes = byte_lengths(texts)
    for start, stop in chunks(texts, CHUNK_BYTES):
        if stop - start == 1 and sizes[start] > LONG_DOCUMENT_BYTES:
            out[start] = _long_text_tokens(tokenizer, texts[start].as_py().encode())
            continue
        encodings = tokenizer.encode_batch(texts.slice(start, stop - start).to_pylist(), add_special_tokens=False)
        out[start:stop] = np.fromiter((len(e) for e in encodings), dtype=np.int64, count=stop - start)
    return out


def _long_text_tokens(tokenizer, data: bytes) -> int:
    """Tokens of one long text, summed over pieces of at most LONG_DOCUMENT_BYTES cut after a whitespace (else at
    a character boundary)."""
    total, at, view = 0, 0, memoryview(data)
    while at < len(data):
        stop = min(at + LONG_DOCUMENT_BYTES, len(data))
        if stop < len(data):
            space = max(data.rfind(b" ", stop - _WHITESPACE_LOOKBACK, stop), data.rfind(b"\n", stop -
                                                                                          _WHITESPACE_LOOKBACK, stop))
            if space > at:
                stop = space + 1
            else:
                while data[stop] & 0xC0 == 0x80:   # a continuation byte: the character began earlier
                    stop -= 1
        total += len(tokenizer.encode(str(view[at:stop], "utf-8"), add_special_tokens=False))
        at = stop
    return total
