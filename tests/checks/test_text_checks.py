"""Tests for the text checks (dataaudit/checks/text.py, text_repetition.py, special_tokens.py; more in
test_repetition.py and test_special_tokens.py).

Planted positives must be flagged with exact values; a hand-made multilingual / code / markup set and two real
corpora (WebDataset English passages, tinyshakespeare paragraphs) must not be.

Run as a script to print the false-positive rates and the throughput:
    .venv/bin/python -m tests.checks.test_text_checks
"""
from __future__ import annotations

import gzip
import random
import re
import sys
import tarfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dataaudit.checks.text  # noqa: F401  (registers the text checks)
from dataaudit.checks.base import REGISTRY, CheckOutput
from dataaudit.checks.text_repetition import repetition_stats
from tests.paths import SHARED_DATA, SHARED_MISSING

CHECKS = ("empty_text", "control_chars", "mojibake", "long_unbroken_run", "repetition", "non_text_ratio",
          "special_tokens")
# The checks that look for garbage: each must stay under 0.5% on real clean text.
GARBAGE_CHECKS = ("control_chars", "mojibake", "long_unbroken_run", "non_text_ratio", "special_tokens")


def run(name: str, rows, **params) -> CheckOutput:
    """Run a registered check with its default params (overridden by `params`) and sanity-check the output."""
    spec = REGISTRY[name]
    arr = rows if isinstance(rows, (pa.Array, pa.ChunkedArray)) else pa.array(rows, type=pa.string())
    out = spec.fn(arr, **{**spec.params, **params})
    n = len(arr)
    assert isinstance(out, CheckOutput)
    assert out.flagged.dtype == np.bool_ and out.flagged.shape == (n,)
    assert out.value.dtype == np.float64 and out.value.shape == (n,)
    assert np.isfinite(out.value).all()
    if out.detail is not None:
        assert len(out.detail) == n
        for i in np.flatnonzero(out.flagged):
            assert isinstance(out.detail[i], str) and out.detail[i]
    return out


# ------------------------------------------------------------------------------------------------ registry

def test_registered_with_defaults():
    expected = {
        "empty_text": {},
        "control_chars": {"max_count": 0, "count_ff_vt": False},
        "mojibake": {"min_count": 1},
        "long_unbroken_run": {"max_run": 100, "url_max": 400, "code_max_run": 300},
        "non_text_ratio": {"max_ratio": 0.35, "min_chars": 20},
    }
    for name in CHECKS:
        spec = REGISTRY[name]
        assert spec.target == "text" and spec.severity == "warning" and spec.description
        spec.detail.format(value=1.0, **spec.params)        # the detail template only uses value + params
        if name in expected:
            assert spec.params == expected[name]
    rep = REGISTRY["repetition"].params
    assert rep["dup_line_frac"] == 0.30 and rep["dup_line_char_frac"] == 0.20
    assert [rep[f"top_{n}_gram"] for n in (2, 3, 4)] == [0.20, 0.18, 0.16]
    assert [rep[f"dup_{n}_gram"] for n in range(5, 11)] == [0.15, 0.14, 0.13, 0.12, 0.11, 0.10]
    assert rep["min_words"] == 150
    assert (rep["max_repeats"], rep["min_repeat_chars"], rep["skip_structure"]) == (5, 5, True)


# ------------------------------------------------------------------------------------ nulls, empties, types

EDGE = [None, "", " ", "\n\n", "\t \u3000\u00a0\u200b\ufeff", "a", "é", "x" * 3]


@pytest.mark.parametrize("name", CHECKS)
def test_nulls_empties_and_array_types(name):
    expected = run(name, EDGE)
    if name != "empty_text":
        assert not expected.flagged.any()
    variants = [
        pa.array(EDGE, type=pa.large_string()),
        pa.chunked_array([pa.array(EDGE[:3]), pa.array(EDGE[3:])]),
        pa.array(EDGE).dictionary_encode(),
        pa.array(EDGE)[2:],                                  # sliced (non-zero offset)
        pa.array(EDGE).cast(pa.string_view()),
    ]
    for v in variants:
        out = run(name, v)
        k = len(EDGE) - len(v)
        np.testing.assert_array_equal(out.flagged, expected.flagged[k:])
        np.testing.assert_array_equal(out.value, expected.value[k:])
    for empty in (pa.array([], type=pa.string()), pa.chunked_array([], type=pa.string()),
                  pa.array([None, None], type=pa.null())):
        out = run(name, empty)
        assert not out.flagged.any() if name != "empty_text" else True


def test_empty_text():
    out = run("empty_text", EDGE)
    assert out.flagged.tolist() == [True, True, True, True, True, False, False, False]
    assert out.value.tolist() == [0, 0, 1, 2, 6, 1, 1, 3]
    assert out.detail[0] == "null" and out.detail[1] == "empty string"
    assert out.detail[4].startswith("whitespace-only (6 chars")


# ------------------------------------------------------------------------------------------- control_chars

