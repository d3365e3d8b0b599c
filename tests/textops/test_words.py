"""textops.words: the numba word loop that every word kernel inlines (textops' word_tokens, dedup's word_minhash),
against pinned hashes, Python's str.split() and the numpy twin."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from dataaudit.textops import word_hash_of, word_tokens
from dataaudit.textops.hashing import POLY, WS_CLASS, powers

pytest.importorskip("numba")
from dataaudit.textops import words  # noqa: E402

# text -> the hash of each of its words
CASES = {
    "ab  cd": [0x9A993820108D0690, 0x41BE2349A25A7E7C],
    "a\u3000b": [0xF0EEA8C8A0607D15, 0x42F3A9364C476BE3],                      # U+3000: E3 80 80
    "\u00a0x\u00a0": [0x28BF8A80BC3EAB52],                                    # U+00A0: C2 A0
    "caf\u00e9\u2003\u8bad\u7ec3\u0085": [0x99E8E13CF036D96F, 0x732777D7F89F1B78],
    "a\u00a9b": [0xA21F96EED8E56510],                   # C2 A9: a lead byte of class 2 inside a word
    "w" * 300 + " ": [0xECDDD2F5BE87ABF9],              # longer than powers(256): the product goes on
    " \u3000\t\u1680": [],
    "": [],
}


def _hashes(data: bytes, end: int | None = None, d: int = 7) -> list[int]:
    """word_hashes of data[:end], written from out_hash[2]; checks out_doc and the count it returns."""
    buf = np.frombuffer(data, np.uint8)
    out = np.zeros(len(buf) + 3, np.uint64)
    doc = np.full(len(buf) + 3, -1, np.int64)
    o = words.word_hashes(buf, 0, len(buf) if end is None else end, WS_CLASS, powers(256), POLY, out, doc, d, 2)
    assert doc[2:o].tolist() == [d] * (o - 2) and (doc[o:] == -1).all() and (out[o:] == 0).all()
    no_doc = out.copy()
    assert words.word_hashes(buf, 0, len(buf) if end is None else end, WS_CLASS, powers(256), POLY, no_doc,
                             np.empty(0, np.int64), d, 2) == o
    assert no_doc.tolist() == out.tolist()
    return out[2:o].tolist()


def test_word_hashes_pinned():
    for text, expected in CASES.items():
        assert _hashes(text.encode()) == expected, text
        assert expected == [word_hash_of(w) for w in text.split()], text


def test_word_hashes_equal_the_numpy_twin(monkeypatch):
    monkeypatch.setenv("DATAAUDIT_NO_NUMBA", "1")                 # word_tokens runs its numpy twin
    texts = list(CASES) + ["\u2028x\u2029y\u202f z\u205f\u200a", "\x1c\x1dq\x1e\x1f", "\u00e0\u2014 \u3002"]
    twin = word_tokens(pa.array(texts))
    assert twin.hash.tolist() == [h for t in texts for h in _hashes(t.encode())]
    assert twin.count.tolist() == [len(_hashes(t.encode())) for t in texts]


def test_word_hashes_stop_at_the_end(monkeypatch):
    # a multi-byte space cut by the end of the text is part of the word, as the numpy twin sees it
    monkeypatch.setenv("DATAAUDIT_NO_NUMBA", "1")
    cut = pa.array(["ab\u3000".encode()[:4]], pa.binary()).view(pa.string())      # a b E3 80
    assert _hashes("ab\u3000 c".encode(), end=4) == word_tokens(cut).hash.tolist()
