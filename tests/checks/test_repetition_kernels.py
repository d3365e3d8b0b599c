"""The numba kernel of the repetition n-gram statistics (dataaudit/textops/_repetition_kernels.py) equals its
numpy twin (checks/text_repetition.ngram_stats without numba) exactly, on random and real text."""
from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from dataaudit.checks.text_repetition import DUP_NS, TOP_NS, repetition_stats
from dataaudit.textops import repetition_flags as line_flags
from dataaudit.textops.hashing import numba_kernels
from tests.checks.repetition_cases import DEGENERATE, STRUCTURED, real_corpora
from tests.checks.test_text_checks import load_webdataset

pytestmark = pytest.mark.skipif(numba_kernels("dataaudit.textops._repetition_kernels") is None,
                                reason="numba is not installed")
KEYS = [f"top_{n}_gram" for n in TOP_NS] + [f"dup_{n}_gram" for n in DUP_NS]


def _assert_twins(monkeypatch, texts, lines=False, **kw):
    """Every statistic (and the repeated sentence shown) equal with and without numba."""
    arr = pa.array(texts, type=pa.string())
    fast = repetition_stats(arr, lines=lines, **kw)
    monkeypatch.setenv("DATAAUDIT_NO_NUMBA", "1")
    slow = repetition_stats(arr, lines=lines, **kw)
    monkeypatch.delenv("DATAAUDIT_NO_NUMBA")
    assert sorted(fast) == sorted(slow)
    for key in fast:
        np.testing.assert_array_equal(fast[key], slow[key], err_msg=key)
    np.testing.assert_array_equal(fast.n_words, slow.n_words)
    if kw.get("repeats"):
        assert [fast.repeated_text(i) for i in range(len(arr))] == [slow.repeated_text(i) for i in range(len(arr))]
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
    stats = _assert_twins(monkeypatch, docs, min_words=min_words, skip_structure=False, word_run=True)
    assert (stats["dup_5_gram"] > 0).sum() > 10 and (stats["top_2_gram"] > 0).sum() > 10     # repeats were there
    assert (stats["word_run"] >= 3).sum() > 10                                                # and words in a row
    # one statistic at a time (a kernel asked for top_3 only)
    _assert_twins(monkeypatch, docs, top_ns=(3,), dup_ns=(), skip_structure=True)
    _assert_twins(monkeypatch, docs, top_ns=(), dup_ns=(7,), skip_structure=True)


def test_kernel_equals_twin_on_real_text(monkeypatch, shared_data):
    texts = [t for docs in real_corpora(shared_data).values() for t in docs] + load_webdataset(shared_data)
    texts += list(STRUCTURED.values()) + list(DEGENERATE.values())
    for skip in (True, False):
        _assert_twins(monkeypatch, texts, skip_structure=skip, word_run=True)
        stats = _assert_twins(monkeypatch, texts, lines=True, repeats=True, skip_structure=skip)
        assert (stats["sentence_run"] > 0).sum() > 50 and (stats["dup_line_frac"] > 0).sum() > 50


def test_doc_words_equal_arrows_words():
    # the kernel and its Arrow twin (`words_of`): the same words (Unicode spaces split them), lengths and words per
    # document; equal words, equal hashes
    from dataaudit.checks.text_repetition import words_of
    texts = ["a  bb\u00a0训练 a", "", "\u3000x\u2003😀é x\u0085", " \t", "bb a"]
    parent = np.array([0, 0, 1, 2, 2])
    raw = [t.encode() for t in texts]
    data = np.frombuffer(b"".join(raw), np.uint8).copy()
    stops = np.cumsum([len(r) for r in raw]).astype(np.int64)
    fast = _word_hashes(numba_kernels("dataaudit.textops._repetition_kernels"), data, stops - [len(r) for r in raw],
                        stops, parent, 4)
    slow = words_of(pa.array(texts, pa.string()), parent, 4)
    for got in (fast, slow):
        np.testing.assert_array_equal(got[1], [1, 2, 2, 1, 1, 2, 1, 2, 1])
        np.testing.assert_array_equal(got[2], [4, 3, 2, 0])
        assert got[2].dtype == np.int64
        h = got[0].tolist()
        assert h[0] == h[3] == h[8] and h[1] == h[7] and h[4] == h[6] and len(set(h)) == 5


def _word_hashes(k, data, starts, stops, parent, n_docs):
    """The kernel's words of each document (texts of one `parent`), all in order, and the words per document."""
    cap = (int((stops - starts).sum()) + len(starts)) // 2 + 1
    wh, chars, n_words = np.empty(cap, np.uint64), np.empty(cap, np.int32), np.zeros(n_docs, np.int64)
    parent = np.asarray(parent)
    bounds = np.flatnonzero(np.r_[True, parent[1:] != parent[:-1], True])
    nw = 0
    for i, j in zip(bounds[:-1], bounds[1:]):
        w = k.doc_words(data, starts, stops, i, j, wh[nw:], chars[nw:])
        n_words[parent[i]] = w
        nw += w
    return wh[:nw], chars[:nw], n_words


def _same_partition(hashes, words):
    """Equal hashes exactly where the words are equal."""
    assert len(hashes) == len(words)
    assert len(set(hashes)) == len(set(words)) == len(set(zip(hashes, words)))


def test_doc_words_counts_on_past_full_outputs():
    # outputs too short: the first words are there, the count is of all of them (nothing written past the end)
    k = numba_kernels("dataaudit.textops._repetition_kernels")
    data = np.frombuffer(b"aa bb cc dd ee", np.uint8).copy()
    wh, chars = np.zeros(4, np.uint64), np.zeros(4, np.int32)
    assert k.doc_words(data, np.array([0]), np.array([14]), 0, 1, wh[:2], chars[:2]) == 5
    assert chars.tolist() == [2, 2, 0, 0] and wh[2:].tolist() == [0, 0] and wh[0] != wh[1]


