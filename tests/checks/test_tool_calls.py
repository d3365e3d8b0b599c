"""OpenAI tool calls: their JSON arguments are checked (and named down to the call); a ShareGPT conversation cut
after a tool result ends without a reply rather than having none."""
from __future__ import annotations

import json

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


# ------------------------------------------------------------------ tool calls against the declared tools

TOOL_CHECKS = ("tool_unknown", "tool_args_schema", "tool_schema_invalid", "tool_result_orphan",
               "tool_call_unanswered", "think_unbalanced", "think_empty_answer")
WEATHER = {"name": "get_weather", "description": "Weather now.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                           "unit": {"type": "string", "enum": ["c", "f"]}},
                          "required": ["city"], "additionalProperties": False}}


def _tool_flags(path):
    _, flags = audit_shard(str(path), build_config({}))
    return sorted((r["row"], r["field"], r["role"], r["check"], r["value"], r["detail"]) for r in flags.to_pylist()
                  if r["check"] in TOOL_CHECKS)


def _openai_call(cid, name, args):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


def _msg(role, content, calls=None, call_id=None):
    return {"role": role, "content": content, "tool_calls": calls, "tool_call_id": call_id}


def test_openai_layout_with_a_tools_list_of_structs(tmp_path):
    tools = [{"type": "function", "function": WEATHER}]
    ask = _msg("user", "Weather in Paris?")
    rows = [
        # 0 clean: a call, its result (by id), the reply
        [ask, _msg("assistant", None, [_openai_call("a", "get_weather", '{"city": "Paris", "unit": "c"}')]),
         _msg("tool", '{"t": 21}', call_id="a"), _msg("assistant", "21 C.")],
        # 1 a bad enum and an extra property (two calls: the first is named, value 2)
        [ask, _msg("assistant", None, [_openai_call("a", "get_weather", '{"city": "Paris", "unit": "k"}'),
                                       _openai_call("b", "get_weather", '{"city": "Oslo", "wind": 1}')]),
         _msg("tool", "{}", call_id="a"), _msg("tool", "{}", call_id="b"), _msg("assistant", "Done.")],
        # 2 a tool that is not declared; a result whose id matches no call
        [ask, _msg("assistant", None, [_openai_call("a", "get_wether", '{"city": "Paris"}')]),
         _msg("tool", "{}", call_id="zz"), _msg("assistant", "Done.")],
        # 3 a call answered by the reply itself (no result); arguments that are not JSON are json_invalid's only
        [ask, _msg("assistant", None, [_openai_call("a", "get_weather", '{"city": ')]), _msg("assistant", "Sunny.")],
        # 4 a conversation ending with its call trains the call: not unanswered
        [ask, _msg("assistant", None, [_openai_call("a", "get_weather", '{"city": "Lima"}')])],
    ]
    path = tmp_path / "openai.parquet"
    pq.write_table(pa.table({"messages": rows, "tools": [tools] * len(rows)}), path)
    assert _tool_flags(path) == sorted([
        (1, "messages[1].tool_calls[0].function.arguments", "assistant", "tool_args_schema", 2.0,
         "get_weather: unit: 'k' is not one of ['c', 'f'] (2 such calls)"),
        (2, "messages[1].tool_calls[0].function.name", "assistant", "tool_unknown", 1.0,
         "'get_wether' is not one of the record's tools (get_weather)"),
        (2, "messages[2].role", "tool", "tool_result_orphan", 1.0, "tool_call_id 'zz' matches no call"),
        (2, "messages[1].tool_calls[0].function.name", "assistant", "tool_call_unanswered", 1.0,
         "get_wether: no tool result before the next turn"),
        (3, "messages[1].tool_calls[0].function.name", "assistant", "tool_call_unanswered", 1.0,
         "get_weather: no tool result before the next turn"),
    ])


