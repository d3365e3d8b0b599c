"""The numba kernels of the quality rules (dataaudit/textops/_spacy_kernels.py) against their twins: spaCy's
tokenizer kernel against the Python emulation of spacy_en.py chunk by chunk, and the one-pass chunk, line and
word splits against pyarrow's regex splits."""
from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pytest

from dataaudit.checks import quality_common
from dataaudit.checks.quality_gopher import STOP_WORDS
from dataaudit.textops import spacy_en
from tests.paths import REPO, SHARED_DATA, have_shared

pytest.importorskip("numba")

# every character an affix, infix, URL or special-case rule treats apart, and ordinary ones
ALPHABET = ["a", "B", "s", "m", "1", "0", ".", "-", "'", "’", ":", ")", "(", "$", "+", "…", "°", "F", "/", ",",
            "é", "—", "#", "x", "=", "[", "]"]


def _rows(chunks: list[str]) -> tuple[np.ndarray, np.ndarray]:
    out = np.zeros((len(chunks), len(spacy_en.ROW)), np.int64)
    back = spacy_en._kernel_rows(pa.array(chunks, pa.large_string()), STOP_WORDS, out)
    assert back is not None
    return out, back


def _python_rows(chunks: list[str]) -> np.ndarray:
    stops = {w: 1 << i for i, w in enumerate(STOP_WORDS)}
    return np.array([spacy_en._chunk_row(spacy_en.tables(), c, stops) for c in chunks], np.int64)


def test_the_kernel_tokenizes_every_short_chunk_as_the_python_emulation():
    chunks = ["".join(p) for n in (1, 2, 3) for p in itertools.product(ALPHABET, repeat=n)]
    rng = np.random.default_rng(7)
    chunks += ["".join(rng.choice(ALPHABET, size=int(rng.integers(4, 12)))) for _ in range(4000)]
    chunks += ["f(x):", "val[:]", "(-:", "10km²", "5°C.", "US$5", "U.S.", "e.g.,", "x--y", "a...b", "3+4", "B.C",
               "Hello,world", "x.B", "don't", ":)", "www.example.com/a,", "10.0.0.1:80", "foo.py", "the,", "(the)"]
    got, back = _rows(chunks)
    want = _python_rows(chunks)
    kept = np.setdiff1d(np.arange(len(chunks)), back)
    assert (got[kept] == want[kept]).all()
    assert len(back) < len(chunks) // 10                    # special-case and URL candidates only
    # the Python emulation's tokens of a few: the kernel's token counts and stop words agree
    tok = {c: r for c, r in zip(chunks, got)}
    assert tok["f(x):"][0] == 2 and tok["(the)"][0] == 3 and tok["(the)"][4] == 1     # "f(x", "):" / "(", "the", ")"
    assert tok["10km²"][0] == 2 and tok["x--y"][0] == 3 and tok["a...b"][0] == 3


def test_the_kernel_gives_the_whole_text_split_on_real_documents():
    # real code (this repository's sources) and prose (Tiny Shakespeare, when the shared data is there)
    texts = [p.read_text(encoding="utf-8")[:8000].strip() for p in sorted((REPO / "dataaudit").rglob("*.py"))[:40]]
    shakespeare = SHARED_DATA / "corpora" / "tinyshakespeare.txt"
    if have_shared() and shakespeare.is_file():
        play = shakespeare.read_text(encoding="utf-8")
        texts += [play[i:i + 5000].strip() for i in range(0, 50_000, 5000)]
    texts += [" ".join(["Don't stop, U.S. citizens (e.g., Mr. Smith) paid $10.50 at 10am..."] * 3),
              "lambda x: x.B / x.A", "val[:] = f(x):", "看到了，你好。我们走吧！"]
    st = spacy_en.chunk_stats(pa.array(texts), STOP_WORDS)
    sentences = spacy_en.sentence_counts(pa.array(texts))
    stops = {w: 1 << i for i, w in enumerate(STOP_WORDS)}
    t = spacy_en.tables()
    for i, text in enumerate(texts):
        toks = t.doc_tokens(text)
        want = dict(zip(spacy_en.FIELDS, spacy_en._token_stats(t, toks, stops)))
        for f in ("tokens", "nonsym", "nonsym_chars", "alpha"):
            assert st.per_text(f)[i] == want[f], (i, f)
        assert st.stop_words()[i] == bin(want["stop"]).count("1")
        assert sentences[i] == (1 + want["c0"] if toks else 1)


SPLIT_CASES = ["", "\n", "a\n", "a\r\nb\r", "\r\r\n", "x\x85y\u2028z\u2029", "a\x1c\x1d\x1eb\x0b\x0c",
               " \u3000a  b\tc\u00a0d\u2000", "é \u1680ü", "one two  three\n\nfour", "  lead", "trail  ", "\x00 \x01"]


def test_the_one_pass_splits_equal_the_regex_splits(monkeypatch):
    arr = pa.array(SPLIT_CASES)
    lines = quality_common.splitlines(arr)
    words = quality_common.words_per_line(lines[0])
    chunks = spacy_en.split_chunks(arr)
    monkeypatch.setenv("DATAAUDIT_NO_NUMBA", "1")
    r_lines = quality_common.splitlines(arr)
    r_words = quality_common.words_per_line(r_lines[0])
    r_chunks = spacy_en.split_chunks(arr)
    assert lines[0].to_pylist() == r_lines[0].to_pylist() == [x for t in SPLIT_CASES for x in t.splitlines()]
    assert lines[1].tolist() == r_lines[1].tolist() and lines[2].tolist() == r_lines[2].tolist()
    assert words[0].tolist() == r_words[0].tolist() == [len(x.split()) for t in SPLIT_CASES for x in t.splitlines()]
    assert words[1].tolist() == r_words[1].tolist()
    assert chunks[0].to_pylist() == r_chunks[0].to_pylist() == [c for t in SPLIT_CASES for c in t.split()]
    for a, b in zip(chunks[1:], r_chunks[1:]):
        assert a.tolist() == b.tolist()
    # one " " joins "one" and "two"; "  " before "three" and "\n\n" before "four" are whitespace tokens
    at = chunks[0].to_pylist().index("two")
    assert chunks[4][at] and not chunks[3][at] and chunks[3][at + 1] and chunks[3][at + 2]


def test_finewebs_one_pass_line_statistics_equal_pyarrows(monkeypatch):
    from dataaudit.checks import quality_fineweb
    cases = SPLIT_CASES + ["a\nb\na\n", "same line.\nsame line.\nother!\n  \n\t\nsame line.", "x\r\nx\r\n",
                           "\u00a0\n\u3000\n", "end。\nend。\nünï\n" * 3, "\n\n\n", "\u2028a\u2029\n\U0001F600!",
                           (open(quality_fineweb.__file__, encoding="utf-8").read())]
    arr = pa.array(cases)
    got = quality_fineweb._line_stats(arr, quality_fineweb.PARAMS)
    monkeypatch.setenv("DATAAUDIT_NO_NUMBA", "1")
    want = quality_fineweb._line_stats(arr, quality_fineweb.PARAMS)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert got[0][len(SPLIT_CASES)] == 3 and got[3][len(SPLIT_CASES)] == 1 / 3     # "a" again: 1 of 3 characters
