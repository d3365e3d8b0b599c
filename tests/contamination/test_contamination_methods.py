"""The three methods on hand-made data with exactly known answers; kernels equal their numpy twins."""
from __future__ import annotations

import json
import os
from dataclasses import replace

import datasketch
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dataaudit.cli import main
from dataaudit.contamination import grams
from dataaudit.contamination.config import ContaminationConfig, ExactSettings, MinhashSettings, NgramSettings
from dataaudit.contamination.grams import (HashSet, build_lookup, join_hyphen_breaks, kgram_hits,
                                          normalize_for_contamination)
from dataaudit.contamination.load import load_benchmark
from dataaudit.textops import fold_ngrams, ngram_hash_of, normalize, word_hash_of, word_ngram_hashes, word_tokens
from dataaudit.pipelines.contamination import run_contamination
from dataaudit.pipelines.engine import EngineOptions

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
         "quebec romeo sierra tango uniform victor whiskey xray yankee zulu amber birch cedar dune").split()
ITEM30 = " ".join(WORDS[:30])


def _run(tmp_path, items: list[str], docs: list[str], config=None, name="bench"):
    tmp_path.mkdir(parents=True, exist_ok=True)
    bench = tmp_path / f"{name}.jsonl"
    bench.write_text("".join(json.dumps({"id": f"i{k}", "text": t}) + "\n" for k, t in enumerate(items)))
    train = tmp_path / "train.parquet"
    pq.write_table(pa.table({"text": docs}), train)
    b = load_benchmark(name, str(bench))
    report = run_contamination([str(train)], [b], config or ContaminationConfig(), tmp_path / "out",
                               options=EngineOptions("local"), decontaminate_train=True)
    rows = {r["id"]: r for r in pq.read_table(tmp_path / "out" / name / "items.parquet").to_pylist()}
    return report, rows


def test_partial_overlap_fraction_and_threshold(tmp_path):
    words = ITEM30.split()
    docs = ["zzz " + " ".join(words[:20]) + " yyy", "nothing to see here"]
    _, rows = _run(tmp_path / "a", [ITEM30], docs)
    r = rows["i0"]
    assert (r["ngram_total"], r["ngram_found"]) == (18, 8)          # 30 - 13 + 1 grams; 20 - 13 + 1 found
    assert r["ngram_fraction"] == pytest.approx(8 / 18) and not r["ngram_contaminated"]   # below 0.5
    assert r["exact_records"] == 0 and not r["contaminated"] and r["train_records"] == 1
    assert [(m["key"], m["shared"], m["exact"]) for m in r["matches"]] == [("0", 8, False)]
    cfg = replace(ContaminationConfig(), ngram=NgramSettings(threshold=0.4))
    report, rows = _run(tmp_path / "b", [ITEM30], docs, cfg)
    assert rows["i0"]["contaminated"] and rows["i0"]["methods"] == ["ngram"]
    assert report["methods"]["ngram"]["threshold"] == 0.4


def test_fraction_is_over_the_whole_corpus(tmp_path):
    words = ITEM30.split()
    docs = [" ".join(words[:20]), "other words " + " ".join(words[10:]) + " end"]
    _, rows = _run(tmp_path, [ITEM30], docs)
    r = rows["i0"]
    assert r["ngram_found"] == 16 and r["ngram_record_fraction"] == pytest.approx(8 / 18)
    assert r["ngram_contaminated"] and not r["exact_contaminated"] and r["train_records"] == 2


def test_exact_ignores_case_punctuation_and_spacing(tmp_path):
    item = "The quick-brown fox, it said, jumps over the lazy dog near the river bank today."
    doc = "Before. THE QUICK-BROWN FOX -- it said\n jumps over the lazy dog... near the river bank today! After."
    _, rows = _run(tmp_path, [item], [doc])
    r = rows["i0"]
    assert r["exact_records"] == 1 and r["ngram_fraction"] == 1.0
    assert r["methods"] == ["ngram", "exact", "minhash"]      # the record is (nearly) the item alone
    m = r["matches"][0]
    assert m["snippet"][m["match_start"]:m["match_end"]] == \
        "THE QUICK-BROWN FOX -- it said\n jumps over the lazy dog... near the river bank today!"
    # "quick-brown" is one word once punctuation is removed (as in lm-evaluation-harness): not "quick brown"
    _, rows = _run(tmp_path / "b", [item], [doc.replace("QUICK-BROWN", "QUICK BROWN")])
    assert not rows["i0"]["contaminated"] and rows["i0"]["exact_records"] == 0


