"""Conversation lengths in tokens, as the model sees them, against the context length; the conversations that
lose part of their last assistant reply to truncation. Exact values with a word-level tokenizer whose token
counts are known by hand (tests/stats/conversation_helpers.py): a ChatML turn is 3 tokens + its words, a
role-prefixed turn 2 + its words."""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from dataaudit.config import ConfigError, build_config
from dataaudit.fields import arrow_columns
from dataaudit.stats.conversation_lengths import (CHAT_TEMPLATE, ROLE_PREFIXED, conversation_tokens,
                                                  load_length_tokenizer)
from dataaudit.stats.lengths import REPLY_NONE, REPLY_UNKNOWN, LengthStats
from tests.stats.conversation_helpers import (CHATML, CHATML_ESCAPING, CHATML_REFUSING, VOCAB_SIZE, audit,
                                             stat_without_histogram, tokenizer_folder, turns, word_tokenizer,
                                             write_shard)

# (conversation, ChatML tokens, end of its last assistant turn in ChatML tokens,
#  role-prefixed tokens, end of its last assistant turn role-prefixed)
CONVERSATIONS = [
    (turns(("user", "a"), ("assistant", "a b")), 9, 9, 7, 7),
    (turns(("user", "a a a"), ("assistant", "b b b b b b")), 15, 15, 13, 13),
    (turns(("user", "a"), ("assistant", "b"), ("user", "c c c c c c c c")), 19, 8, 16, 6),
    (turns(("system", "a"), ("user", "a"), ("assistant", "b b b"), ("tool", "c"), ("assistant", "a b")),
     23, 23, 18, 18),
    (turns(("user", "a a a a a a a a a")), 12, REPLY_NONE, 11, REPLY_NONE),
    (turns(("user", "a"), ("assistant", "b b b b b b b"), ("user", "a")), 18, 14, 15, 12),
    (turns(("user", "a"), ("assistant", "b b b b b"), ("user", "c c")), 17, 12, 14, 10),
]
MESSAGES = [c[0] for c in CONVERSATIONS]
TEMPLATE_TOKENS = [c[1] for c in CONVERSATIONS]
TEMPLATE_REPLY = [c[2] for c in CONVERSATIONS]
PREFIXED_TOKENS = [c[3] for c in CONVERSATIONS]
PREFIXED_REPLY = [c[4] for c in CONVERSATIONS]


def _batch(messages=MESSAGES, name="messages") -> tuple[pa.RecordBatch, object]:
    batch = pa.RecordBatch.from_pydict({name: messages})
    return batch, next(c for c in arrow_columns(batch.schema) if c.name == name)


def test_chat_template_tokens_and_reply_ends_exact(tmp_path):
    lt = load_length_tokenizer(str(tokenizer_folder(tmp_path / "tok")))
    assert lt.rendering == CHAT_TEMPLATE and lt.variables["eos_token"] == "<|im_end|>"
    batch, col = _batch()
    out = conversation_tokens(lt.with_context(0), batch, col)    # every conversation over: every reply located
    assert out.rendering == CHAT_TEMPLATE and out.render_errors == 0
    assert out.tokens.tolist() == TEMPLATE_TOKENS
    assert out.reply_end.tolist() == TEMPLATE_REPLY
    assert out.rows.tolist() == list(range(len(MESSAGES)))
    # Only the conversations over the context get their reply located (the others: 0, not computed).
    out = conversation_tokens(lt.with_context(15), batch, col)
    assert out.reply_end.tolist() == [0, 0, 8, 23, REPLY_NONE, 14, 12]


def test_role_prefixed_tokens_and_reply_ends_exact(tmp_path):
    folder = tokenizer_folder(tmp_path / "tok", template=None)
    lt = load_length_tokenizer(str(folder / "tokenizer.json"))
    assert lt.rendering == ROLE_PREFIXED and lt.template is None
    batch, col = _batch()
    out = conversation_tokens(lt.with_context(0), batch, col)
    assert out.rendering == ROLE_PREFIXED
    assert out.tokens.tolist() == PREFIXED_TOKENS
    assert out.reply_end.tolist() == PREFIXED_REPLY
    # the same texts, encoded one by one
    texts = ["".join(f"{t['role']}: {t['content']}\n" for t in conv) for conv in MESSAGES]
    assert [len(lt.tokenizer.encode(t, add_special_tokens=False)) for t in texts] == PREFIXED_TOKENS


