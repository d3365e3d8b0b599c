"""The three forms of chat and instruction data through `audit_shard`: every planted defect gives exactly the flags
listed (row, field path, role, check, severity), clean records give none, and the shard's fields and formats say
how each column was read."""
from __future__ import annotations

import pyarrow as pa

from dataaudit.checks import REGISTRY
from tests.checks.chat_shards import (CALL_JSON, MESSAGES_WITH_CALLS, MESSAGES_WITH_PARTS,
                                      MESSAGES_WITH_VALUE_PARTS, OPENAI, TOOLS, E, W, alpaca_expected, alpaca_shard,
                                      audit, image_part, msg, openai_expected, openai_shard, rows_of,
                                      sharegpt_expected, sharegpt_shard, text_part, write)


# ---------------------------------------------------------------------------------------------- OpenAI messages

def test_openai_messages_flags(tmp_path):
    summary, flags = audit(openai_shard(tmp_path))
    assert rows_of(flags) == openai_expected()
    details = {(r["row"], r["check"]): r["detail"] for r in flags.to_pylist()}
    assert details[(4, "unknown_role")] == "turn 1: role 'narrator' is not one of the allowed roles"
    assert details[(5, "role_order")] == "turn 1: a second user turn in a row"
    assert details[(6, "role_order")] == "turn 2: a system turn after the first turn"
    assert details[(9, "no_assistant_turn")] == "no assistant turn (2 turns)"
    assert details[(10, "no_assistant_turn")] == "no conversation (null)"
    assert summary["fields"] == {"text": ["messages"], "id": ["id"]}
    assert summary["formats"] == {"messages": "conversation (role, content)",
                                  "id": "identifier (not audited as prose)"}
    assert summary["unchecked"] == {} and summary["problems"] == []
    assert summary["records"] == 11 and summary["flagged"] == 9
    assert summary["duplicate_id"]["ids"] == 11 and summary["duplicate_id"]["within"] == 0


def test_openai_messages_in_small_batches_give_the_same_flags(tmp_path):
    """Batches are slices of the Parquet row groups: turns, paths and rows stay right in every batch."""
    _, flags = audit(openai_shard(tmp_path), batch_rows=3)
    assert rows_of(flags) == openai_expected()


def test_clean_conversations_get_no_flags(tmp_path):
    clean = [OPENAI[0], OPENAI[7]]
    summary, flags = audit(write(tmp_path / "clean.parquet", {"id": ["a", "b"], "messages": clean},
                                 {"messages": MESSAGES_WITH_CALLS}))
    assert flags.num_rows == 0 and summary["flagged"] == 0


def test_content_as_a_list_of_text_parts(tmp_path):
    rows = [
        # 0 clean: a user turn made only of an image is not an empty turn
        [msg("user", [image_part()]), msg("assistant", [text_part("A cat on a mat.")])],
        # 1 whitespace-only reply
        [msg("user", [text_part("What is in this picture?"), image_part()]), msg("assistant", [text_part("   ")])],
        # 2 an empty text part
        [msg("user", [text_part("")]), msg("assistant", [text_part("Please ask a question.")])],
        # 3 a control character in the second text part of a reply
        [msg("user", [text_part("Describe it.")]),
         msg("assistant", [text_part("A red car."), text_part("Pa\x00rked.")])],
        # 4 no parts at all
        [msg("user", []), msg("assistant", [text_part("Hello?")])],
    ]
    summary, flags = audit(write(tmp_path / "parts.parquet", {"messages": rows}, {"messages": MESSAGES_WITH_PARTS}))
    assert rows_of(flags) == [
        (1, "messages[1].content", "assistant", "empty_reply", E),
        (2, "messages[0].content", "user", "empty_text", W),
        (3, "messages[1].content", "assistant", "control_chars", W),
        (4, "messages[0].content", "user", "empty_text", W),
    ]
    # the image parts are an image field of their own (URLs here: not fetched, named in the notes)
    assert summary["formats"] == {"messages": "conversation (role, content[].text)",
                                  "messages.content[].image": "images in content parts of messages (paths, data: "
                                                              "URLs, URLs)"}


def test_content_parts_with_value_keys(tmp_path):
    rows = [[msg("user", [{"type": "text", "value": "hey"}]), msg("assistant", [{"type": "text", "value": ""}])],
            [msg("user", [{"type": "image", "value": None}]), msg("assistant", [{"type": "text", "value": "Nice."}])]]
    summary, flags = audit(write(tmp_path / "values.parquet", {"messages": rows},
                                 {"messages": MESSAGES_WITH_VALUE_PARTS}))
    assert rows_of(flags) == [(0, "messages[1].content", "assistant", "empty_reply", E)]
    assert summary["formats"] == {"messages": "conversation (role, content[].value)"}


# ---------------------------------------------------------------------------------------------- ShareGPT

def test_the_json_of_this_suite_would_be_flagged_as_prose():
    """So that the next test shows JSON is kept from the prose checks, not that it is clean prose (repetition
    itself skips JSON lines since its rework: with skip_structure off it is Gopher's filter and flags them)."""
    params = {**REGISTRY["repetition"].params, "skip_structure": False}
    out = REGISTRY["repetition"].fn(pa.array([TOOLS, CALL_JSON]), **params)
    assert out.flagged.tolist() == [True, True]