def test_control_chars_exact():
    rows = ["\x00\x01binary", "tab\tnew\nline\r\n", "form\x0cfeed\x0bvt", "del\x7f", "c1 \x85\x9f",
            "esc \x1b[31mred\x1b[0m", "fine", None]
    out = run("control_chars", rows)
    assert out.value.tolist() == [2, 0, 0, 1, 2, 2, 0, 0]
    assert out.flagged.tolist() == [True, False, False, True, True, True, False, False]
    assert "U+0000" in out.detail[0] and "U+0001" in out.detail[0]
    assert "U+001Bx2" in out.detail[5]
    strict = run("control_chars", rows, count_ff_vt=True)
    assert strict.value.tolist() == [2, 0, 2, 1, 2, 2, 0, 0]
    assert run("control_chars", rows, max_count=1).flagged.tolist() == [True, False, False, False, True, True,
                                                                        False, False]


# ------------------------------------------------------------------------------------------------ mojibake

def test_mojibake_exact():
    rows = {
        "è®­ç»ƒæ•°æ®": 3,              # 训练数据 as CP1252 ('据' lost its 0x8D byte): 训, 练, 数
        "CafÃ© dÃ©jÃ  vu": 2,         # the Ã of 'à' lost its NBSP -> plain space: not counted
        "donâ€™t": 1,
        "bad \ufffd char": 1,
        "â€œquotedâ€\x9d": 2,          # “quoted” via Latin-1 for 0x9D
        "Ð¿Ñ€Ð¸Ð²ÐµÑ‚": 5,             # привет: 6 pairs, 'Ñ‚' not counted (‚ is a German quote after ß, Ä...)
        "ðŸ˜€ emoji": 1,                # 😀 (4-byte)
        "ÃƒÂ© double": 2,              # é encoded twice
        "Â°C and Â\u00a0nbsp": 2,
        # Real accented text that looks close but must not count:
        "Café déjà vu, naïve façade, über Äpfel, año, ação, São Paulo": 0,
        "«allé…» “CAFÉ” „Fuß“ à\u00a0« l’été »": 0,
        "IRMÃ” ¿Qué? ¡Olé! 25°C, 3² m², nº 5, × ÷ ±": 0,
    }
    out = run("mojibake", list(rows))
    assert out.value.tolist() == list(rows.values())
    assert out.flagged.tolist() == [v >= 1 for v in rows.values()]
    assert "'è®\\xad'→'训'" in out.detail[0] or "→'训'" in out.detail[0]
    assert "'Ã©'→'é' x2" in out.detail[1]
    assert "'â€™'→'’'" in out.detail[2]
    assert "U+FFFD" in out.detail[3]
    assert run("mojibake", list(rows), min_count=3).flagged.sum() == 2


def test_mojibake_gate_counts_exactly_like_the_regex_on_every_row():
    """Mostly clean rows take the gated path (the regex only on rows holding byte 0xC3 or U+FFFD): the same
    counts as the regex on every row, with nulls, a sliced array and Chinese full-width punctuation (EF BC 8C)."""
    import pyarrow as pa

    from dataaudit.checks.text import _MOJIBAKE_RE, _may_hold_mojibake
    from dataaudit.checks.text_common import count_regex
    clean = ["plain English text", "def f(x):\n    return x", "训练数据，很好！", "", None, "naïve"]
    bad = ["donâ€™t", "bad \ufffd char", "ðŸ˜€ emoji", "è®­ç»ƒ"]
    rows = clean * 5 + bad + clean * 3
    arr = pa.array(rows, pa.string())
    for a in (arr, arr.slice(7, 30), pa.array(rows, pa.large_string())):
        assert _may_hold_mojibake(a).sum() * 2 <= len(a)   # the gated path
        out = REGISTRY["mojibake"].fn(a)   # the Arrow array itself (offset, large_string)
        want = count_regex(a, _MOJIBAKE_RE)
        assert out.value.tolist() == want.astype(float).tolist()
    gate = _may_hold_mojibake(arr)
    assert np.flatnonzero(gate).tolist() == [5, 11, 17, 23, 29, 30, 31, 32, 33, 39, 45, 51]  # naïve rows + bad ones
    assert run("mojibake", rows).value.tolist()[30:34] == [1.0, 1.0, 1.0, 2.0]


# ------------------------------------------------------------------------------------------ long_unbroken_run

def test_long_unbroken_run_exact():
    rng = random.Random(0)
    b64 = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") for _ in range(300))
    hexs = "".join(rng.choice("0123456789abcdef") for _ in range(1000))
    zh = "训练数据的质量决定了模型的上限" * 20          # 300 Han chars, no spaces
    th = "ภาษาไทยเขียนติดกันโดยไม่มีการเว้นวรรคระหว่างคำ" * 5
    rows = [b64, f"The dump was {hexs} and then it ended.", "x" * 100, "x" * 101,
            "data:image/png;base64," + b64[:90], zh, th, f"{zh}abc{'y' * 120}{zh}", "short words only", None, ""]
    out = run("long_unbroken_run", rows)
    assert out.value.tolist() == [300, 1000, 100, 101, 112, 0, 0, 123, 5, 0, 0]
    assert out.flagged.tolist() == [True, True, False, True, True, False, False, True, False, False, False]
    assert "1000 chars" in out.detail[1] and hexs[:20] in out.detail[1]
    assert run("long_unbroken_run", rows, max_run=500).flagged.tolist() == [False, True] + [False] * 9



