"""Conversation checks: the structure of chat and instruction data, per record, naming the turn.

Each runs on one conversation field (dataaudit.texts.Conversation: the role of every turn, flattened over the
batch) and returns one flag per record; `where` names the first offending turn (`[3].role`), so the flag's field
is `messages[3].role`. Roles are compared as written (chat templates are case-sensitive); which side a role is
on (user, assistant, ...) ignores case. An empty assistant reply is `empty_reply`: `empty_text` restricted to
the assistant's turns, at error severity.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.fields import ASSISTANT_ROLES
from dataaudit.texts import Conversation

from .base import CheckOutput, register
from .text import empty_text

# OpenAI / HF chat roles and ShareGPT's.
KNOWN_ROLES = ("system", "user", "assistant", "tool", "function", "ipython",
               "human", "gpt", "function_call", "observation")
# Sides of a conversation; two turns in a row from the user's or the assistant's side are out of order.
SYSTEM, USER, ASSISTANT, CALL, TOOL, OTHER = range(6)
_SIDES = {SYSTEM: ("system",), USER: ("user", "human"), ASSISTANT: ASSISTANT_ROLES, CALL: ("function_call",),
          TOOL: ("tool", "function", "ipython", "observation")}

register("empty_reply", target="text", turns="assistant", severity="error",
         detail="assistant turn is null, empty or whitespace-only ({value:.0f} chars)",
         description="An assistant turn (assistant, gpt, model) whose text is null, empty or whitespace-only: the "
                     "model is trained to answer with nothing. value = length in characters.")(empty_text)


def _sides(roles: pa.Array) -> np.ndarray:
    lower = pc.utf8_lower(roles)
    side = np.full(len(roles), OTHER, np.int8)
    for code, names in _SIDES.items():
        side[pc.fill_null(pc.is_in(lower, pa.array(names)), False).to_numpy(zero_copy_only=False)] = code
    return side


def _first_turn(conv: Conversation, bad: np.ndarray) -> np.ndarray:
    """Per record, the index (into the batch's turns) of its first bad turn (-1: none)."""
    first = np.full(conv.records, -1, np.int64)
    idx = np.flatnonzero(bad)[::-1]          # reversed, so the earliest write wins
    first[conv.rows[idx]] = idx
    return first


def _by_record(conv: Conversation, bad: np.ndarray, detail) -> CheckOutput:
    """One flag per record with a bad turn, naming the turn (`where`) and its role; detail(first turn index per
    record, count) -> detail strings."""
    first = _first_turn(conv, bad)
    count = np.bincount(conv.rows[bad], minlength=conv.records).astype(np.float64)
    flagged = first >= 0
    where = np.full(conv.records, None, dtype=object)
    where[flagged] = conv.where(first[flagged])
    role = np.full(conv.records, None, dtype=object)
    role[flagged] = conv.roles.take(pa.array(first[flagged], pa.int64())).to_pylist()
    return CheckOutput(flagged=flagged, value=count, detail=detail(first, count), where=where, role=role)


@register("unknown_role", target="conversation", severity="warning", params={"roles": list(KNOWN_ROLES)},
          detail="role not allowed",
          description="A turn whose role is missing or not one of `roles` (OpenAI system/user/assistant/tool/"
                      "function/ipython and ShareGPT human/gpt/function_call/observation by default; compared "
                      "as written). value = such turns in the conversation.")
def unknown_role(conv: Conversation, roles=KNOWN_ROLES, **params) -> CheckOutput:
    bad = ~pc.fill_null(pc.is_in(conv.roles, pa.array(list(roles), pa.string())), False).to_numpy(
        zero_copy_only=False).astype(bool)
    shown = conv.roles

    def detail(first, count):
        out = np.full(conv.records, None, dtype=object)
        for r in np.flatnonzero(first >= 0):
            role, pos = shown[int(first[r])].as_py(), conv.turn[first[r]]
            out[r] = (f"turn {pos} has no role" if role is None else f"turn {pos}: role {role!r} is not "
                      "one of the allowed roles") + (f" ({count[r]:.0f} such turns)" if count[r] > 1 else "")
        return out

    return _by_record(conv, bad, detail)


@register("role_order", target="conversation", severity="warning",
          detail="turns out of order",
          description="Two turns in a row from the user's side or from the assistant's side (tool calls and "
                      "tool results aside), or a system turn after the first. value = such turns.")
def role_order(conv: Conversation, **params) -> CheckOutput:
    side = _sides(conv.roles)
    repeat = np.zeros(side.size, bool)
    if side.size > 1:
        same_record = conv.rows[1:] == conv.rows[:-1]
        repeat[1:] = same_record & (side[1:] == side[:-1]) & np.isin(side[1:], (USER, ASSISTANT))
    late_system = (side == SYSTEM) & (conv.turn > 0)

    def detail(first, count):
        out = np.full(conv.records, None, dtype=object)
        for r in np.flatnonzero(first >= 0):
            turn = first[r]
            what = "a system turn after the first turn" if late_system[turn] else \
                f"a second {'user' if side[turn] == USER else 'assistant'} turn in a row"
            out[r] = f"turn {conv.turn[turn]}: {what}" + (f" ({count[r]:.0f} such turns)" if count[r] > 1 else "")
        return out

    return _by_record(conv, repeat | late_system, detail)


def _assistant_turns(conv: Conversation) -> tuple[np.ndarray, np.ndarray]:
    """(is the turn an assistant reply, turns the assistant wrote per record: replies and function calls, so a
    conversation cut after a tool result is `last_turn_not_assistant`, not `no_assistant_turn`)."""
    side = _sides(conv.roles)
    wrote = np.isin(side, (ASSISTANT, CALL))
    return side == ASSISTANT, np.bincount(conv.rows[wrote], minlength=conv.records)


@register("no_assistant_turn", target="conversation", severity="error",
          detail="no assistant turn ({value:.0f} turns)",
          description="A record whose conversation is missing, empty or has no assistant turn (reply or "
                      "function call): nothing to learn from it. value = number of turns.")
def no_assistant_turn(conv: Conversation, **params) -> CheckOutput:
    _, replies = _assistant_turns(conv)
    flagged = replies == 0
    detail = np.where(conv.present, None, "no conversation (null)").astype(object)
    return CheckOutput(flagged=flagged, value=conv.counts.astype(np.float64), detail=detail)


@register("last_turn_not_assistant", target="conversation", severity="warning",
          detail="the conversation ends without an assistant reply",
          description="A conversation with assistant turns whose last turn is not the assistant's: the final "
                      "prompt is trained on without an answer (or the reply was cut). value = its last turn.")
def last_turn_not_assistant(conv: Conversation, **params) -> CheckOutput:
    is_assistant, replies = _assistant_turns(conv)
    last = np.zeros(conv.turn.size, bool)
    if conv.turn.size:
        last[:-1] = conv.rows[1:] != conv.rows[:-1]
        last[-1] = True
    bad = last & ~is_assistant
    out = _by_record(conv, bad, lambda first, count: np.full(conv.records, None, dtype=object))
    out.flagged = out.flagged & (replies > 0)      # no assistant turn at all is no_assistant_turn's
    out.value = np.maximum(conv.counts - 1, 0).astype(np.float64)
    out.detail = None
    return out
