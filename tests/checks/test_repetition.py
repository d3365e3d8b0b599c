"""The `repetition` check on structured text and degenerate generations (dataaudit/checks/text_repetition.py).

Code, tables, lists, JSON, YAML and markdown must not be flagged; a model looping on a sentence or a line must
be, also in a text too short for the Gopher n-gram statistics. On plain prose the statistics stay exactly
datatrove's. The synthetic texts live in tests/checks/repetition_cases.py (run it as a script for the counts on
the real corpora and the throughput).
"""
from __future__ import annotations

import json
import random
import re
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dataaudit.checks import REGISTRY
from dataaudit.checks.text_common import char_lengths
from dataaudit.checks import text_repetition
from dataaudit.checks.text_repetition import RUN_GAP, repetition_stats, split_lines
from tests.checks.repetition_cases import DEGENERATE, STRUCTURED, real_corpora, shakespeare_chunks
from tests.checks.test_text_checks import _reference_stats, load_shakespeare, load_webdataset, run
from tests.paths import needs_shared

GOPHER_ONLY = {"skip_structure": False, "max_repeats": 0, "min_words": 0,     # datatrove's statistics and flags
               "answer_words": 0, "max_word_repeats": 0}


def test_params():
    p = REGISTRY["repetition"].params
    assert (p["max_repeats"], p["min_repeat_chars"], p["skip_structure"], p["min_words"]) == (5, 5, True, 150)
    assert RUN_GAP == 3


# ------------------------------------------------------------------------------------- synthetic structure

def test_structured_texts_are_not_flagged():
    out = run("repetition", list(STRUCTURED.values()))
    assert dict(zip(STRUCTURED, out.value.tolist())) == dict.fromkeys(STRUCTURED, 0.0)
    assert not out.flagged.any()
    # what the plain Gopher statistics make of them (the false positives this module removes)
    before = run("repetition", list(STRUCTURED.values()), **GOPHER_ONLY)
    assert [k for k, f in zip(STRUCTURED, before.flagged) if f] == [
        "c_file", "markdown_table", "bullet_list", "numbered_list", "json", "yaml_config"]


# n-gram ratios of a text under min_words (150) words count x words/150; under answer_words (200) a duplicated
# n-gram fraction also counts against answer_dup_frac (0.3)
DEGENERATE_EXPECTED = {
    "sorry_x8": (8 / 5, "sentence_run=8 > 5 (+1 more): 'I'm sorry'"),
    "sentence_x8": (0.7109375 / 0.3, "dup_6_gram=0.71 > 0.14 (+7 more)"),
    "line_x10": (324 / 370 / 0.20, "dup_line_char_frac=0.88 > 0.2 (+2 more)"),   # short lines: items
    "chinese_sentence_x6": (6 / 5, "sentence_run=6 > 5: '对不起，我无法回答这个问题'"),
    "alternating_x6": (2.09009009009009, "dup_10_gram=0.65 > 0.1 (+6 more)"),
    "list_item_x8": (0.728 / 0.20, "dup_line_char_frac=0.73 > 0.2 (+2 more)"),
    "looping_tail": (0.5572755417956656 / 0.3, "dup_8_gram=0.56 > 0.12 (+7 more)"),
    "identical_lines_x20": (4.644935972060535, "dup_line_char_frac=0.93 > 0.2 (+2 more)"),
    "repeated_5gram_x15": (2.586206896551724, "top_4_gram=0.83 > 0.16 (+8 more)"),
}


def test_degenerate_texts_are_flagged_exactly():
    assert list(DEGENERATE) == list(DEGENERATE_EXPECTED)
    out = run("repetition", list(DEGENERATE.values()))
    assert out.flagged.all()
    for i, (key, (value, detail)) in enumerate(DEGENERATE_EXPECTED.items()):
        assert out.value[i] == pytest.approx(value), key
        assert out.detail[i] == detail, key
    # the Chinese loop (no spaces: one "word") is caught by the sentence runs alone
    gopher = run("repetition", list(DEGENERATE.values()), max_repeats=0)
    assert [k for k, f in zip(DEGENERATE, gopher.flagged) if not f] == ["chinese_sentence_x6"]


# ------------------------------------------------------------------------------------------ sentence runs