def test_doc_words_exact_values():
    # Unicode spaces split words (U+00A0, U+3000, U+2003, U+0085, \x1c, \v); words longer than 8 bytes, equal in
    # their first 8 bytes, or in all but the length ("a" / "a\0"), get different hashes; a word ends the buffer
    k = numba_kernels("dataaudit.textops._repetition_kernels")
    texts = ["a  bb\u00a0abcdefghij\u3000abcdefghij", "", "\u3000 \t", "abcdefghik\u2003abcdefgh\x1ca\x0ba\x00",
             "\u0085训练数据训练数据 x \u2014\u3002\u00a9 é😀", "a"]
    raw = [t.encode() for t in texts]
    data = np.frombuffer(b"".join(raw), np.uint8).copy()
    stops = np.cumsum([len(r) for r in raw]).astype(np.int64)
    starts = stops - np.array([len(r) for r in raw])
    wh, chars, n_words = _word_hashes(k, data, starts, stops, np.array([0, 1, 1, 2, 2, 3]), 4)
    words = [w for t in texts for w in t.split()]
    assert chars.tolist() == [1, 2, 10, 10, 10, 8, 1, 2, 8, 1, 3, 2, 1] == [len(w) for w in words]
    assert n_words.tolist() == [4, 0, 8, 1] and n_words.dtype == np.int64
    h = wh.tolist()
    assert h[2] == h[3] and h[0] == h[6] == h[12]
    _same_partition(h, words)
    # spans that end inside a word or a multi-byte space (U+3000 cut after 2 bytes: no space) end the word there
    cut = np.array([0, 4, 19]), np.array([4, 19, len(raw[0])])   # "a  b", "b\u00a0abcdefghij\xe3\x80", "\x80abcdefghij"
    wh, chars, n_words = _word_hashes(k, data[:len(raw[0])].copy(), cut[0], cut[1], np.arange(3), 3)
    assert chars.tolist() == [1, 1, 1, 11, 10] and n_words.tolist() == [2, 2, 1]
    assert wh[1] == wh[2] and len(set(wh.tolist())) == 4


def test_doc_words_equal_str_split_and_word_tokens():
    # random texts (words of 1-30 bytes, ASCII, multi-byte, control bytes; every kind of space) and spans that cut
    # them anywhere: the words of str.split(), and the boundaries and code points of word_tokens, with equal hashes
    # exactly for equal words
    from dataaudit.textops.hashing import POLY, WS_CLASS, powers
    k = numba_kernels("dataaudit.textops._repetition_kernels")
    tk = numba_kernels()
    rng = random.Random(3)
    pieces = ["a", "bb", "x", "é", "训", "😀", "\u2014", "\u3002", "\u00a9", "\u00e0", "\x1b", "\x00", "\x7f", "Z9"]
    spaces = [" ", " ", "\t", "\n", "\u00a0", "\u3000", "\u2003", "\u2028", "\u205f", "\u1680", "\x1c", "\x1f", "\x0b",
              "\u0085", "  "]
    vocab = ["".join(rng.choice(pieces) for _ in range(rng.choice([1, 2, 3, 7, 8, 9, 12, 16, 17, 30])))
             for _ in range(60)]
    texts = ["", " ", "\u3000"] + ["".join(rng.choice(spaces) * rng.randint(0, 1) + rng.choice(vocab)
                                            + rng.choice(spaces) * rng.randint(0, 2) for _ in range(rng.randint(0, 30)))
                                    for _ in range(400)] + ["end" + "x" * rng.randint(0, 20)]
    raw = [t.encode() for t in texts]
    data = np.frombuffer(b"".join(raw), np.uint8).copy()
    stops = np.cumsum([len(r) for r in raw]).astype(np.int64)
    starts = stops - np.array([len(r) for r in raw])
    parent = np.repeat(np.arange(len(texts) // 2 + 1), 2)[:len(texts)]
    wh, chars, n_words = _word_hashes(k, data, starts, stops, parent, parent[-1] + 1)
    words = [w for t in texts for w in t.split()]
    assert chars.tolist() == [len(w) for w in words]
    assert n_words.tolist() == np.bincount(parent, weights=[len(t.split()) for t in texts]).tolist()
    _same_partition(wh.tolist(), words)
    assert len(words) > 4000 and max(map(len, words)) > 8 and wh.dtype == np.uint64
    # spans of random bounds (through multi-byte characters too): word_tokens' words, bytes compared as bytes
    a = np.sort(rng.sample(range(len(data) + 1), 1000)).astype(np.int64)
    a = np.append(a, len(data))
    starts, stops = a[:-1].copy(), a[1:].copy()
    wh, chars, n_words = _word_hashes(k, data, starts, stops, np.arange(len(starts)), len(starts))
    cap = len(data) // 2 + len(starts) + 1
    tok, ends = np.empty(cap, np.uint64), np.empty(len(starts), np.int64)
    nw = tk.word_tokens(data, starts, stops, WS_CLASS, powers(256), POLY, tok, np.empty(cap, np.int64), ends)
    assert n_words.tolist() == np.diff(ends, prepend=0).tolist()
    _same_partition(wh.tolist(), tok[:nw].tolist())
    # code points: the bytes that do not continue a character (a cut character's bytes stay in its word)
    cut = [w.encode("utf-8", "surrogateescape") for s, e in zip(starts, stops)
           for w in bytes(data[s:e]).decode("utf-8", "surrogateescape").split()]
    assert chars.tolist() == [sum((b & 0xC0) != 0x80 for b in w) for w in cut] and len(cut) == nw


def test_ngram_kernel_groups_each_document_apart(monkeypatch):
    # the kernel groups each document's n-grams apart (no document key in its hashes, one table for all): what
    # document 0 repeats is no repeat in documents 1 and 2; a document of 2 words and one of none
    texts = ["a b c d e a b c d e", "a b c d e", "x a b y a b", "a b", ""]
    stats = _assert_twins(monkeypatch, texts, skip_structure=False)
    assert stats["top_2_gram"].tolist() == [2 * 3 / 19, 0, 2 * 3 / 11, 0, 0]
    assert stats["dup_5_gram"].tolist() == [5 / 19, 0, 0, 0, 0]
    assert stats.n_words.tolist() == [10, 5, 6, 2, 0]


_PIECES = ["```", "~~~", "def f(", "class A:", "}", "{", ")", "(", "];", ";", "=", "==", ":", "\uff1a", "#", "## ",
           "- ", "\u2022 ", "\u00b7 ", "1. ", "12) ", "a) ", "B. ", "(iv) ", "[x] ", "[ ] ", "|", '"k":', "'x',",
           "0x41:", "[1, 2]", "{a}", "return", "raise ", "import os", "from a import b", "#include <x>", "@dec",
           "x = 1", "a.b[i] += 2", "foo(bar)", "await foo()", "if x:", "else:", "// c", "/* c */", "\u3002", "\uff01",
           "\uff1f", "\u201d", "\u300d", "\uff09", "\u2026", ".", "!", "?", "\u00bb", "\u2019", '"', "'", " ", " ",
           "\t", "\v", "\f", "\r", "\u00a0", "\u3000", "\u2003", "\x1c", "\u0085", "word", "Word", "the cat",
           "\u8bad\u7ec3", "\u00e9", "\u2014\u2014", "...", "7", "_x", "$y", "--", "key:", "- key: v", "ROMEO:",
           "Go right now.", "Go right now!"]


def _random_docs(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    docs = []
    for _ in range(n):
        lines = ["".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 7))) for _ in range(rng.randint(1, 12))]
        if rng.random() < 0.5:                  # repeats, so that line, n-gram and sentence statistics fire
            lines += rng.sample(lines, min(len(lines), 3)) * rng.randint(1, 4)
        docs.append("\n".join(lines))
    return docs


