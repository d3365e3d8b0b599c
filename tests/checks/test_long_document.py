"""Long texts (dataaudit.checks.text_long): the repetition statistics see each text's first LONG_DOCUMENT_BYTES and
a batch CHUNK_BYTES at a time; `long_document` flags the texts they saw only the start of. A batch cut into runs
of texts gives exactly the values of the whole batch."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from dataaudit.checks import REGISTRY
from dataaudit.checks import text as text_checks
from dataaudit.checks.text_long import byte_lengths, chunks, head
from tests.checks.test_text_checks import load_shakespeare
from tests.paths import require_shared


def test_head_cuts_long_texts_back_to_a_character_boundary():
    arr = pa.array(["short", "é" * 10, None, "ab€cd", "x" * 3])
    out = head(arr, 5)
    assert out.to_pylist() == ["short", "éé", None, "ab€", "xxx"]    # é = 2 bytes, € = 3 bytes
    assert head(arr, 100) is arr


def test_chunks_hold_at_most_the_budget_and_a_longer_text_alone():
    arr = pa.array(["a" * 4, "b" * 4, "c" * 9, None, "d" * 2, "e" * 3])
    assert list(chunks(arr, 8)) == [(0, 2), (2, 3), (3, 6)]
    assert list(chunks(arr, 100)) == [(0, 6)] and list(chunks(pa.array([], pa.string()), 8)) == [(0, 0)]
    assert byte_lengths(arr).tolist() == [4, 4, 9, 0, 2, 3]


def test_repetition_in_chunks_equals_the_whole_batch(monkeypatch):
    texts = pa.array(load_shakespeare(require_shared())[:300] + ["The same line again.\n" * 30, None, ""])
    spec = REGISTRY["repetition"]
    whole = spec.fn(texts, **spec.params)
    monkeypatch.setattr(text_checks, "CHUNK_BYTES", 2000)
    assert len(list(chunks(texts, 2000))) > 10
    parts = spec.fn(texts, **spec.params)
    np.testing.assert_array_equal(whole.flagged, parts.flagged)
    np.testing.assert_array_equal(whole.value, parts.value)
    assert list(whole.detail) == list(parts.detail)


def test_long_document_flags_texts_over_the_budget():
    spec = REGISTRY["long_document"]
    assert spec.severity == "warning" and spec.target == "text"
    out = spec.fn(pa.array(["x" * 50, "é" * (4 << 20) + "!", None]))      # 8 MiB + 1 byte
    assert out.flagged.tolist() == [False, True, False]
    assert out.value.tolist() == [50.0, float((8 << 20) + 1), 0.0]