def runs(texts, **kw) -> list[int]:
    stats = repetition_stats(pa.array(texts, type=pa.string()), top_ns=(), dup_ns=(), lines=False, repeats=True,
                             skip_structure=kw.pop("skip_structure", True), **kw)
    return stats["sentence_run"].astype(int).tolist()


def test_sentence_run_boundaries():
    assert runs(["I'm sorry. " * 5, "I'm sorry. " * 6, "I'm sorry.", "", None]) == [5, 6, 0, 0, 0]
    flagged = run("repetition", ["I'm sorry. " * 5, "I'm sorry. " * 6]).flagged.tolist()
    assert flagged == [False, True]                         # more than max_repeats occurrences
    # each occurrence within RUN_GAP sentences of the previous one (short sentences hold their place)
    assert runs(["Stop it now. x1. x2. Stop it now. x3. x4. Stop it now.",
                 "Stop it now. x1. x2. x3. Stop it now. x4. x5. x6. Stop it now.",
                 "Stop it now. A. B. C. D. E. F. Stop it now! Stop it now? Stop it now."]) == [3, 0, 3]
    # a word (or two or three) said more than max_word_repeats (10) times in a row, without punctuation
    prose = ("The harbour was quiet when the first boats came back. Gulls circled over the nets while the old "
             "captain counted the crates twice. ")
    out = run("repetition", [prose + "And he said " + "no " * 11 + "and left.", prose + "She said no no no.",
                             prose + "go on " * 11 + "now.", prose + "go on " * 10 + "now."])
    assert out.flagged.tolist() == [True, False, True, False]
    assert out.detail[0] == "word_run=11 > 10: one to three words said 11 times in a row"
    assert out.value.tolist()[:3] == pytest.approx([1.1, 0.2, 1.1])          # "no." is another word
    # sentences shorter than min_repeat_chars do not count; a CJK character counts as two (it is a word)
    assert runs(["Yes. " * 10, "Yes!\n" * 10]) == [0, 0]
    assert runs(["我很好。" * 8, "你好！" * 8]) == [8, 0]      # widths 6 and 4
    assert runs(["Yes. " * 10], min_repeat_chars=3) == [10]
    # compared exactly after trimming (only the two "Sorry" make a run); closing quotes stay with their end
    assert runs(["Sorry. sorry. SORRY. Sorry.", '"No way!" "No way!" "No way!"']) == [2, 3]
    # Chinese sentence ends
    assert runs(["好的。好的！好的？好的", "我明白了。 我明白了！\n我明白了"], min_repeat_chars=2) == [4, 3]


def test_sentence_run_detail_names_the_first_longest_run():
    text = "Intro text here. " + "Go left. " * 3 + "Middle part here. " + "Go right now. " * 7
    out = run("repetition", [text])
    assert out.detail[0] == "sentence_run=7 > 5: 'Go right now'"
    stats = repetition_stats(pa.array([text + "Go left. " * 7]), repeats=True, skip_structure=True)
    assert stats["sentence_run"][0] == 7 and stats.repeated_text(0) == "Go right now"   # first of the ties


def _py_runs(text: str, min_chars: int) -> int:
    """Pure-Python sentence runs (no structure: every non-empty line is cut into sentences)."""
    sents = []
    for line in text.split("\n"):
        for s in re.split(r"[.!?\u2026]+[\"'\u201d\u2019\u00bb)\]]*(?:\s+|$)|[\u3002\uff01\uff1f]+[\u201d\u2019"
                          r"\u300d\u300f\uff09]*\s*", line.strip()):
            if s.strip():
                sents.append(s.strip())
    best, last, length = 0, {}, {}
    for pos, s in enumerate(sents):
        if (len(s) + len(s.encode())) // 2 < min_chars:     # a CJK character counts as two
            continue
        length[s] = length[s] + 1 if s in last and pos - last[s] <= RUN_GAP else 1
        last[s] = pos
        best = max(best, length[s])
    return best if best >= 2 else 0


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from(["go", "stop it", "no way", "好的", "I'm sorry", "x"]),
                                   st.sampled_from([". ", "! ", "? ", "。", "\n", " ", "... ", ".\n"])),
                         max_size=30), max_size=6),
       st.sampled_from([1, 3, 5]))
def test_sentence_runs_match_reference(docs, min_chars):
    texts = ["".join(w + sep for w, sep in d) for d in docs]
    assert runs(texts, min_repeat_chars=min_chars, skip_structure=False) == [_py_runs(t, min_chars) for t in texts]