@pytest.mark.parametrize("skip", [True, False], ids=["structure", "plain"])
def test_lines_and_sentences_equal_twin_on_random_structure(monkeypatch, skip):
    # every line class, gate and sentence end next to the others, with ASCII, Unicode and RE2-only whitespace
    from dataaudit.checks.text_common import char_lengths
    from dataaudit.checks.text_repetition import split_lines
    docs = _random_docs(5, 1500) + [None, "", "\n", "a\n", "\u00a0\n\u3000"]
    arr = pa.array(docs, pa.string())
    fast = split_lines(arr, char_lengths(arr), skip)
    monkeypatch.setenv("DATAAUDIT_NO_NUMBA", "1")
    slow = split_lines(arr, char_lengths(arr), skip)
    monkeypatch.delenv("DATAAUDIT_NO_NUMBA")
    # with skip_structure the kernel view turns a code file into one empty line (it counts nowhere): the reference
    # has none of its lines in any statistic; every other text has the same lines and classes
    code_file = np.zeros(len(docs), bool)
    if skip:
        one_blank = (np.bincount(fast.doc, minlength=len(docs)) == 1) & (fast.length[fast.first] == 0)
        code_file = one_blank & (np.bincount(slow.doc, weights=slow.length > 0, minlength=len(docs)) > 0)
        used = slow.lines | slow.words | slow.sentences
        assert code_file.sum() > 100 and not used[code_file[slow.doc]].any()
    keep_fast, keep_slow = ~code_file[fast.doc], ~code_file[slow.doc]
    for name in ("doc", "length", "lines", "words", "sentences"):
        np.testing.assert_array_equal(getattr(fast, name)[keep_fast], getattr(slow, name)[keep_slow], err_msg=name)
    np.testing.assert_array_equal(fast.kept_chars[~code_file], slow.kept_chars[~code_file])
    assert ([fast.line_text(i) for i in np.flatnonzero(keep_fast)]
            == [slow.line_text(i) for i in np.flatnonzero(keep_slow)])
    if skip:        # every class occurs
        assert fast.lines.sum() > 500 and (fast.lines != fast.sentences).sum() > 500 and (~fast.words).sum() > 500
    stats = _assert_twins(monkeypatch, docs, lines=True, repeats=True, skip_structure=skip)
    assert (stats["sentence_run"] > 0).sum() > 100 and (stats["dup_line_frac"] > 0).sum() > 100


def test_gates_hold_every_match_and_sure_code_only_matches(shared_data):
    # a gate never drops a line its regex matches (but a sure code line, in no other class, has the code gate only);
    # a line the kernel calls sure code matches CODE_RE
    import pyarrow.compute as pc
    from dataaudit.checks.text_lines import KernelLines
    from dataaudit.checks.text_repetition import CODE_RE, FENCE_RE, LABEL_RE, LIST_RE, SYMBOLS_RE
    k = numba_kernels("dataaudit.textops._repetition_kernels")
    texts = _random_docs(7, 1500) + [t for docs in real_corpora(shared_data).values() for t in docs]
    view = KernelLines(k, pa.array(texts, pa.string()))
    raw = view.raw.take(np.arange(len(view.doc))).to_arrow(k)
    nonblank = view.length > 0
    not_sure = nonblank & ((view.flags & line_flags.SURE_CODE) == 0)
    for pattern, gate in ((CODE_RE, line_flags.GATE_CODE), (LABEL_RE, line_flags.GATE_LABEL),
                          (SYMBOLS_RE, line_flags.GATE_SYMBOLS), (LIST_RE, line_flags.GATE_LIST)):
        lines = nonblank if gate == line_flags.GATE_CODE else not_sure
        hit = lines & pc.match_substring_regex(raw, pattern=pattern).to_numpy(zero_copy_only=False)
        gated = (view.flags & gate) != 0
        assert not (hit & ~gated).any(), [raw[i].as_py() for i in np.flatnonzero(hit & ~gated)[:5]]
        assert hit.sum() > 1000 and gated.sum() < 0.8 * nonblank.sum()    # the gate lets fewer lines through
        if gate == line_flags.GATE_CODE:
            cand = view.candidates(nonblank, "GATE_CODE")        # with the tighter code_candidates
            assert not (hit & ~cand).any(), [raw[i].as_py() for i in np.flatnonzero(hit & ~cand)[:5]]
            assert cand.sum() < 0.5 * gated.sum()
            sure = (view.flags & line_flags.SURE_CODE) != 0
            assert not (sure & ~hit).any(), [raw[i].as_py() for i in np.flatnonzero(sure & ~hit)[:5]]
            assert sure.sum() > 0.5 * hit.sum()
    fence = nonblank & pc.match_substring_regex(raw, pattern=FENCE_RE).to_numpy(zero_copy_only=False)
    np.testing.assert_array_equal((view.flags & line_flags.FENCE) != 0, fence)


