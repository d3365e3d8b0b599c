"""The pretraining quality rules (gopher_quality, c4_quality, fineweb_quality, doc_length, char_class_ratio), the
spaCy English word split they share, and the profiles that turn them on.

Every expected decision below is datatrove's (checked with datatrove 0.10.1 / spaCy 3.8.18 when written); the
parity test at the end compares with datatrove itself when benchmarks/setup_bench.sh has installed it."""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from click.testing import CliRunner

from dataaudit.checks import REGISTRY
from dataaudit.cli import main
from dataaudit.config import ConfigError, build_config
from dataaudit.profiles import PRETRAIN_QUALITY, PROFILES
from dataaudit.textops import spacy_en
from tests.paths import REPO, SHARED_DATA, have_shared

SENT = "The quick brown fox jumps over the lazy dog and that is all."
GOOD = " ".join([SENT] * 6)


def run(name: str, docs: list, **params):
    spec = REGISTRY[name]
    return spec.fn(pa.array(docs, pa.string()), **{**spec.params, **params})


def outcome(name: str, docs: list, **params) -> list:
    out = run(name, docs, **params)
    return [(bool(f), round(float(v), 4), out.detail[i] if out.detail is not None else None)
            for i, (f, v) in enumerate(zip(out.flagged, out.value))]


# ------------------------------------------------------------------------------------------ the word split

@pytest.mark.parametrize("text, words, sentences", [
    ("Don't stop, U.S. citizens (e.g., Mr. Smith) paid $10.50 at 10am...",
     ["Do", "n't", "stop", ",", "U.S.", "citizens", "(", "e.g.", ",", "Mr.", "Smith", ")", "paid", "$", "10.50",
      "at", "10", "am", "..."], 1),
    # a match of the special cases across chunks (": x" is the emoticon ":x") hides "x." inside "x.B"
    ("lambda x: x.B / x.A", ["lambda", "x", ":", "x", ".", "B", "/", "x.", "A"], 2),
    ("val[:] = f(x):", ["val", "[:", "]", "=", "f(x", "):"], 1),
    ("看到了，你好。我们走吧！", ["看到了，你好。我们走吧", "！"], 1),
    ("", [], 1),
])
def test_spacy_english_split(text, words, sentences):
    assert spacy_en.words(text) == words
    assert spacy_en.sentences(text) == sentences
    st = spacy_en.chunk_stats(pa.array([text, None, text]))
    assert st.per_text("tokens").tolist() == [len(words), 0, len(words)]
    assert spacy_en.sentence_counts(pa.array([text])).tolist() == [sentences]


def test_space_class_is_python_isspace():
    assert {chr(c) for c in spacy_en.SPACE_CPS} == {chr(c) for c in range(0x110000) if chr(c).isspace()}


# ------------------------------------------------------------------------------------------ gopher_quality

GOPHER = [
    ("pass", GOOD, (False, 0.0, None)),
    ("short", SENT, (True, 13.0, "gopher: non-symbol words 13 < 50 (gopher_short_doc)")),
    ("below_avg", " ".join(["I am at a b c of the and to be."] * 10),
     (True, 1.8182, "gopher: mean word length 1.82 < 3 (gopher_below_avg_threshold)")),
    ("above_avg", " ".join(["extraordinarily incomprehensibilities the and"] * 20),
     (True, 10.5, "gopher: mean word length 10.50 > 10 (gopher_above_avg_threshold)")),
    ("hashes", GOOD + " #" * 20, (True, 0.1923, "gopher: '#' per word 0.19 > 0.1 (gopher_too_many_hashes)")),
    ("ellipsis", GOOD + " wait..." * 12,
     (True, 0.1111, "gopher: ellipses per word 0.11 > 0.1 (gopher_too_many_ellipsis)")),
    ("bullets", "\n".join(["- " + SENT] * 10),
     (True, 1.0, "gopher: share of lines starting with a bullet 1 > 0.9 (gopher_too_many_bullets)")),
    ("end_ellipsis", "\n".join([SENT[:-1] + "..."] * 5 + [SENT] * 5),
     (True, 0.5, "gopher: share of lines ending with an ellipsis 0.50 > 0.3 (gopher_too_many_end_ellipsis)")),
    ("alpha", GOOD + " " + " ".join(map(str, range(1, 24))),
     (True, 0.729, "gopher: share of words with a letter 0.73 < 0.8 (gopher_below_alpha_threshold)")),
    ("stop_words", " ".join(["Quick brown foxes jump over lazy dogs daily."] * 10),
     (True, 0.0, "gopher: distinct stop words 0 < 2 (gopher_enough_stop_words)")),
]