# ---------------------------------------------------------------------------------------- line classes

@pytest.mark.parametrize("twin", [False, True], ids=["numba", "arrow"])
def test_line_classes_exact(monkeypatch, twin):
    if twin:
        monkeypatch.setenv("DATAAUDIT_NO_NUMBA", "1")
    monkeypatch.setattr(text_repetition, "CODE_SHARE", 2.0)    # the lines one by one (no text is a code file)
    docs = [
        "\n".join([
            "The quick brown fox jumps.",        # 0 prose
            "```python",                         # 1 fence            counted nowhere
            "x = compute(1)",                    # 2 fenced code
            "```",                               # 3 fence
            "| a | b |",                         # 4 table row
            '"name": "value",',                  # 5 JSON key
            "}",                                 # 6 code (and symbols)
            "- an item of the list",             # 7 list item: a line and sentences, not words
            "ROMEO:",                            # 8 label: sentences only
            "## Usage notes",                    # 9 heading
            "",                                  # 10 blank
            "return value",                      # 11 code (return statement)
            "image: nginx",                      # 12 key: value
            "---",                               # 13 symbols in a text with code: counted nowhere
        ]),
        "Prose line.\n...\n1. " + "word " * 60,  # no code: "..." counts as in Gopher; a long item is prose
    ]
    arr = pa.array(docs)
    lines = split_lines(arr, char_lengths(arr), skip_structure=True)
    assert lines.doc.tolist() == [0] * 14 + [1] * 3
    L, W, S = lines.lines.tolist(), lines.words.tolist(), lines.sentences.tolist()
    #         0  1  2  3  4  5  6  7  8  9  10 11 12 13 | 0  1  2
    assert L == [1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1]
    assert W == [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1]
    assert S == [1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 1, 0, 1, 0, 1]
    assert lines.line_text(7) == "an item of the list" and lines.line_text(16).startswith("word word")
    # len(text) without the lines counted nowhere (1-6, 11, 13) and their "\n": the rest joined by "\n"
    kept = "\n".join(["The quick brown fox jumps.", "- an item of the list", "ROMEO:", "## Usage notes", "",
                      "image: nginx"])
    assert lines.kept_chars.tolist() == [len(kept), len(docs[1])]
    plain = split_lines(arr, char_lengths(arr), skip_structure=False)
    assert plain.lines.tolist() == plain.words.tolist() == plain.sentences.tolist() == [
        bool(s.strip()) for d in docs for s in d.split("\n")]


def test_unclosed_fence_runs_to_the_end_of_its_text_only(monkeypatch):
    monkeypatch.setattr(text_repetition, "CODE_SHARE", 2.0)
    docs = ["Intro.\n```\nprint(1)\nprint(1)\nprint(1)", "print(1)\nprint(1)\nplain words\nplain words"]
    arr = pa.array(docs)
    lines = split_lines(arr, char_lengths(arr), skip_structure=True)
    assert lines.lines.tolist() == [True, False, False, False, False, False, False, True, True]
    stats = repetition_stats(arr, skip_structure=True)
    assert stats["dup_line_frac"].tolist() == [0.0, 0.5]
    assert stats["dup_line_char_frac"][1] == pytest.approx(11 / len("plain words\nplain words"))


def test_prose_gets_datatrove_numbers():
    """On text without structure, skip_structure changes nothing: the reference is datatrove's definition. (Blocks
    of short lines are structure, tested apart: these random lines are mostly short.)"""
    rng = random.Random(3)
    vocab = ["a", "bb", "ccc", "the", "of", "dddd", "é", "训练", "x1", "yy", "Ok,", "word."]
    docs = []
    for _ in range(200):
        k = rng.choice([0, 1, 3, 12, 30, 60, 120])
        words = [rng.choice(vocab[: rng.randint(2, len(vocab))]) for _ in range(k)]
        seps = [rng.choice([" ", " ", " ", "\n", "  ", "\t", "\n\n"]) for _ in range(k)]
        docs.append("".join(w + s for w, s in zip(words, seps)))
    for min_words in (0, 10):
        stats = repetition_stats(pa.array(docs), min_words=min_words, skip_structure=True, block_lines=0)
        for i, d in enumerate(docs):
            for key, val in _reference_stats(d, min_words).items():
                assert stats[key][i] == pytest.approx(val), (key, i, d)


