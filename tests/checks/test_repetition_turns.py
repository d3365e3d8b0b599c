"""`repetition` in conversations: only what is trained (the assistant's turns, and text outside conversations),
and on chat turns the duplicate fractions of documents only over turn_dup_frac (0.5). Real few-shot prompts and
list-shaped replies from LLaMA-Factory's DPO demo tripped the document statistics; a looping reply must still
be found."""
from __future__ import annotations

import pyarrow.parquet as pq

from tests.stats.conversation_helpers import audit, turns, write_shard

FEW_SHOT = "\n".join(f"Q: Premise: item {i}.\nOptions:\n- yes\n- it is not possible to tell\n- no\nA: no" for i in
                     range(8))
# a reply that answers two questions with the same three steps (as LLaMA-Factory's KTO demo record 20 does)
STEPS = "\n\n".join(
    f"Question {q}: How many penalties has {who} scored this season?\n\nStep 1: Read the question carefully.\n\n"
    f"Step 2: Identify the key information needed to answer the question: the number of penalties scored by {who} "
    "this season.\n\nStep 3: Use your knowledge of soccer to find the answer."
    for q, who in ((1, "Cristiano Ronaldo"), (2, "Lionel Messi")))
LOOP = "I am so happy to help you today. " * 12
DOC = "\n".join(["buy cheap pills now"] * 30)


def _repetition(tmp_path, **check) -> list[tuple[int, str]]:
    shard = write_shard(tmp_path / "chat.parquet", {
        "messages": [turns(("user", FEW_SHOT), ("assistant", "no")),       # a few-shot prompt: not trained
                     turns(("user", "a"), ("assistant", STEPS)),           # a list of steps: no loop
                     turns(("user", "a"), ("assistant", LOOP)),            # a looping reply
                     turns(("user", "a"), ("assistant", "fine"))],
        "text": ["x", "y", "z", DOC]})                                     # a flat document: every statistic
    audit(tmp_path, [shard], {}, **({"checks": {"repetition": check}} if check else {}))
    flags = pq.read_table(tmp_path / "out" / "flags.parquet").to_pylist()
    return sorted((f["row"], f["field"]) for f in flags if f["check"] == "repetition")


def test_only_trained_turns_and_loop_statistics(tmp_path):
    assert _repetition(tmp_path) == [(2, "messages[1].content"), (3, "text")]


def test_turn_dup_frac_0_brings_back_the_document_thresholds(tmp_path):
    assert _repetition(tmp_path, turn_dup_frac=0) == [(1, "messages[1].content"), (2, "messages[1].content"),
                                                               (3, "text")]


# A real Alpaca reply (from the project's real chat data): a song whose chorus comes back once, 21% of its characters
# in duplicated lines, over Gopher's document threshold of 0.20
CHORUS = ("(Chorus)\nEndangered species, hear their cries\nTheir homes are disappearing before our eyes\n"
          "We need to act now, before it's too late\nAnd save these creatures from a terrible fate")
SONG = "\n\n".join([
    "(Verse 1)\nIn the forest and the sea\nThere are creatures great and small\nBut now they're in jeopardy\n"
    "We need to help them all", CHORUS,
    "(Verse 2)\nFrom the mighty elephant\nTo the tiny bee\nThey all have a role to play\nIn our ecology", CHORUS,
    "(Bridge)\nWe can make a change\nWith every little action\nProtect their habitats \nAnd stop the harmful "
    "extraction",
    "(Outro)\nFor the future of our planet\nFor the children yet to be\nLet's protect endangered species\n"
    "And live in harmony."])


def test_a_flat_records_reply_is_judged_as_a_reply(tmp_path):
    """Alpaca's `output` is the record's trained reply (the field the rendered view trains): a chorus is not a loop
    there, as in a conversation's reply; nor in a lone text field: a text of under answer_words words whose duplicated
    lines come back spread out needs them to cover answer_dup_frac (0.3)."""
    shard = write_shard(tmp_path / "alpaca.parquet", {
        "instruction": ["Write a song about endangered species.", "Say hello.", "Write a song."],
        "input": ["", "", ""], "output": [SONG, LOOP, "A short song."]})
    audit(tmp_path, [shard], {})
    flags = pq.read_table(tmp_path / "out" / "flags.parquet").to_pylist()
    assert sorted((f["row"], f["field"]) for f in flags if f["check"] == "repetition") == [(1, "output")]

    (tmp_path / "web").mkdir()
    doc = write_shard(tmp_path / "web" / "docs.parquet", {"text": [SONG]})
    audit(tmp_path / "web", [doc], {})
    flags = pq.read_table(tmp_path / "web" / "out" / "flags.parquet").to_pylist()
    assert [(f["row"], f["detail"]) for f in flags if f["check"] == "repetition"] == []