def test_gopher_rules():
    got = outcome("gopher_quality", [doc for _, doc, _ in GOPHER])
    assert got == [want for _, _, want in GOPHER]


def test_gopher_params_and_null():
    assert outcome("gopher_quality", [GOOD], max_doc_words=60) == [
        (True, 78.0, "gopher: non-symbol words 78 > 60 (gopher_long_doc)")]
    assert outcome("gopher_quality", [SENT], min_doc_words=0, min_stop_words=0) == [(False, 0.0, None)]
    assert outcome("gopher_quality", [None])[0][2] == "gopher: non-symbol words 0 < 50 (gopher_short_doc)"


# ------------------------------------------------------------------------------------------ c4_quality

LINE = "This line is a sentence. It has two sentences."
C4 = [
    ("pass", "\n".join([LINE] * 3), (False, 6.0, None)),
    ("few", "\n".join([LINE, "Short one.", "no punctuation here at all", LINE]),
     (True, 4.0, "c4: 4 sentences in the kept lines < 5 (too_few_sentences); the line rules remove 2 of 4 lines "
                 "(no_terminal_punct 1, too_few_words 1)")),
    ("lorem", "\n".join([LINE, "Lorem ipsum dolor sit amet.", LINE, LINE]),
     (True, 6.0, "c4: line 2 holds 'lorem ipsum' (lorem_ipsum)")),
    ("curly", "\n".join([LINE, "The map is {a: 1} in code.", LINE, LINE]),
     (True, 6.0, "c4: line 2 holds '{' (curly_bracket)")),
    # a line naming javascript is removed before the "{" rule sees it: the document is kept
    ("javascript", "\n".join([LINE, "Enable JavaScript {now} to see it.", LINE, LINE]), (False, 6.0, None)),
]


def test_c4_rules():
    got = outcome("c4_quality", [doc for _, doc, _ in C4])
    assert got == [want for _, _, want in C4]


def test_c4_citations_and_switches():
    # "[1]" is removed before the terminal punctuation test; without remove_citations the line ends in "]"
    doc = "\n".join([LINE, "A cited claim is made here.[1]", LINE])
    assert outcome("c4_quality", [doc]) == [(False, 5.0, None)]
    assert outcome("c4_quality", [doc], remove_citations=False)[0][:2] == (True, 4.0)
    assert outcome("c4_quality", [C4[3][1]], filter_curly_bracket=False) == [(False, 7.0, None)]
    assert outcome("c4_quality", [C4[1][1]], min_num_sentences=0) == [(False, 0.0, None)]   # not counted


# ------------------------------------------------------------------------------------------ fineweb_quality

FW = "This is a reasonably long line of text that ends well."
FINEWEB = [
    ("pass", "\n".join(f"{FW} Number {i}." for i in range(5)), (False, 0.0, None)),
    ("empty", " \n\t\n", (True, 0.0, "fineweb: no non-blank line (empty)")),
    ("punct", "\n".join(f"{FW} Number {i}" for i in range(10)),
     (True, 0.0, "fineweb: share of lines ending with terminal punctuation 0.00 < 0.12 (line_punct_ratio)")),
    ("short", "\n".join(["Short line."] * 3 + [f"{FW} 0."]),
     (True, 0.75, "fineweb: share of short lines 0.75 > 0.67 (short_line_ratio)")),
    ("dup", "\n".join([FW] * 3 + [f"{FW} {i}." for i in range(3)]),
     (True, 0.3243, "fineweb: share of characters in duplicated lines 0.32 > 0.01 (char_dup_ratio)")),
    ("list", "\n".join(f"{FW[:40]} {i}." for i in range(5)) + "\n" * 42,
     (True, 0.8364, "fineweb: line breaks per word 0.84 > 0.3 (list_ratio)")),
]