def test_disabling_everything_and_min_chars():
    rows = ["I'm sorry. " * 8, STRUCTURED["c_file"]]
    off = {k: 0 for k in REGISTRY["repetition"].params if k not in ("min_words", "min_chars", "skip_structure")}
    out = run("repetition", rows, **off)
    assert not out.flagged.any() and out.value.tolist() == [0.0, 0.0]
    assert run("repetition", rows, min_chars=100).flagged.tolist() == [False, False]


# ------------------------------------------------------------------------------------------ real corpora

@needs_shared
def test_real_corpora_false_positives(shared_data):
    corpora = real_corpora(shared_data)
    counts, gopher = {}, {}
    for label, docs in corpora.items():
        counts[label] = int(run("repetition", docs).flagged.sum())
        gopher[label] = int(run("repetition", docs, **GOPHER_ONLY).flagged.sum())
    # tool-call JSON, chat turns with code and lists, a play's speaker lines, short word problems: no longer flagged
    assert gopher == {"gsm8k question+answer": 292, "glaive conversations[].value": 17, "glaive tools (JSON)": 124,
                      "v1_sft turns": 19, "tinyshakespeare 2000-char chunks": 15}
    assert counts == {"gsm8k question+answer": 0, "glaive conversations[].value": 0, "glaive tools (JSON)": 0,
                      "v1_sft turns": 0, "tinyshakespeare 2000-char chunks": 0}


@needs_shared
def test_gsm8k_questions_not_flagged(shared_data):
    """50-160-word word problems reuse a phrase ("how many", "pressed on the doorbell") 2-4 times: clean."""
    rows = (shared_data / "benchmarks" / "gsm8k_test.jsonl").read_text(encoding="utf-8").splitlines()
    questions = [json.loads(r)["question"] for r in rows if r.strip()]
    assert len(questions) == 1319
    assert int(run("repetition", questions).flagged.sum()) == 0
    # Gopher's fractions as they are
    assert int(run("repetition", questions, min_words=0, answer_words=0).flagged.sum()) == 127


@needs_shared
def test_real_looping_generations_still_flagged(shared_data):
    """The WebDataset passages are GPT-2 samples, ~7% of which loop: the long ones stay flagged, nothing new is
    (the 13 no longer flagged: structure, or under 150 words, or an 85-word advert with one line said twice: its
    duplicated n-grams cover 0.23 of it, under answer_dup_frac)."""
    docs = load_webdataset(shared_data)
    new = set(np.flatnonzero(run("repetition", docs).flagged))
    old = set(np.flatnonzero(run("repetition", docs, **GOPHER_ONLY).flagged))
    assert (len(old), len(new)) == (71, 58) and new <= old
    paragraphs = load_shakespeare(shared_data)
    assert int(run("repetition", paragraphs).flagged.sum()) == 0
    # whole plays in 20,000-character pieces: the longest sentence run anywhere is 3
    raw = (shared_data / "corpora" / "tinyshakespeare.txt").read_text(encoding="utf-8")
    assert max(runs(shakespeare_chunks(raw, 20000))) == 3


KENNEL = ("The Kennel house keeps 3 German Shepherds and 2 Bulldogs. If a German Shepherd consumes 5 kilograms of "
          "dog food and a bulldog consumes 3 kilograms of dog food per day. How many kilograms of dog food will they "
          "need in a week?\n\nThe German Shepherds consume 3 x 5 = <<3*5=15>>15 kilograms of dog food per day.\nThe "
          "Bulldogs consume 2 x 3 = <<2*3=6>>6 kilograms of dog food per day.\nThe dogs can consume a total of 15 + 6 "
          "= <<15+6=21>>21 kilograms of dog food per day.\nTherefore, they need 21 x 7 = <<21*7=147>>147 kilograms of "
          "dog food in a week.\n#### 147")


def test_a_question_and_its_worked_answer_as_one_text_is_not_a_loop():
    """A GSM8K question and answer as one text (97 words): "kilograms of dog food" is 0.27 of its characters, its
    phrasing rather than a loop. Its worked steps, one per line, are a block of short lines: items, whose words
    the n-gram statistics do not count (the question's 43 words are left: top_4_gram 0.114 x 43/150 / 0.16)."""
    out = run("repetition", [KENNEL])
    assert out.flagged.tolist() == [False]
    assert out.value[0] == pytest.approx(0.1143 * 43 / 150 / 0.16, abs=1e-3)