def test_kernel_lines_count_the_texts_code_points():
    # total_chars from the lines' code points and newlines equals Arrow's utf8_length of each text
    import pyarrow.compute as pc
    from dataaudit.checks.text_lines import KernelLines
    k = numba_kernels("dataaudit.textops._repetition_kernels")
    texts = ["", "\n", "a\n", "\nb", "训练\n\n😀 x", "é" * 7, " \u00a0\n\u3000 ", "l1\nl2\nl3\n"]
    arr = pa.array(texts, pa.string())
    total = KernelLines(k, arr).total_chars()
    assert total.tolist() == [0, 1, 2, 2, 7, 7, 5, 9]
    assert total.tolist() == pc.utf8_length(arr).to_pylist()


def test_code_candidates_on_lines_not_starting_like_code():
    # the alternatives of CODE_RE that a line starting with an uppercase letter, "(", "e" or "w" can match stay
    # candidates, and so do lines starting with a keyword, a directive, a dict key or table literal, a hex key, a
    # comment or a whole bracketed value; prose ending with ":" "," ")" or holding an "=", or starting with a
    # lowercase letter, "#", a quote, "0", "/", "*", "[" or "{" but not so, does not
    import pyarrow.compute as pc
    from dataaudit.checks.text_lines import KernelLines
    from dataaudit.checks.text_repetition import CODE_RE
    k = numba_kernels("dataaudit.textops._repetition_kernels")
    code = ["else:", "  elif x > 1:", "except ValueError as e:", "while True:", "with open(p) as f:", "Foo(x);",
            "Foo.bar(x),", "Foo(a, b):", "Make(x) {", "X = 1", "X.y = 2", "Arr[0] += 1", "Self->n = 3",
            "Ns::v = 4", "N <<= 2", "(void) f(x);", "(a) = b;", "Foo {", "Bar },", "Baz }", "Qux |", "End(x) ;",
            "Obj(a) { ,", "$x = 5", "_y=6", "await foo(x)", "#  define X 1", "#include <x>", "for x in y:",
            "from a import b", "try:", "yield x", "class A(B):", '"key": 1', "'k' : v,", '"lit",', '"lit",  # c',
            '"lit" # c', "0x41: 'A',", "0XfF :", "// c", "/* c", "*/", "[1, 2],", "{a: 1}", "[x] ,  "]
    # prose that starts with a letter or "#" that code may start with, but not with a keyword or a directive
    prose = ["The value (see above).", "Note: the following,", "The result = good.", "Then (maybe) not:",
             "He said (quietly),", "Einstein wrote:", "Water (H2O)", "A b = c", "(see the notes),", "#### 30",
             "a prediction", "that hath been long", "free programs,", "carbon dioxide", "format the disk",
             "yielding nothing", "# Notes", "fortune favours", '"Hello," she said.', "'Tis not so", "0.75 m/h",
             "* Redistributions in binary", "/ not a comment", "[see above] and more", "{not closed", '"quoted" text',
             "0x41 is A", '"open quote']
    view = KernelLines(k, pa.array(["\n".join(code + prose)], pa.string()))
    raw = view.raw.take(np.arange(len(view.doc))).to_arrow(k)
    hit = pc.match_substring_regex(raw, pattern=CODE_RE).to_numpy(zero_copy_only=False)
    assert hit.tolist() == [True] * len(code) + [False] * len(prose)
    assert view.candidates(np.ones(len(hit), bool), "GATE_CODE").tolist() == [True] * len(code) + [False] * len(prose)


def test_kernel_labels_equal_label_re(shared_data):
    # the kernel's decision of LABEL_RE (RE2 only for headings without an ASCII letter) equals the regex on every line
    import pyarrow.compute as pc
    from dataaudit.checks.text_lines import KernelLines
    from dataaudit.checks.text_repetition import HEADING_RE, LABEL_RE
    k = numba_kernels("dataaudit.textops._repetition_kernels")
    tricky = ["ROMEO:", "  Answer:  ", "Answer :", "a b c d:", "a b c d e:", "x" * 30 + ":", "x" * 31 + ":",
              "训" * 30 + "：", "训" * 31 + "：", "第一 章：", "名字：值", "a\tb:", "a\x0bb:", "a\x0cb:", "a:\x0b",
              "key: value", "- key: v", "-key: v", "- 1key: v", "key:value", "key:  ", "a.b-c_d: é", "_k: x",
              "# Title", "####### Seven", "#Title", "## 概述", "## 1.2", "## 1 概述 x", "# ", "#\t标题", "  ### é",
              "- item", "word", "http://x.y: z", "a:b:", "Note: the next.", "：", ":", "x：", "x:：", "\u3000ROMEO:"]
    texts = tricky + _random_docs(9, 800) + [t for docs in real_corpora(shared_data).values() for t in docs]
    view = KernelLines(k, pa.array(texts, pa.string()))
    raw = view.raw.take(np.arange(len(view.doc))).to_arrow(k)
    nonblank = (view.length > 0) & ((view.flags & line_flags.SURE_CODE) == 0)      # (the check asks on lines not code)
    hit = nonblank & pc.match_substring_regex(raw, pattern=LABEL_RE).to_numpy(zero_copy_only=False)
    got = view.labels(nonblank, LABEL_RE, HEADING_RE)
    assert not (hit != got).any(), [raw[i].as_py() for i in np.flatnonzero(hit != got)[:5]]
    assert hit.sum() > 1000
    sure = nonblank & ((view.flags & line_flags.SURE_LABEL) != 0)
    assert sure.sum() > 0.9 * hit.sum()                         # RE2 runs on a few lines only
    assert got[:len(tricky)].tolist() == pc.match_substring_regex(pa.array(tricky), pattern=LABEL_RE).to_pylist()
    assert nonblank[:len(tricky)].all()                                 # (no tricky line is sure code)