def test_short_item_matches_its_whole_text_only(tmp_path):
    items = ["Which gas do plants absorb?", "Which gas do plants emit?"]
    docs = ["Students asked: which gas do PLANTS absorb? The teacher smiled.", "which gas do plants"]
    report, rows = _run(tmp_path, items, docs)
    # 5 words: under min_item_words (8), found but listed as a short item, not counted
    assert rows["i0"]["short_found"] and not rows["i0"]["contaminated"]
    assert rows["i0"]["ngram_total"] == 1 and rows["i0"]["exact_records"] == 1
    assert [m["key"] for m in rows["i0"]["matches"]] == ["0"]
    assert not rows["i1"]["contaminated"] and rows["i1"]["train_records"] == 0 and not rows["i1"]["short_found"]
    assert any("fewer than 13 words" in n for n in report["notes"])
    short = report["benchmarks"]["bench"]["short_items"]
    assert (short["items"], short["found"], short["counted"], [w["id"] for w in short["listed"]]) == \
        (2, 1, False, ["i0"])
    assert report["totals"]["contaminated"] == 0 and report["totals"]["short_items_found"] == 1
    _, rows = _run(tmp_path / "counted", items, docs, replace(ContaminationConfig(), count_short_items=True))
    assert rows["i0"]["contaminated"] and not rows["i1"]["contaminated"]


def test_empty_items_are_reported_not_matched(tmp_path):
    report, rows = _run(tmp_path, ["?!", "", ITEM30], ["?!", "", "x " + ITEM30])
    assert rows["i0"]["empty"] and rows["i1"]["empty"] and not rows["i2"]["empty"]
    for i in ("i0", "i1"):
        assert not rows[i]["contaminated"] and rows[i]["train_records"] == 0 and rows[i]["matches"] == []
    assert rows["i2"]["contaminated"]
    assert report["totals"]["empty_items"] == 2 and report["benchmarks"]["bench"]["empty"] == 2
    # empty items are not contaminated, so they stay in the clean subset
    assert len((tmp_path / "out" / "bench" / "clean.jsonl").read_text().splitlines()) == 2


def test_ngram_size_override(tmp_path):
    item = " ".join(WORDS[:10])                        # shorter than 13: whole text; with n = 8: three 8-grams
    docs = [" ".join(WORDS[:8]) + " nope"]
    cfg = ContaminationConfig().with_overrides(ngram=8)
    report, rows = _run(tmp_path, [item], docs, cfg)
    assert report["methods"]["ngram"]["n"] == 8
    assert (rows["i0"]["ngram_total"], rows["i0"]["ngram_found"]) == (3, 1) and not rows["i0"]["contaminated"]


def test_methods_can_be_switched_off(tmp_path):
    words = ITEM30.split()
    docs = [" ".join(words[:25]), ITEM30]
    cfg = replace(ContaminationConfig(), ngram=NgramSettings(enabled=False), minhash=MinhashSettings(enabled=False))
    report, rows = _run(tmp_path, [ITEM30], docs, cfg)
    r = rows["i0"]
    assert r["methods"] == ["exact"] and r["train_records"] == 1 and [m["key"] for m in r["matches"]] == ["1"]
    assert r["ngram_found"] == 0 and not r["ngram_contaminated"]
    assert report["benchmarks"]["bench"]["methods"] == {"ngram": None, "exact": 1, "minhash": None}
    cfg = replace(ContaminationConfig(), exact=ExactSettings(False), minhash=MinhashSettings(enabled=False))
    _, rows = _run(tmp_path / "b", [ITEM30], docs, cfg)
    assert rows["i0"]["methods"] == ["ngram"] and rows["i0"]["exact_records"] == 0


def _datasketch_estimate(a: str, b: str, n: int = 5, num_perm: int = 128) -> float:
    sigs = []
    for text in (a, b):
        w = normalize(pa.array([text]), strip_punct=True).to_pylist()[0].split()
        m = datasketch.MinHash(num_perm=num_perm, seed=1, hashfunc=ngram_hash_of, scheme="legacy")
        for i in range(len(w) - n + 1):
            m.update(" ".join(w[i:i + n]))
        sigs.append(m)
    return sigs[0].jaccard(sigs[1])


