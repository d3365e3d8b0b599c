"""Reasoning against its answer and the context (dataaudit.stats.reasoning_lengths): `<think>` tags in the
assistant's text and v1 reasoning parts, exact characters and tokens (the word tokenizer of
conversation_helpers: one token per word)."""
from __future__ import annotations

from tests.stats.conversation_helpers import audit, tokenizer_folder, turns, write_shard


def _parts(*parts):
    return [{"type": kind, "value": text} for kind, text in parts]


def test_think_tags_reasoning_and_answer_exact(tmp_path):
    folder = tokenizer_folder(tmp_path / "tok", template=None)
    shard = write_shard(tmp_path / "think.parquet", {"messages": [
        turns(("user", "a"), ("assistant", "<think>a b c</think>b b")),     # reasoning "a b c" (5), answer 3
        turns(("user", "a"), ("assistant", "b")),                            # no reasoning: not measured
        turns(("user", "a"), ("assistant", "<think>a</think>x<think>a b c a b</think>c")),  # up to the last tag
    ]})
    report = audit(tmp_path, [shard], {"tokenizer": str(folder / "tokenizer.json"), "context_length": 4})
    reasoning, answer = report["lengths"]["messages.reasoning"], report["lengths"]["messages.answer"]
    # record 2: "a</think>x" + "a b c a b" = 19 characters of reasoning, answer "c"
    assert (reasoning["count"], reasoning["min"], reasoning["max"]) == (2, 5.0, 19.0)
    assert (answer["count"], answer["min"], answer["max"]) == (2, 1.0, 3.0)
    tokens = report["lengths"]["messages.reasoning.tokens"]
    assert (tokens["count"], tokens["min"], tokens["max"], tokens["over_context"]) == (2, 3.0, 9.0, 1)
    assert "messages: 2 records carry reasoning: a median of 5 characters of reasoning for 1 of answer" in \
        report["notes"]
    assert "messages.reasoning.tokens: the reasoning alone of 1 records (50.0%) is longer than the context length " \
           "4: where the chat template keeps the reasoning, the answer after it is cut away" in report["notes"]


def test_reasoning_parts_are_reasoning(tmp_path):
    shard = write_shard(tmp_path / "v1.parquet", {"messages": [
        [{"role": "user", "content": _parts(("text", "a"))},
         {"role": "assistant", "content": _parts(("reasoning", "think twice"), ("text", "done"))}],
        [{"role": "user", "content": _parts(("text", "a"))},
         {"role": "assistant", "content": _parts(("text", "plain"))}],
    ]})
    report = audit(tmp_path, [shard], {})
    assert (report["lengths"]["messages.reasoning"]["count"], report["lengths"]["messages.reasoning"]["max"]) == \
        (1, 11.0)
    assert report["lengths"]["messages.answer"]["max"] == 4.0
    assert "messages.reasoning.tokens" not in report["lengths"]    # no tokenizer