def test_long_unbroken_run_lets_a_call_chain_reach_code_max_run():
    # a real C# line (LLaMA-Factory's alpaca demo): 113 characters of calls, no whitespace
    chain = ("RNNCoreAnnotations.getPredictedClass(sentence.get(SentimentCoreAnnotations.SentimentAnnotatedTree()"
             ".getClass()));")
    b64 = "QUJD" * 40                                       # 160 characters, no parenthesis
    # real code from installed packages: a C++ template type (143), a keyword argument (103), an include (121)
    template = "::std::tuple<::std::vector<at::Tensor>,::std::vector<at::Tensor>,::std::vector<at::Tensor>," \
               "::std::vector<at::Tensor>,::std::vector<at::Tensor>>"
    argument = "request_serializer=src_dot_ray_dot_protobuf_dot_reporter__pb2.ReportOCMetricsRequest.SerializeToString,"
    rows = [f"var s = {chain}", f"```\n{b64}\n```", f"x = f({'a' * 310})", f"{chain}\nthen {b64}", "(" + "z" * 150,
            f"using schema = {template};", f"    {argument}", f'x = "{b64}"', "data:image/png;base64," + b64[:90],
            "f(" + "\u00e9" * 120 + ")"]
    out = run("long_unbroken_run", rows)
    # a letter run of 64+ (a blob), a quoted blob, a data: URL and non-ASCII text are not code: max_run holds
    assert out.flagged.tolist() == [False, True, True, True, True, False, False, True, True, True]
    assert out.value.tolist() == [113, 160, 313, 160, 151, 144, 103, 162, 112, 123]
    assert out.detail[2].startswith("longest run without whitespace: 313 chars (max 100): f(aaaa")
    assert out.detail[3].startswith("longest run without whitespace: 160 chars (max 100): QUJD")
    from dataaudit.checks.text import _locate_run
    assert [_locate_run(t) for t in rows[:5]] == [None, (4, 164), (4, 317), (119, 279), (0, 151)]
    # the check gives the flagged texts' spans itself, the ones `_locate_run` finds
    assert out.span.tolist() == [None, (4, 164), (4, 317), (119, 279), (0, 151), None, None, (4, 166), (0, 112),
                                 (0, 123)]
    assert [out.span[i] for i in range(len(rows)) if out.flagged[i]] == \
        [_locate_run(t) for t, f in zip(rows, out.flagged) if f]
    assert run("long_unbroken_run", [f"x = f({'ab(' * 110})"]).detail[0].startswith(
        "longest run without whitespace: 333 chars (max 300 for code)")
    assert run("long_unbroken_run", rows, code_max_run=0).flagged.tolist() == [True] * 10


def test_long_unbroken_run_urls():
    path = "/".join(["segment"] * 30)                      # 239 chars
    rows = [f"see https://example.com/{path} for details", f'<a href="https://x.org/{path}">link</a>',
            f"www.example.com/{path}", "https://x.com/?q=" + "Q" * 1000, "ftp://" + "z" * 420]
    out = run("long_unbroken_run", rows)
    # URLs up to url_max chars after the scheme are skipped (the URL match also eats the '">link</a>' glued to
    # it, leaving 'href="'); the rest of a longer one (1009 - 400, 420 - 400) still counts
    assert out.value.tolist() == [7, 6, 0, 1009 - 400, 420 - 400]
    assert out.flagged.tolist() == [False, False, False, True, False]
    assert run("long_unbroken_run", rows, url_max=0).flagged.tolist() == [True] * 5


def test_long_unbroken_run_url_skip_matches_re2():
    # the Python `re` skip of URLs and rules equals its RE2 reference, separators of every kind included
    import pyarrow.compute as pc
    import unicodedata
    from dataaudit.checks.text import (_RULE_RE, _SEPARATOR_RANGES, _SEPARATORS, _skip_urls_and_rules,
                                       _url_re)
    z = {c for c in range(0x110000) if unicodedata.category(chr(c)).startswith("Z")}
    assert z == set(_SEPARATORS) | {c for lo, hi in _SEPARATOR_RANGES for c in range(lo, hi + 1)}
    seps = [chr(c) for c in sorted(z)] + ["\t", "\f", "\r", "\v", "\x85", "\u200b", "\u3001", "训"]
    lines = [f"a https://ex.com/p{s}q{s}www.x.io/{'z' * 30}{s}|---|===" for s in seps]
    lines += ["https://x.com/?q=" + "Q" * 1000, "ftp://" + "z" * 420, "WWW.x.org/a", "9ab://x", "", "----", "::"]
    arr = pa.array(lines, pa.string())
    for url_max in (400, 17, None):
        pattern = _RULE_RE if url_max is None else f"{_RULE_RE}|{_url_re(url_max)}"
        want = pc.replace_substring_regex(arr, pattern=pattern, replacement=" ").to_pylist()
        assert _skip_urls_and_rules(arr, url_max).to_pylist() == want


