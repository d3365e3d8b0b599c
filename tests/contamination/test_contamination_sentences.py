"""Items shorter than n words match as whole sentences of a training record, never as the start of a longer one."""
from __future__ import annotations

import json
from dataclasses import replace

import pyarrow as pa
import pyarrow.parquet as pq

from dataaudit.contamination.config import ContaminationConfig
from dataaudit.contamination.load import load_benchmark
from dataaudit.contamination.sentences import ends_a_sentence, sentence_flags
from dataaudit.pipelines.contamination import run_contamination
from dataaudit.pipelines.engine import EngineOptions
from tests.paths import shared_file

COLD = "What happens if you go outdoors in cold weather?"
WET_HAIR = "What happens if you go outdoors in cold weather with wet hair?"
# min_item_words 1: these test the sentence rule of every item under n words; the stricter rule of items under
# min_item_words is tested in test_contamination_short_items.py
CONFIG = replace(ContaminationConfig(), max_matches=20, min_item_words=1)


def _scan(tmp_path, bench, docs: list[str]) -> tuple[dict, dict]:
    train = tmp_path / "train.parquet"
    pq.write_table(pa.table({"text": docs}), train)
    report = run_contamination([str(train)], [bench], CONFIG, tmp_path / "out", options=EngineOptions("local"))
    rows = {r["id"]: r for r in pq.read_table(tmp_path / "out" / bench.name / "items.parquet").to_pylist()}
    return report, rows


def _run(tmp_path, items: list[str], docs: list[str]) -> tuple[dict, dict]:
    path = tmp_path / "bench.jsonl"
    path.write_text("".join(json.dumps({"id": f"i{k}", "text": t}) + "\n" for k, t in enumerate(items)))
    return _scan(tmp_path, load_benchmark("bench", str(path)), docs)


def _keys(row: dict) -> list[int]:
    return sorted(int(m["key"]) for m in row["matches"])


def test_short_item_is_not_matched_inside_a_longer_question(tmp_path):
    # (each record is long enough not to be a MinHash near-copy of the item: only whole-text matching is tested)
    docs = [f"Winter care. {WET_HAIR} Your hair can freeze.", f"So {COLD.lower()} Nobody says.",
            "Winter notes. " + COLD.replace("?", ", really?")]
    report, rows = _run(tmp_path, [COLD, WET_HAIR], docs)
    cold, wet = rows["i0"], rows["i1"]
    assert (cold["train_records"], cold["exact_records"], cold["ngram_found"]) == (0, 0, 0)
    assert not cold["contaminated"]
    assert cold["matches"] == []
    assert (wet["train_records"], wet["exact_records"], wet["contaminated"]) == (1, 1, True) and _keys(wet) == [0]
    assert report["benchmarks"]["bench"]["contaminated"] == 1


def test_real_short_benchmark_item_inside_a_longer_question(tmp_path):
    # ARC-Challenge question stems (no choices), many shorter than 13 words: matched on their whole text
    bench = load_benchmark("arc", str(shared_file("benchmarks/arc_challenge_test.jsonl")), fields=("question.stem",))
    item = bench.ids.index("Mercury_SC_413240")
    stem = bench.texts[item]
    assert stem == "At which temperature does water freeze?"
    blank = bench.texts[bench.ids.index("Mercury_SC_405086")]
    assert blank == "Snow, rain, hail, and fog are all forms of"         # stops mid-sentence: its answer follows
    docs = ["Lab notes. At which temperature does water freeze in a salty ocean? It is lower.",
            "Lab notes. At which temperature does water freeze? It is 0 C.",
            "Quiz. Snow, rain, hail, and fog are all forms of water. Next.",
            "We saw snow, rain, hail, and fog are all forms of water. Next."]
    report, rows = _scan(tmp_path, bench, docs)
    row = rows["Mercury_SC_413240"]
    assert (row["train_records"], row["exact_records"], row["contaminated"]) == (1, 1, True) and _keys(row) == [1]
    row = rows["Mercury_SC_405086"]
    assert (row["train_records"], row["exact_records"], row["contaminated"]) == (1, 1, True) and _keys(row) == [2]
    assert report["benchmarks"]["arc"]["items"] == 1172 and report["benchmarks"]["arc"]["contaminated"] == 2