def test_sharegpt_layout(tmp_path):
    tools = json.dumps([WEATHER, {"name": "lookup", "parameters": {"type": "dict", "properties": {}}}])
    turn = lambda who, value: {"from": who, "value": value}  # noqa: E731
    call = lambda name, args: turn("function_call", json.dumps({"name": name, "arguments": args}))  # noqa: E731
    rows = [
        # 0 clean apart from the `dict` schema of a tool it never calls
        [turn("human", "Paris?"), call("get_weather", {"city": "Paris"}), turn("observation", "{}"), turn("gpt", "ok")],
        # 1 a required property missing; a call to the tool with no valid schema is not checked
        [turn("human", "Paris?"), call("get_weather", {"unit": "c"}), turn("observation", "{}"),
         call("lookup", {"anything": 1}), turn("observation", "{}"), turn("gpt", "ok")],
        # 2 an observation with no call before it
        [turn("human", "Paris?"), turn("observation", "{}"), turn("gpt", "ok")],
    ]
    path = tmp_path / "sharegpt.parquet"
    pq.write_table(pa.table({"conversations": rows, "tools": [tools] * 3}), path)
    invalid = "lookup: parameters.type: 'dict' is not valid under any of the given schemas"
    assert _tool_flags(path) == sorted([
        (0, "tools[1].parameters", None, "tool_schema_invalid", 1.0, invalid),
        (1, "tools[1].parameters", None, "tool_schema_invalid", 1.0, invalid),
        (1, "conversations[1].value", "function_call", "tool_args_schema", 1.0,
         "get_weather: 'city' is a required property"),
        (2, "tools[1].parameters", None, "tool_schema_invalid", 1.0, invalid),
        (2, "conversations[1].from", "observation", "tool_result_orphan", 1.0, "a tool result with no call before it"),
    ])


def test_v1_parts_and_reasoning(tmp_path):
    tools = json.dumps([{"type": "function", "function": WEATHER}])
    part = lambda kind, value: {"type": kind, "value": value}  # noqa: E731
    msg = lambda role, *parts: {"role": role, "content": list(parts)}  # noqa: E731
    call = part("tool_call", json.dumps({"name": "get_weather", "arguments": {"city": 7}}))
    rows = [
        # 0 a wrong type in the call; the reply is only a reasoning part
        [msg("user", part("text", "Paris?")), msg("assistant", part("reasoning", "Call it."), call),
         msg("tool", part("text", "{}")), msg("assistant", part("reasoning", "Now answer."))],
        # 1 a stray </think> in the answer text; then <think> with nothing after </think>
        [msg("user", part("text", "Hi")), msg("assistant", part("reasoning", "Greet."), part("text", "Hello!\n</think>")),
         msg("user", part("text", "Again")), msg("assistant", part("text", "<think>Greet again.</think>\n"))],
    ]
    path = tmp_path / "v1.jsonl"
    path.write_text("".join(json.dumps({"messages": r, "tools": tools}) + "\n" for r in rows))
    assert _tool_flags(path) == [
        (0, "messages[1].content[1].value", "assistant", "tool_args_schema", 1.0,
         "get_weather: city: 7 is not of type 'string'"),
        (0, "messages[3].content[0].value", "assistant", "think_empty_answer", 1.0,
         "a reasoning part with no text or tool call after it in the turn"),
        (1, "messages[1].content", "assistant", "think_unbalanced", -1.0, "0 '<think>' and 1 '</think>'"),
        (1, "messages[3].content", "assistant", "think_empty_answer", 1.0,
         "nothing after '</think>': the turn is all reasoning"),
    ]


def test_without_a_tools_column_names_are_not_checked(tmp_path):
    """No tools declared: unknown names and arguments are not judged; a layout without result turns is not
    checked for unanswered calls."""
    rows = [[_msg("user", "Paris?"), _msg("assistant", None, [_openai_call("a", "anything", '{"x": 1}')]),
             _msg("assistant", "Sunny.")]]
    path = tmp_path / "bare.parquet"
    pq.write_table(pa.table({"messages": rows}), path)
    assert _tool_flags(path) == []


