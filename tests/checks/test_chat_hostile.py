"""Hostile chat data: never a crash, always flags or a clear note. Null turns, null roles and contents, empty and
all-null conversations, 10,000 turns in one conversation, a 50 MB turn."""
from __future__ import annotations

import time

import pyarrow as pa

from tests.checks.chat_shards import MESSAGES, E, W, audit, cli_audit, msg, rows_of, turn_role, write


def test_null_turns_roles_and_contents(tmp_path):
    rows = [
        [None, msg("user", "Hi"), msg("assistant", "Hello.")],     # 0 a turn that is a null struct
        [msg(None, "Hi"), msg("assistant", "Hello.")],              # 1 a turn without a role
        [msg("user", "Hi"), msg("assistant", None)],                # 2 a reply without content
        [msg("user", None), msg("assistant", "Hello.")],            # 3 a prompt without content
        [],                                                         # 4 no turns
        [None],                                                     # 5 only a null turn
        None,                                                       # 6 no conversation
    ]
    summary, flags = audit(write(tmp_path / "nulls.parquet", {"messages": rows}, {"messages": MESSAGES}))
    assert rows_of(flags) == [
        (0, "messages[0].content", None, "empty_text", W),
        (0, "messages[0].role", None, "unknown_role", W),
        (1, "messages[0].role", None, "unknown_role", W),
        (2, "messages[1].content", "assistant", "empty_reply", E),
        (3, "messages[0].content", "user", "empty_text", W),
        (4, "messages", None, "no_assistant_turn", E),
        (5, "messages[0].content", None, "empty_text", W),
        (5, "messages", None, "no_assistant_turn", E),
        (5, "messages[0].role", None, "unknown_role", W),
        (6, "messages", None, "no_assistant_turn", E),
    ]
    details = {(r["row"], r["check"]): r["detail"] for r in flags.to_pylist()}
    assert details[(0, "unknown_role")] == "turn 0 has no role"
    assert details[(2, "empty_reply")] == "null"
    assert details[(4, "no_assistant_turn")] == "no assistant turn (0 turns)"
    assert details[(6, "no_assistant_turn")] == "no conversation (null)"
    assert summary["status"] == "ok"


def test_a_conversation_column_of_nulls(tmp_path):
    """Typed as a conversation, every record is flagged; untyped (Arrow null), the column is named as unchecked."""
    summary, flags = audit(write(tmp_path / "typed.parquet", {"messages": [None, None, None]}, {"messages": MESSAGES}))
    assert rows_of(flags) == [(i, "messages", None, "no_assistant_turn", E) for i in range(3)]
    assert summary["fields"] == {"text": ["messages"]}
    path = write(tmp_path / "untyped.parquet", {"messages": pa.nulls(3), "text": ["one text", "two texts", "three"]})
    res, report, flags = cli_audit([path], tmp_path / "out")
    assert res.exit_code == 0, res.output
    assert flags.num_rows == 0
    assert report["shards"][0]["fields"] == {"text": ["text"]}
    assert f"{path}: warning: not checked by any check: messages (null)" in report["notes"]


def test_ten_thousand_turns(tmp_path):
    turns = [msg("user" if i % 2 == 0 else "assistant", f"Turn {i} of a very long chat.") for i in range(10_000)]
    turns[9_998] = msg("user", "Turn 9998 \x01")
    turns[9_999] = msg("assistant", "")
    path = write(tmp_path / "long.parquet", {"messages": [turns, turns[:2]]}, {"messages": MESSAGES})
    started = time.perf_counter()
    summary, flags = audit(path)
    assert time.perf_counter() - started < 5
    assert rows_of(flags) == [(0, "messages[9998].content", "user", "control_chars", W),
                              (0, "messages[9999].content", "assistant", "empty_reply", E)]
    assert summary["lengths"]["messages"]["count"] == 2


def test_a_50_mb_turn(tmp_path):
    big = ("x" * 99 + "\n") * 500_000      # 50 MB of one repeated line
    path = write(tmp_path / "big.parquet", {"messages": [[msg("user", "Paste the log."), msg("assistant", big)],
                                                         [msg("user", "Hi"), msg("user", "Hi")]]},
                 {"messages": MESSAGES})
    started = time.perf_counter()
    summary, flags = audit(path)
    assert time.perf_counter() - started < 15     # ~3 s; a generous bound against a quadratic path
    assert rows_of(flags) == [
        (0, "messages[1].content", "assistant", "long_document", W),   # repetition saw its first 8 MiB
        (0, "messages[1].content", "assistant", "repetition", W),
        (1, "messages", None, "no_assistant_turn", E),
        (1, "messages[1].role", turn_role("user"), "role_order", W),
    ]
    assert summary["lengths"]["messages"]["max"] == 50_000_000 + len("Paste the log.")