# ---------------------------------------------------------------------------------------------- non_text_ratio

def test_non_text_ratio_exact():
    symbols = "±©®¬°×÷∑∆≈≠∞♠♣♥♦☺☻€$^|~<>=+"     # 27 chars, all \p{S}
    rows = [symbols, "abc" + symbols, "\x00\x01binary", "😂" * 10 + "a" * 10, "😂" * 7 + "a" * 13,
            "x" * 19 + "€", "┌──┬──┐ │a │b │ └──┴──┘ tables", "\ue000\ue001" + "a" * 18, ""]
    out = run("non_text_ratio", rows)
    np.testing.assert_allclose(out.value, [1.0, 27 / 30, 2 / 8, 0.5, 0.35, 1 / 20, 0.0, 0.1, 0.0])
    # "\x00\x01binary" has 8 chars < min_chars=20: not flagged here (control_chars catches it).
    assert out.flagged.tolist() == [True, True, False, True, False, False, False, False, False]
    assert "U+0000" not in out.detail[0] and "'±'x1" in out.detail[0]


def test_non_text_ratio_binary_junk():
    rng = np.random.default_rng(0)
    blobs = [rng.integers(0, 256, 4000, dtype=np.uint8).tobytes() for _ in range(4)]
    as_utf8 = [b.decode("utf-8", errors="replace") for b in blobs]
    as_latin1 = [b.decode("latin-1") for b in blobs]
    assert run("non_text_ratio", as_utf8).flagged.all()          # ~0.6: U+FFFD and controls
    assert run("mojibake", as_utf8).flagged.all()
    # Latin-1 decoded binary sits at ~0.31-0.35 non-text: below the default, but full of C0/C1 controls.
    assert run("control_chars", as_latin1).flagged.all()


# ---------------------------------------------------------------------------------------------- repetition

def test_repetition_identical_lines_exact():
    doc = "\n".join(["spam"] * 20)                              # 20 words: n-gram ratios count x 20/150
    out = run("repetition", [doc])
    stats = repetition_stats(pa.array([doc]))
    assert stats["dup_line_frac"][0] == pytest.approx(19 / 20)
    assert stats["dup_line_char_frac"][0] == pytest.approx(19 * 4 / 99)
    assert out.flagged.tolist() == [True]
    # its line (4 characters, under min_repeat_chars) makes no sentence run: in a short text its duplicated
    # characters must then cover answer_dup_frac (0.3), and dup_line_frac / 0.3 is the larger ratio
    assert out.value[0] == pytest.approx((19 / 20) / 0.30)
    assert out.detail[0] == "dup_line_frac=0.95 > 0.3 (+1 more)"  # + dup_line_char_frac (its lines are items)


def test_repetition_repeated_5gram_exact():
    doc = "the quick brown fox jumps " * 12                     # 60 words, 312 chars
    stats = repetition_stats(pa.array([doc]), min_words=50)
    # most frequent n-grams occur 12 times; ties are broken by the longest one
    assert stats["top_2_gram"][0] == pytest.approx(12 * 11 / 312)         # "quick brown"
    assert stats["top_3_gram"][0] == pytest.approx(12 * 15 / 312)         # "the quick brown" (and 2 more)
    assert stats["top_4_gram"][0] == pytest.approx(12 * 21 / 312)         # "quick brown fox jumps"
    for n in range(5, 11):                                     # words 5..59 are covered: 11 x 21 chars
        assert stats[f"dup_{n}_gram"][0] == pytest.approx(231 / 312)
    assert stats["dup_line_frac"][0] == 0.0
    out = run("repetition", [doc])
    # 60 of min_words=150 words: 231 / 312 / 0.10 * 60 / 150; under answer_words also against answer_dup_frac
    assert out.value[0] == pytest.approx(231 / 312 / 0.3)
    assert out.detail[0] == "dup_8_gram=0.74 > 0.12 (+7 more)"
    assert run("repetition", [doc], answer_words=0).value[0] == pytest.approx(231 / 312 / 0.10 * 60 / 150)


