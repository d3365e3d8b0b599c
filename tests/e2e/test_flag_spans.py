"""flags.parquet says where in the flagged text each finding is (`start`, `end`: character offsets in the field or
turn the flag names) for the checks that point at a place, and null for the others (issue 34, item 6)."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
from click.testing import CliRunner

from dataaudit.cli import main

REPLY = "Sure, h\u00e9r\u00e9 it is \u00c3\u00a9t\u00c3\u00a9 and the end<|im_end|> more."
RECORDS = [
    {"messages": [{"role": "user", "content": "hello\x07 there, how are you today?"},
                  {"role": "assistant", "content": REPLY}]},
    {"messages": [{"role": "user", "content": "An ordinary question about the weather in spring?"},
                  {"role": "assistant", "content": ""}]},
]


def test_each_flag_names_where_in_its_turn(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    shard = data / "chat.jsonl"
    shard.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), encoding="utf-8")
    res = CliRunner().invoke(main, ["audit", str(shard), "--out", str(tmp_path / "out"), "--engine", "local"])
    assert res.exit_code == 1, res.output
    flags = pq.read_table(tmp_path / "out" / "flags.parquet").to_pylist()
    got = sorted((f["row"], f["field"], f["check"], f["start"], f["end"]) for f in flags)
    assert got == [(0, "messages[0].content", "control_chars", 5, 6),
                   (0, "messages[1].content", "mojibake", 17, 19),
                   (0, "messages[1].content", "special_tokens", 34, 44),
                   (1, "messages[1].content", "empty_reply", None, None)]
    texts = {(0, 0): RECORDS[0]["messages"][0]["content"], (0, 1): REPLY}
    pieces = {f["check"]: texts[(f["row"], int(f["field"][9]))][f["start"]:f["end"]]
              for f in flags if f["start"] is not None}
    assert pieces == {"control_chars": "\x07", "mojibake": "\u00c3\u00a9", "special_tokens": "<|im_end|>"}
