"""Chat and instruction shards for the chat tests (tests/checks/, tests/e2e/test_chat_cli.py): the three forms (OpenAI
messages, ShareGPT conversations, Alpaca instruction/input/output) written as small Parquet files, and helpers to
audit them and compare their flags.

A flag is compared as (row, field, role, check, severity): `field` is the path (`messages[3].content`,
`conversations[1].from`, `output`), `role` the role of the turn flagged (None outside conversations).
"""
from __future__ import annotations

import functools
import json
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from click.testing import CliRunner

from dataaudit.audit.shard import audit_shard
from dataaudit.cli import main
from dataaudit.config import build_config

# ---------------------------------------------------------------------------------------------- types

MESSAGE = pa.struct([("role", pa.string()), ("content", pa.string())])
MESSAGES = pa.list_(MESSAGE)
CALL = pa.struct([("id", pa.string()), ("type", pa.string()),
                  ("function", pa.struct([("name", pa.string()), ("arguments", pa.string())]))])
# OpenAI messages as exported with function calling: an assistant turn may only call tools (content null).
MESSAGES_WITH_CALLS = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string()),
                                          ("tool_calls", pa.list_(CALL))]))
TEXT_PART = pa.struct([("type", pa.string()), ("text", pa.string()),
                       ("image_url", pa.struct([("url", pa.string())]))])
MESSAGES_WITH_PARTS = pa.list_(pa.struct([("role", pa.string()), ("content", pa.list_(TEXT_PART))]))
VALUE_PART = pa.struct([("type", pa.string()), ("value", pa.string())])
MESSAGES_WITH_VALUE_PARTS = pa.list_(pa.struct([("role", pa.string()), ("content", pa.list_(VALUE_PART))]))
SHAREGPT = pa.list_(pa.struct([("from", pa.string()), ("value", pa.string())]))

CHECKED = ("row", "field", "role", "check", "severity")
E, W = "error", "warning"


def msg(role, content, **extra) -> dict:
    return {"role": role, "content": content, **extra}


def turn(who, value) -> dict:
    return {"from": who, "value": value}


def text_part(text) -> dict:
    return {"type": "text", "text": text, "image_url": None}


def image_part(url="https://example.com/cat.png") -> dict:
    return {"type": "image_url", "text": None, "image_url": {"url": url}}


def write(path: Path, columns: dict, types: dict | None = None) -> str:
    """A Parquet shard of `columns` (name -> values), `types` giving the Arrow type of some."""
    types = types or {}
    table = pa.table({name: pa.array(values, types.get(name)) if not isinstance(values, pa.Array) else values
                      for name, values in columns.items()})
    pq.write_table(table, path)
    return str(path)


# ---------------------------------------------------------------------------------------------- auditing

def rows_of(flags: pa.Table, keys=CHECKED) -> list[tuple]:
    """The flags as tuples of `keys`, in a stable order (row, check, field)."""
    out = [tuple(r[k] for k in keys) for r in flags.select(list(keys)).to_pylist()]
    order = {k: i for i, k in enumerate(keys)}
    return sorted(out, key=lambda t: (t[order["row"]], t[order["check"]], t[order["field"]]))


def audit(path: str, config: dict | None = None, **kw):
    """(shard summary, flags table) of one shard."""
    result, flags = audit_shard(path, build_config(config or {}), **kw)
    return result.summary(), flags


def cli_audit(paths: list[str], out: Path, config_text: str | None = None):
    """`dataaudit audit PATHS --out OUT --engine local [--config]`: (click result, report.json or None, flags)."""
    args = ["audit", *paths, "--out", str(out), "--engine", "local"]
    if config_text is not None:
        cfg = out.parent / f"{out.name}.toml"
        cfg.write_text(config_text)
        args += ["--config", str(cfg)]
    res = CliRunner().invoke(main, args)
    report_path = out / "report.json"
    if not report_path.exists():
        return res, None, None
    return res, json.loads(report_path.read_text()), pq.read_table(out / "flags.parquet")