def test_count_words_equals_re2():
    # the kernel's count of \S+ runs equals RE2's, with Unicode and \v (a word byte for RE2) in the text
    import pyarrow.compute as pc
    k = numba_kernels("dataaudit.textops._repetition_kernels")
    texts = ["", " ", "a", " a  b\t", "训练 数据\u3000x", "a\x0bb c\x0cd\re", "é,é é.", "\u00a0 x"]
    data = np.frombuffer("".join(texts).encode(), np.uint8)
    lens = [len(t.encode()) for t in texts]
    stops = np.cumsum(lens).astype(np.int64)
    out = np.empty(len(texts), np.int64)
    k.count_words(data, stops - np.array(lens), stops, out)
    assert out.tolist() == [0, 0, 1, 2, 2, 4, 2, 2]
    assert out.tolist() == pc.count_substring_regex(pa.array(texts), pattern=r"\S+").to_pylist()


def test_count_words_equals_re2_on_long_spans():
    # spans of every length up to 300 bytes at every offset, to the buffer's end, words and spaces of every length crossing the kernel's
    # 64-byte blocks: the count equals RE2's
    import pyarrow.compute as pc
    k = numba_kernels("dataaudit.textops._repetition_kernels")
    rng = np.random.default_rng(7)
    pieces = ["a", "word", "x" * 70, "训练", "é", "\x0b", " ", "  ", "\t", "\n", "\r\n", "\x0c", " " * 65, "\u3000"]
    text = "".join(rng.choice(pieces, 4000))
    data = np.frombuffer(text.encode(), np.uint8)
    starts = rng.integers(0, len(data) - 300, 3000).astype(np.int64)
    stops = starts + rng.integers(0, 300, 3000)
    ends = np.arange(130, dtype=np.int64)           # and spans that end with the buffer (no block past them)
    starts, stops = np.concatenate([starts, len(data) - ends]), np.concatenate([stops, np.full(130, len(data))])
    out = np.empty(len(starts), np.int64)
    k.count_words(data, starts, stops, out)
    spans = [data[a:b].tobytes() for a, b in zip(starts, stops)]
    expected = pc.count_substring_regex(pa.array([b.decode("utf-8", "replace") for b in spans]), pattern=r"\S+")
    # (a span cut inside a character decodes with U+FFFD: a non-space, as the cut bytes are for the kernel)
    assert out.tolist() == expected.to_pylist()
    assert out.max() >= 10


def test_symbols_and_list_gates_skip_chinese_lines():
    # a line with a CJK ideograph (U+5000..U+8FFF: \p{L}) is no symbols line; a list marker is ASCII or starts C2/E2
    import pyarrow.compute as pc
    from dataaudit.checks.text_lines import KernelLines
    from dataaudit.checks.text_repetition import LIST_RE, SYMBOLS_RE
    k = numba_kernels("dataaudit.textops._repetition_kernels")
    lines = ["训练数据。", "——", "。。。", "一", "\u2022 item", "\u00b7 item", "\u2013 item", "\u25e6 x", "文本 - x", "——训"]
    view = KernelLines(k, pa.array(["\n".join(lines)], pa.string()))
    raw = view.raw.take(np.arange(len(view.doc))).to_arrow(k)
    for pattern, gate, gated in ((SYMBOLS_RE, line_flags.GATE_SYMBOLS, [0, 1, 1, 1, 0, 0, 0, 0, 0, 0]),
                                 (LIST_RE, line_flags.GATE_LIST, [0, 1, 0, 0, 1, 1, 1, 1, 0, 1])):
        hit = pc.match_substring_regex(raw, pattern=pattern).to_numpy(zero_copy_only=False)
        assert ((view.flags & gate) != 0).tolist() == [bool(g) for g in gated]
        assert not (hit & ((view.flags & gate) == 0)).any()


def test_swar_helpers_on_known_words():
    # an unaligned load is the bytes in order (little-endian); the lane tests find exactly the bytes asked for
    import numba
    from dataaudit.textops import swar

    @numba.njit
    def probe(data, p, b8):         # (the intrinsics only run compiled)
        x = swar.load8(data, p)
        return x, swar.trailing_zeros(swar.has_byte(x, b8)), swar.continuation_bytes(x)

    @numba.njit
    def bits(x):
        return swar.popcount(x), swar.trailing_zeros(x), swar.trailing_zeros(swar.zero_bytes(x))

    data = np.frombuffer("ab=\n:é训x\n".encode() + b"\x80\x00\xff", np.uint8).copy()
    for p in range(len(data) - 7):
        assert int(probe(data, p, swar.repeat_byte(0))[0]) == int.from_bytes(data[p:p + 8].tobytes(), "little")
    # a b = \n : C3 A9 E8 (é, then the lead byte of 训): "\n" at byte 3, ":" at 4, no "z", one continuation byte
    assert [int(v) for v in probe(data, 0, swar.repeat_byte(10))[1:]] == [3 * 8 + 7, 1]
    assert int(probe(data, 0, swar.repeat_byte(58))[1]) == 4 * 8 + 7
    assert int(probe(data, 0, swar.repeat_byte(0x7A))[1]) == 64
    assert int(probe(data, 5, swar.repeat_byte(0))[2]) == 4      # C3 A9 E8 AE AD x \n 80: A9 AE AD 80
    assert [int(v) for v in bits(np.uint64(0))] == [0, 64, 7]
    assert [int(v) for v in bits(np.uint64(2**64 - 1))] == [64, 0, 64]
    assert int(bits(np.uint64(0x0100_0000_0000_0000))[2]) == 7  # zeros in bytes 0..6: the first is byte 0