def test_sharegpt_flags(tmp_path):
    summary, flags = audit(sharegpt_shard(tmp_path))
    assert rows_of(flags) == sharegpt_expected()
    details = {(r["row"], r["check"]): r["detail"] for r in flags.to_pylist()}
    assert details[(1, "json_invalid")] == "not valid JSON: Expecting value at character 32"
    assert details[(2, "json_invalid")] == "not valid JSON: Expecting ',' delimiter at character 18"
    assert summary["fields"] == {"text": ["conversations"], "json": ["tools"], "id": ["id"]}
    assert summary["formats"] == {"conversations": "conversation (from, value)", "tools": "JSON text",
                                  "id": "identifier (not audited as prose)"}


def test_json_fields_and_turns_get_only_json_checks(tmp_path):
    """The tools column and the function call / observation turns: json_invalid and nothing else, even where the
    prose checks would flag them."""
    _, flags = audit(sharegpt_shard(tmp_path))
    on_json = {(r["field"], r["check"]) for r in flags.to_pylist()
               if r["field"] == "tools" or r["role"] in ("function_call", "observation")}
    assert {check for _, check in on_json} == {"json_invalid"}


# ---------------------------------------------------------------------------------------------- Alpaca

def test_alpaca_flags(tmp_path):
    summary, flags = audit(alpaca_shard(tmp_path))
    assert rows_of(flags) == alpaca_expected()
    assert summary["fields"] == {"text": ["instruction", "input", "output"]}
    assert summary["formats"] == {"instruction": "text", "input": "text", "output": "text"}


def test_an_empty_input_is_flagged_when_it_is_the_only_text(tmp_path):
    """`input` is optional only beside other text: configured alone, an empty one is an empty text."""
    _, flags = audit(alpaca_shard(tmp_path), {"fields": {"text": ["input"]}})
    assert rows_of(flags) == [(0, "input", None, "empty_text", W), (2, "input", None, "empty_text", W),
                              (5, "input", None, "empty_text", W), (6, "input", None, "empty_text", W)]


def test_configured_instruction_and_output_leave_input_out(tmp_path):
    summary, flags = audit(alpaca_shard(tmp_path), {"fields": {"text": ["instruction", "output"]}})
    assert rows_of(flags) == [
        (2, "output", None, "empty_text", W),
        (3, "instruction", None, "control_chars", W),
        (4, "instruction", None, "empty_text", W),
    ]
    assert summary["fields"] == {"text": ["instruction", "output"]}


# ---------------------------------------------------------------------------------------------- configured paths

def test_configured_messages_content_is_the_conversation(tmp_path):
    summary, flags = audit(openai_shard(tmp_path), {"fields": {"text": "messages.content"}})
    assert rows_of(flags) == openai_expected()
    assert summary["fields"] == {"text": ["messages"], "id": ["id"]}


def test_configured_struct_path(tmp_path):
    question = pa.struct([("stem", pa.string()),
                          ("choices", pa.list_(pa.struct([("text", pa.string()), ("label", pa.string())])))])
    choices = [{"text": "Mars", "label": "A"}, {"text": "Venus", "label": "B"}]
    path = write(tmp_path / "arc.parquet", {
        "id": ["q1", "q2", "q3"],
        "question": [{"stem": "Which planet is red?", "choices": choices}, {"stem": "", "choices": choices},
                     {"stem": "Which\x0e planet is hot?", "choices": choices}],
        "answerKey": ["A", "A", "B"]}, {"question": question})
    summary, flags = audit(path, {"fields": {"text": "question.stem"}})
    assert rows_of(flags) == [(1, "question.stem", None, "empty_text", W),
                              (2, "question.stem", None, "control_chars", W)]
    assert summary["fields"] == {"text": ["question.stem"], "id": ["id"]}
    assert summary["formats"] == {"question.stem": "text", "id": "identifier (not audited as prose)"}
    assert summary["unchecked"] == {}
    # not configured, the struct is no text: named as unchecked
    summary, _ = audit(path)
    assert summary["fields"] == {"text": ["answerKey"], "id": ["id"]}
    assert summary["unchecked"] == {
        "question": "struct<stem: string, choices: list<element: struct<text: string, label: string>>>"}


# ---------------------------------------------------------------------------------------------- identifiers

def _identifier_shard(tmp_path, rows: int) -> str:
    prose = [f"Record number {i} says something ordinary." for i in range(rows)]
    digests = [f"{i:04d}" + "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" * 2 for i in range(rows)]
    return write(tmp_path / f"ident{rows}.parquet", {"id": list(range(rows)), "text": prose, "digest": digests})


def test_identifiers_are_not_audited_as_prose(tmp_path):
    """An `id` column and, from 16 records on, a column of unique values without whitespace (132-character
    digests that long_unbroken_run would flag)."""
    summary, flags = audit(_identifier_shard(tmp_path, 16))
    assert flags.num_rows == 0
    assert summary["fields"] == {"text": ["text"], "id": ["id"]}
    assert summary["formats"] == {"text": "text", "digest": "identifier (not audited as prose)"}


def test_too_few_values_say_nothing_of_an_identifier(tmp_path):
    summary, flags = audit(_identifier_shard(tmp_path, 15))
    assert summary["fields"] == {"text": ["text", "digest"], "id": ["id"]}
    assert rows_of(flags, ("row", "field", "check")) == [(i, "digest", "long_unbroken_run") for i in range(15)]