@functools.cache
def runner_names_turn_roles() -> bool:
    """Whether the runner (dataaudit/audit/batch.py) writes a conversation check's CheckOutput.role into
    flags.parquet's `role`. The checks give it; until the runner passes it on, a flag a conversation check puts
    on a record (`messages[1].role`) has role None. Probed once on a tiny shard."""
    with tempfile.TemporaryDirectory() as d:
        path = write(Path(d) / "probe.parquet", {"messages": [[msg("user", "a"), msg("user", "b"),
                                                                msg("assistant", "c")]]}, {"messages": MESSAGES})
        _, flags = audit(path)
    roles = [r["role"] for r in flags.to_pylist() if r["check"] == "role_order"]
    assert roles in (["user"], [None]), roles
    return roles == ["user"]


def turn_role(role: str | None) -> str | None:
    """The `role` a conversation check's flag has in flags.parquet (see runner_names_turn_roles)."""
    return role if runner_names_turn_roles() else None


# ---------------------------------------------------------------------------------------------- OpenAI messages

def _call(i: int, city: str) -> dict:
    return {"id": f"call_{i}", "type": "function",
            "function": {"name": "get_weather", "arguments": json.dumps({"city": city})}}


OPENAI = [
    # 0 clean
    [msg("system", "You are a helpful assistant."), msg("user", "What is the capital of France?"),
     msg("assistant", "The capital of France is Paris.")],
    # 1 whitespace-only assistant reply
    [msg("user", "Tell me a joke."), msg("assistant", "  \n\t")],
    # 2 empty user turn
    [msg("system", "You are a helpful assistant."), msg("user", ""), msg("assistant", "Could you say more?")],
    # 3 a control character (ESC) in a turn
    [msg("user", "Print this: \x1b[31m red"), msg("assistant", "Done.")],
    # 4 unknown role
    [msg("user", "Hi"), msg("narrator", "The scene opens."), msg("assistant", "Hello.")],
    # 5 two user turns in a row
    [msg("user", "Hi"), msg("user", "Are you there?"), msg("assistant", "Yes.")],
    # 6 a system turn that is not first
    [msg("user", "Hi"), msg("assistant", "Hello."), msg("system", "Be brief."), msg("user", "Why?"),
     msg("assistant", "Because.")],
    # 7 clean: an assistant turn that only calls tools (content null), then two tool results in a row
    [msg("user", "Weather in Paris and Rome?"),
     msg("assistant", None, tool_calls=[_call(1, "Paris"), _call(2, "Rome")]),
     msg("tool", "Paris: sunny"), msg("tool", "Rome: rain"), msg("assistant", "Sunny in Paris, rain in Rome.")],
    # 8 the last turn is not the assistant's
    [msg("user", "Hi"), msg("assistant", "Hello."), msg("user", "Thanks!")],
    # 9 no assistant turn
    [msg("system", "You are terse."), msg("user", "Hi")],
    # 10 no conversation
    None,
]


def openai_expected() -> list[tuple]:
    return [
        (1, "messages[1].content", "assistant", "empty_reply", E),
        (2, "messages[1].content", "user", "empty_text", W),
        (3, "messages[0].content", "user", "control_chars", W),
        (4, "messages[1].role", turn_role("narrator"), "unknown_role", W),
        (5, "messages[1].role", turn_role("user"), "role_order", W),
        (6, "messages[2].role", turn_role("system"), "role_order", W),
        (8, "messages[2].role", turn_role("user"), "last_turn_not_assistant", W),
        (9, "messages", None, "no_assistant_turn", E),
        (10, "messages", None, "no_assistant_turn", E),
    ]


def openai_shard(tmp_path) -> str:
    ids = [f"conv-{i:03d}" for i in range(len(OPENAI))]
    return write(tmp_path / "openai.parquet", {"id": ids, "messages": OPENAI}, {"messages": MESSAGES_WITH_CALLS})