def test_repetition_small_cases():
    clean = ("Data quality matters more than quantity when training language models, because a single "
             "bad shard full of duplicated boilerplate, encoding errors or binary junk can destabilise an "
             "otherwise healthy run and waste days of accelerator time on a large cluster somewhere.")
    rows = [clean, "Down with him! down with him!", None, "", "   ", clean + "\n" + clean]
    out = run("repetition", rows)
    assert out.flagged.tolist() == [False, False, False, False, False, True]
    # a short text's n-gram ratios count x words/min_words: "with him!" twice in 6 words is 9 * 2 / 29 / 0.2 x 6/150
    assert out.value[:5].tolist() == pytest.approx([0, 18 / 29 / 0.20 * 6 / 150, 0, 0, 0])
    low = run("repetition", rows, min_words=0)                  # 0: Gopher's fractions as they are
    assert low.flagged[1] and low.detail[1].startswith("top_2_gram=")
    # a threshold of 0/None disables its statistic
    off = {k: 0 for k in REGISTRY["repetition"].params if k not in ("min_words", "min_chars")}
    assert not run("repetition", rows, **off).flagged.any()


def _reference_stats(text: str, min_words: int) -> dict[str, float]:
    """Per-document pure-Python version of the same statistics (for checking the vectorized code)."""
    total = len(text)
    lines = [ln.strip() for ln in text.split("\n")]
    lines = [ln for ln in lines if ln]
    seen, dl, dc = set(), 0, 0
    for ln in lines:
        if ln in seen:
            dl, dc = dl + 1, dc + len(ln)
        seen.add(ln)
    out = {"dup_line_frac": dl / len(lines) if lines else 0.0, "dup_line_char_frac": dc / total if total else 0.0}
    words = text.split()
    ok = len(words) >= min_words
    for n in (2, 3, 4):
        grams = Counter(tuple(words[i:i + n]) for i in range(len(words) - n + 1)) if ok else Counter()
        best = max(grams.values(), default=0)
        top = max((k * (sum(map(len, g)) + n - 1) for g, k in grams.items() if k == best and k >= 2), default=0)
        out[f"top_{n}_gram"] = top / total if total else 0.0
    for n in range(5, 11):
        covered, seen = [False] * len(words), set()
        for i in range(len(words) - n + 1 if ok else 0):
            g = tuple(words[i:i + n])
            if g in seen:
                covered[i:i + n] = [True] * n
            seen.add(g)
        out[f"dup_{n}_gram"] = sum(len(w) for w, c in zip(words, covered) if c) / total if total else 0.0
    return out


def test_repetition_matches_reference():
    rng = random.Random(1)
    vocab = ["a", "bb", "ccc", "the", "of", "dddd", "é", "训练", "x1", "yy"]
    docs = []
    for _ in range(300):
        k = rng.choice([0, 1, 3, 6, 12, 30, 60])
        words = [rng.choice(vocab[: rng.randint(2, len(vocab))]) for _ in range(k)]
        seps = [rng.choice([" ", " ", " ", "\n", "  ", "\t", "\n\n"]) for _ in range(k)]
        docs.append("".join(w + s for w, s in zip(words, seps)))
    docs += [None, ""]
    for min_words in (0, 10):
        stats = repetition_stats(pa.array(docs), min_words=min_words)
        for i, d in enumerate(docs):
            ref = _reference_stats(d or "", min_words)
            for key, val in ref.items():
                assert stats[key][i] == pytest.approx(val), (key, i, d)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(st.characters(blacklist_categories=("Cs",)), max_size=80)),
                max_size=12))
def test_any_unicode_never_crashes(rows):
    arrays = [pa.array(rows, type=pa.string()), pa.array(rows, type=pa.large_string())]
    for name in CHECKS:
        a, b = (run(name, x) for x in arrays)
        np.testing.assert_array_equal(a.flagged, b.flagged)
        np.testing.assert_array_equal(a.value, b.value)
    ratio = run("non_text_ratio", rows).value
    assert ((ratio >= 0) & (ratio <= 1)).all()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from(["a", "b", "cc", "ddd", "é", "训"]),
                                   st.sampled_from([" ", " ", "\n", "  ", "\t"])), max_size=40), max_size=6))
def test_repetition_matches_reference_hypothesis(docs):
    texts = ["".join(w + sep for w, sep in d) for d in docs]
    stats = repetition_stats(pa.array(texts, type=pa.string()), min_words=0)
    for i, t in enumerate(texts):
        for key, val in _reference_stats(t, 0).items():
            assert stats[key][i] == pytest.approx(val), (key, t)


# --------------------------------------------------------------------------- hand-made multilingual negatives