# ------------------------------------------------------------------ reasoning as the chat template renders it

# ChatML that ignores `reasoning_content`, and one that writes every trace in <think> before the content.
KEEPS = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% if m.reasoning_content %}<think>"
         "{{ m.reasoning_content }}</think>{% endif %}{{ m['content'] }}<|im_end|>\n{% endfor %}")


def _reasoning_record(tmp_path):
    part = lambda kind, value: {"type": kind, "value": value}  # noqa: E731
    rows = [{"messages": [{"role": "user", "content": [part("text", "a b")]},
                          {"role": "assistant", "content": [part("reasoning", "c c c"), part("text", "a")]}]}]
    path = tmp_path / "reasoning.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_reasoning_dropped_by_a_template_that_ignores_it(tmp_path):
    from tests.stats.conversation_helpers import CHATML, tokenizer_folder

    path = _reasoning_record(tmp_path)
    drops = tokenizer_folder(tmp_path / "drops", CHATML)
    keeps = tokenizer_folder(tmp_path / "keeps", KEEPS)
    for folder, expected in ((drops, [(0, "messages[1].content[0].value", "assistant",
                                       "reasoning_dropped_by_template", 1.0,
                                       "the chat template's rendering leaves out this reasoning ('c c c'...)")]),
                             (keeps, [])):
        _, flags = audit_shard(str(path), build_config({"data": {"tokenizer": str(folder)}}))
        assert sorted((r["row"], r["field"], r["role"], r["check"], r["value"], r["detail"])
                      for r in flags.to_pylist() if r["check"] == "reasoning_dropped_by_template") == expected


def test_reasoning_dropped_needs_a_tokenizer(tmp_path):
    summary, _ = audit_shard(str(_reasoning_record(tmp_path)), build_config({}))
    assert summary.skipped["reasoning_dropped_by_template"] == "not configured: tokenizer"


def test_tools_of_a_shape_not_understood_are_reported_not_checked(tmp_path):
    turn = lambda who, value: {"from": who, "value": value}  # noqa: E731
    conv = [turn("human", "Paris?"), turn("function_call", '{"name": "get_weather", "arguments": {"x": 1}}'),
            turn("observation", "{}"), turn("gpt", "ok")]
    tools = [json.dumps(WEATHER), json.dumps([{"description": "no name"}, WEATHER])]
    path = tmp_path / "shapes.parquet"
    pq.write_table(pa.table({"conversations": [conv, conv], "tools": tools}), path)
    assert _tool_flags(path) == [
        (0, "tools", None, "tool_schema_invalid", 1.0, "the tools are a JSON dict, not a list: calls not checked"),
        (1, "conversations[1].value", "function_call", "tool_args_schema", 1.0,
         "get_weather: 'city' is a required property"),
        (1, "tools[0]", None, "tool_schema_invalid", 1.0, "tools[0] has no name: calls to it not checked"),
    ]


def test_think_tags_are_read_on_the_rows_that_hold_them_only():
    """The two think checks read only rows holding "think>" (one pass for the others); the results are row for row
    those of the tags' rules, nulls and untagged rows included."""
    import pyarrow as pa

    from dataaudit.checks import REGISTRY

    arr = pa.array(["plain text", None, "<think>a</think> b", "</think> x <think>", "<think>a</think>  ",
                    "<think>open", "no tags but think> here", ""])
    u = REGISTRY["think_unbalanced"].fn(arr)
    assert u.flagged.tolist() == [False, False, False, True, False, True, False, False]
    assert u.value.tolist() == [0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0]
    assert u.detail[3] == "1 '<think>' and 1 '</think>' ('</think>' comes first)"
    e = REGISTRY["think_empty_answer"].fn(arr)
    assert e.flagged.tolist() == [False, False, False, False, True, False, False, False]