def test_minhash_finds_near_copies_with_the_datasketch_estimate(tmp_path):
    item = " ".join(f"{w}{k}" for k, w in enumerate(WORDS * 2))     # 60 distinct words
    near = item.split()
    near[30] = "CHANGED"
    near = " ".join(near)
    far = " ".join(WORDS[:12]) + " " + " ".join(reversed(WORDS))
    expected = _datasketch_estimate(item, near)
    assert 0.8 <= expected < 1.0
    cfg = replace(ContaminationConfig(), ngram=NgramSettings(threshold=1.0), exact=ExactSettings(False))
    _, rows = _run(tmp_path, [item], [near, far], cfg)
    r = rows["i0"]
    assert r["minhash_jaccard"] == pytest.approx(expected, abs=1e-6)
    assert r["methods"] == ["minhash"]                  # not all n-grams found, exact off
    assert [(m["key"], m["minhash"] is not None) for m in r["matches"]] == [("0", True)]


def test_results_do_not_depend_on_batch_size(tmp_path):
    docs = [f"doc {k} " + (ITEM30 if k % 7 == 3 else " ".join(WORDS[k % 5: k % 5 + 14])) for k in range(60)]
    items = [ITEM30, " ".join(WORDS[:14]), " ".join(WORDS[2:16]), "lone short item"]
    _run(tmp_path / "big", items, docs)
    _run(tmp_path / "small", items, docs, replace(ContaminationConfig(), batch_rows=4, max_matches=3))
    _run(tmp_path / "mid", items, docs, replace(ContaminationConfig(), batch_rows=9, max_matches=3))
    def rows(name):   # (each run has its own training file: compare without the shard path)
        out = pq.read_table(tmp_path / name / "out" / "bench" / "items.parquet").to_pylist()
        for r in out:
            for m in r["matches"] + [r["longest_record"] or {}]:
                m.pop("shard", None)
        return out

    big, small = rows("big"), rows("small")
    assert small == rows("mid")
    for b, s in zip(big, small):
        assert b["matches"][:3] == s["matches"] and {k: v for k, v in b.items() if k != "matches"} == \
            {k: v for k, v in s.items() if k != "matches"}
    # every document shares 13-grams with ITEM30; the 9 holding all of it rank first (then by MinHash estimate)
    top = big[0]["matches"]
    assert big[0]["train_records"] == 60 and big[0]["exact_records"] == 9 and len(top) == 5
    assert {m["key"] for m in top} <= {str(k) for k in range(3, 60, 7)}
    assert all(m["exact"] and m["shared"] == 18 for m in top)
    assert [m["minhash"] for m in top] == sorted((m["minhash"] for m in top), reverse=True)


def test_html_escapes_benchmark_and_training_text(tmp_path):
    item = "<script>alert('x')</script> " + " ".join(WORDS[:20])
    docs = ["<b>bold</b> " + item + " <img src=x onerror=alert(1)>"]
    _run(tmp_path, [item], docs)
    html = (tmp_path / "out" / "contamination.html").read_text()
    assert "<script>" not in html and "<img" not in html and "<b>bold" not in html
    assert "&lt;script&gt;" in html and "&lt;img src=x" in html


def test_unreadable_training_shard_is_reported_and_exits_1(tmp_path):
    bench = tmp_path / "b.jsonl"
    bench.write_text(json.dumps({"text": ITEM30}) + "\n")
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"text": "unrelated"}) + "\n")
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 this is not parquet PAR1")
    result = CliRunner().invoke(main, ["contamination", "--train", str(good), str(bad),
                                       "--benchmark", f"b={bench}", "--out", str(tmp_path / "out")])
    assert result.exit_code == 1, result.output
    report = json.loads((tmp_path / "out" / "contamination.json").read_text())
    assert report["totals"]["contaminated"] == 0 and report["totals"]["unreadable_shards"] == 1
    assert [s["status"] for s in report["train"]["shards"]] == ["ok", "unreadable"]
    assert report["train"]["shards"][1]["error"]


# ------------------------------------------------------------------------------------------ kernels

