"""OpenAI tool calls: their JSON arguments are checked (and named down to the call); a ShareGPT conversation cut
after a tool result ends without a reply rather than having none."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from dataaudit.audit.shard import audit_shard
from dataaudit.config import build_config


def _flags(path):
    _, flags = audit_shard(str(path), build_config({}))
    return sorted((r["row"], r["field"], r["role"], r["check"]) for r in flags.to_pylist())


def test_tool_call_arguments_are_json_checked(tmp_path):
    call = lambda args: {"id": "c", "type": "function", "function": {"name": "f", "arguments": args}}  # noqa: E731
    turn = lambda role, content, calls=None: {"role": role, "content": content, "tool_calls": calls}  # noqa: E731
    rows = [
        [turn("user", "Weather in Paris?"), turn("assistant", None, [call('{"city": "Paris"}')]),
         turn("tool", '{"temp": 21}'), turn("assistant", "It is 21 degrees.")],
        [turn("user", "Two calls please."),
         turn("assistant", None, [call('{"a": 1}'), call('{"b": ')]),
         turn("tool", "ok"), turn("assistant", "Done.")],
    ]
    path = tmp_path / "calls.parquet"
    pq.write_table(pa.table({"messages": rows}), path)
    assert _flags(path) == [(1, "messages[1].tool_calls[1].function.arguments", "assistant", "json_invalid")]


def test_sharegpt_cut_after_a_tool_result(tmp_path):
    conv = lambda *roles: [{"from": r, "value": "{}" if r in ("function_call", "observation") else "hi there"}  # noqa: E731
                           for r in roles]
    path = tmp_path / "cut.parquet"
    pq.write_table(pa.table({"conversations": [conv("human", "function_call", "observation"),
                                               conv("human", "gpt"), conv("human")]}), path)
    assert _flags(path) == [(0, "conversations[2].from", "observation", "last_turn_not_assistant"),
                            (2, "conversations", None, "no_assistant_turn")]
