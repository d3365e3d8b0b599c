"""Chat and instruction data through the CLI (`dataaudit audit ... --engine local`): the exit code, the summary's
fields line, report.json's shards (fields, formats) and notes, and flags.parquet with the same rows as the shard
audit."""
from __future__ import annotations

import pyarrow as pa

from tests.checks.chat_shards import (MESSAGES, alpaca_expected, alpaca_shard, cli_audit, msg, openai_expected,
                                      openai_shard, rows_of, sharegpt_expected, sharegpt_shard, write)


def _lines(output: str) -> list[str]:
    return output.splitlines()


def test_openai_messages(tmp_path):
    path = openai_shard(tmp_path)
    res, report, flags = cli_audit([path], tmp_path / "out")
    assert res.exit_code == 1, res.output          # empty replies and conversations without a reply are errors
    assert ("fields: text = messages [conversation (role, content)] (1 shard); "
            "id = id [identifier (not audited as prose)] (1 shard)") in _lines(res.output)
    [shard] = report["shards"]
    assert shard["fields"] == {"text": ["messages"], "id": ["id"]}
    assert shard["formats"] == {"messages": "conversation (role, content)", "id": "identifier (not audited as prose)"}
    assert shard["unchecked"] == {}
    assert rows_of(flags) == openai_expected()
    checks = {k: v["flagged"] for k, v in report["checks"].items() if v["flagged"]}
    assert checks == {"empty_text": 1, "control_chars": 1, "empty_reply": 1, "unknown_role": 1, "role_order": 2,
                      "no_assistant_turn": 2, "last_turn_not_assistant": 1}
    assert report["duplicate_id"]["ids"] == 11 and report["duplicate_id"]["duplicates"] == 0


def test_sharegpt(tmp_path):
    res, report, flags = cli_audit([sharegpt_shard(tmp_path)], tmp_path / "out")
    assert res.exit_code == 1, res.output
    assert ("fields: text = conversations [conversation (from, value)] (1 shard); json = tools [JSON text] "
            "(1 shard); id = id [identifier (not audited as prose)] (1 shard)") in _lines(res.output)
    assert report["shards"][0]["formats"] == {"conversations": "conversation (from, value)", "tools": "JSON text",
                                              "id": "identifier (not audited as prose)"}
    assert rows_of(flags) == sharegpt_expected()


def test_alpaca(tmp_path):
    res, report, flags = cli_audit([alpaca_shard(tmp_path)], tmp_path / "out")
    assert res.exit_code == 0, res.output           # warnings only
    assert "fields: text = instruction (1 shard), input (1 shard), output (1 shard)" in _lines(res.output)
    assert report["shards"][0]["fields"] == {"text": ["instruction", "input", "output"]}
    assert rows_of(flags) == alpaca_expected()


def test_configured_text_fields(tmp_path):
    res, report, flags = cli_audit([alpaca_shard(tmp_path)], tmp_path / "out",
                                   '[fields]\ntext = ["instruction", "output"]\n')
    assert res.exit_code == 0, res.output
    assert "fields: text = instruction (1 shard), output (1 shard)" in _lines(res.output)
    assert rows_of(flags) == [r for r in alpaca_expected() if r[1] != "input"]
    res, report, flags = cli_audit([openai_shard(tmp_path)], tmp_path / "out2", '[fields]\ntext = "messages.content"\n')
    assert res.exit_code == 1, res.output
    assert report["shards"][0]["fields"] == {"text": ["messages"], "id": ["id"]}
    assert rows_of(flags) == openai_expected()


def test_a_configured_field_that_does_not_exist_is_a_usage_error(tmp_path):
    path = alpaca_shard(tmp_path)
    for text, missing in (('"response"', "response"), ('"messages.content"', "messages.content"),
                          ('["instruction", "question.stem"]', "question.stem")):
        res, report, _ = cli_audit([path], tmp_path / "out", f"[fields]\ntext = {text}\n")
        assert res.exit_code == 2, res.output
        assert _lines(res.output) == [
            f"Error: {tmp_path / 'out.toml'}: [fields]: text {missing!r} found in none of the 1 shard (Parquet "
            "footers, the first 256 records of other shards)"]
        assert report is None and not (tmp_path / "out").exists()


