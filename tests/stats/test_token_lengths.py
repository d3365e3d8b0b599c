"""Token lengths of plain texts: counted in bounded runs, a long text in pieces cut at whitespace (the tokenizers
library aborts the process on texts of a few hundred MB)."""
from __future__ import annotations

import pyarrow as pa

from dataaudit.stats import token_lengths as module
from dataaudit.stats.token_lengths import token_lengths
from tests.stats.conversation_helpers import word_tokenizer


def test_counts_are_the_same_in_runs_and_pieces(monkeypatch):
    texts = pa.array(["a b c", None, "", "word " * 1000 + "é" * 50, "x y"])
    whole = token_lengths(word_tokenizer(), texts)
    assert whole.tolist() == [3, 0, 0, 1001, 2]
    # 64-byte runs and 100-byte pieces: the long text is cut at spaces (and inside the é run), nothing is lost
    monkeypatch.setattr(module, "CHUNK_BYTES", 64)
    monkeypatch.setattr(module, "LONG_DOCUMENT_BYTES", 100)
    assert token_lengths(word_tokenizer(), texts).tolist() == whole.tolist()

