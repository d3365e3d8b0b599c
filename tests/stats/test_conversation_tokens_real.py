"""Conversation lengths with the real Llama-style test tokenizer (../shared/data/tokenizers) on the real chat
data (../shared/data/chat): every count equals an independent rendering (plain Python string formatting)
encoded with the `tokenizers` library, and the reply ends located through the encoding's character offsets
equal the token counts of the conversations cut after their last reply, encoded on their own."""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from dataaudit.fields import ASSISTANT_ROLES, arrow_columns
from dataaudit.stats.conversation_lengths import TEMPLATE_ROLES, conversation_tokens, load_length_tokenizer
from dataaudit.stats.lengths import REPLY_NONE
from tests.stats.conversation_helpers import CHATML, audit, tokenizer_folder, write_shard
from tests.paths import needs_shared, shared_file

pytestmark = needs_shared   # skip, naming the folder, when ../shared/data is missing
CONTEXT = 512


def _glaive() -> list[list[dict]]:
    """The 300 ShareGPT tool-calling conversations, each followed by its first question asked again: a
    conversation whose last turn is not the assistant's (its reply can fit while its end is cut)."""
    records = json.loads(shared_file("chat/glaive_toolcall_zh_demo.json").read_text(encoding="utf-8"))
    out = []
    for i, r in enumerate(records):
        conv = r["conversations"]
        out.append(conv + [dict(conv[0])] if i % 2 else conv)
    return out


def _chatml(turns: list[tuple[str, str]]) -> str:
    return "".join(f"<|im_start|>{TEMPLATE_ROLES.get(r, r)}\n{t}<|im_end|>\n" for r, t in turns)


def _prefixed(turns: list[tuple[str, str]]) -> str:
    return "".join(f"{r}: {t}\n" for r, t in turns)


def _expected(tok, conversations: list[list[tuple[str, str]]], render) -> tuple[np.ndarray, np.ndarray]:
    """Tokens of each rendering, and of each rendering cut after the last assistant turn (REPLY_NONE: none)."""
    full = [render(c) for c in conversations]
    tokens = np.array([len(e) for e in tok.encode_batch(full, add_special_tokens=False)])
    reply = []
    for c in conversations:
        last = max((i for i, (r, _) in enumerate(c) if r.lower() in ASSISTANT_ROLES), default=None)
        reply.append(REPLY_NONE if last is None else len(tok.encode(render(c[:last + 1]), add_special_tokens=False)))
    return tokens, np.array(reply)


def _pairs(conversations: list[list[dict]]) -> list[list[tuple[str, str]]]:
    return [[(t["from"], t["value"]) for t in c] for c in conversations]


def test_glaive_with_the_chat_template_equals_an_independent_rendering(tmp_path):
    llama = shared_file("tokenizers/llama-test-tokenizer.json")
    folder = tokenizer_folder(tmp_path / "tok", template=CHATML, tokenizer_file=llama)
    lt = load_length_tokenizer(str(folder)).with_context(0)
    conversations = _glaive()
    batch = pa.RecordBatch.from_pydict({"conversations": conversations})
    col = next(c for c in arrow_columns(batch.schema) if c.name == "conversations")
    out = conversation_tokens(lt, batch, col)
    tokens, reply = _expected(lt.tokenizer, _pairs(conversations), _chatml)
    assert out.render_errors == 0 and out.rows.tolist() == list(range(300))
    assert np.array_equal(out.tokens, tokens)
    assert np.array_equal(out.reply_end, reply)
    over = tokens > CONTEXT
    lost = over & (reply > CONTEXT)
    assert (int(over.sum()), int(lost.sum())) == (136, 132)

    shard = write_shard(tmp_path / "glaive.parquet", {"conversations": conversations})
    report = audit(tmp_path, [shard], {"tokenizer": str(folder), "context_length": CONTEXT})
    stat = report["lengths"]["conversations.tokens"]
    assert (stat["count"], stat["min"], stat["max"]) == (300, float(tokens.min()), float(tokens.max()))
    assert (stat["over_context"], stat["truncated_replies"], stat["rendering"]) == (136, 132, "chat_template")
    assert "conversations.tokens: 136 conversations (45.3%) are longer than the context length 512; 132 of them " \
           "lose part of their last assistant reply to truncation" in report["notes"]


def test_glaive_role_prefixed_with_the_lone_tokenizer_file(tmp_path):
    llama = shared_file("tokenizers/llama-test-tokenizer.json")
    lt = load_length_tokenizer(str(llama)).with_context(0)
    assert lt.template is None
    conversations = _glaive()
    batch = pa.RecordBatch.from_pydict({"conversations": conversations})
    col = next(c for c in arrow_columns(batch.schema) if c.name == "conversations")
    out = conversation_tokens(lt, batch, col)
    tokens, reply = _expected(lt.tokenizer, _pairs(conversations), _prefixed)
    assert np.array_equal(out.tokens, tokens)
    assert np.array_equal(out.reply_end, reply)


def test_sft_demo_parts_are_joined_as_the_template_sees_them(tmp_path):
    llama = shared_file("tokenizers/llama-test-tokenizer.json")
    folder = tokenizer_folder(tmp_path / "tok", template=CHATML, tokenizer_file=llama)
    lt = load_length_tokenizer(str(folder)).with_context(0)
    lines = shared_file("chat/v1_sft_demo.jsonl").read_text(encoding="utf-8").splitlines()
    messages = [json.loads(line)["messages"] for line in lines if line.strip()]
    batch = pa.RecordBatch.from_pydict({"messages": messages})
    col = next(c for c in arrow_columns(batch.schema) if c.name == "messages")
    out = conversation_tokens(lt, batch, col)
    pairs = [[(t["role"], "\n".join(p["value"] for p in t["content"] if p.get("type", "text") == "text"))
              for t in m] for m in messages]
    tokens, reply = _expected(lt.tokenizer, pairs, _chatml)
    assert out.render_errors == 0 and len(out) == len(messages)
    assert np.array_equal(out.tokens, tokens)
    assert np.array_equal(out.reply_end, reply)


def test_tokens_before_a_character_agree_with_every_offset():
    """The reply end's fast path (the token of the reply's last character, and the bytes of that character after
    it) against counting every token that starts before the character, at every position of real texts with
    byte-fallback (Llama) and byte-level (NeoX) tokenizers."""
    from tokenizers import Tokenizer

    from dataaudit.stats.conversation_lengths import _tokens_before

    texts = [_prefixed(c) for c in _pairs(_glaive()[:6])]
    for name in ("llama-test-tokenizer.json", "gpt-neo-test-tokenizer.json"):
        tok = Tokenizer.from_file(str(shared_file(f"tokenizers/{name}")))
        for text, enc in zip(texts, tok.encode_batch(texts, add_special_tokens=False)):
            starts = np.array([s for s, _ in enc.offsets])
            got = [_tokens_before(enc, c) for c in range(len(text) + 1)]
            assert got == [int((starts < c).sum()) for c in range(len(text) + 1)], name