def test_a_short_text_needs_answer_dup_frac_on_its_top_ngram():
    """The same steps as one paragraph: under answer_words words the top 2/3/4-gram fractions, like the duplicated
    ones, must also cover answer_dup_frac (0.3); a short text looping a clause still goes over."""
    paragraph = KENNEL.replace(".\nThe", ". The").replace(".\nTherefore", ". Therefore")
    out = run("repetition", [paragraph, "The answer is 147 kilograms of dog food. "
                             + "They need 147 kilograms of dog food per week and " * 6])
    assert out.flagged.tolist() == [False, True]
    assert out.value[0] == pytest.approx(0.8893, abs=1e-4)      # top_4_gram 0.2668 / answer_dup_frac 0.3
    assert out.detail[1] == "dup_7_gram=0.58 > 0.13 (+6 more)"
    assert run("repetition", [paragraph], answer_dup_frac=0).detail[0] == "top_4_gram=0.27 > 0.16"


# ARC-Challenge items from ../shared/data/benchmarks/arc_challenge_test.jsonl as one text, the choices unmarked: each
# choice restates the stem ("sand in water is a" four times: dup_7_gram 0.40 of the text)
SAND = ("What will happen after stirring sand in a glass of water?\n"
        "The sand will dissolve in the water because sand in water is a solution.\n"
        "The sand will dissolve in the water because sand in water is a mixture.\n"
        "The sand will settle to the bottom because sand in water is a solution.\n"
        "The sand will settle to the bottom because sand in water is a mixture.")
GRAVITY = ("Which of the following actions will increase the gravitational force between two masses, m_{1} and "
           "m_{2}, by the greatest amount?\n"
           "Halve the mass of m_{1} and halve the distance between m_{1} and m_{2}.\n"
           "Halve the mass of m_{1} and double the distance between m_{1} and m_{2}.\n"
           "Double the mass of m_{1} and halve the distance between m_{1} and m_{2}.\n"
           "Double the mass of m_{1} and double the distance between m_{1} and m_{2}.")


def test_multiple_choice_options_without_markers_are_list_items():
    assert run("repetition", [SAND, GRAVITY]).flagged.tolist() == [False, False]
    # the same options in one paragraph are a looping text by every statistic: still flagged
    one_line = run("repetition", [SAND.replace("\n", " "), GRAVITY.replace("\n", " ")])
    assert one_line.flagged.tolist() == [True, True]
    assert one_line.detail.tolist() == ["dup_7_gram=0.40 > 0.13 (+5 more)", "dup_6_gram=0.40 > 0.14 (+1 more)"]
    # block_lines=0 (the pretrain profile's: a web document's short lines are counted) brings back Gopher's reading
    assert run("repetition", [SAND, GRAVITY], block_lines=0).flagged.tolist() == [True, True]


@pytest.mark.parametrize("twin", [False, True], ids=["numba", "arrow"])
def test_short_line_blocks_exact(monkeypatch, twin):
    """BLOCK_LINES (3) or more consecutive lines of under BLOCK_WORDS (25) words, in one text, are items: lines and
    sentences, not words. A blank line, a long line, a label or the text's end ends a block."""
    if twin:
        monkeypatch.setenv("DATAAUDIT_NO_NUMBA", "1")
    long = " ".join(["word"] * 25)
    docs = ["one\ntwo\nthree\n\nfour\nfive\n" + long + "\nsix",     # a block of 3, then 2 and 1 apart
            "a\nb",                                                   # 2 lines: no block (none across texts)
            "c\nd\nROMEO:\ne\nf\ng\n" + " ".join(["w"] * 24)]        # a label breaks; 24 words is short
    arr = pa.array(docs)
    lines = split_lines(arr, char_lengths(arr), skip_structure=True)
    #                               one two three _ four five long six | a b | c d ROMEO: e f g w*24
    assert lines.words.tolist() == [0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0]
    assert lines.lines.tolist() == [1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1]
    assert lines.sentences.tolist() == [1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]