def test_fineweb_rules():
    got = outcome("fineweb_quality", [doc for _, doc, _ in FINEWEB])
    assert got == [want for _, _, want in FINEWEB]


# ------------------------------------------------------------------------------------------ doc_length, char_class_ratio

def test_doc_length():
    assert outcome("doc_length", [GOOD, SENT, None]) == [
        (False, 78.0, None), (True, 13.0, "doc_length: 13 words < 50"), (True, 0.0, "doc_length: 0 words < 50")]
    assert outcome("doc_length", [GOOD], max_chars=100)[0][2] == "doc_length: 365 characters > 100"


def test_char_class_ratio():
    digits = "12345 67890 " * 10
    got = outcome("char_class_ratio", [GOOD, digits, "abcd!!! " * 10, "short 123"])
    assert got[0] == (False, 0.7726, None)
    assert got[1] == (True, 0.0, "char_class_ratio: letter share 0.00 < 0.4")
    assert got[2] == (True, 0.5, "char_class_ratio: punctuation share 0.38 > 0.3")
    assert got[3][0] is False                                           # under min_chars
    assert outcome("char_class_ratio", [digits], min_letter_ratio=0.0)[0][2] == \
        "char_class_ratio: digit share 0.83 > 0.3"


def test_quality_checks_are_off_by_default():
    assert all(not REGISTRY[name].default_enabled for name in PRETRAIN_QUALITY)
    assert all(REGISTRY[name].severity == "warning" for name in PRETRAIN_QUALITY)


# ------------------------------------------------------------------------------------------ profiles

def test_profile_config():
    assert not any(build_config({}).checks[n].enabled for n in PRETRAIN_QUALITY)
    assert build_config({}).profile == "sft"
    pre = build_config({"profile": "pretrain"})
    assert all(pre.checks[n].enabled for n in PRETRAIN_QUALITY) and pre.fingerprint()["profile"] == "pretrain"
    rep = pre.checks["repetition"].params     # web documents: no answer floor, short-line blocks counted
    assert (rep["answer_words"], rep["block_lines"]) == (0, 0)
    assert build_config({}).checks["repetition"].params["block_lines"] == 3
    # the config's own table wins over the profile; --profile wins over the file's key
    over = build_config({"profile": "pretrain", "checks": {"gopher_quality": {"enabled": False}}})
    assert not over.checks["gopher_quality"].enabled and over.checks["c4_quality"].enabled
    assert not build_config({"profile": "pretrain"}, profile="sft").checks["c4_quality"].enabled
    assert set(PROFILES) == {"sft", "pretrain"} and PROFILES["sft"] == {}
    with pytest.raises(ConfigError, match="unknown profile 'web'"):
        build_config({"profile": "web"}, "a.toml")


def _audit(tmp_path, *args):
    shard = tmp_path / "d.jsonl"
    shard.write_text("".join(json.dumps({"text": t}) + "\n" for t in (GOOD, SENT)))
    out = tmp_path / f"out{len(list(tmp_path.iterdir()))}"
    res = CliRunner().invoke(main, ["audit", str(shard), "--out", str(out), "--engine", "local", *args])
    report = json.loads((out / "report.json").read_text()) if (out / "report.json").exists() else None
    return res, report


