"""Per item, per leak form: real GSM8K and ARC-Challenge items planted in real tinyshakespeare text in every form
(question only, with the answer, with every choice, Question:/Answer: scaffolding, case and whitespace changed,
hard-wrapped, mid-paragraph) are found with exactly the input / answer / choices flags planted; the ARC preset
matches the stem only; clean_ids.json lists the other items."""
from __future__ import annotations

import json
import textwrap
from dataclasses import replace

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from dataaudit.cli import main
from dataaudit.contamination.config import ContaminationConfig, NgramSettings
from dataaudit.contamination.load import load_benchmark
from dataaudit.pipelines.contamination import run_contamination
from dataaudit.pipelines.engine import EngineOptions
from tests.paths import shared_file


def _respace(text: str) -> str:
    seps = ["  ", "\n", " \t ", "   ", "\t"]
    return "".join(w + seps[i % len(seps)] for i, w in enumerate(text.split())).upper()


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def real():
    gsm = load_benchmark("gsm8k", str(shared_file("benchmarks/gsm8k_test.jsonl")))
    arc = load_benchmark("arc_challenge", str(shared_file("benchmarks/arc_challenge_test.jsonl")))
    text = shared_file("corpora/tinyshakespeare.txt").read_text(encoding="utf-8")
    paras = [p for p in text.split("\n\n") if p.strip()]
    return gsm, arc, paras


def _forms(q: str, answer: str, choices: list[str], before: str, after: str) -> dict[str, str]:
    lettered = "\n".join(f"{'ABCD'[i]}. {c}" for i, c in enumerate(choices))
    return {
        "question": q,
        "question_answer": f"{q}\n{answer}",
        "question_choices": f"{q}\n{lettered}",
        "scaffold": f"Question: {q}\n{lettered}\nAnswer: {answer}" if choices else f"Question: {q}\nAnswer: {answer}",
        "case_whitespace": _respace(f"{q} {answer}"),
        "hard_wrapped": textwrap.fill(f"{_flat(before)} {q} {_flat(answer)}", 70),
        "mid_paragraph": f"{_flat(before)} {q} {_flat(answer)} {_flat(after)}",
    }


# form -> (answer flag, choices flag) expected; None: the benchmark has no choices
EXPECTED = {"question": (False, False), "question_answer": (True, False), "question_choices": (False, True),
            "scaffold": (True, True), "case_whitespace": (True, False), "hard_wrapped": (True, False),
            "mid_paragraph": (True, False)}


def test_every_leak_form_is_found_with_its_flags(real, tmp_path):
    gsm, arc, paras = real
    hosts = [p for p in paras if p.rstrip().endswith(".") and len(p.split()) > 20]
    docs = list(paras[:300])                       # real text around the planted records
    planted = {}                                   # (benchmark, id) -> form
    for name, b in (("gsm8k", gsm), ("arc_challenge", arc)):
        for k, form in enumerate(EXPECTED):
            if form == "question_choices" and name == "gsm8k":
                continue
            answer = b.answers[k][1] if name == "gsm8k" else b.answers[k][0]   # GSM8K: the worked solution
            docs.append(_forms(b.texts[k], answer, b.choices[k] or [], hosts[k], hosts[k + 1])[form])
            planted[(name, b.ids[k])] = form
    train = tmp_path / "train.jsonl"
    train.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs))
    report = run_contamination([str(train)], [gsm, arc], ContaminationConfig(), tmp_path / "out",
                               options=EngineOptions("local"))
    for name in ("gsm8k", "arc_challenge"):
        rows = pq.read_table(tmp_path / "out" / name / "items.parquet").to_pylist()
        got = {r["id"]: (r["input_contaminated"], r["answer_contaminated"], r["choices_contaminated"])
               for r in rows if r["contaminated"] or r["train_records"]}
        want = {i: (True, *EXPECTED[f]) for (n, i), f in planted.items() if n == name}
        if name == "gsm8k":
            want = {i: (a, b_, None) for i, (a, b_, _) in want.items()}       # GSM8K has no choices
        assert got == want, name
    assert report["benchmarks"]["gsm8k"]["leaks"] == {"input": 6, "answer": 5, "choices": None}
    assert report["benchmarks"]["arc_challenge"]["leaks"] == {"input": 7, "answer": 5, "choices": 2}
    # the longest contiguous copy: the whole item, in its training record
    rows = {r["id"]: r for r in pq.read_table(tmp_path / "out" / "gsm8k" / "items.parquet").to_pylist()}
    r = rows[gsm.ids[1]]
    assert r["longest_words"] == r["words"] and r["longest_record"]["row"] == 301
    assert r["methods"] == ["ngram", "exact"]


def test_arc_preset_queries_the_stem_as_lm_eval(real):
    _, arc, _ = real
    # lm-eval arc_challenge: doc_to_decontamination_query "Question: {{question}}\nAnswer:" -> the stem only
    assert arc.preset == "arc" and arc.fields == ("question.stem",)
    assert arc.texts[0] == ("An astronomer observes that a planet rotates faster after a meteorite impact. Which is "
                            "the most likely effect of this increase in rotation?")
    assert arc.choices[0] == ["Planetary density will decrease.", "Planetary years will become longer.",
                              "Planetary days will become shorter.", "Planetary gravity will become stronger."]
    assert arc.answers[0] == ["Planetary days will become shorter.", "Answer: C", "answer is C"]