LEAKS = [
    f"Winter is here. {COLD} Many people wonder.",                                # mid-paragraph
    f"{COLD} Read on.",                                                           # document start
    f"A common question. {COLD}",                                                 # document end
    f"Question one. {COLD} Question two: why?",                                   # another sentence follows
    f'She asked. "{COLD}" Nobody knew.',                                          # inside quotes
    "Winter.   WHAT happens  if you\tgo outdoors in COLD weather!  Brr.",         # case, spacing, final mark
    f"Questions:\n- Why is the sky blue?\n- {COLD[:-1]}\n- Why do cats purr?",    # own line in a list
    COLD.lower()[:-1],                                                            # the whole document
    f"Q: {COLD}\nA: You may feel cold.",                                          # after a label
    f"第一句。 {COLD[:-1]}？ 第二句。",                                                # CJK sentence marks
]
NOT_LEAKS = [
    f"Winter care. {WET_HAIR}",                                                   # a longer question
    f"So {COLD.lower()} Nobody says.",                                            # a longer sentence, left
    "Winter notes. " + COLD.replace("?", ", really?"),                            # a longer sentence, right
    "Winter notes. " + COLD.replace("?", "… or not?"),                            # an ellipsis ends nothing
]


def test_every_whole_sentence_occurrence_is_found(tmp_path):
    _, rows = _run(tmp_path, [COLD], LEAKS + NOT_LEAKS)
    r = rows["i0"]
    assert _keys(r) == list(range(len(LEAKS)))
    assert (r["train_records"], r["exact_records"], r["ngram_found"], r["contaminated"]) == (10, 10, 1, True)


def test_two_sentence_item_matches_the_two_sentences_in_a_row(tmp_path):
    item = "Tom has three apples. He eats one."
    docs = ["Start. Tom has three apples. He eats one. How many are left?",
            "Tom has three apples.\nHe eats one.",
            "Tom has three apples. He eats one slowly.",
            "Sadly Tom has three apples. He eats one.",
            "Tom has three apples. Then he eats one."]
    _, rows = _run(tmp_path, [item], docs)
    assert _keys(rows["i0"]) == [0, 1] and rows["i0"]["exact_records"] == 2


def test_item_that_stops_mid_sentence_needs_only_the_sentence_start(tmp_path):
    items = ["The capital of France is", "The capital of France is?", "Capital of France."]
    docs = ["Geography. The capital of France is Paris. Next.", "Facts: the capital of France is\nParis",
            "Well the capital of France is Paris. Next.", "The capital of France is. Capital of France?"]
    _, rows = _run(tmp_path, items, docs)
    # items 0 and 1 are one key (same normalized text): the item that stops mid-sentence sets the rule for both
    assert [_keys(rows[i]) for i in ("i0", "i1", "i2")] == [[0, 1, 3], [0, 1, 3], [3]]


def test_record_holding_the_sentinel_characters_keeps_its_matches(tmp_path):
    # the marks are Unicode noncharacters; a record that holds them is matched as before, not silently dropped
    _, rows = _run(tmp_path, ["Cold weather."], ["so cold weather \ufdd0 here", "Yes. Cold weather here."])
    assert _keys(rows["i0"]) == [0]


def test_sentence_flags_per_word():
    texts = ['Tips. Go "out?" he asked: really… Q: yes\n- one\n\n1. two', None, "a.b c?d e", "你好。 世界！\u3000再见"]
    words, start, end = sentence_flags(pa.array(texts))
    # tips go out he asked really q yes one 1 two | ab cd e | 你好 世界 再见
    assert words.count.tolist() == [11, 0, 3, 3]
    assert start.astype(int).tolist() == [1, 1, 0, 1, 0, 1, 0, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1]
    assert end.astype(int).tolist() == [1, 0, 1, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1]


def test_which_items_end_a_sentence():
    texts = ["Why?", 'He said "stop."  ', "forms of", "Is it (yes)?)", "这是什么？", "a: b:", "end…", None]
    assert ends_a_sentence(pa.array(texts)).tolist() == [True, True, False, True, True, False, False, False]


def test_markdown_emphasis_closes_a_sentence_like_a_quote(tmp_path):
    # chat data bolds its questions: "**Question?** Answer" is a whole sentence followed by another
    docs = [f"Winter notes. **{COLD}** Your hair can freeze in minutes.",
            f"Winter notes. *{COLD}* Your hair can freeze in minutes.",
            f"**Q:** {COLD} Your hair can freeze in minutes.",
            f"Winter notes. __{COLD}__\nYour hair can freeze in minutes.",
            f"Winter notes. **{COLD[:-1]} with wet hair?** Your hair can freeze."]
    report, rows = _run(tmp_path, [COLD], docs)
    assert _keys(rows["i0"]) == [0, 1, 2, 3]
