"""The language pre-pass's counts (dataaudit.checks.language_id.counts): the compiled single pass
(dataaudit.textops.codepoints.prose_counts) equals its RE2 twin (language_id.regex_counts) on hand-made cases with
exact values (code spans, marker words, RE2's case folding, CJK) and on random texts; sliced, chunked and
large_string arrays read the right rows."""
from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from dataaudit.checks import language_id
from dataaudit.textops import codepoints
from dataaudit.textops.hashing import numba_kernels

needs_numba = pytest.mark.skipif(numba_kernels(codepoints._KERNELS) is None, reason="numba is not installed")

# text -> (letters, han, kana, hangul, ascii letters, whitespace, marker words), over the text without its code
CASES = {
    "of the cat": (8, 0, 0, 0, 8, 2, 2),                        # "of the" is two markers: Arrow restarts RE2
    "OF The tHe": (8, 0, 0, 0, 8, 2, 3),
    "thereof there, whichever which": (26, 0, 0, 0, 26, 3, 2),   # whole words only
    "the`code`of": (5, 0, 0, 0, 5, 1, 2),                       # an inline span is one space
    "```python\nthe and of\n``` the": (3, 0, 0, 0, 3, 2, 1),     # so is a fence
    "```never closed the and": (0, 0, 0, 0, 0, 1, 0),           # a fence runs to the end
    "`unclosed the\nof": (13, 0, 0, 0, 13, 2, 2),               # no closing backtick before the newline: text
    "a `` b ``` c": (2, 0, 0, 0, 2, 5, 0),                       # an empty span, then a fence to the end
    "thi\u017f is": (6, 0, 0, 0, 5, 1, 2),                      # RE2 folds U+017F onto s ...
    "the\u212athe the": (10, 0, 0, 0, 9, 1, 1),                 # ... and U+212A onto k: one word of 7 letters
    "中文the日本語です한국": (12, 5, 2, 2, 3, 0, 1),
    "caf\u00e9 the na\u00efve and": (15, 0, 0, 0, 13, 3, 2),
    "": (0, 0, 0, 0, 0, 0, 0),
    None: (0, 0, 0, 0, 0, 0, 0),
}


def _both(arr) -> tuple[np.ndarray, np.ndarray]:
    fast = codepoints.prose_counts(arr, tuple(language_id._CLASSES.values()), language_id._EN_WORDS)
    return fast, language_id.regex_counts(arr)


@needs_numba
def test_exact_counts_both_ways():
    arr = pa.array(list(CASES))
    fast, twin = _both(arr)
    expected = np.array(list(CASES.values()), np.int64)
    np.testing.assert_array_equal(twin, expected)
    np.testing.assert_array_equal(fast, expected)


def _random_texts(n: int, seed: int) -> list[str | None]:
    rng = random.Random(seed)
    pieces = (["the", "The", "OF", "of", "is", "it", "there", "their", "which", "whichever", "x", "abc", "café",
               "thi\u017f", "\u212a", "中文", "ひら", "カタ", "한국", "Ωμέγα", "Привет", "123", "`", "``", "```",
               "```py\n", "\n", " ", " ", "  ", "\t", ",", ".", "'", "\u00a0", "\u3000", "😀", "\u0301"]
              + ["the cat sat on the mat and it was fine "] * 3)
    out: list[str | None] = [None, ""]
    for _ in range(n):
        out.append("".join(rng.choice(pieces) for _ in range(rng.randint(0, 40))))
    return out


@needs_numba
def test_the_compiled_pass_equals_the_re2_twin_on_random_texts():
    texts = _random_texts(600, 11)
    arr = pa.array(texts)
    fast, twin = _both(arr)
    np.testing.assert_array_equal(fast, twin)
    assert twin[:, 6].sum() > 500 and twin[:, 1].sum() > 100          # the cases are met
    # other layouts of the same rows
    np.testing.assert_array_equal(_both(arr.slice(7, 100))[0], twin[7:107])
    chunked = pa.chunked_array([arr.slice(0, 300), arr.slice(300)])
    np.testing.assert_array_equal(language_id.counts(chunked), twin)
    np.testing.assert_array_equal(_both(arr.cast(pa.large_string()))[0], twin)


@needs_numba
def test_long_ascii_texts_read_64_bytes_at_a_time_equal_the_twin():
    """Mostly-ASCII texts (the kernel's 64-byte path): words across block ends, at every offset, longer than a
    block, and a few non-ASCII letters and backticks that send a block the slow way."""
    rng = random.Random(5)
    words = ["the", "of", "and", "a", "I", "there", "their", "whichever", "x" * 70, "Which", "WOULD", "your", "is",
             "thi\u017f", "caf\u00e9", "`it`", "itis"]
    seps = [" ", " ", " ", "  ", "\n", ", ", ". ", "-", "'"]
    texts = ["".join(rng.choice(words) + rng.choice(seps) for _ in range(rng.randint(10, 200))) for _ in range(300)]
    texts += [" " * k + "the of " * 30 for k in range(70)]                       # every offset in a block
    fast, twin = _both(pa.array(texts))
    np.testing.assert_array_equal(fast, twin)
    assert twin[:, 6].sum() > 10_000


@needs_numba
def test_other_words_and_a_word_twice_in_two_cases():
    arr = pa.array(["The THE the, of and there", "x the-The", None] * 200)
    out = codepoints.prose_counts(arr, ("[\\p{L}]",), ("the", "The", "there", "x"))
    assert out[:3].tolist() == [[19, 4], [7, 3], [0, 0]]


def test_words_longer_than_seven_letters_are_refused():
    with pytest.raises(ValueError, match="words of one to seven ASCII letters"):
        codepoints.prose_counts(pa.array(["x"]), ("[\\p{L}]",), ("whatsoever",))


@needs_numba
@pytest.mark.parametrize("limit", [1, 7, 60])
def test_what_the_model_reads_equals_the_re2_twin(limit):
    arr = pa.array(list(CASES) + _random_texts(300, 3))
    rows = np.array([0, 3, 4, 6, 7, 9, 10, 11] + list(range(20, 300, 3)), np.int64)
    fast = codepoints.prose_text(arr, rows, limit)
    twin = language_id.regex_model_input(arr, rows, limit)
    assert fast == [(t or "").encode() for t in twin]
    assert any(b"`" in t for t in fast) and any(len(t.decode()) == limit for t in fast)


def test_what_the_model_reads_exact():
    texts = pa.array(["the`code`of", "```py\nx\n``` 中文", "`open the\nof", None, "日本語です"])
    rows = np.arange(5)
    expected = [t.encode() for t in ("the", "  中", "`op", "", "日本語")]
    assert [(t or "").encode() for t in language_id.regex_model_input(texts, rows, 3)] == expected
    if numba_kernels(codepoints._KERNELS) is not None:
        assert codepoints.prose_text(texts, rows, 3) == expected