def test_audit_report_counts_conversations_over_the_context_and_lost_replies(tmp_path):
    folder = tokenizer_folder(tmp_path / "tok")
    shard = write_shard(tmp_path / "chat.parquet", {"messages": MESSAGES})
    report = audit(tmp_path, [shard], {"tokenizer": str(folder), "context_length": 12})
    stat = stat_without_histogram(report, "messages.tokens")
    # Over 12: 15, 19, 23, 18, 17 (12 itself fits). Their last replies end at 15, 8, 23, 14, 12: three end
    # past the cut (a reply ending exactly at the context length keeps all of itself).
    assert stat == {"unit": "tokens", "count": 7, "min": 9.0, "max": 23.0, "mean": round(113 / 7, 6),
                    "quantiles": {"p50": 17.0, "p90": 19.0, "p99": 19.0}, "context_length": 12, "over_context": 5,
                    "rendering": "chat_template", "render_errors": 0, "render_error": None,
                    "truncated_replies": 3, "replies_unknown": 0}
    assert "messages.tokens: 5 conversations (71.4%) are longer than the context length 12; 3 of them lose part " \
           "of their last assistant reply to truncation" in report["notes"]
    assert "messages.tokens: conversations rendered with the tokenizer's chat template, then counted in tokens" \
        in report["notes"]
    assert report["lengths"]["messages"]["unit"] == "chars"       # the characters are still there


def test_role_prefixed_audit_says_so(tmp_path):
    folder = tokenizer_folder(tmp_path / "tok", template=None)
    shard = write_shard(tmp_path / "chat.parquet", {"messages": MESSAGES})
    report = audit(tmp_path, [shard], {"tokenizer": str(folder / "tokenizer.json"), "context_length": 11})
    stat = report["lengths"]["messages.tokens"]
    # Over 11: 13, 16, 18, 15, 14; replies end at 13, 6, 18, 12, 10.
    assert (stat["rendering"], stat["count"], stat["over_context"], stat["truncated_replies"]) == \
        ("role_prefixed", 7, 5, 3)
    assert (stat["min"], stat["max"]) == (7.0, 18.0)
    assert "messages.tokens: the tokenizer has no chat template: conversations counted as a role-prefixed join " \
           "('<role>: <text>' per turn, one line each)" in report["notes"]
    assert "messages.tokens: 5 conversations (71.4%) are longer than the context length 11; 3 of them lose part " \
           "of their last assistant reply to truncation" in report["notes"]


def test_batches_and_shards_merge_to_the_same_counts(tmp_path):
    from dataaudit.audit.shard import audit_shard
    from dataaudit.audit.report import build_report

    folder = tokenizer_folder(tmp_path / "tok")
    config = build_config({"data": {"tokenizer": str(folder), "context_length": 12}})
    first = write_shard(tmp_path / "a.parquet", {"messages": MESSAGES[:4]})
    second = write_shard(tmp_path / "b.parquet", {"messages": MESSAGES[4:]})
    summaries = [audit_shard(str(p), config, batch_rows=2)[0].summary() for p in (first, second)]
    for order in (summaries, summaries[::-1]):
        stat = build_report(order, config, {})["lengths"]["messages.tokens"]
        assert (stat["count"], stat["over_context"], stat["truncated_replies"], stat["min"], stat["max"]) == \
            (7, 5, 3, 9.0, 23.0)