CLEAN = {
    "chinese": "大规模语言模型的训练需要海量的高质量文本数据。数据中的重复内容、乱码和二进制垃圾会严重影响模型的效果，"
               "因此在训练之前必须对每个数据分片进行全面的审计和清洗。我们的工具可以自动检测这些问题，并生成详细的报告，"
               "帮助工程师快速定位有问题的样本。此外，它还支持在训练过程中实时监控数据质量，避免浪费宝贵的计算资源。",
    "japanese": "大規模言語モデルの学習には、大量の高品質なテキストデータが必要です。データに含まれる重複、文字化け、"
                "バイナリのゴミは、モデルの性能を大きく損なう可能性があります。このツールはPythonで書かれており、"
                "シャードごとにデータを監査して、問題のあるサンプルを見つけ出します。レポートはHTML形式で出力されます。",
    "korean": "대규모 언어 모델을 학습하려면 많은 양의 고품질 텍스트 데이터가 필요합니다. 데이터에 포함된 중복, 깨진 문자, "
              "바이너리 쓰레기는 모델 성능을 크게 떨어뜨릴 수 있습니다. 이 도구는 각 샤드를 감사하고 문제가 있는 샘플을 찾아냅니다.",
    "arabic": "تتطلب النماذج اللغوية الكبيرة كميات هائلة من النصوص عالية الجودة. يمكن أن تؤدي البيانات المكررة أو التالفة "
              "إلى إضعاف أداء النموذج بشكل كبير، لذلك يجب فحص كل جزء من البيانات قبل التدريب. «هذه الأداة» تساعد المهندسين.",
    "hindi": "बड़े भाषा मॉडल को प्रशिक्षित करने के लिए उच्च गुणवत्ता वाले पाठ की बहुत बड़ी मात्रा की आवश्यकता होती है। "
             "डेटा में दोहराव, गलत एन्कोडिंग और बाइनरी कचरा मॉडल के प्रदर्शन को गंभीर रूप से प्रभावित कर सकते हैं।",
    "thai": "การฝึกโมเดลภาษาขนาดใหญ่ต้องใช้ข้อมูลข้อความคุณภาพสูงจำนวนมาก ข้อมูลที่ซ้ำกันหรือเสียหายอาจทำให้ประสิทธิภาพของโมเดลลดลงอย่างมาก "
            "ดังนั้นจึงต้องตรวจสอบข้อมูลทุกส่วนก่อนการฝึก",
    "russian": "Для обучения больших языковых моделей нужны огромные объёмы качественного текста. Дубликаты, «кракозябры» "
               "и двоичный мусор в данных могут серьёзно ухудшить качество модели — поэтому каждый шард проверяют заранее.",
    "greek": "Η εκπαίδευση μεγάλων γλωσσικών μοντέλων απαιτεί τεράστιες ποσότητες κειμένου υψηλής ποιότητας. Τα διπλότυπα "
             "και τα κατεστραμμένα δεδομένα μπορούν να βλάψουν σοβαρά την απόδοση του μοντέλου.",
    "french": "« L’été dernier, à Montréal, nous avons déjà vu ça : une façade naïve, un cœur d’œuvre… » — Où est "
              "l’hôtel ? À côté du château, près de l’église Sainte-Geneviève. Ça coûte 25 € à 30 °C.",
    "german": "„Die Größe der Übungsdaten ist weniger wichtig als ihre Qualität“, sagte Jürgen Müller. Äpfel, Öl "
              "und Straße – überall Umlaute: fünf Bücher für zwölf Schüler, 3 × 4 m² groß, ca. 15 °C.",
    "spanish_portuguese": "¿Dónde está la estación? ¡Qué año tan difícil! El niño comió piñata. Em São Paulo, a "
                          "população votou: “Não há ações suficientes”, disse a irmã. AMANHÃ”, GUARANÁ e PÃO.",
    "vietnamese": "Việc huấn luyện các mô hình ngôn ngữ lớn đòi hỏi một lượng lớn dữ liệu văn bản chất lượng cao. "
                  "Dữ liệu trùng lặp hoặc bị lỗi mã hóa có thể làm giảm hiệu suất của mô hình.",
    "python": '''import numpy as np


def moving_average(x: np.ndarray, k: int = 3) -> np.ndarray:
    """Return the k-point moving average of x."""
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    kernel = np.ones(k) / k
    return np.convolve(x, kernel, mode="valid")


class Counter:
    def __init__(self):
        self.n = 0

    def __call__(self, *args, **kwargs):
        self.n += 1
        return self.n
''',
    "javascript": '''const express = require('express');
const app = express();

app.get('/api/items/:id', async (req, res) => {
  const id = parseInt(req.params.id, 10);
  if (Number.isNaN(id) || id < 0) {
    return res.status(400).json({ error: 'bad id' });
  }
  const item = await db.items.findOne({ where: { id } });
  res.json(item ?? { id, missing: true });
});

app.listen(process.env.PORT || 3000, () => console.log(`listening on ${3000}`));
''',
    "c": '''#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b) {
    return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 10;
    int *v = malloc(n * sizeof *v);
    for (int i = 0; i < n; i++) {
        v[i] = (i * 7919) % 101;
    }
    qsort(v, n, sizeof *v, cmp);
    printf("min=%d max=%d\\n", v[0], v[n - 1]);
    free(v);
    return 0;
}
''',
    "markdown": '''# Data audit report

**Summary:** 3 shards, *12,034* samples, `2` checks fired.

| check | flagged | rate |
|-------|--------:|-----:|
| mojibake | 12 | 0.1% |
| empty_text | 3 | 0.02% |

- [x] control characters
- [ ] repetition (see [docs](https://example.com/docs/repetition#gopher))

> Note: thresholds follow Gopher (Rae et al., 2021).
''',
    "urls": '''Useful links:
https://arrow.apache.org/docs/python/api/compute.html
https://github.com/google/re2/wiki/Syntax
https://en.wikipedia.org/wiki/Mojibake
https://huggingface.co/datasets/allenai/c4/tree/main/en?page=2
mailto:data-team@example.org
ftp://ftp.example.com/pub/shards/shard-00042.tar.gz
''',
    "emoji_chat": "omg 😂😂 that was sooo funny!! see u tmrw 👋❤️ happy birthday 🎂🎉🎈 love you all 🥰🥰 "
                  "thumbs up 👍🏽👍🏽 family trip 👨‍👩‍👧 ✈️🌴",
    "math": "Let f: ℝ → ℝ with f(x) = x² + 2x + 1. Then ∀x ∈ ℝ, f(x) ≥ 0, and ∫₀¹ f(x) dx = 7/3. "
            "By Cauchy–Schwarz, |⟨u, v⟩| ≤ ‖u‖·‖v‖; hence ∑ᵢ aᵢbᵢ ≤ √(∑ aᵢ²)·√(∑ bᵢ²) ± ε.",
    "latex": r"The loss is $\mathcal{L}(\theta) = -\sum_{t=1}^{T} \log p_\theta(x_t \mid x_{<t})$, and "
             r"we clip $\|\nabla_\theta \mathcal{L}\|_2 \le 1.0$ before each step.",
}


