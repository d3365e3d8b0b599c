"""Plain-text shards through every command that reads shards, one record per line or per paragraph
(`--text-records`, `[data] text_records`): the audit names each record's row and line, `clean` writes the kept
records byte for byte, dedup and contamination read the same records, and findings that numbered the records
otherwise than the audit are refused."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
from click.testing import CliRunner

from dataaudit.cli import main

PARAGRAPHS = [b"A calm sentence about the harbour,\r\nwritten twice over two lines.\r\n",   # rows 0 (lines 1-2)
              b"\r\n",
              b"\x01\x02 a control character starts this short paragraph about gulls.\r\n",   # row 1 (line 4)
              b"\r\n", b"   \r\n",                                                        # blank lines: no records
              b"A calm sentence about the harbour,\r\nwritten twice over two lines.\r\n",   # row 2 (lines 7-8)
              b"\r\n",
              b"The last paragraph says something else entirely.\r\n"]                      # row 3 (line 10)


def _run(*args) -> tuple[int, str]:
    res = CliRunner().invoke(main, [str(a) for a in args])
    return res.exit_code, res.output


def _rows(folder) -> list[tuple]:
    flags = pq.read_table(folder / "flags.parquet").to_pylist()
    return sorted({(f["row"], f["field"], f["check"]) for f in flags})


def test_paragraphs_through_audit_dedup_clean_and_contamination(tmp_path):
    shard = tmp_path / "data" / "corpus.txt"     # outputs never go inside the input folder
    shard.parent.mkdir()
    shard.write_bytes(b"".join(PARAGRAPHS))

    code, out = _run("audit", shard, "--out", tmp_path / "audit", "--engine", "local", "--text-records", "paragraph")
    assert code == 0, out                                  # control characters are a warning
    report = json.loads((tmp_path / "audit" / "report.json").read_text())
    assert [(s["samples"], s["status"], s["fields"]["text"]) for s in report["shards"]] == [(4, "ok", ["text"])]
    assert report["config"]["data"]["text_records"] == "paragraph"
    assert (1, "text", "control_chars") in _rows(tmp_path / "audit")
    lines = pq.read_table(tmp_path / "audit" / "flags.parquet").to_pylist()
    assert {(f["row"], f["key"]) for f in lines if f["check"] == "control_chars"} == {(1, "1")}

    code, out = _run("dedup", shard, "--out", tmp_path / "dedup", "--engine", "local", "--text-records", "paragraph")
    assert code == 0, out
    assert pq.read_table(tmp_path / "dedup" / "keep.parquet").column("row").to_pylist() == [0, 1, 3]   # 2 repeats 0

    code, out = _run("clean", shard, "--audit", tmp_path / "audit", "--dedup", tmp_path / "dedup",
                     "--severity", "warning", "--out", tmp_path / "clean")
    assert code == 0, out
    # a dropped paragraph takes the blank lines after it along
    assert (tmp_path / "clean" / "corpus.txt").read_bytes() == b"".join(PARAGRAPHS[i] for i in (0, 1, 7))
    dropped = pq.read_table(tmp_path / "clean" / ".dataaudit/dropped.parquet").to_pylist()
    assert [(d["row"], d["line"], d["reasons"]) for d in dropped] == [(1, 4, ["check:control_chars"]),
                                                                     (2, 7, ["dedup"])]

    bench = tmp_path / "bench.txt"     # a benchmark as text: one item per line
    bench.write_bytes(b"The last paragraph says something else entirely.\nAn unseen question about tides?\n")
    code, out = _run("contamination", "--train", shard, "--benchmark", f"qa={bench}", "--ngram", "4",
                     "--text-records", "paragraph", "--out", tmp_path / "con", "--decontaminate-train",
                     "--count-short-items")   # 7-word items: short (min_item_words 8), counted here
    assert code == 1, out
    con = json.loads((tmp_path / "con" / "contamination.json").read_text())
    assert con["benchmarks"]["qa"]["contaminated"] == 1 and con["train"]["text_records"] == "paragraph"
    assert (tmp_path / "con" / "qa" / "clean.txt").read_bytes() == b"An unseen question about tides?\n"
    decon = pq.read_table(tmp_path / "con" / "decontaminate.parquet").to_pylist()
    assert [(d["row"], d["line"]) for d in decon] == [(3, 10)]


def test_lines_are_the_default_and_findings_by_another_unit_are_refused(tmp_path):
    shard = tmp_path / "data" / "corpus.txt"     # outputs never go inside the input folder
    shard.parent.mkdir()
    shard.write_bytes(b"".join(PARAGRAPHS))
    code, out = _run("audit", shard, "--out", tmp_path / "audit", "--engine", "local")
    assert code == 0, out
    report = json.loads((tmp_path / "audit" / "report.json").read_text())
    assert report["shards"][0]["samples"] == 6           # six non-blank lines
    assert [(r, c) for r, _, c in _rows(tmp_path / "audit")] == [(2, "control_chars")]

    code, out = _run("dedup", shard, "--out", tmp_path / "dedup", "--engine", "local", "--text-records", "paragraph")
    assert code == 0, out
    code, out = _run("clean", shard, "--audit", tmp_path / "audit", "--dedup", tmp_path / "dedup",
                     "--out", tmp_path / "clean")
    assert code == 2, out
    assert out.strip().splitlines()[-1].endswith(
        "read plain-text records per paragraph, the audit per line: run both with the same --text-records")
    assert not (tmp_path / "clean" / "corpus.txt").exists()


def test_a_config_names_the_unit_and_a_typo_is_one_line(tmp_path):
    shard = tmp_path / "data" / "corpus.txt"     # outputs never go inside the input folder
    shard.parent.mkdir()
    shard.write_bytes(b"".join(PARAGRAPHS))
    config = tmp_path / "audit.toml"
    config.write_text('[data]\ntext_records = "paragraph"\n')
    code, out = _run("audit", shard, "--out", tmp_path / "a", "--engine", "local", "--config", config)
    assert json.loads((tmp_path / "a" / "report.json").read_text())["shards"][0]["samples"] == 4
    config.write_text('[data]\ntext_records = "paragraphs"\n')
    code, out = _run("audit", shard, "--out", tmp_path / "b", "--engine", "local", "--config", config)
    assert code == 2 and out.strip() == \
        f"Error: {config}: [data] text_records must be one of line, paragraph, got 'paragraphs'"