def test_in_ranges64_marks_exactly_the_bytes_of_its_ranges():
    # bit j of in_ranges64(data, p, ...) is byte p + j in either range, at any offset; an empty range marks nothing;
    # a range may end at 0xFF
    import numba
    from dataaudit.textops import swar

    @numba.njit
    def ranges(data, p, lo1, n1, lo2, n2):      # (the intrinsics only run compiled)
        return swar.in_ranges64(data, p, lo1, n1, lo2, n2)

    data = np.random.default_rng(5).integers(0, 256, 300, dtype=np.uint8)
    data[:20] = [9, 10, 13, 14, 28, 32, 33, 0, 255, 0x80, 0xBF, 0xC0, 0xC2, 0xE0, 0xE3, 0xE4, 61, 58, 10, 0]
    for lo1, n1, lo2, n2 in ((9, 5, 28, 5), (0xC2, 1, 0xE0, 4), (10, 1, 0, 0), (0x80, 0x40, 0, 0), (0x80, 0x80, 61, 1),
                             (0, 0, 0, 0)):
        for p in (0, 1, 7, 63, 100, len(data) - 64):
            window = data[p:p + 64].astype(int)
            want = ((window - lo1) % 256 < n1) | ((window - lo2) % 256 < n2)
            assert int(ranges(data, p, lo1, n1, lo2, n2)) == sum(1 << int(j) for j in np.flatnonzero(want))


def test_line_end_at_every_alignment():
    # the line's end, code points and "=" / ":" notes come out the same wherever the line starts and ends in an
    # 8-byte word or a 64-byte block, with multi-byte characters across their boundaries, the line's last bytes at
    # the text's end, and bytes of the next text (a newline, "=", ":", continuation bytes) after it in the buffer
    k = numba_kernels("dataaudit.textops._repetition_kernels")
    rng = random.Random(3)
    pieces = ["a", "=", ":", "é", "训", "😀", " ", "\t", "xyz", "\u3000"]
    for _ in range(1500):
        line = "".join(rng.choice(pieces) for _ in range(rng.choice([rng.randint(0, 30), rng.randint(20, 120)])))
        pad = "p" * rng.randint(0, 70)
        tail = rng.choice(["", "\n", "\nrest=:"])
        after = rng.choice(["", "=:\n训" * rng.randint(1, 40)])    # the next text: not this line's
        data = np.frombuffer((pad + line + tail + after).encode(), np.uint8).copy()
        s = len(pad.encode())
        j, nc, seen = k._line_end(data, s, len(data) - len(after.encode()))
        assert j == s + len(line.encode()) and nc == len(line)
        assert seen == (k._EQ if "=" in line else 0) | (k._COLON if ":" in line else 0)


def test_a_code_file_becomes_one_empty_line():
    # with the check's code-file rule (3 sure code lines and 10% of the non-blank ones) a code file becomes one empty
    # line: found early (its sure code lines reach 10% of all its lines) or at its end (many blank lines: 10% of the
    # non-blank ones only); every other text keeps its lines and flags; without the rule nothing changes
    from dataaudit.checks.text_lines import KernelLines
    from dataaudit.checks.text_repetition import CODE_SHARE, MIN_CODE_LINES
    k = numba_kernels("dataaudit.textops._repetition_kernels")
    code = "x = 1\nprose here.\ny = 2\n\nz = 3\n- item\n}\n```"      # 8 lines; sure code: 0, 2, 4, 6
    prose = "x = 1\nA sentence.\ny = 2\n" + "More prose.\n" * 30      # 2 sure code lines: no code file
    sparse = "a = 1\n" + "\n" * 30 + "b = 2\nc = 3\nWords.\nMore."      # 3 of 5 non-blank lines, 35 lines
    arr = pa.array([code, prose, sparse], pa.string())
    every = KernelLines(k, arr)
    ruled = KernelLines(k, arr, CODE_SHARE, MIN_CODE_LINES)
    assert every.counts.tolist() == [8, 34, 35]
    assert np.flatnonzero((every.flags[:8] & line_flags.SURE_CODE) != 0).tolist() == [0, 2, 4, 6]
    assert ruled.counts.tolist() == [1, 34, 1]
    first = [0, 35]                                             # the code files' one line each
    assert ruled.doc[first].tolist() == [0, 2]
    assert ruled.raw.start[first].tolist() == ruled.raw.stop[first].tolist() == [0, len(code) + len(prose)]
    assert ruled.text.start[first].tolist() == ruled.text.stop[first].tolist() == [0, len(code) + len(prose)]
    assert ruled.length[first].tolist() == ruled.raw_chars()[first].tolist() == ruled.flags[first].tolist() == [0, 0]
    assert ruled.total_chars().tolist() == [0, len(prose), 0]
    for name in ("doc", "length", "flags", "_raw_chars"):
        np.testing.assert_array_equal(getattr(ruled, name)[1:35], getattr(every, name)[8:42], err_msg=name)
    np.testing.assert_array_equal(ruled.text.start[1:35], every.text.start[8:42])


def test_span_hash_depends_on_the_content_only():
    # the same bytes at every alignment and at the buffer's start hash the same; any other bytes or length differ;
    # the code points come out exact
    k = numba_kernels("dataaudit.textops._repetition_kernels")
    words = ["", "a", "ab", "训练", "seven77", "eight888", "nine99999", "é" * 9, "a b. c!", "😀 x" * 5, "a\x00b"]
    seen = {}
    for w in words:
        raw = w.encode()
        for pad in range(0, 10):
            data = np.frombuffer(b"z" * pad + raw + b"zz", np.uint8).copy()
            h, cont = k._span_hash(data, pad, pad + len(raw))
            assert len(raw) - cont == len(w)
            assert seen.setdefault(w, int(h)) == int(h), (w, pad)
    assert len(set(seen.values())) == len(words)
    data = np.frombuffer(b"abcabd", np.uint8).copy()
    assert k._span_hash(data, 0, 2)[0] == k._span_hash(data, 3, 5)[0] != k._span_hash(data, 3, 6)[0]


def test_count_newlines_counts_exactly():
    # every "\n" and nothing else (bytes one bit away: 0x0B 0x08 0x8A 0x0E, and 0x09 after a "\n" where the fast
    # has-zero test would raise a false alarm), at every length around the 8-byte steps
    k = numba_kernels("dataaudit.textops._repetition_kernels")
    pattern = np.array([10, 11, 8, 0x8A, 14, 10, 9, 0, 10, 10, 255], np.uint8)
    def count(data, off=None):
        off = np.array([0, len(data)] if off is None else off, np.int64)
        out = np.empty(len(off) - 1, np.int64)
        total = k.count_newlines(data, off, out)
        assert total == out.sum()
        return out.tolist()

    for n in list(range(0, 40)) + [63, 64, 65, 127, 128, 129, 200]:      # (64 bytes at a time, then 8, then 1)
        data = np.resize(pattern, n)
        assert count(data) == [int((data == 10).sum())]
        for cut in range(n + 1):                                # every split into two texts
            assert count(data, [0, cut, n]) == [int((data[:cut] == 10).sum()), int((data[cut:] == 10).sum())]
    assert count(np.full(17, 10, np.uint8)) == [17]
    assert count(np.frombuffer("a\n训\n\n".encode(), np.uint8), [0, 2, 2, 7]) == [1, 0, 2]


