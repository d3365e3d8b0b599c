"""`textops.literals.count_literals`: the numba kernel counts what RE2 counts for the literals' alternation
(non-overlapping, leftmost, the longest literal at a place), through its 64-bytes-at-a-time skip (first bytes in
at most two ranges), its eight-bytes-at-a-time skip (at most four first bytes) and its table (more), at every
alignment and at row ends."""
from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from dataaudit.textops.hashing import numba_kernels
from dataaudit.textops.literals import count_literals
from dataaudit.textops.special_tokens import CHAT_SPECIAL_TOKENS

pytestmark = pytest.mark.skipif(numba_kernels("dataaudit.textops._literal_kernels") is None,
                                reason="numba is not installed")


def _both(monkeypatch, rows, literals):
    arr = pa.array(rows, pa.string())
    fast = count_literals(arr, literals)
    monkeypatch.setenv("DATAAUDIT_NO_NUMBA", "1")
    slow = count_literals(arr, literals)
    monkeypatch.delenv("DATAAUDIT_NO_NUMBA")
    np.testing.assert_array_equal(fast, slow)
    return fast


def test_known_counts(monkeypatch):
    # overlaps count once (leftmost), a longer literal wins over its prefix, adjacent ones all count, nulls are 0
    literals = ("<s>", "</s>", "<|im", "<|im_start|>", "aa", "训练")
    rows = ["<s>x</s>", "<|im_start|>", "<|im_end|>", "aaa", "aaaa", "<<s>>", None, "", "训练训练 x训", "</s</s>"]
    assert _both(monkeypatch, rows, literals).tolist() == [2, 1, 1, 1, 2, 1, 0, 0, 2, 1]
    # longest first: "abab" then "ab" (shortest first would find "ab" three times)
    assert _both(monkeypatch, ["ababab", "abab ab"], ("ab", "abab")).tolist() == [2, 2]


@pytest.mark.parametrize("literals", [CHAT_SPECIAL_TOKENS, ("<a>", "[b]", "{c}", "(d)", "|e|", "#f", "é!"),
                                      ("ab", "b", "bab", "<<", "<"), ("ab", "bc", "cd", "zz")])
def test_random_rows_equal_re2_at_every_alignment(monkeypatch, literals):
    # literals, their prefixes and their first bytes everywhere, next to ASCII and multi-byte text, rows of
    # every length up to 40 bytes (so literals straddle the 8-byte steps and the row ends)
    rng = random.Random(7)
    pieces = list(literals) + [w[:-1] for w in literals if len(w) > 1] + ["x", " ", "é", "训", "<", "[", "|", "aa"]
    rows = [""] + ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 12))) for _ in range(3000)]
    rows += ["q" * pad + literals[0] + "z" * tail for pad in range(17) for tail in range(3)]
    # and rows past the 64-byte blocks: literals straddle them, and the last 64 bytes go the other ways
    rows += ["".join(rng.choice(pieces + ["x" * 30]) for _ in range(rng.randint(10, 60))) for _ in range(500)]
    rows += ["q" * pad + literals[0] + "z" * tail for pad in range(56, 72) for tail in (0, 1, 70)]
    fast = _both(monkeypatch, rows, tuple(literals))
    assert (fast > 0).sum() > 1000 and fast.max() >= 4


def test_no_literals_and_empty_input():
    assert count_literals(pa.array(["<s>"], pa.string()), ()).tolist() == [0]
    assert count_literals(pa.array([], pa.string()), ("<s>",)).tolist() == []