# ---------------------------------------------------------------------------------------------- ShareGPT

# JSON that the prose checks would flag (repetition: duplicated lines, repeated n-grams): JSON is checked as JSON.
PROPS = {f"field_{i}": {"type": "string", "description": "A string field of the record."} for i in range(12)}
TOOLS = json.dumps([{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object",
                                                                                        "properties": PROPS}}}],
                   indent=2)
CALL_JSON = json.dumps({"name": "lookup", "arguments": {"query": "y " * 60}})

SHARE = [
    # 0 clean: function call and observation turns, a tools document
    ([turn("human", "Look up the record."), turn("function_call", CALL_JSON), turn("observation", '{"found": true}'),
      turn("gpt", "I found it.")], TOOLS),
    # 1 a function call that is not JSON
    ([turn("human", "Look it up."), turn("function_call", '{"name": "lookup", "arguments": '),
      turn("observation", '{"found": false}'), turn("gpt", "Nothing found.")], "[]"),
    # 2 tools that are not JSON
    ([turn("human", "Hi"), turn("gpt", "Hello.")], '[{"name": "lookup"'),
    # 3 a control character (DEL) in a reply
    ([turn("human", "Hi"), turn("gpt", "Hello\x7f there.")], "[]"),
    # 4 an empty reply
    ([turn("human", "Hi"), turn("gpt", "")], "[]"),
    # 5 two human turns in a row
    ([turn("human", "Hi"), turn("human", "Hello?"), turn("gpt", "Hi!")], "[]"),
    # 6 an observation that is not JSON
    ([turn("human", "Look it up."), turn("function_call", '{"name": "lookup", "arguments": {}}'),
      turn("observation", "not json at all"), turn("gpt", "Hm.")], TOOLS),
    # 7 unknown role
    ([turn("human", "Hi"), turn("moderator", "Keep it civil."), turn("gpt", "Sure.")], None),
]


def sharegpt_expected() -> list[tuple]:
    return [
        (1, "conversations[1].value", "function_call", "json_invalid", E),
        (2, "tools", None, "json_invalid", E),
        (3, "conversations[1].value", "gpt", "control_chars", W),
        (4, "conversations[1].value", "gpt", "empty_reply", E),
        (5, "conversations[1].from", turn_role("human"), "role_order", W),
        (6, "conversations[2].value", "observation", "json_invalid", E),
        (7, "conversations[1].from", turn_role("moderator"), "unknown_role", W),
    ]


def sharegpt_shard(tmp_path) -> str:
    return write(tmp_path / "sharegpt.parquet", {"id": [f"s{i}" for i in range(len(SHARE))],
                                                 "conversations": [c for c, _ in SHARE],
                                                 "tools": [t for _, t in SHARE]}, {"conversations": SHAREGPT})


# ---------------------------------------------------------------------------------------------- Alpaca

ALPACA = [
    # instruction, input, output
    ("Name a primary color.", "", "Red."),                 # 0 clean: an empty input is the usual "no input"
    ("Add the numbers.", "2 and 3", "5"),                  # 1 clean
    ("Say nothing?", "", ""),                              # 2 empty output
    ("Translate\x08 this.", "bonjour", "hello"),           # 3 a control character (backspace) in the instruction
    (None, "Some context.", "An answer."),                 # 4 no instruction
    ("Summarize.", "   ", "Nothing to summarize."),        # 5 a whitespace-only input
    ("Give a word.", None, "Word."),                       # 6 clean: no input (null)
]


def alpaca_expected() -> list[tuple]:
    return [
        (2, "output", None, "empty_text", W),
        (3, "instruction", None, "control_chars", W),
        (4, "instruction", None, "empty_text", W),
        (5, "input", None, "empty_text", W),
    ]


def alpaca_shard(tmp_path, name="alpaca.parquet") -> str:
    return write(tmp_path / name, {k: [r[i] for r in ALPACA] for i, k in enumerate(("instruction", "input", "output"))})
