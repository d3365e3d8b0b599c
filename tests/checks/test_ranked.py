"""Reward-model data with more than two ranked responses (the "ranked" layout): the shapes the field rule
recognises (responses + scores/ranks, UltraFeedback's completions), the ranked_* flags at their rows and fields,
and the shapes it does not understand named as not checked, never flagged; likewise chosen/rejected columns of a
shape no pair rule reads (issue 30)."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from dataaudit.audit.report import build_report
from dataaudit.config import build_config
from dataaudit.fields import FieldSpec, _list_struct_fields, resolve_schema
from tests.checks.chat_shards import audit, write

FLAG_KEYS = ("row", "check", "field", "value", "detail")
RANKED = ("ranked_empty_response", "ranked_identical", "ranked_scores", "ranked_tie")
PAIR_CHECKS = RANKED + ("pair_empty_side", "pair_identical", "pair_near_identical", "pair_prefix",
                        "pair_prompt_mismatch", "kto_label", "contradictory_preference")
A = "Paris is the capital of France."
B = "I do not know which city you mean."
C = "Lyon is a city in France, but not its capital."


def _jsonl(path: Path, records: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def _fields(path: str):
    from dataaudit.formats import iter_shard

    batch = next(iter(iter_shard(path)))
    return resolve_schema(batch.schema, FieldSpec(), batch)


def _flags(path: str, checks=PAIR_CHECKS) -> list[tuple]:
    _, flags = audit(path)
    return sorted(tuple(r[k] for k in FLAG_KEYS) for r in flags.to_pylist() if r["check"] in checks)


def test_responses_with_scores(tmp_path):
    p = _jsonl(tmp_path / "r.jsonl", [
        {"prompt": "Capital?", "responses": [A, B, C], "scores": [3.0, 1.0, 2.0]},      # 0 clean
        {"prompt": "Capital?", "responses": [A, " ", C], "scores": [3.0, 1.0, 2.0]},    # 1 an empty response
        {"prompt": "Capital?", "responses": [A, B, A.upper()], "scores": [3.0, 1.0, 2.0]},   # 2 a copy
        {"prompt": "Capital?", "responses": [A, B, C], "scores": [3.0, 1.0]},           # 3 too few scores
        {"prompt": "Capital?", "responses": [A, B, C], "scores": [3.0, None, 2.0]},     # 4 a missing score
        {"prompt": "Capital?", "responses": [A, B, C], "scores": [3.0, 2.0, 2.0]},      # 5 a tie
        {"prompt": "Capital?", "responses": [A], "scores": [3.0]},                      # 6 nothing to rank
        {"prompt": "Capital?", "responses": [A, B, C], "scores": None},                 # 7 no scores
    ])
    fields = _fields(p)
    assert fields.pairs.describe() == "ranked responses (prompt prompt, responses responses, scores scores)"
    assert [c.name for c in fields.text] == ["prompt", "responses"] and fields.problems == ()
    assert _flags(p) == [
        (1, "ranked_empty_response", "responses[1]", 3.0, "response 1 is empty"),
        (2, "ranked_identical", "responses[2]", 0.0,
         "response 2 equals response 0 (after whitespace and case normalization)"),
        (3, "ranked_scores", "scores", 2.0, "2 scores for 3 responses"),
        (4, "ranked_scores", "scores[1]", 3.0, "score 1 is missing"),
        (5, "ranked_tie", "responses[2]", 2.0, "responses 1 and 2 share the score 2"),
        (6, "ranked_empty_response", "responses", 1.0, "only one response: nothing to rank"),
        (7, "ranked_scores", "scores", 0.0, "no scores"),
    ]
    summary, _ = audit(p)
    assert summary["fields"]["pairs"] == ["ranked responses (prompt prompt, responses responses, scores scores)"]
    assert "pair_empty_side" in summary["skipped"] and "ranked_tie" not in summary["skipped"]


def test_ranks_ties_and_strings(tmp_path):
    """A `ranks` column: lower is better, a tie named as a rank; ranks stored as strings are not numbers."""
    p = write(tmp_path / "ranks.parquet", {"question": ["Capital?"] * 3, "completions": [[A, B, C]] * 3,
                                           "ranks": [[1, 2, 3], [1, 1, 2], [2, 3, 3]]})
    assert _fields(p).pairs.describe() == "ranked responses (prompt question, responses completions, ranks ranks)"
    assert _flags(p) == [
        (1, "ranked_tie", "completions[1]", 1.0, "responses 0 and 1 share the rank 1"),
        (2, "ranked_tie", "completions[2]", 3.0, "responses 1 and 2 share the rank 3"),
    ]
    s = write(tmp_path / "str.parquet", {"prompt": ["Capital?"], "responses": [[A, B]], "scores": [["1", "2"]]})
    assert _flags(s) == [(0, "ranked_scores", "scores", 2.0, "the scores are string, not numbers")]


def test_ultrafeedback_completions(tmp_path):
    def comp(model, response, score):
        return {"model": model, "response": response, "annotations": {"helpfulness": {"Rating": "4"}},
                "overall_score": score}
    p = _jsonl(tmp_path / "uf.jsonl", [
        {"instruction": "Capital?", "completions": [comp("a", A, 8.5), comp("b", B, 3.0), comp("c", C, 6.0)]},
        {"instruction": "Capital?", "completions": [comp("a", A, 8.5), comp("b", B, 8.5), comp("c", A, 3.0)]},
        {"instruction": "Capital?", "completions": [comp("a", "", 8.5), comp("b", B, None)]},
    ])
    fields = _fields(p)
    assert fields.pairs.describe() == ("ranked responses (prompt instruction, responses completions[].response, "
                                       "scores completions[].overall_score)")
    assert [c.name for c in fields.unchecked] == [] and fields.problems == ()
    assert _flags(p) == [
        (1, "ranked_identical", "completions[2].response", 0.0,
         "response 2 equals response 0 (after whitespace and case normalization)"),
        (1, "ranked_tie", "completions[1].response", 8.5, "responses 0 and 1 share the score 8.5"),
        (2, "ranked_empty_response", "completions[0].response", 2.0, "response 0 is empty"),
        (2, "ranked_scores", "completions[1].overall_score", 2.0, "score 1 is missing"),
    ]


def test_struct_fields_from_the_type_name():
    t = pa.list_(pa.struct([("model", pa.string()), ("annotations", pa.struct([("a", pa.list_(pa.string()))])),
                            ("response", pa.string()), ("overall_score", pa.float64())]))
    assert _list_struct_fields(str(t)) == {"model": "string", "annotations": "struct<a: list<item: string>>",
                                           "response": "string", "overall_score": "double"}
    assert _list_struct_fields("list<item: string>") is None
    assert _list_struct_fields("struct<a: string>") is None


def _report_notes(path: str) -> list[str]:
    summary, _ = audit(path)
    return build_report([summary], build_config({}), {})["notes"]


def test_reward_shapes_not_understood_are_notes_not_flags(tmp_path):
    # structs without a number: the responses are not checked, and the summary says so
    p = _jsonl(tmp_path / "noscore.jsonl", [{"instruction": "Capital?",
                                             "completions": [{"model": "a", "response": A},
                                                             {"model": "b", "response": B}]}])
    assert _fields(p).pairs is None
    assert _flags(p) == []
    assert f"{p}: column 'completions' (list<item: struct<model: string, response: string>>) looks like reward " \
           "data, but its items have no number (overall_score, score, rating, reward, rank): the ranked responses " \
           "were not checked" in _report_notes(p)
    # a score per record, not per response
    q = _jsonl(tmp_path / "scalar.jsonl", [{"prompt": "Capital?", "responses": [A, B], "scores": 3.0}])
    assert _fields(q).pairs is None and _flags(q) == []
    assert f"{q}: columns 'responses' (list<item: string>) and 'scores' (double) look like reward data, but " \
           "'scores' is not a list (one number per response): the ranked responses were not checked" \
           in _report_notes(q)
    # a list of texts without scores is text (several samples), not reward data: no note
    r = _jsonl(tmp_path / "texts.jsonl", [{"prompt": "Capital?", "responses": [A, B]}])
    assert _fields(r).pairs is None and _fields(r).problems == ()


def test_unrecognised_pair_shape_is_a_note(tmp_path):
    """chosen/rejected that no pair rule reads (numbers, structs without role and text): never a silent
    all-clear."""
    p = write(tmp_path / "ints.parquet", {"prompt": ["Capital?", "Sum?"], "chosen": [1, 2], "rejected": [2, 1]})
    assert _fields(p).pairs is None and _flags(p) == []
    assert f"{p}: columns 'chosen' (int64) and 'rejected' (int64) look like a preference pair but are not a " \
           "layout the pair checks read (each side a string, a turn or a list of messages): the pair was not " \
           "checked" in _report_notes(p)
    s = _jsonl(tmp_path / "structs.jsonl", [{"prompt": "Capital?", "chosen": {"answer": A, "score": 1},
                                             "rejected": {"answer": B, "score": 0}}])
    assert _fields(s).pairs is None
    note = f"{s}: columns 'chosen' (struct<answer: string, score: int64>) and 'rejected' (struct<answer: string, " \
           "score: int64>) look like a preference pair but are not a layout the pair checks read (each side a " \
           "string, a turn or a list of messages): the pair was not checked"
    assert note in _report_notes(s)
    v = _jsonl(tmp_path / "v1.jsonl", [{"chosen_messages": A, "rejected_messages": ["x", "y"]}])
    assert any("columns 'chosen_messages' (string) and 'rejected_messages' (list<item: string>) look like a "
               "preference pair" in n for n in _report_notes(v))