def test_multilingual_code_markup_not_flagged():
    rows = list(CLEAN.values())
    for name in CHECKS:
        out = run(name, rows)
        fired = [k for k, f in zip(CLEAN, out.flagged) if f]
        assert fired == [], f"{name} flagged {fired}"


def test_cjk_runs_are_not_unbroken_runs():
    out = run("long_unbroken_run", [CLEAN["chinese"], CLEAN["japanese"], CLEAN["thai"]])
    assert (out.value < 20).all()       # only the embedded Latin/ASCII pieces ("Python", "HTML") count


# ------------------------------------------------------------------------------------------ planted positives

def planted() -> dict[str, tuple[str, set[str]]]:
    rng = random.Random(7)
    b64 = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") for _ in range(300))
    hexs = "".join(rng.choice("0123456789abcdef") for _ in range(1000))
    # (no "×": U+00D7 is the Latin-1 face of UTF-8 lead byte 0xD7, so "×®" looks like Hebrew mojibake)
    blob = bytes(rng.randrange(256) for _ in range(2000))
    sym = "".join(rng.choice("±©®¬°÷∑∆≈≠∞♠♣♥♦☺☻€$^|~<>=+⊕⊗⌘※") for _ in range(80))
    return {
        "nul_binary": ("\x00\x01binary", {"control_chars"}),
        "mojibake_zh": ("è®­ç»ƒæ•°æ®", {"mojibake"}),
        "mojibake_fr": ("CafÃ© dÃ©jÃ  vu", {"mojibake"}),
        "mojibake_quote": ("donâ€™t", {"mojibake"}),
        "replacement": ("bad \ufffd char", {"mojibake"}),
        "base64": (b64, {"long_unbroken_run"}),
        "hex_in_sentence": (f"The checksum is {hexs} as reported.", {"long_unbroken_run"}),
        "identical_lines": ("\n".join(["Click here to subscribe to our newsletter!"] * 20), {"repetition"}),
        "repeated_5gram": ("buy cheap watches online now " * 15, {"repetition"}),
        "random_symbols": (sym, {"non_text_ratio"}),
        "whitespace": (" \n\t\u3000 ", {"empty_text"}),
        "ansi_escapes": ("\x1b[1mbold\x1b[0m and \x1b[31mred\x1b[0m output from a terminal", {"control_chars"}),
        "utf8_binary": (blob.decode("utf-8", errors="replace"),
                        {"control_chars", "mojibake", "non_text_ratio", "long_unbroken_run"}),
        # Latin-1 decoded binary is ~1/3 symbols, just under max_ratio; controls and lead+continuation pairs
        # catch it instead.
        "latin1_binary": (blob.decode("latin-1"), {"control_chars", "mojibake", "long_unbroken_run"}),
        "chatml_leak": ("Sure, done.<|im_end|>\n<|im_start|>user\nThanks", {"special_tokens"}),
        "looping_reply": ("I'm sorry. " * 8, {"repetition"}),
    }


def test_planted_positives_exact_flags():
    cases = planted()
    rows = [text for text, _ in cases.values()]
    outs = {name: run(name, rows) for name in CHECKS}
    for i, (key, (_, want)) in enumerate(cases.items()):
        got = {name for name in CHECKS if outs[name].flagged[i]}
        assert got == want, f"{key}: flagged by {sorted(got)}, expected {sorted(want)}"


