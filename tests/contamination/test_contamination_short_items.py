"""Items under min_item_words ("Who are you?") count only as a whole sentence or turn with their own final mark; a
line break inside hard-wrapped prose is no boundary; found short items are listed apart and not counted."""
from __future__ import annotations

import json
import textwrap

import pyarrow as pa
import pyarrow.parquet as pq
from click.testing import CliRunner

from dataaudit.cli import main
from dataaudit.contamination.config import ContaminationConfig
from dataaudit.contamination.load import load_benchmark
from dataaudit.contamination.sentences import end_class, unwrap_hard_breaks
from dataaudit.pipelines.contamination import run_contamination
from dataaudit.pipelines.engine import EngineOptions
from tests.paths import shared_file

WHO = "Who are you?"
# GSM8K test item 0, as a 60-column hard wrap puts it (textwrap.fill)
JANET = ("Janet’s ducks lay 16 eggs per day. She eats three for\nbreakfast every morning and bakes muffins for her "
         "friends\nevery day with four. She sells the remainder at the farmers'\nmarket daily for $2 per fresh duck "
         "egg. How much in dollars\ndoes she make every day at the farmers' market?")


def _run(tmp_path, items: list[str], docs: list[str], config=ContaminationConfig()):
    path = tmp_path / "bench.jsonl"
    path.write_text("".join(json.dumps({"id": f"i{k}", "text": t}) + "\n" for k, t in enumerate(items)))
    train = tmp_path / "train.parquet"
    pq.write_table(pa.table({"text": docs}), train)
    report = run_contamination([str(train)], [load_benchmark("bench", str(path))], config, tmp_path / "out",
                               options=EngineOptions("local"), decontaminate_train=True)
    rows = {r["id"]: r for r in pq.read_table(tmp_path / "out" / "bench" / "items.parquet").to_pylist()}
    return report, rows


def test_hard_wrapped_prose_loses_its_line_breaks_real_boundaries_keep_theirs():
    wrapped = textwrap.fill(JANET.replace("\n", " "), 60)
    assert wrapped == JANET
    turns = "Who are you?\nI am an assistant.\nhi\nHello! How can I help you today?"
    listing = "Questions:\n- Why is the sky blue?\n- What happens if you go outdoors in cold weather\n- Why do cats purr?"
    verse = "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak."
    out = unwrap_hard_breaks(pa.array([JANET, turns, listing, verse, "a\r\nb", None])).to_pylist()
    assert out[0] == JANET.replace("\n", " ")                  # every break of the wrap: lengths kept
    assert out[1:4] == [turns, listing, verse]
    assert out[4] == "a  b" and out[5] is None                 # "b" starts lowercase after "a": a wrap


def test_final_mark_classes():
    assert end_class(pa.array([WHO, "Hello.", "Stop!)", "hi", "Why?!", "是谁？", None])).tolist() == \
        [2, 1, 3, 0, 3, 2, 0]


def test_short_item_needs_a_whole_sentence_with_its_own_mark(tmp_path):
    docs = [f"{WHO}\nI am an AI assistant developed by a lab.",               # 0 a turn of its own
            f"The guard stopped him at the gate. {WHO} I am the new cook, he said.",   # 1 mid-paragraph, answered
            "Who are you to judge the rest of us, she asked.",                # 2 a longer sentence
            "Who are you. That is what I want to know today.",                # 3 another final mark
            "The old man lowered his lantern and turned to the stranger and\nwho are you? he asked the boy at "
            "the door\nwhile the dogs barked at him from the yard behind the house.",   # 4 after a hard wrap
            "Q: who are you?\nA: I am an assistant.",                         # 5 after a label
            "WHO   ARE YOU?"]                                                 # 6 the whole record
    report, rows = _run(tmp_path, [WHO, "hi"], docs + ["hi\nHello! I am an assistant.", "hi there, friend."])
    who, hi = rows["i0"], rows["i1"]
    assert sorted(int(m["key"]) for m in who["matches"]) == [0, 1, 5, 6]
    assert sorted(int(m["key"]) for m in hi["matches"]) == [7]
    assert who["short"] and who["short_found"] and not who["contaminated"]
    assert hi["short"] and hi["short_found"] and not hi["contaminated"]
    assert report["totals"]["contaminated"] == 0 and report["totals"]["short_items_found"] == 2
    assert report["benchmarks"]["bench"]["methods"] == {"ngram": 0, "exact": 0, "minhash": 0}
    assert report["decontaminate"]["records"] == 0


def test_a_question_of_eight_words_is_counted_a_wrapped_one_mid_sentence_is_not(tmp_path):
    item = "Which gas do green plants absorb from the air?"     # 9 words: counted, sentence rules
    docs = ["Biology quiz. Which gas do green plants absorb from the air? Carbon dioxide.",
            "In the lab the teacher wrote on the board a long list of things that\nwhich gas do green plants "
            "absorb from the air? was the first line of the\nworksheet she handed out to all of the students."]
    report, rows = _run(tmp_path, [item], docs)
    r = rows["i0"]
    assert not r["short"] and r["contaminated"] and sorted(int(m["key"]) for m in r["matches"]) == [0]
    assert report["totals"]["contaminated"] == 1


def test_identity_and_chat_data_count_no_short_question(tmp_path):
    # TruthfulQA-like short questions against real SFT identity and chat data: found, listed, not counted, exit 0
    bench = tmp_path / "truthfulqa.jsonl"
    bench.write_text("".join(json.dumps({"question": q, "best_answer": "I am an AI."}) + "\n"
                             for q in (WHO, "What is your name?", "Can you tell me who you are?")))
    identity = str(shared_file("posttrain/identity.json"))
    chat = str(shared_file("chat/v1_sft_demo.jsonl"))
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["contamination", "--train", identity, chat, "--benchmark",
                                    f"truthfulqa={bench}", "--out", str(out), "--engine", "local",
                                    "--decontaminate-train"])
    assert res.exit_code == 0, res.output
    report = json.loads((out / "contamination.json").read_text())
    b = report["benchmarks"]["truthfulqa"]
    assert b["contaminated"] == 0 and report["decontaminate"]["records"] == 0
    assert [w["id"] for w in b["short_items"]["listed"]] == ["1", "2"]     # whole turns of identity.json
    assert "short items" in res.output
    res = CliRunner().invoke(main, ["contamination", "--train", identity, "--benchmark", f"truthfulqa={bench}",
                                    "--out", str(tmp_path / "out2"), "--engine", "local", "--count-short-items"])
    assert res.exit_code == 1, res.output
