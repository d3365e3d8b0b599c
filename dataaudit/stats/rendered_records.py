"""Every record as the trainer renders it, once per batch: what the token lengths measure and what the
"rendered" checks (no_trainable_tokens, pair_truncated_identical) judge.

A view is one rendering per record (dataaudit.stats.conversation_lengths renders and tokenizes it):
  a conversation field        its turns (a pair's prompt is never a view alone: it is rendered with each side)
  a pair's side               the prompt's turns + the side's (LLaMA-Factory ranking, explicit message lists); a
                              side that is its own transcript as it is (implicit, v1). String pairs (TRL's
                              explicit `prompt` + `chosen`, Anthropic HH transcripts) are concatenated raw, as
                              the trainer does for non-conversational data: prompt text + reply text
  KTO                         its conversation, or prompt + completion
  ranked responses            not rendered (its fields are measured one by one)
  flat fields (Alpaca)        `system` / `system_prompt` as the system turn, the other fields but the reply joined
                              by a newline as the user turn (an empty `input` left out), the reply field
                              (RESPONSE_NAMES) as the assistant turn: LLaMA-Factory's alpaca conversion. Without a
                              reply field the record has no view (nothing says what is trained): its fields are
                              measured one by one
A view's key names its fields joined by "+" (`conversations+chosen`, `instruction+input+output`): the length
statistics are `<key>.tokens`. Trained turns: the assistant's and its tool calls (TRAINED_ROLES); the prompt
is never trained unless a check's `train_on_prompt` says so.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.fields import Column, Fields
from dataaudit.pairs import HH_REPLY
from dataaudit.stats.conversation_lengths import (TEMPLATE_ROLES, ConversationTokens, LengthTokenizer, Messages,
                                                  conversation_messages, messages_tokens)

RESPONSE_NAMES = ("output", "response", "completion", "answer")
SYSTEM_NAMES = ("system", "system_prompt")


@dataclass
class View:
    """One rendering of every record: its stats key, the field a flag on it names (`path`), the pair side it
    is (None: not a pair), the columns it covers, its tokens (a ConversationTokens: the rendered records),
    per record whether it has any turn in the view (a record without one is not measured), and its turns."""

    key: str
    path: str
    side: str | None
    columns: tuple[str, ...]
    tokens: ConversationTokens
    has_turns: np.ndarray
    messages: Messages

    @property
    def replied(self) -> np.ndarray:
        """bool per record: it has a trained turn (a pair's side with a reply)."""
        msgs = self.messages
        rows = np.searchsorted(msgs.starts, np.flatnonzero(msgs.trained), side="right") - 1
        out = np.zeros(msgs.records, bool)
        out[rows] = True
        return out


@dataclass
class RenderedBatch:
    """The "rendered" target: every view of a batch, with the context length records are cut to."""

    records: int
    views: list[View]
    context_length: int | None

    def sides(self) -> tuple[View, View] | None:
        found = {v.side: v for v in self.views if v.side is not None}
        return (found["chosen"], found["rejected"]) if {"chosen", "rejected"} <= found.keys() else None


def _one_turn(values: pa.Array, role: str, trained: bool) -> Messages:
    """A string column as one turn per record (a null value: no turn)."""
    values = values.cast(pa.string()) if not pa.types.is_string(values.type) else values
    valid = pc.is_valid(values).to_numpy(zero_copy_only=False).astype(bool)
    starts = np.zeros(len(values) + 1, np.int64)
    np.cumsum(valid, out=starts[1:])
    text = values.filter(pa.array(valid))
    return Messages(pa.array([role] * len(text), pa.string()), text, starts, np.full(len(text), trained))


def concat(a: Messages, b: Messages) -> Messages:
    """Per record, a's turns then b's."""
    n = a.records
    rows = np.concatenate([np.repeat(np.arange(n), np.diff(a.starts)), np.repeat(np.arange(n), np.diff(b.starts))])
    order = np.argsort(rows, kind="stable")
    take = pa.array(order, pa.int64())
    return Messages(pa.concat_arrays([a.roles.cast(pa.string()), b.roles.cast(pa.string())]).take(take),
                    pa.concat_arrays([a.text, b.text]).take(take), a.starts + b.starts,
                    np.concatenate([a.trained, b.trained])[order], a.raw or b.raw)


def _messages(batch: pa.RecordBatch, col: Column, role: str, trained: bool) -> Messages:
    """A pair's prompt (trained=False: its earlier assistant turns are prompt too) or side, as turns."""
    if col.kind != "conversation":
        return _one_turn(batch.column(col.name), role, trained)
    out = conversation_messages(batch, col)
    if not trained:
        out.trained = np.zeros_like(out.trained)
    return out


def _reply_only(msgs: Messages) -> Messages:
    """A transcript whose last turn is the reply (implicit and v1 sides, KTO): only that turn is trained."""
    last = np.zeros(len(msgs.trained), bool)
    ends = msgs.starts[1:][np.diff(msgs.starts) > 0] - 1
    last[ends] = True
    msgs.trained = msgs.trained & last
    return msgs


def _hh(batch: pa.RecordBatch, col: Column) -> Messages:
    """An implicit string side: the text up to its last "\\n\\nAssistant:" is prompt, the rest the reply (a text
    without one: all reply)."""
    values = batch.column(col.name)
    values = values.cast(pa.string()) if not pa.types.is_string(values.type) else values
    parts = pc.extract_regex(values, HH_REPLY)
    hh = pa.array(pc.is_valid(parts).to_numpy(zero_copy_only=False).astype(bool))
    prompt = pc.if_else(hh, pc.struct_field(parts, "prompt"), pa.nulls(len(values), pa.string()))
    reply = pc.if_else(hh, pc.struct_field(parts, "reply"), values)
    out = concat(_one_turn(prompt, "user", False), _one_turn(reply, "assistant", True))
    out.raw = True
    return out


def _pair_views(batch: pa.RecordBatch, plan: Fields) -> list[tuple[str, str, str | None, tuple, Messages]]:
    layout = plan.pairs
    out = []
    sides = [("chosen", layout.chosen), ("rejected", layout.rejected)] if layout.layout != "kto" else \
        [(None, layout.completion)]
    for side, col in sides:
        p = layout.prompt
        if col is None:          # KTO whose reply is the conversation's last turn
            out.append((p.name, p.name, None, (p.name,), _reply_only(conversation_messages(batch, p))))
            continue
        if p is None:
            msgs = _reply_only(conversation_messages(batch, col)) if col.kind == "conversation" else _hh(batch, col)
            out.append((col.name, col.name, side, (col.name,), msgs))
            continue
        msgs = concat(_messages(batch, p, "user", False), _messages(batch, col, "assistant", True))
        msgs.raw = p.kind != "conversation" and col.kind != "conversation"
        out.append((f"{p.name}+{col.name}", col.name, side, (p.name, col.name), msgs))
    return out


def flat_fields(plan: Fields) -> tuple[list[Column], Column | None]:
    """The flat text fields (Alpaca's: not a pair's, not captions) and, when there are two or more, the reply among
    them (RESPONSE_NAMES): the record's assistant turn, trained on; the others are its prompt."""
    taken = set(plan.pairs.columns) if plan.pairs is not None else set()
    flat = [c for c in plan.text if c.kind == "string" and c.name not in taken and not c.caption]
    reply = next((c for c in flat if c.name.lower() in RESPONSE_NAMES), None) if len(flat) > 1 else None
    return flat, reply


def _flat_view(batch: pa.RecordBatch, flat: list[Column], reply: Column) -> tuple[str, str, None, tuple, Messages]:
    system = [c for c in flat if c.name.lower() in SYSTEM_NAMES]
    user = [c for c in flat if c is not reply and c not in system]
    n = batch.num_rows

    def nonblank(values):
        return pc.if_else(pc.equal(pc.fill_null(values, ""), ""), pa.nulls(n, pa.string()), values)

    def text(cols):
        """The fields' non-empty values of each record joined by a newline (null: none has one). Lists joined,
        not binary_join_element_wise(null_handling="skip"): pyarrow 26 drops the rows whose inputs are all null."""
        if not cols:
            return pa.nulls(n, pa.string())
        flat = pa.concat_arrays([nonblank(batch.column(c.name).cast(pa.string())) for c in cols])
        flat = flat.take(pa.array(np.arange(n * len(cols)).reshape(len(cols), n).T.ravel()))   # record by record
        valid = flat.is_valid().to_numpy(zero_copy_only=False).astype(bool)
        offsets = np.zeros(n + 1, np.int32)
        np.cumsum(valid.reshape(n, len(cols)).sum(axis=1), out=offsets[1:])
        return nonblank(pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets), flat.filter(pa.array(valid))),
                                       "\n"))

    msgs = _one_turn(text(system), "system", False)
    msgs = concat(concat(msgs, _one_turn(text(user), "user", False)),
                  _one_turn(batch.column(reply.name), "assistant", True))
    names = tuple(c.name for c in flat)
    return "+".join(names), reply.name, None, names, msgs