def test_ascii_symbol_lines_are_decided_without_re2():
    # an ASCII line with no letter or digit matches SYMBOLS_RE for sure; a line with other bytes goes to RE2 (\p{L})
    import pyarrow.compute as pc
    from dataaudit.checks.text_lines import KernelLines
    from dataaudit.checks.text_repetition import SYMBOL_CLASS, SYMBOLS_RE
    k = numba_kernels("dataaudit.textops._repetition_kernels")
    lines = ["----", "  ***  ", "—— ——", "a--", "Роман", "== 1 ==", "=== ===", "…", "\t.\t"]
    view = KernelLines(k, pa.array(["\n".join(lines)], pa.string()))
    raw = view.raw.take(np.arange(len(view.doc))).to_arrow(k)
    assert ((view.flags & line_flags.SURE_SYMBOLS) != 0).astype(int).tolist() == [1, 1, 0, 0, 0, 0, 1, 0, 1]
    assert ((view.flags & line_flags.GATE_SYMBOLS) != 0).astype(int).tolist() == [1, 1, 1, 0, 1, 0, 1, 1, 1]
    hit = pc.match_substring_regex(raw, pattern=SYMBOLS_RE).to_pylist()
    assert hit == [True, True, True, False, False, False, True, True, True]
    assert view.symbols(np.ones(len(lines), bool), SYMBOLS_RE, SYMBOL_CLASS).tolist() == hit


def test_symbol_lines_read_with_the_class_table_equal_re2():
    # the lines the kernel leaves to the class's table (non-ASCII ones): letters and numbers of every kind (a Roman
    # numeral and a superscript two are \p{N}, a combining accent and an emoji are not), in any mix, as RE2 reads them
    import pyarrow.compute as pc
    from dataaudit.checks.text_lines import KernelLines
    from dataaudit.checks.text_repetition import SYMBOL_CLASS, SYMBOLS_RE
    k = numba_kernels("dataaudit.textops._repetition_kernels")
    rng = random.Random(2)
    pieces = ["—", "…", "•", "\u0301", "😀", "²", "Ⅻ", "٣", "ﾃ", "训", "é", "Ω", "ß", "-", "*", " ", "=", "\t", "a", "7",
              "\u00a0", "\u200b", "€", "\ue000", "「", "\u3000", "ǅ", "ʰ"]
    lines = ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 6))) for _ in range(3000)]
    lines = [line for line in lines if line.strip()]
    view = KernelLines(k, pa.array(["\n".join(lines)], pa.string()))
    raw = view.raw.take(np.arange(len(view.doc))).to_arrow(k)
    hit = pc.match_substring_regex(raw, pattern=SYMBOLS_RE).to_pylist()
    assert view.symbols(np.ones(len(view.doc), bool), SYMBOLS_RE, SYMBOL_CLASS).tolist() == hit
    assert 300 < sum(hit) < len(hit) - 300


def test_sentence_runs_kernel_on_known_runs(monkeypatch):
    # run lengths, the gap rule, short sentences holding their place, and the tie rule (the run that starts first
    # in the text, even when another reaches that length earlier), with and without numba
    docs = ["Again and again. Other one. Again and again. Again and again.",     # places 0, 2, 3: a run of 3
            "Alpha one. Beta two. Beta two. Alpha one.",                           # two runs of 2: Alpha starts first
            "Same thing here. a1. b1. c1. d1. Same thing here.",                   # 5 places apart: no run
            "Same thing here. a1. b1. Same thing here.",                           # 3 apart (short ones count)
            "Hi. Hi. Hi. Hi.",                                                     # too short to count
            "训练数据很好。训练数据很好。训练数据很好！",                                  # CJK ends (cut off)
            ""]
    stats = _assert_twins(monkeypatch, docs, top_ns=(), dup_ns=(), repeats=True)
    assert stats["sentence_run"].tolist() == [3, 2, 0, 2, 0, 3, 0]
    assert [stats.repeated_text(i) for i in range(len(docs))] == [
        "Again and again", "Alpha one", "", "Same thing here", "", "训练数据很好", ""]


def test_list_items_equal_list_re_and_lose_their_marker():
    # the kernel's LIST_RE and its cut of "^" + _MARKER from the trimmed text equal RE2's on every marker shape
    import pyarrow.compute as pc
    from dataaudit.checks.text_lines import KernelLines
    from dataaudit.checks.text_repetition import _MARKER, LIST_RE
    k = numba_kernels("dataaudit.textops._repetition_kernels")
    lines = ["- item", "-item", "* x", "+ y", "• a", "◦ b", "▪ c", "‣ d", "· e", "– f", "— g", "1. one", "12) two",
             "123. three", "1234. four", "a. alpha", "Z) zed", "ab. no", "(iv) roman", "(abcd) four", "(abcde) no",
             "() no", "[ ] todo", "[x] done", "[X] Done", "[y] no", "  - indented", "\x0b- vtab", "-\tx", "- ",
             "1.x", "(i)\u00a0nbsp", "-  \x0bx", "9.", "é. no"]
    view = KernelLines(k, pa.array(["\n".join(lines)], pa.string()))
    every = np.ones(len(lines), bool)
    items = view.list_items(every, LIST_RE)
    want = pc.match_substring_regex(pa.array(lines), pattern=LIST_RE).to_pylist()
    assert items.tolist() == want
    assert [l for l, i in zip(lines, want) if i] == [
        "- item", "* x", "+ y", "• a", "◦ b", "▪ c", "‣ d", "· e", "– f", "1. one", "12) two", "123. three",
        "a. alpha", "Z) zed", "(iv) roman", "(abcd) four", "[ ] todo", "[x] done", "[X] Done", "  - indented",
        "-\tx", "- ", "-  \x0bx"]
    rows = np.flatnonzero(items)
    trimmed = pc.utf8_trim_whitespace(pa.array([lines[i] for i in rows]))
    rest = pc.replace_substring_regex(trimmed, pattern="^" + _MARKER, replacement="", max_replacements=1)
    chars, nbytes = view.strip_markers(rows, "^" + _MARKER)
    assert [view.text.text(i) for i in rows] == rest.to_pylist()
    assert rest.to_pylist()[-3:] == ["x", "-", "\x0bx"]             # "- " trims to "-": no whitespace to cut
    assert chars.tolist() == pc.utf8_length(rest).to_pylist()
    assert nbytes.tolist() == pc.binary_length(rest).to_pylist()