def test_longest_match_scoring(tmp_path):
    item = " ".join(f"w{i}" for i in range(30))
    # two records with words 0-20 and 9-29: every 13-gram is in the corpus (fraction 1.0), the longest copy is
    # 21 of the 30 words (0.7)
    docs = ["x " + " ".join(f"w{i}" for i in range(21)), "y " + " ".join(f"w{i}" for i in range(9, 30))]
    bench = tmp_path / "b.jsonl"
    bench.write_text(json.dumps({"id": "a", "text": item}) + "\n")
    (tmp_path / "t.jsonl").write_text("".join(json.dumps({"text": d}) + "\n" for d in docs))
    for score, threshold, want in (("fraction", 0.9, True), ("longest", 0.9, False), ("longest", 0.7, True)):
        cfg = replace(ContaminationConfig(), ngram=NgramSettings(threshold=threshold, score=score))
        out = tmp_path / f"{score}{threshold}"
        run_contamination([str(tmp_path / "t.jsonl")], [load_benchmark("b", str(bench))], cfg, out,
                          options=EngineOptions("local"))
        (r,) = pq.read_table(out / "b" / "items.parquet").to_pylist()
        assert (r["ngram_contaminated"], r["longest_words"]) == (want, 21), (score, threshold)


def test_clean_ids_json(real, tmp_path):
    gsm, arc, _ = real
    docs = [gsm.texts[4], f"Quiz. {arc.texts[2]}", "Who are you?\nI am an assistant."]
    (tmp_path / "t.jsonl").write_text("".join(json.dumps({"text": d}) + "\n" for d in docs))
    tqa = tmp_path / "truthfulqa.jsonl"
    tqa.write_text(json.dumps({"question": "Who are you?"}) + "\n" + json.dumps({"question": "Why?"}) + "\n")
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["contamination", "--train", str(tmp_path / "t.jsonl"), "--benchmark",
                                    f"gsm8k={shared_file('benchmarks/gsm8k_test.jsonl')}", "--benchmark",
                                    f"arc_challenge={shared_file('benchmarks/arc_challenge_test.jsonl')}",
                                    "--benchmark", f"truthfulqa={tqa}", "--out", str(out), "--engine", "local"])
    assert res.exit_code == 1, res.output
    assert "clean_ids.json" in res.output
    c = json.loads((out / "clean_ids.json").read_text())["benchmarks"]
    g, a, t = c["gsm8k"], c["arc_challenge"], c["truthfulqa"]
    assert (g["id_field"], g["id_is"], g["items"], g["clean"]) == (None, "line number", 1319, 1318)
    assert g["rows"] == [i for i in range(1319) if i != 4] and g["ids"] == [str(i + 1) for i in g["rows"]]
    assert g["path"].endswith("gsm8k_test.jsonl") and g["short_items_found"] == []
    assert (a["id_field"], a["id_is"], a["clean"]) == ("id", "field", 1171)
    assert arc.ids[2] not in a["ids"] and a["ids"] == [arc.ids[i] for i in a["rows"]] and 2 not in a["rows"]
    assert (t["ids"], t["rows"], t["short_items_found"]) == (["1", "2"], [0, 1], ["1"])


def test_ngram_8_finds_a_copy_with_one_word_changed_that_13_grams_miss(tmp_path):
    words = [f"w{i}" for i in range(30)]
    edited = words[:15] + ["changed"] + words[16:]
    bench = tmp_path / "b.jsonl"
    bench.write_text(json.dumps({"id": "a", "text": " ".join(words)}) + "\n")
    (tmp_path / "t.jsonl").write_text(json.dumps({"text": "x " + " ".join(edited)}) + "\n")
    got = {}
    for n in ("13", "8"):
        out = tmp_path / n
        res = CliRunner().invoke(main, ["contamination", "--train", str(tmp_path / "t.jsonl"), "--benchmark",
                                        f"b={bench}", "--out", str(out), "--ngram", n, "--engine", "local"])
        (r,) = pq.read_table(out / "b" / "items.parquet").to_pylist()
        got[n] = (res.exit_code, r["ngram_found"], r["ngram_total"], r["contaminated"])
    # 13-grams: the 5 of 18 that avoid word 15; 8-grams: the 15 of 23 (0.65 >= 0.5)
    assert got == {"13": (0, 5, 18, False), "8": (1, 15, 23, True)}


def test_a_compound_hyphenated_at_a_hard_wrap_is_one_word(real, tmp_path):
    from dataaudit.contamination.grams import join_hyphen_breaks
    from dataaudit.contamination.snippet import word_spans
    import pyarrow as pa

    assert join_hyphen_breaks(pa.array(["water-\ncycle", "well-\r\n  known", "X-\nRay", "a -\nb", None])).to_pylist() \
        == ["watercycle", "wellknown", "X-\nRay", "a -\nb", None]
    _, arc, _ = real
    i = arc.ids.index("Mercury_417150")
    stem = arc.texts[i]
    assert "water-cycle" in stem
    # textwrap breaks on hyphens: "water-" ends a line, "cycle" starts the next
    wrapped = "The tide came in. " + stem.replace("water-cycle", "water-\ncycle")
    (tmp_path / "t.jsonl").write_text(json.dumps({"text": wrapped}) + "\n")
    run_contamination([str(tmp_path / "t.jsonl")], [arc], ContaminationConfig(), tmp_path / "out",
                      options=EngineOptions("local"))
    rows = {r["id"]: r for r in pq.read_table(tmp_path / "out" / "arc_challenge" / "items.parquet").to_pylist()}
    r = rows["Mercury_417150"]
    assert r["contaminated"] and r["exact_records"] == 1
    m = r["matches"][0]
    assert m["snippet"][m["match_start"]:m["match_end"]] == wrapped[len("The tide came in. "):]
    assert [wrapped[a:b] for a, b in word_spans(wrapped)][-12:-10] == ["water-\ncycle", "processes"]
