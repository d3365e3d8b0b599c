"""Token-length statistics with a HF `tokenizers` tokenizer.json (batch-encoded in the library's threads)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa


def token_lengths(tokenizer, texts: pa.Array) -> np.ndarray:
    """Number of tokens of each text, without special tokens (what the text itself costs in context)."""
    if len(texts) == 0:
        return np.zeros(0, dtype=np.int64)
    encodings = tokenizer.encode_batch(texts.to_pylist(), add_special_tokens=False)
    return np.fromiter((len(e) for e in encodings), dtype=np.int64, count=len(encodings))