def test_sharegpt_roles_are_given_openai_names(tmp_path):
    lt = load_length_tokenizer(str(tokenizer_folder(tmp_path / "tok"))).with_context(10)
    conversations = [
        # function_call -> assistant, observation -> tool: rendered; the last reply is the gpt turn
        turns(("human", "a"), ("function_call", "a b"), ("observation", "c"), ("gpt", "b b"),
              role_key="from", text_key="value"),
        turns(("human", "a"), ("gpt", "b b b"), ("human", "a a a a"), role_key="from", text_key="value"),
        turns(("human", "a"), ("narrator", "a"), role_key="from", text_key="value"),   # the template refuses
    ]
    batch, col = _batch(conversations, "conversations")
    out = conversation_tokens(lt, batch, col)
    assert out.tokens.tolist() == [4 + 5 + 4 + 5, 4 + 6 + 7]
    assert out.reply_end.tolist() == [18, 10]       # 10: the second fits the context of 10 exactly
    assert out.rows.tolist() == [0, 1]
    assert (out.render_errors, out.render_error) == (1, "unexpected role narrator")


def test_text_parts_are_joined_and_image_parts_dropped(tmp_path):
    lt = load_length_tokenizer(str(tokenizer_folder(tmp_path / "tok")))
    parts = [[{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image", "text": None},
                                           {"type": "text", "text": "b"}]},
              {"role": "assistant", "content": [{"type": "text", "text": "c c"}]}]]
    batch, col = _batch(parts)
    assert col.part_key == "text"
    out = conversation_tokens(lt, batch, col)
    assert out.tokens.tolist() == [(3 + 2) + (3 + 2)]


def test_a_template_that_raises_fails_those_records_only(tmp_path):
    folder = tokenizer_folder(tmp_path / "tok", template=CHATML_REFUSING)
    bad = [turns(("user", "a"), ("assistant", "bad")), turns(("user", "bad"), ("assistant", "b"))]
    shard = write_shard(tmp_path / "chat.parquet", {"messages": MESSAGES[:3] + bad})
    report = audit(tmp_path, [shard], {"tokenizer": str(folder), "context_length": 12})
    stat = report["lengths"]["messages.tokens"]
    assert (stat["count"], stat["min"], stat["max"]) == (3, 9.0, 19.0)       # the three good ones, measured
    assert (stat["render_errors"], stat["render_error"]) == (2, "bad content in turn 0")
    assert (stat["over_context"], stat["truncated_replies"]) == (2, 1)
    assert "messages.tokens: 2 conversations could not be rendered with the chat template and are not counted " \
           "(e.g. bad content in turn 0)" in report["notes"]
    assert report["lengths"]["messages"]["count"] == 5
    assert report["totals"]["unreadable_shards"] == 0


def test_a_template_reaching_for_python_objects_is_a_render_error(tmp_path):
    lt = load_length_tokenizer(str(tokenizer_folder(tmp_path / "tok", template=CHATML_ESCAPING)))
    batch, col = _batch([turns(("user", "a"), ("assistant", "x")), MESSAGES[0]])
    out = conversation_tokens(lt, batch, col)
    assert out.tokens.tolist() == [9] and out.rows.tolist() == [1]
    assert out.render_errors == 1 and out.render_error.startswith("SecurityError: ")


def test_a_template_that_does_not_compile_fails_every_record_not_the_shard(tmp_path):
    folder = tokenizer_folder(tmp_path / "tok", template="{% for m in messages %}{{ m['content'] }")
    shard = write_shard(tmp_path / "chat.parquet", {"messages": MESSAGES})
    report = audit(tmp_path, [shard], {"tokenizer": str(folder), "context_length": 12})
    stat = report["lengths"]["messages.tokens"]
    assert (stat["count"], stat["render_errors"], stat["over_context"], stat["truncated_replies"]) == (0, 7, 0, 0)
    assert stat["render_error"].startswith("TemplateSyntaxError: ")
    assert any(n.startswith("messages.tokens: 7 conversations could not be rendered") for n in report["notes"])
    assert report["totals"]["unreadable_shards"] == 0
    assert report["totals"]["field_warnings"] == 1     # not a silent all-clear: --strict fails on it