# ------------------------------------------------------------------------------------------------ real corpora

def load_webdataset(data: Path) -> list[str]:
    with tarfile.open(data / "webdataset" / "testgz.tar") as tar:
        return [gzip.decompress(tar.extractfile(m).read()).decode("utf-8")
                for m in tar.getmembers() if m.name.endswith(".txt.gz")]


def load_shakespeare(data: Path) -> list[str]:
    raw = (data / "corpora" / "tinyshakespeare.txt").read_text(encoding="utf-8")
    return [p for p in re.split(r"\n[ \t]*\n", raw) if p.strip()]


def flag_rates(docs: list[str]) -> dict[str, float]:
    arr = pa.array(docs, type=pa.string())
    return {name: float(run(name, arr).flagged.mean()) for name in CHECKS}


def test_webdataset_false_positive_rates(shared_data):
    docs = load_webdataset(shared_data)
    assert len(docs) == 1000
    rates = flag_rates(docs)
    for name in GARBAGE_CHECKS:
        assert rates[name] < 0.005, (name, rates[name])
    assert rates["empty_text"] == 0.0
    # GPT-2 samples: ~7% genuinely loop (repeated paragraphs/sentences); Gopher's thresholds catch those.
    assert rates["repetition"] < 0.10, rates["repetition"]


def test_shakespeare_false_positive_rates(shared_data):
    docs = load_shakespeare(shared_data)
    assert len(docs) > 7000
    rates = flag_rates(docs)
    for name in CHECKS:
        assert rates[name] < 0.005, (name, rates[name])


def main() -> None:
    if not SHARED_DATA.is_dir():
        sys.exit(SHARED_MISSING)
    corpora = {"webdataset/testgz.tar": load_webdataset(SHARED_DATA),
               "tinyshakespeare paragraphs": load_shakespeare(SHARED_DATA)}
    for label, docs in corpora.items():
        arr = pa.array(docs, type=pa.string())
        print(f"{label}: {len(docs)} docs, {sum(map(len, docs)):,} chars")
        for name in CHECKS:
            out = run(name, arr)
            k = int(out.flagged.sum())
            print(f"  {name:18s} {k:4d} flagged = {100 * k / len(docs):.2f}%")
    docs = corpora["tinyshakespeare paragraphs"]
    arr, chars = pa.array(docs, type=pa.string()), sum(map(len, docs))
    for name in CHECKS:
        run(name, arr)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for name in CHECKS:
            REGISTRY[name].fn(arr, **REGISTRY[name].params)
        best = min(best, time.perf_counter() - t0)
    print(f"all {len(CHECKS)} checks, tinyshakespeare paragraphs, best of 5: {best * 1e3:.0f} ms = "
          f"{len(docs) / best:,.0f} rows/s, {chars / best / 1e6:.1f} M chars/s")
    for name in CHECKS:
        t0 = time.perf_counter()
        REGISTRY[name].fn(arr, **REGISTRY[name].params)
        print(f"  {name:18s} {1e3 * (time.perf_counter() - t0):6.1f} ms")


if __name__ == "__main__":
    main()


def test_long_unbroken_run_skips_markdown_rules_but_not_blobs_beside_them():
    from dataaudit.checks.text import long_unbroken_run

    table = "| a | b |\n|" + "-" * 60 + "|" + ":" + "-" * 60 + ":|\n| 1 | 2 |"
    rule = "Intro\n" + "=" * 150 + "\nbody"
    blob = "|" + "-" * 60 + "|\n" + "QUJD" * 40
    out = long_unbroken_run(pa.array([table, rule, blob]))
    assert out.flagged.tolist() == [False, False, True]
    assert out.value.tolist()[2] == 160.0
    assert out.detail[2].startswith("longest run without whitespace: 160 chars (max 100): QUJDQUJD")


def test_details_show_a_statistic_beyond_its_threshold_with_enough_decimals():
    from dataaudit.checks.text_common import beyond

    assert [beyond(0.1612, 0.16), beyond(0.16004, 0.16), beyond(0.77, 0.2), beyond(0.5, 0.35)] == \
        ["0.161", "0.16004", "0.77", "0.50"]


def test_char_lengths_are_measured_once_per_array():
    """A batch's texts are measured once for empty_text, empty_reply and the length statistics: the same array
    object gives the same read-only lengths, others are measured on their own."""
    import pyarrow as pa

    from dataaudit.checks.text_common import char_lengths
    texts, assistant = pa.array(["ab", None, "中文x", ""]), pa.array([], pa.string())
    first = char_lengths(texts)
    assert first.tolist() == [2, 0, 3, 0] and char_lengths(assistant).tolist() == []
    assert char_lengths(texts) is first and not first.flags.writeable
    same_values = pa.array(["ab", None, "中文x", ""])
    assert char_lengths(same_values) is not first and char_lengths(same_values).tolist() == [2, 0, 3, 0]
    assert char_lengths(texts.slice(2)).tolist() == [3, 0]