def test_duplicated_lines_of_a_short_text_coming_back_in_a_row_or_spread_out():
    """Under answer_words words, duplicated lines must cover answer_dup_frac (0.3) when none comes back within
    RUN_GAP sentences (a chorus sung twice); lines repeating in a row keep Gopher's 0.2."""
    verse = ["Walking down the road tonight", "Stars are shining very bright", "Holding on to what we know"]
    verse2 = ["Rivers running to the sea", "Carry all our hopes with me"]
    chorus = ["Sing it loud and sing it clear", "Everyone is gathered here"]
    spread = "\n".join(verse + chorus + verse2 + chorus)
    in_row = "\n".join(verse + chorus + chorus + verse2)
    out = run("repetition", [spread, in_row])
    stats = repetition_stats(pa.array([spread, in_row]), skip_structure=True, repeats=True)
    dlc = stats["dup_line_char_frac"]
    assert dlc[0] == dlc[1] and 0.2 < dlc[0] < 0.3
    assert stats["sentence_run"].tolist() == [0, 2]
    assert out.flagged.tolist() == [False, True]
    assert out.value[0] == pytest.approx(2 / 9 / 0.3)          # dup_line_frac 2/9 over 0.3: dlc / 0.3 is smaller
    assert out.value[1] == pytest.approx(dlc[1] / 0.2)


@pytest.mark.parametrize("space", ["\u1680", "\u2000", "\u2009", "\u202f", "\u205f", "\u3000", "\u00a0", "\u2028"])
def test_every_unicode_space_separates_words_like_a_space(space):
    fn = REGISTRY["repetition"].fn
    params = REGISTRY["repetition"].params
    words = [f"word{k}" for k in range(60)]
    looping = " ".join(words[:6] * 10)
    texts = [looping, looping.replace(" ", space), " ".join(words), " ".join(words).replace(" ", space)]
    out = fn(pa.array(texts), **params)
    assert list(out.flagged) == [True, True, False, False]
    assert out.value[1] == pytest.approx(out.value[0]) and out.value[3] == pytest.approx(out.value[2])


# ------------------------------------------------------------------------------------------------ code files

def test_stdlib_modules_not_flagged():
    """Every top-level module of the Python standard library (168 files in 3.11.7), whole files as texts."""
    files = sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py"))
    docs = [f.read_text(encoding="utf-8", errors="replace") for f in files]
    if sys.version_info[:3] == (3, 11, 7):
        assert len(docs) == 168
    assert len(docs) >= 100
    assert [f.name for f, flag in zip(files, run("repetition", docs).flagged) if flag] == []


def _generated_code() -> dict[str, str]:
    """Code that repeats lines, calls and docs by nature, in five languages."""
    params = "\n".join(f"    {p} : int\n        The {p} of the window, in pixels." for p in ("width", "height"))
    py = "\n\n".join(f'def resize_{k}(image, width, height):\n    """Resize {k}.\n\n    Parameters\n'
                     f'    ----------\n{params}\n    """\n    check(image)\n'
                     f'    return _resize(image, width, height, mode="{k}")'
                     for k in ("nearest", "bilinear", "bicubic", "lanczos", "box", "hamming"))
    c = "static int op(int code)\n{\n    switch (code) {\n" + "".join(
        f"    case {k}:\n        return handle(code, {k});\n" for k in range(40)) + (
        "    default:\n        break;\n    }\n}\n")
    js = "\n".join(f"export function get{k}(id) {{\n  const row = table.get(id);\n  if (!row) {{\n    return null;\n  }}\n"
                   f"  return row.{k.lower()};\n}}\n" for k in ("Name", "Size", "Owner", "Date", "Kind", "Path"))
    go = "package main\n\nimport \"fmt\"\n\n" + "\n".join(
        f"func step{k}() error {{\n\tif err := run({k}); err != nil {{\n\t\treturn err\n\t}}\n\treturn nil\n}}\n"
        for k in range(12))
    table = "CODES = {\n" + "".join(f"    0x{k:04x}: 0x{k + 0x400:04x},  # CYRILLIC LETTER NUMBER {k}\n"
                                    for k in range(64)) + "}\n"
    return {"python": py, "c_switch": c, "javascript": js, "go": go, "codec_table": table}


def test_generated_code_not_flagged():
    code = _generated_code()
    assert run("repetition", list(code.values())).flagged.tolist() == [False] * 5
    # what Gopher's statistics make of them
    gopher = run("repetition", list(code.values()), **GOPHER_ONLY)
    assert [k for k, f in zip(code, gopher.flagged) if f] == ["python", "c_switch", "javascript", "go",
                                                              "codec_table"]
