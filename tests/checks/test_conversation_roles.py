"""The conversation checks name the turn they flag: `where` (the path suffix, `[1].role`) and `role` (that turn's
role, for flags.parquet's `role` column). A record-level finding (no assistant turn) names no turn."""
from __future__ import annotations

import pyarrow as pa

from dataaudit.checks.conversation import last_turn_not_assistant, no_assistant_turn, role_order, unknown_role
from dataaudit.fields import FieldSpec, resolve_schema
from dataaudit.texts import conversation
from tests.checks.chat_shards import MESSAGES, SHAREGPT, msg, turn


def _conversation(column: str, rows: list, type_) -> object:
    batch = pa.RecordBatch.from_pydict({column: pa.array(rows, type_)})
    [col] = resolve_schema(batch.schema, FieldSpec(), batch).text
    return conversation(batch, col)[0]


def _named(out) -> list[tuple]:
    return [(i, out.where[i], out.role[i]) for i in range(len(out.flagged)) if out.flagged[i]]


def test_openai_turn_roles():
    conv = _conversation("messages", [
        [msg("user", "a"), msg("narrator", "b"), msg("assistant", "c")],
        [msg("user", "a"), msg("user", "b"), msg("assistant", "c"), msg("system", "d")],
        [msg("user", "a"), msg(None, "b"), msg("assistant", "c"), msg("user", "d")],
        [None, msg("user", "a")],
        None,
    ], MESSAGES)
    assert _named(unknown_role(conv)) == [(0, "[1].role", "narrator"), (2, "[1].role", None), (3, "[0].role", None)]
    assert _named(role_order(conv)) == [(1, "[1].role", "user")]
    out = role_order(conv)
    assert out.detail[1] == "turn 1: a second user turn in a row (2 such turns)"   # and the late system turn
    assert _named(last_turn_not_assistant(conv)) == [(1, "[3].role", "system"), (2, "[3].role", "user")]
    out = no_assistant_turn(conv)
    assert out.flagged.tolist() == [False, False, False, True, True] and out.role is None and out.where is None


def test_sharegpt_turn_roles():
    conv = _conversation("conversations", [
        [turn("human", "a"), turn("human", "b"), turn("gpt", "c"), turn("gpt", "d")],
        [turn("human", "a"), turn("function_call", "{}"), turn("observation", "{}"), turn("observation", "{}"),
         turn("gpt", "c")],
    ], SHAREGPT)
    assert _named(role_order(conv)) == [(0, "[1].from", "human")]
    assert role_order(conv).value.tolist() == [2.0, 0.0]     # the human pair and the gpt pair
    assert _named(unknown_role(conv)) == [] and _named(last_turn_not_assistant(conv)) == []