_ALPHABET = ["a", "b", "é", "e\u0301", " ", "  ", "\t", "\n", "\x0b", "\x1c", "\x85", "\xa0", "\u1680", "\u2000",
             "\u200a", "\u200b", "\u2028", "\u202f", "\u205f", "\u3000", "\u180e", "!", ".", "-", "’", "字", "😀",
             "\ufeff", "\x00", "Ж"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.lists(st.sampled_from(_ALPHABET), max_size=40).map("".join)),
                max_size=25), st.integers(0, 5))
@example(["a-\na"], 0)          # a word hyphenated across a line break is one word (join_hyphen_breaks)
def test_kernels_equal_numpy_twins_and_textops(texts, start):
    arr = pa.array(texts, pa.string())[min(start, len(texts)):]
    norm = normalize_for_contamination(arr)
    ref = word_ngram_hashes(normalize(join_hyphen_breaks(arr), strip_punct=True), 1)
    tk = word_tokens(norm)
    py = [(d, word_hash_of(w)) for d, t in enumerate(norm.to_pylist()) for w in (t or "").split()]
    assert tk.doc.tolist() == [d for d, _ in py] and tk.hash.tolist() == [h for _, h in py]
    assert grams.kernels() is not None or os.environ.get("DATAAUDIT_NO_NUMBA")
    saved = os.environ.get("DATAAUDIT_NO_NUMBA")
    try:
        os.environ["DATAAUDIT_NO_NUMBA"] = "1"                  # the numpy twins (textops' and grams')
        assert grams.kernels() is None
        tn = word_tokens(norm)
        assert np.array_equal(tk.hash, tn.hash) and np.array_equal(tk.doc, tn.doc)
        assert np.array_equal(tk.hash, ref.hash) and np.array_equal(tk.doc, ref.doc)
        sets = {}
        for k in (1, 2, 4):
            g = fold_ngrams(tn.hash, tn.doc, len(arr), k)
            sets[k] = HashSet(g.hash[::2])
        lk = build_lookup(sets)
        h_np = kgram_hits(tn, lk)
    finally:
        if saved is None:
            os.environ.pop("DATAAUDIT_NO_NUMBA", None)
        else:
            os.environ["DATAAUDIT_NO_NUMBA"] = saved
    h_k = kgram_hits(tk, lk)
    assert h_k.keys() == h_np.keys()
    for k in h_k:
        assert np.array_equal(h_k[k][0], h_np[k][0]) and np.array_equal(h_k[k][1], h_np[k][1])


def test_kgram_hashes_are_textops_ngram_hashes():
    tokens = word_tokens(normalize_for_contamination(pa.array(["One two, THREE four", "five six"])))
    lk = build_lookup({3: HashSet(np.array([ngram_hash_of("two three four")], np.uint64)),
                       2: HashSet(np.array([ngram_hash_of("five six"), ngram_hash_of("four five")], np.uint64))})
    hits = kgram_hits(tokens, lk)
    assert {k: v[0].tolist() for k, v in hits.items()} == {3: [1], 2: [4]}   # no 2-gram across documents


def test_the_page_and_the_summary_name_the_files_to_open_next(tmp_path):
    bench = tmp_path / "gsm.jsonl"
    bench.write_text(json.dumps({"text": ITEM30}) + "\n" + json.dumps({"text": "an unrelated question"}) + "\n")
    train = tmp_path / "train.jsonl"
    train.write_text(json.dumps({"text": "x " + ITEM30 + " y"}) + "\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["contamination", "--train", str(train), "--benchmark", f"gsm={bench}",
                                       "--out", str(out), "--decontaminate-train"])
    assert result.exit_code == 1, result.output
    # one line, never wrapped inside a path, whatever the terminal's width
    [written] = [line for line in result.output.splitlines() if line.startswith("wrote ")]
    assert written == (f"wrote {out / 'contamination.json'}, {out / 'contamination.html'}, {out / 'clean_ids.json'}, "
                       f"{out / 'gsm' / 'items.parquet'}, "
                       f"{out / 'gsm' / 'clean.jsonl'}, {out / 'decontaminate.parquet'} (1 record)")
    assert "BENCHMARK" not in result.output
    html = (out / "contamination.html").read_text()
    for name in ("gsm/items.parquet", "gsm/clean.jsonl", "decontaminate.parquet", "contamination.json",
                 "clean_ids.json"):
        assert f"<code>{name}</code>" in html