def test_columns_no_check_reads_are_named_in_notes(tmp_path):
    meta = pa.struct([("source", pa.string()), ("score", pa.float64())])
    path = write(tmp_path / "mm.parquet", {
        "id": ["a", "b"],
        "messages": [[msg("user", "What is this?"), msg("assistant", "A cat.")]] * 2,
        "image": pa.array([b"\x89PNG\r\n", b"\x89PNG\r\n"], pa.binary()),
        "meta": pa.array([{"source": "web", "score": 0.5}] * 2, meta)}, {"messages": MESSAGES})
    res, report, flags = cli_audit([path], tmp_path / "out")
    assert res.exit_code == 1, res.output
    # the image column is read as images now: 8 bytes of a PNG signature are not an image
    assert flags.column("check").to_pylist() == ["not_an_image"] * 2
    note = f"{path}: warning: not checked by any check: meta (struct<source: string, score: double>)"
    assert note in report["notes"]
    assert report["shards"][0]["unchecked"] == {"meta": "struct<source: string, score: double>"}
    assert f"note: {note}" in _lines(res.output)


def test_clean_chat_data_exits_0_with_no_flags(tmp_path):
    path = write(tmp_path / "clean.parquet", {
        "id": ["a", "b"], "messages": [[msg("system", "Be kind."), msg("user", "Hi"), msg("assistant", "Hello!")],
                                       [msg("user", "2+2?"), msg("assistant", "4")]]}, {"messages": MESSAGES})
    res, report, flags = cli_audit([path], tmp_path / "out")
    assert res.exit_code == 0, res.output
    assert flags.num_rows == 0 and report["totals"]["flagged"] == 0
    # no flagged check: no table, one line counting the checks that ran clean; the others named with the reason
    assert not any("│" in ln for ln in _lines(res.output))
    ran = [name for name, c in report["checks"].items() if c["ran"]]
    assert {"empty_reply", "role_order", "json_invalid", "duplicate_id"} <= set(ran)
    assert [ln for ln in _lines(res.output) if ln][:2] == ["dataaudit audit: 2 samples in 1 shard",
                                                          f"clean: {len(ran)} checks ran with no flag"]
    assert "not run (no numeric field in the shard): nonfinite, extreme_span, constant, out_of_range, " \
           "dtype_mismatch, missing_value" in _lines(res.output)
    assert "not run (runs in the collate guard only): null_sample" in _lines(res.output)
    assert "no check ran" not in res.output


def test_the_console_lists_flagged_checks_and_counts_the_clean_ones(tmp_path):
    """Issue 36: only the checks that flagged are rows; one line counts those that ran clean; a reason given per
    shard reads for all of them when the audit covers several."""
    import json

    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(json.dumps({"id": 1, "text": "hello world this is fine"}) + "\n" + json.dumps({"id": 1, "text": ""})
                 + "\n")
    b.write_text(json.dumps({"id": 2, "text": "another text here"}) + "\n")
    res, report, flags = cli_audit([str(a), str(b)], tmp_path / "out")
    assert res.exit_code == 0, res.output          # warnings only
    rows = [[cell.strip() for cell in ln.split("│")[1:4]] for ln in _lines(res.output)
            if ln.count("│") == 4 and "check" not in ln]
    assert rows == [["empty_text", "warning", "1"], ["duplicate_id", "warning", "1"]]
    clean = [n for n, c in report["checks"].items() if c["ran"] and not c["flagged"]]
    assert len(clean) > 5 and f"clean: {len(clean)} checks ran with no flag" in _lines(res.output)
    assert "not run (no numeric field in any shard): nonfinite, extreme_span, constant, out_of_range, " \
           "dtype_mismatch, missing_value" in _lines(res.output)
    assert not any("in this shard" in ln for ln in _lines(res.output))