def test_reply_end_unknown_when_the_template_refuses_the_cut_conversation(tmp_path):
    # Refuses a conversation that ends with an assistant turn: the full ones render, their prefixes do not.
    template = ("{% if messages[-1]['role'] == 'assistant' %}{{ raise_exception('ends with assistant') }}"
                "{% endif %}" + CHATML)
    lt = load_length_tokenizer(str(tokenizer_folder(tmp_path / "tok", template=template))).with_context(12)
    batch, col = _batch([MESSAGES[2], MESSAGES[5]])
    out = conversation_tokens(lt, batch, col)
    assert out.tokens.tolist() == [19, 18] and out.reply_end.tolist() == [REPLY_UNKNOWN, REPLY_UNKNOWN]
    stat = LengthStats("tokens")
    out.add_to(stat, 12)
    assert (stat.over_context, stat.truncated_replies, stat.replies_unknown) == (2, 0, 2)


def test_tokenizer_padding_and_truncation_never_shape_lengths(tmp_path):
    folder = tokenizer_folder(tmp_path / "tok", padding=True)
    shard = write_shard(tmp_path / "chat.parquet", {"messages": MESSAGES, "text": ["a b c a b"] * len(MESSAGES)})
    report = audit(tmp_path, [shard], {"tokenizer": str(folder), "context_length": 12})
    assert (report["lengths"]["messages.tokens"]["min"], report["lengths"]["messages.tokens"]["max"]) == (9.0, 23.0)
    assert (report["lengths"]["text.tokens"]["min"], report["lengths"]["text.tokens"]["max"]) == (5.0, 5.0)


def test_without_context_length_no_reply_counts(tmp_path):
    folder = tokenizer_folder(tmp_path / "tok")
    shard = write_shard(tmp_path / "chat.parquet", {"messages": MESSAGES})
    report = audit(tmp_path, [shard], {"tokenizer": str(folder)})
    stat = report["lengths"]["messages.tokens"]
    assert (stat["count"], stat["over_context"], stat["truncated_replies"], stat["rendering"]) == \
        (7, None, None, "chat_template")


def test_config_takes_a_folder_or_a_tokenizer_json_beside_its_config(tmp_path):
    folder = tokenizer_folder(tmp_path / "tok")
    for given in (folder, folder / "tokenizer.json"):
        cfg = build_config({"data": {"tokenizer": str(given)}})
        assert cfg.data["tokenizer"] == str(given) and cfg.data["vocab_size"] == VOCAB_SIZE
        assert load_length_tokenizer(str(given)).rendering == CHAT_TEMPLATE
    # a tokenizer file by another name is read alone
    word_tokenizer().save(str(folder / "other.json"))
    assert load_length_tokenizer(str(folder / "other.json")).rendering == ROLE_PREFIXED


@pytest.mark.parametrize("setup, message", [
    (lambda d: d.mkdir(), "[data] tokenizer folder has no tokenizer.json"),
    (lambda d: (tokenizer_folder(d), (d / "tokenizer_config.json").write_text("{not json")),
     "cannot be loaded: "),
    (lambda d: (tokenizer_folder(d), (d / "tokenizer_config.json").write_text(json.dumps({"chat_template": 5}))),
     "chat_template must be a string"),
])
def test_a_bad_tokenizer_folder_is_a_config_error(tmp_path, setup, message):
    folder = tmp_path / "tok"
    setup(folder)
    with pytest.raises(ConfigError) as err:
        build_config({"data": {"tokenizer": str(folder)}}, "audit.toml")
    assert str(err.value).startswith("audit.toml: ") and message in str(err.value)


def test_length_stats_state_and_merge_keep_the_conversation_counts():
    a, b = LengthStats("tokens"), LengthStats("tokens")
    a.add_conversations(np.array([5, 20, 30]), np.array([0, 25, 8]), 10, "chat_template", 1, "z error")
    b.add_conversations(np.array([40]), np.array([REPLY_UNKNOWN]), 10, "chat_template", 2, "a error")
    for merged in (a.merge(b), b.merge(a), LengthStats.from_state(a.state()).merge(LengthStats.from_state(b.state()))):
        out = merged.to_json(10)
        assert (out["count"], out["over_context"], out["truncated_replies"], out["replies_unknown"]) == (4, 3, 1, 1)
        assert (out["rendering"], out["render_errors"], out["render_error"]) == ("chat_template", 3, "a error")
    plain = LengthStats("tokens")
    plain.add(np.array([5, 20]), 10)
    assert "rendering" not in plain.to_json(10) and "rendering" not in plain.state()