def render_batch(batch: pa.RecordBatch, plan: Fields, tokenizer: LengthTokenizer) -> RenderedBatch:
    """Every view of `batch` (see the module docstring), rendered and tokenized."""
    found = []
    taken: set[str] = set()
    if plan.pairs is not None:
        if plan.pairs.layout != "ranked":     # reward data with ranked responses: measured field by field
            found += _pair_views(batch, plan)
        taken |= set(plan.pairs.columns)
    for col in plan.text:
        if col.kind == "conversation" and col.name not in taken and not col.single:
            found.append((col.name, col.name, None, (col.name,), conversation_messages(batch, col)))
    flat, reply = flat_fields(plan)
    if not found and reply is not None:
        found.append(_flat_view(batch, flat, reply))
    views = [View(key, path, side, cols, messages_tokens(tokenizer, msgs), np.diff(msgs.starts) > 0, msgs)
             for key, path, side, cols, msgs in found]
    return RenderedBatch(batch.num_rows, views, tokenizer.context_length)



def trained_spans(tokenizer: LengthTokenizer, msgs: Messages, row: int) -> tuple[str, list[tuple[int, int]]] | None:
    """(the rendering of record `row`, the character spans of its trained turns); None when it does not render
    or a span cannot be located."""
    lo, hi = int(msgs.starts[row]), int(msgs.starts[row + 1])
    roles = msgs.roles.slice(lo, hi - lo).to_pylist()
    texts = [t or "" for t in msgs.text.slice(lo, hi - lo).to_pylist()]
    trained = msgs.trained[lo:hi].tolist()
    if tokenizer.template is None or msgs.raw:
        pieces = [t if msgs.raw else f"{r or ''}: {t}\n" for r, t in zip(roles, texts)]
        spans, at = [], 0
        for r, t, piece, on in zip(roles, texts, pieces, trained):
            start = at + (0 if msgs.raw else len(r or "") + 2)
            if on:
                spans.append((start, start + len(t)))
            at += len(piece)
        return "".join(pieces), spans
    messages = [{"role": TEMPLATE_ROLES.get((r or "").lower(), r or ""), "content": t} for r, t in zip(roles, texts)]
    try:
        template = tokenizer.compiled()     # raises its syntax error again: no example then
        full = template.render(messages=messages, add_generation_prompt=False, **tokenizer.variables)
        spans = []
        for t in (i for i, on in enumerate(trained) if on):
            before = template.render(messages=messages[:t], add_generation_prompt=True, **tokenizer.variables)
            upto = template.render(messages=messages[:t + 1], add_generation_prompt=False, **tokenizer.variables)
            if not (full.startswith(before) and full.startswith(upto)):
                return None
            spans.append((len(before), len(upto)))
    except Exception:   # noqa: BLE001 (a render error is counted by the lengths; no example then)
        return None
    return full, spans