def test_line_repeats_kernel_counts_repeats_within_a_document(monkeypatch):
    # a line repeated in its own document counts (every occurrence after the first), the same line in another
    # document does not; trimmed lines compare equal; characters are code points
    docs = ["same line\nother\n  same line  \nsame line", "same line\nfresh", "训练 数据\n训练 数据\n", "", "a\n\nb"]
    stats = _assert_twins(monkeypatch, docs, top_ns=(), dup_ns=(), lines=True)
    assert stats["dup_line_frac"].tolist() == [0.5, 0.0, 0.5, 0.0, 0.0]
    total = [len(d) for d in docs]
    assert (stats["dup_line_char_frac"] * np.maximum(total, 1)).round(9).tolist() == [18.0, 0.0, 5.0, 0.0, 0.0]


def test_sentence_outputs_grow_for_a_batch_of_short_sentences(monkeypatch):
    # outputs sized for a sentence per 32 bytes are redone at the right size when a batch has more (here one per
    # 4 bytes): every sentence is there, and the statistics equal the twin's
    from dataaudit.checks.text_repetition import _sentences
    from dataaudit.checks.text_lines import Spans
    texts = ["Ab. " * 500, "One. Two three.", "x"]
    data = np.frombuffer("".join(texts).encode(), np.uint8)
    ends = np.cumsum([len(t.encode()) for t in texts]).astype(np.int64)
    sents, line, chars, hashes = _sentences(Spans(data, ends - [len(t.encode()) for t in texts], ends))
    assert len(sents) == 500 + 2 + 1 > len(texts) + len(data) // 32
    assert line.tolist() == [0] * 500 + [1, 1, 2] and chars.tolist() == [2] * 500 + [3, 9, 1]
    assert len(set(hashes[:500].tolist())) == 1 and [sents.text(i) for i in (499, 500, 501, 502)] == [
        "Ab", "One", "Two three", "x"]
    stats = _assert_twins(monkeypatch, texts, top_ns=(), dup_ns=(), repeats=True, min_repeat_chars=2)
    assert stats["sentence_run"].tolist() == [500, 0, 0]


def test_line_offsets_as_int64_for_a_batch_past_int32(monkeypatch):
    # a batch too large for int32 offsets gets int64 ones (forced here by lowering the limit): same statistics
    from dataaudit.checks.text_lines import KernelLines
    texts = _random_docs(13, 200) + ["- item\n- item\nx = 1\nSame line.\nSame line."]
    arr = pa.array(texts, pa.string())
    k = numba_kernels("dataaudit.textops._repetition_kernels")
    assert KernelLines(k, arr).raw.start.dtype == np.int32
    small = repetition_stats(arr, lines=True, repeats=True, skip_structure=True)
    monkeypatch.setattr(KernelLines, "INT32_BYTES", 0)
    assert KernelLines(k, arr).raw.start.dtype == np.int64
    large = repetition_stats(arr, lines=True, repeats=True, skip_structure=True)
    for key in small:
        np.testing.assert_array_equal(small[key], large[key], err_msg=key)
    assert [small.repeated_text(i) for i in range(len(texts))] == [large.repeated_text(i) for i in range(len(texts))]
    assert small["sentence_run"][-1] == 2 and small["dup_line_frac"][-1] > 0


def test_word_ngrams_buffers_hold_any_document(monkeypatch):
    # a word per 2 bytes (the most a text holds) and documents larger, then smaller, than the one before (the work
    # arrays grow; a smaller document after a larger one reuses them): the twin's statistics, exactly
    texts = ["x yy x yy", "a " * 1000, "b c b c", "a b " * 3000, "q r q r q"]
    stats = _assert_twins(monkeypatch, texts, skip_structure=False)
    assert stats.n_words.tolist() == [4, 1000, 4, 6000, 5]
    # "a a": 999 times, 3 characters, of 2000; "a b": 3000 times, of 12000; "q r" twice, of 9
    assert stats["top_2_gram"].tolist() == [2 * 4 / 9, 999 * 3 / 2000, 2 * 3 / 7, 3000 * 3 / 12000, 2 * 3 / 9]
    assert stats["dup_5_gram"][1] == 999 / 2000 and stats["dup_5_gram"][2] == 0     # words 1..999 repeat a 5-gram


def test_fenced_lines_equal_the_twins_parity():
    # a fence and the non-blank lines after an odd number of fences of the same text are fenced; the count starts
    # again in each text; the kernel's flag equals the Arrow twin's regex and parity
    from dataaudit.checks.text_lines import ArrowLines, KernelLines
    from dataaudit.checks.text_repetition import FENCE_RE
    k = numba_kernels("dataaudit.textops._repetition_kernels")
    texts = ["a\n```\nx = 1\n\ny\n```\nb\n~~~\nc", "```\nunclosed\n", "d\n  ```py\ne", "no fence"] + _random_docs(4, 300)
    arr = pa.array(texts, pa.string())
    fast, slow = KernelLines(k, arr).fenced(FENCE_RE), ArrowLines(arr).fenced(FENCE_RE)
    np.testing.assert_array_equal(fast, slow)
    assert fast[:16].astype(int).tolist() == [0, 1, 1, 0, 1, 1, 0, 1, 1,   1, 1, 0,   0, 1, 1,   0]
    assert fast.sum() > 50
