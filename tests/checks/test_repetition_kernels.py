"""The numba kernel of the repetition n-gram statistics (dataaudit/textops/_repetition_kernels.py) equals its
numpy twin (checks/text_repetition.ngram_stats without numba) exactly, on random and real text."""
from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from dataaudit.checks.text_repetition import DUP_NS, TOP_NS, repetition_stats
from dataaudit.textops.hashing import numba_kernels
from tests.checks.repetition_cases import DEGENERATE, STRUCTURED, real_corpora
from tests.checks.test_text_checks import load_webdataset

pytestmark = pytest.mark.skipif(numba_kernels("dataaudit.textops._repetition_kernels") is None,
                                reason="numba is not installed")
KEYS = [f"top_{n}_gram" for n in TOP_NS] + [f"dup_{n}_gram" for n in DUP_NS]


def _assert_twins(monkeypatch, texts, **kw):
    arr = pa.array(texts, type=pa.string())
    fast = repetition_stats(arr, lines=False, **kw)
    monkeypatch.setenv("DATAAUDIT_NO_NUMBA", "1")
    slow = repetition_stats(arr, lines=False, **kw)
    monkeypatch.delenv("DATAAUDIT_NO_NUMBA")
    assert [k for k in KEYS if k in fast] == [k for k in KEYS if k in slow]
    for key in (k for k in KEYS if k in fast):
        np.testing.assert_array_equal(fast[key], slow[key], err_msg=key)
    np.testing.assert_array_equal(fast.n_words, slow.n_words)
    return fast


@pytest.mark.parametrize("min_words", [0, 10])
def test_kernel_equals_twin_on_random_text(monkeypatch, min_words):
    rng = random.Random(11)
    vocab = ["a", "bb", "the", "of", "é", "训练", "x1", "Ok,", "word.", "\u00a0", "\u3000", "😀"]
    docs = [None, "", " ", "one", "two words"]
    for _ in range(300):
        k = rng.choice([0, 1, 2, 5, 12, 40, 120, 300])
        words = [rng.choice(vocab[: rng.randint(2, len(vocab))]) for _ in range(k)]
        docs.append("".join(w + rng.choice([" ", " ", "\n", "\t", "  "]) for w in words))
    stats = _assert_twins(monkeypatch, docs, min_words=min_words, skip_structure=False)
    assert (stats["dup_5_gram"] > 0).sum() > 10 and (stats["top_2_gram"] > 0).sum() > 10     # repeats were there
    # one statistic at a time (a kernel asked for top_3 only)
    _assert_twins(monkeypatch, docs, top_ns=(3,), dup_ns=(), skip_structure=True)
    _assert_twins(monkeypatch, docs, top_ns=(), dup_ns=(7,), skip_structure=True)


def test_kernel_equals_twin_on_real_text(monkeypatch, shared_data):
    texts = [t for docs in real_corpora(shared_data).values() for t in docs] + load_webdataset(shared_data)
    texts += list(STRUCTURED.values()) + list(DEGENERATE.values())
    for skip in (True, False):
        _assert_twins(monkeypatch, texts, skip_structure=skip)


def test_words_of_kernel_equals_arrow(monkeypatch):
    # the same words (Unicode spaces split them), lengths and documents; equal words, equal hashes
    from dataaudit.checks.text_repetition import words_of
    texts = pa.array(["a  bb\u00a0训练 a", "", "\u3000x\u2003😀é x\u0085", " \t", "bb a"], pa.string())
    parent = np.array([0, 0, 1, 2, 2])
    fast = words_of(texts, parent)
    monkeypatch.setenv("DATAAUDIT_NO_NUMBA", "1")
    slow = words_of(texts, parent)
    for got in (fast, slow):
        np.testing.assert_array_equal(got[1], [1, 2, 2, 1, 1, 2, 1, 2, 1])
        np.testing.assert_array_equal(got[2], [0, 0, 0, 0, 1, 1, 1, 2, 2])
        h = got[0].tolist()
        assert h[0] == h[3] == h[8] and h[1] == h[7] and h[4] == h[6] and len(set(h)) == 5