def test_profile_cli(tmp_path):
    res, report = _audit(tmp_path, "--profile", "pretrain")
    assert res.exit_code == 0, res.output
    assert report["config"]["profile"] == "pretrain"
    assert report["checks"]["gopher_quality"]["ran"] and report["checks"]["gopher_quality"]["flagged"] == 1
    assert report["checks"]["doc_length"]["flagged"] == 1
    res, report = _audit(tmp_path)
    assert report["config"]["profile"] == "sft" and not report["checks"]["gopher_quality"]["ran"]
    assert report["checks"]["gopher_quality"]["skipped"] == "off by default; --profile pretrain enables it"
    config = tmp_path / "a.toml"
    config.write_text('profile = "pretrain"\n[checks.gopher_quality]\nenabled = false\n')
    res, report = _audit(tmp_path, "--config", str(config))
    assert not report["checks"]["gopher_quality"]["ran"] and report["checks"]["c4_quality"]["ran"]
    assert report["checks"]["gopher_quality"]["skipped"] == "disabled in config"
    res, report = _audit(tmp_path, "--profile", "web")
    assert res.exit_code == 2 and report is None
    assert res.output.strip().splitlines() == ["Error: --profile: unknown profile 'web' (known: sft, pretrain)"]


# ------------------------------------------------------------------------------------------ parity with datatrove

def _datatrove(monkeypatch):
    deps = REPO / ".bench-deps"
    if not (deps / "datatrove").is_dir():
        pytest.skip("datatrove is not installed in .bench-deps (bash benchmarks/setup_bench.sh)")
    monkeypatch.syspath_prepend(str(deps))        # for this test only (datatrove imports spaCy when it filters)
    try:
        from loguru import logger
        logger.remove()
        from datatrove.data import Document
        from datatrove.pipeline.filters import C4QualityFilter, FineWebQualityFilter, GopherQualityFilter
    except ImportError as exc:
        pytest.skip(f"datatrove in .bench-deps cannot be imported: {exc}")
    return Document, {"gopher_quality": GopherQualityFilter(), "c4_quality": C4QualityFilter(),
                      "fineweb_quality": FineWebQualityFilter()}


def _real_documents() -> list[str]:
    if not have_shared():
        pytest.skip(f"real data folder missing: {SHARED_DATA}")
    raw = (SHARED_DATA / "corpora" / "tinyshakespeare.txt").read_text(encoding="utf-8")
    docs = [raw[i:i + 2000] for i in range(0, 200_000, 2000)]
    for line in (SHARED_DATA / "benchmarks" / "gsm8k_test.jsonl").read_text(encoding="utf-8").splitlines()[:100]:
        r = json.loads(line)
        docs.append(r["question"] + "\n\n" + r["answer"])
    glaive = json.loads((SHARED_DATA / "chat" / "glaive_toolcall_zh_demo.json").read_text(encoding="utf-8"))
    docs += ["\n\n".join(t["value"] for t in r["conversations"]) for r in glaive[:40]]
    docs += [p.read_text(encoding="utf-8") for p in sorted((REPO / "dataaudit").rglob("*.py"))[:80]]
    return docs


def test_parity_with_datatrove(monkeypatch):
    Document, filters = _datatrove(monkeypatch)
    docs = _real_documents()
    assert len(docs) >= 250
    for name, f in filters.items():
        theirs = [f.filter(Document(text=d, id=str(i))) for i, d in enumerate(docs)]
        ours = run(name, docs)
        dropped = np.array([r is not True for r in theirs])
        assert (ours.flagged == dropped).all(), (name, np.flatnonzero(ours.flagged != dropped)[:5])
        for i in np.flatnonzero(dropped):
            assert ours.detail[i].endswith(f"({theirs[i][1]})") or f"({theirs[i][1]});" in ours.detail[i], \
                (name, i, theirs[i], ours.detail[i])


def test_a_huge_unbroken_chunk_is_one_token_not_quadratic_time():
    """Affixes are stripped one at a time (as spaCy does): a 300,000-character run of "(" would take minutes; past
    MAX_CHUNK_CHARS a chunk is one token, and the rules still judge the document."""
    from dataaudit.textops import spacy_en

    chunk = "(" * 300_000
    assert spacy_en.tables().split(chunk) == [chunk]
    assert spacy_en.words("(a)") == ["(", "a", ")"]
    out = run("gopher_quality", ["The quick brown fox jumps over the lazy dog. " * 20 + chunk + " end."])
    assert out.detail.tolist() == ["gopher: distinct stop words 1 < 2 (gopher_enough_stop_words)"]
