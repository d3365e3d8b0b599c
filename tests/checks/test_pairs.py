"""Preference pairs and KTO records: the layout the field rule recognises, and the flags an audit gives, with
the side and turn they name (issue 30)."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from dataaudit.fields import FieldSpec, resolve_schema
from tests.checks.chat_shards import audit, rows_of, write
from tests.paths import needs_shared

KEYS = ("row", "check", "field")
PAIR_CHECKS = {"pair_empty_side", "pair_identical", "pair_near_identical", "pair_prefix", "pair_prompt_mismatch",
               "kto_label", "pair_truncated_identical", "contradictory_preference", "special_tokens", "empty_reply", "empty_text", "no_assistant_turn",
               "last_turn_not_assistant", "role_order"}
LONG = ("The capital of France is Paris, a city on the Seine known for its museums, its cafes and the tower "
        "built for the world's fair of 1889.")
OTHER = "I am not sure which city you mean; could you tell me more about what you are looking for?"


def _flags(path: str) -> list[tuple]:
    summary, flags = audit(path)
    return [r for r in rows_of(flags, KEYS) if r[1] in PAIR_CHECKS]


def _jsonl(tmp_path: Path, name: str, records: list[dict]) -> str:
    p = tmp_path / name
    p.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(p)


def _layout(path: str):
    from dataaudit.formats import iter_shard

    batch = next(iter(iter_shard(path)))
    return resolve_schema(batch.schema, FieldSpec(), batch).pairs


def _turn(who, value):
    return {"from": who, "value": value}


def test_ranking_layout(tmp_path):
    prompt = [_turn("human", "What is the capital of France?")]
    path = tmp_path / "dpo.json"
    path.write_text(json.dumps([
        {"conversations": prompt, "chosen": _turn("gpt", LONG), "rejected": _turn("gpt", OTHER)},       # clean
        {"conversations": prompt, "chosen": _turn("gpt", LONG), "rejected": _turn("gpt", " ")},          # empty
        {"conversations": prompt, "chosen": _turn("gpt", LONG), "rejected": _turn("gpt", LONG.upper())},
        {"conversations": prompt, "chosen": _turn("gpt", LONG), "rejected": _turn("gpt", LONG[:60])},
        {"conversations": prompt, "chosen": _turn("gpt", LONG), "rejected": _turn("gpt", OTHER + "<|im_end|>")},
        {"conversations": prompt, "chosen": _turn("gpt", LONG), "rejected": _turn("gpt", LONG.replace("Seine", "Seime"))},
    ]))
    assert _layout(str(path)).describe() == "LLaMA-Factory ranking (prompt conversations, chosen, rejected)"
    assert _flags(str(path)) == [
        (1, "empty_reply", "rejected[0].value"),
        (1, "pair_empty_side", "rejected[0].value"),
        (2, "pair_identical", "rejected[0].value"),
        (3, "pair_prefix", "rejected[0].value"),
        (4, "special_tokens", "rejected[0].value"),
        (5, "pair_near_identical", "rejected[0].value"),
    ]


def test_ranking_prompt_alone_is_not_a_conversation(tmp_path):
    """The prompt ends with the user's turn: seen with its side, it is no `no_assistant_turn`; a prompt that
    already ends with an assistant turn is `role_order` on the side, named by the field the turn is in."""
    path = tmp_path / "dpo.json"
    path.write_text(json.dumps([
        {"conversations": [_turn("human", "hi")], "chosen": _turn("gpt", LONG), "rejected": _turn("gpt", OTHER)},
        {"conversations": [_turn("human", "hi"), _turn("gpt", "hello")], "chosen": _turn("gpt", LONG),
         "rejected": _turn("gpt", OTHER)},
    ]))
    assert _flags(str(path)) == [(1, "role_order", "chosen[0].from"), (1, "role_order", "rejected[0].from")]


def test_explicit_strings_and_messages(tmp_path):
    s = _jsonl(tmp_path, "s.jsonl", [{"prompt": "Capital of France?", "chosen": LONG, "rejected": OTHER},
                                     {"prompt": "Capital of France?", "chosen": "", "rejected": OTHER}])
    assert _layout(s).describe() == "explicit prompt (prompt prompt, chosen, rejected)"
    assert _flags(s) == [(1, "empty_text", "chosen"), (1, "pair_empty_side", "chosen")]
    user = [{"role": "user", "content": "Capital of France?"}]
    m = _jsonl(tmp_path, "m.jsonl", [
        {"prompt": user, "chosen": [{"role": "assistant", "content": LONG}],
         "rejected": [{"role": "assistant", "content": OTHER}]},
        {"prompt": user, "chosen": [{"role": "assistant", "content": LONG}],
         "rejected": [{"role": "assistant", "content": "  " + LONG + " "}]}])
    assert _flags(m) == [(1, "pair_identical", "rejected[0].content")]


def test_implicit_prompt_messages_and_hh(tmp_path):
    def conv(q, a):
        return [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
    m = _jsonl(tmp_path, "m.jsonl", [{"chosen": conv("Capital?", LONG), "rejected": conv("Capital?", OTHER)},
                                     {"chosen": conv("Capital?", LONG), "rejected": conv("Capital of Peru?", OTHER)}])
    assert _layout(m).describe() == "implicit prompt (chosen, rejected)"
    assert _flags(m) == [(1, "pair_prompt_mismatch", "rejected[1].content")]
    hh = _jsonl(tmp_path, "hh.jsonl", [
        {"chosen": "\n\nHuman: Capital?\n\nAssistant: " + LONG, "rejected": "\n\nHuman: Capital?\n\nAssistant: " + OTHER},
        {"chosen": "\n\nHuman: Capital?\n\nAssistant: " + LONG, "rejected": "\n\nHuman: Capital?\n\nAssistant: " + LONG},
        {"chosen": "\n\nHuman: Capital?\n\nAssistant: " + LONG, "rejected": "\n\nHuman: Peru?\n\nAssistant: " + OTHER}])
    assert _flags(hh) == [(1, "pair_identical", "rejected"), (2, "pair_prompt_mismatch", "rejected")]


def test_v1_layout_names_the_part(tmp_path):
    def side(reply, q="Capital?"):
        return [{"role": "user", "content": [{"type": "text", "value": q}], "loss_weight": 0.0},
                {"role": "assistant", "content": [{"type": "text", "value": reply}], "loss_weight": 1.0}]
    p = _jsonl(tmp_path, "v1.jsonl", [
        {"chosen_messages": side(LONG), "rejected_messages": side(OTHER)},
        {"chosen_messages": side(""), "rejected_messages": side(OTHER)},
        {"chosen_messages": side(LONG), "rejected_messages": side(OTHER, "Peru?")},
        {"chosen_messages": side("no"), "rejected_messages": side("No, it is not: " + OTHER)}])   # a short answer
    assert _layout(p).describe() == "v1 chosen_messages/rejected_messages (chosen_messages, rejected_messages)"
    assert _flags(p) == [(1, "empty_reply", "chosen_messages[1].content"),
                         (1, "pair_empty_side", "chosen_messages[1].content[0].value"),
                         (2, "pair_prompt_mismatch", "rejected_messages[1].content[0].value")]


def test_kto_label(tmp_path):
    def rec(label, reply=LONG):
        return {"messages": [{"role": "user", "content": "Capital?"}, {"role": "assistant", "content": reply}],
                "label": label}
    p = _jsonl(tmp_path, "kto.jsonl", [rec(True), rec(False, "</s>" + OTHER), rec(None)])
    assert _layout(p).describe() == "KTO (conversation messages, label label)"
    assert _flags(p) == [(1, "special_tokens", "messages[1].content"), (2, "kto_label", "label")]
    s = _jsonl(tmp_path, "kto_str.jsonl", [{"prompt": "Capital?", "completion": LONG, "label": "true"}])
    summary, flags = audit(s)
    assert [(r["check"], r["field"], r["detail"]) for r in flags.to_pylist() if r["check"] == "kto_label"] == \
        [("kto_label", "label", "the label is 'true' (string), not a bool")]


def test_not_a_pair_layout_is_left_alone(tmp_path):
    """`chosen` without `rejected`, or a bool label beside plain text: no pair layout, no pair check."""
    p = write(tmp_path / "x.parquet", {"text": ["a b c", "d e f"], "chosen": ["x", "y"], "label": [True, False]})
    assert _layout(p) is None


def test_dedup_document_is_the_whole_pair_and_kto_keeps_its_label(tmp_path):
    from dataaudit.formats import iter_shard
    from dataaudit.texts import DocumentText

    p = tmp_path / "dpo.json"
    p.write_text(json.dumps([{"conversations": [_turn("human", "Q")], "chosen": _turn("gpt", "A"),
                              "rejected": _turn("gpt", "B")},
                             {"conversations": [_turn("human", "Q")], "chosen": _turn("gpt", "C"),
                              "rejected": _turn("gpt", "B")}]))
    docs = DocumentText()(next(iter(iter_shard(str(p)))))
    assert docs.to_pylist() == ["Q\nA\nB", "Q\nC\nB"]
    k = _jsonl(tmp_path, "kto.jsonl", [{"messages": [{"role": "user", "content": "Q"},
                                                     {"role": "assistant", "content": "A"}], "label": lab}
                                       for lab in (True, False)])
    assert DocumentText()(next(iter(iter_shard(k)))).to_pylist() == ["Q\nA\nlabel=true", "Q\nA\nlabel=false"]


@needs_shared   # the generator cycles over the real pairs of posttrain/dpo_en_demo.json
@pytest.mark.parametrize("layout", ["ranking", "v1", "kto"])
def test_generated_plants_found(tmp_path, layout):
    """fixtures/pair_data.py: every plant found at its row, check and field; no pair flag elsewhere (the full
    measure, 2,000 records per layout: benchmarks/pair_recall.py)."""
    from fixtures import pair_data

    truth = pair_data.generate(tmp_path, records=300, rate=0.02)[layout]
    # rendered with a tokenizer and cut to a context: the `truncated` plants (a prompt past the context)
    data = {"tokenizer": str(pair_data.TOKENIZER), "context_length": pair_data.CONTEXT_LENGTH}
    _, flags = audit(str(tmp_path / truth["file"]), {"data": data})
    got = {tuple(r) for r in rows_of(flags, KEYS)}
    want = {(p["row"], p["check"], p["field"]) for p in truth["plants"]}
    assert want <= got
    planted = {p["row"] for p in truth["plants"]}
    pair_checks = {c for c in PAIR_CHECKS if c.startswith(("pair_", "kto_", "contradictory"))}
    assert [r for r in got if r[1] in pair_checks and r[0] not in planted] == []


def test_pair_checks_see_the_batch_vectorized():
    """The kernels on Arrow arrays: prefix lengths and banded edit ratios."""
    import numpy as np

    from dataaudit.textops.pair_kernels import common_prefix, edit_ratio
    from dataaudit.textops.arrow import string_buffers

    a, b = pa.array(["abcdef", "kitten", "", "same"]), pa.array(["abcxyz", "sitting", "", "same"])
    ao, ad = string_buffers(a)
    bo, bd = string_buffers(b)
    assert common_prefix(ao, ad, bo, bd).tolist() == [3, 0, 0, 4]
    ratio = edit_ratio(ao, ad, bo, bd, 0.5, np.arange(4))
    assert ratio.tolist() == [0.5, 1 - 3 / 7, 1.0, 1.0]


def test_one_turn_struct_outside_a_pair_is_not_checked(tmp_path):
    """A struct {role, content} that is no side of a pair stays unchecked (never a conversation check's error)."""
    p = _jsonl(tmp_path, "x.jsonl", [{"text": "hello there", "note": {"role": "user", "content": "hi"}}])
    from dataaudit.formats import iter_shard

    batch = next(iter(iter_shard(p)))
    fields = resolve_schema(batch.schema, FieldSpec(), batch)
    assert [c.name for c in fields.text] == ["text"] and [c.name for c in fields.unchecked] == ["note"]
    assert fields.pairs is None


def test_prompt_conversation_is_never_judged_alone(tmp_path):
    """A prompt conversation beside string replies, and KTO's prompt + completion conversations: no
    no_assistant_turn on the prompt (the reply is in another column)."""
    user = [{"role": "user", "content": "Capital of France?"}]
    s = _jsonl(tmp_path, "s.jsonl", [{"messages": user, "chosen": LONG, "rejected": OTHER}])
    assert _layout(s).describe() == "explicit prompt (prompt messages, chosen, rejected)"
    assert _flags(s) == []
    k = _jsonl(tmp_path, "k.jsonl", [{"prompt": user, "completion": [{"role": "assistant", "content": LONG}],
                                      "label": True},
                                     {"prompt": user, "completion": [{"role": "user", "content": LONG}],
                                      "label": False}])
    assert _layout(k).describe() == "KTO (prompt prompt, completion completion, label label)"
    assert _flags(k) == [(1, "no_assistant_turn", "completion"), (1, "role_order", "completion[0].role")]
