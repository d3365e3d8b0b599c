"""Records as the trainer renders them (dataaudit.stats.rendered_records) and what truncation leaves trained
(no_trainable_tokens, pair_truncated_identical). Exact values with the word-level tokenizer of
conversation_helpers: a ChatML turn is 3 tokens + its words (the generation prompt `<|im_start|>assistant` 2),
a role-prefixed turn `"<role>: <text>\\n"` 2 + its words; a raw string pair is its words."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from dataaudit.audit.plan import resolve_plan
from dataaudit.config import build_config
from dataaudit.stats.conversation_lengths import load_length_tokenizer
from dataaudit.stats.lengths import REPLY_NONE
from dataaudit.stats.rendered_records import render_batch
from tests.stats.conversation_helpers import audit, tokenizer_folder, turns, write_shard


def _flags(tmp_path, check: str) -> list[tuple]:
    table = pq.read_table(tmp_path / "out" / "flags.parquet").to_pylist()
    return sorted((f["row"], f["field"], f["value"], f["detail"]) for f in table if f["check"] == check)


def _views(tmp_path, columns: dict, ctx: int, template: bool = True):
    batch = pa.RecordBatch.from_pydict(columns)
    plan = resolve_plan(batch.schema, build_config({}), batch)
    folder = tokenizer_folder(tmp_path / "tok", **({} if template else {"template": None}))
    lt = load_length_tokenizer(str(folder if template else folder / "tokenizer.json")).with_context(ctx)
    return {v.key: v for v in render_batch(batch, plan, lt).views}


def sharegpt(*pairs):
    return turns(*pairs, role_key="from", text_key="value")


SFT = [
    turns(("user", "a a a a a a"), ("assistant", "b")),       # 9 + 4 = 13 tokens; reply text at 9 + 2 = 11
    turns(("user", "a"), ("assistant", "b b b b b b")),       # 4 + 9 = 13; reply at 6
    turns(("user", "a a a a a a a a a")),                     # no reply: nothing trained (no_assistant_turn's)
    turns(("user", "a"), ("assistant", "b"), ("user", "c c c c c c c c"), ("assistant", "b")),   # first at 6
]


def test_conversation_trained_start_exact(tmp_path):
    view = _views(tmp_path, {"messages": SFT}, ctx=8)["messages"]
    t = view.tokens
    assert t.tokens.tolist() == [13, 13, 12, 23]
    assert t.train_start.tolist() == [11, 6, REPLY_NONE, 6]
    assert sorted(t.heads) == [0, 1, 2, 3] and t.heads[1].size == 8
    assert (view.path, view.side, view.columns) == ("messages", None, ("messages",))


def test_no_trainable_tokens_flags_the_record_cut_before_its_reply(tmp_path):
    folder = tokenizer_folder(tmp_path / "tok")
    shard = write_shard(tmp_path / "sft.parquet", {"messages": SFT})
    report = audit(tmp_path, [shard], {"tokenizer": str(folder), "context_length": 8})
    assert _flags(tmp_path, "no_trainable_tokens") == [
        (0, "messages", 11.0, "messages: the first trained token is token 11 of 13, past the context length 8: "
                              "the cut leaves no trained token")]
    assert _flags(tmp_path, "pair_truncated_identical") == []   # not a pair
    # train_on_prompt: every token is trained, nothing is cut away entirely
    report = audit(tmp_path, [shard], {"tokenizer": str(folder), "context_length": 8},
                   checks={"no_trainable_tokens": {"train_on_prompt": True}})
    assert _flags(tmp_path, "no_trainable_tokens") == []


RANKING = {
    "conversations": [sharegpt(("human", "a a a a a a")), sharegpt(("human", "a")), sharegpt(("human", "a")),
                      # an earlier assistant turn of the prompt is prompt: never trained in a pair
                      sharegpt(("human", "a"), ("gpt", "b"), ("human", "a a a a a a"))],
    "chosen": [{"from": "gpt", "value": "b"}, {"from": "gpt", "value": "b b b b b b b b"},
               {"from": "gpt", "value": "b"}, {"from": "gpt", "value": "b"}],
    "rejected": [{"from": "gpt", "value": "c"}, {"from": "gpt", "value": "b b b b b b b c"},
                 {"from": "gpt", "value": "c"}, {"from": "gpt", "value": "c"}],
}


def test_pair_sides_are_rendered_with_their_prompt(tmp_path):
    views = _views(tmp_path, RANKING, ctx=8)
    assert sorted(views) == ["conversations+chosen", "conversations+rejected"]
    chosen, rejected = views["conversations+chosen"], views["conversations+rejected"]
    assert (chosen.side, chosen.path, rejected.side) == ("chosen", "chosen", "rejected")
    assert chosen.tokens.tokens.tolist() == [13, 15, 8, 21]
    assert chosen.tokens.train_start.tolist() == [11, 6, 6, 19]


def test_pair_truncated_identical_and_no_trainable_tokens_on_pairs(tmp_path):
    folder = tokenizer_folder(tmp_path / "tok")
    shard = write_shard(tmp_path / "dpo.parquet", RANKING)
    report = audit(tmp_path, [shard], {"tokenizer": str(folder), "context_length": 8})
    same = ("prompt + chosen and prompt + rejected are the same 8 tokens once cut to the context length: the "
            "sides differ only past the cut")
    # row 0: the prompt fills the context; row 1: the replies share their first 2 tokens; row 3: 4-turn prompt
    assert _flags(tmp_path, "pair_truncated_identical") == [(0, "chosen", 8.0, same), (1, "chosen", 8.0, same),
                                                            (3, "chosen", 8.0, same)]
    untrained = _flags(tmp_path, "no_trainable_tokens")
    assert [(r, f, v) for r, f, v, _ in untrained] == [(0, "chosen", 11.0), (3, "chosen", 19.0)]
    assert sorted(k for k in report["lengths"] if k.endswith(".tokens")) == \
        ["conversations+chosen.tokens", "conversations+rejected.tokens"]


def test_string_pairs_are_concatenated_raw(tmp_path):
    columns = {"prompt": ["a a a", "a"], "chosen": [" b", " b b"], "rejected": [" c", " b c"]}
    views = _views(tmp_path, columns, ctx=3, template=False)
    chosen = views["prompt+chosen"]
    assert chosen.tokens.tokens.tolist() == [4, 3]
    assert chosen.tokens.train_start.tolist() == [3, 1]
    assert chosen.tokens.heads[0].tolist() == views["prompt+rejected"].tokens.heads[0].tolist()


def test_alpaca_lengths_are_per_rendered_record(tmp_path):
    folder = tokenizer_folder(tmp_path / "tok", template=None)
    shard = write_shard(tmp_path / "alpaca.parquet", {
        "instruction": ["a a", "a", "a a a a"], "input": ["", "c c", ""], "output": ["b", "b b", "b b b b b b"]})
    report = audit(tmp_path, [shard], {"tokenizer": str(folder / "tokenizer.json"), "context_length": 9})
    tokens = [k for k in report["lengths"] if k.endswith(".tokens")]
    assert tokens == ["instruction+input+output.tokens"]   # no per-column token counts
    stat = report["lengths"]["instruction+input+output.tokens"]
    # user "a a" + assistant "b": 4 + 3; user "a\nc c": 5 + 4; user "a a a a" + 6 b: 6 + 8
    assert (stat["count"], stat["min"], stat["max"], stat["over_context"]) == (3, 7.0, 14.0, 1)
    assert "instruction+input+output.tokens: 1 conversations (33.3%) are longer than the context length 9; 1 of " \
           "them lose part of their last assistant reply to truncation" in report["notes"]
    assert report["lengths"]["instruction"]["count"] == 3      # characters stay per field


def test_trained_example_marks_the_trained_spans(tmp_path):
    from dataaudit.audit.trained_example import rendered_example
    from dataaudit.provenance import ROW

    columns = {"messages": [turns(("user", "a")), turns(("user", "a"), ("assistant", "b b"), ("user", "c"),
                                                        ("assistant", "b"))], ROW: [10, 11]}
    batch = pa.RecordBatch.from_pydict(columns)
    plan = resolve_plan(batch.schema, build_config({}), batch)
    chatml = load_length_tokenizer(str(tokenizer_folder(tmp_path / "tok")))
    example = rendered_example(batch, render_batch(batch, plan, chatml), chatml)
    assert example == {"record": 11, "field": "messages", "text":
                       "<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\n\u27e6b b<|im_end|>\n\u27e7"
                       "<|im_start|>user\nc<|im_end|>\n<|im_start|>assistant\n\u27e6b<|im_end|>\n\u27e7"}
    plain = load_length_tokenizer(str(tokenizer_folder(tmp_path / "plain", template=None) / "tokenizer.json"))
    example = rendered_example(batch, render_batch(batch, plan, plain), plain)
    assert example["text"] == "user: a\nassistant: \u27e6b b\u27e7\nuser: c\nassistant: \u27e6b\u27e7\n"


def test_audit_shows_a_rendered_example_per_shard(tmp_path):
    folder = tokenizer_folder(tmp_path / "tok", template=None)
    shard = write_shard(tmp_path / "sft.parquet", {"messages": SFT})
    report = audit(tmp_path, [shard], {"tokenizer": str(folder / "tokenizer.json")})
    assert report["shards"][0]["trained_example"] == {
        "record": 0, "field": "messages", "text": "user: a a a a a a\nassistant: \u27e6b\u27e7\n"}


def test_alpaca_records_with_nothing_in_them_render_as_no_turns(tmp_path):
    # pyarrow's binary_join_element_wise(null_handling="skip") dropped the all-null rows: a check failed on them
    columns = {"instruction": [None, "", "a"], "input": [None, "", "c"], "output": [None, None, "b"]}
    view = _views(tmp_path, columns, ctx=3, template=False)["instruction+input+output"]
    assert view.has_turns.tolist() == [False, False, True]
    assert view.tokens.tokens.tolist() == [0, 0, 7]      # "user: a\nc\n" 4 tokens + "assistant: b\n" 3


def test_a_side_without_reply_is_not_truncated_identical(tmp_path):
    # the prompt fills the context; a missing chosen reply is pair_empty_side's finding, not a cut pair's
    columns = {"prompt": ["a a a a a", "a a a a a"], "chosen": [None, " b"], "rejected": [" c", " c"]}
    shard = write_shard(tmp_path / "pairs.parquet", columns)
    folder = tokenizer_folder(tmp_path / "tok", template=None)
    audit(tmp_path, [shard], {"tokenizer": str(folder / "tokenizer.json"), "context_length": 3})
    assert [r for r, *_ in _flags(tmp_path, "pair_truncated_identical")] == [1]
