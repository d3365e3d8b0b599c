"""CSV and TSV shards through every command that reads shards: the audit names the row and line of each finding,
`clean` writes the kept rows byte for byte under the same header, dedup and contamination read the same records."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
from click.testing import CliRunner

from dataaudit.cli import main

ROWS = [b'id,text\r\n',
        b'1,"A calm sentence about the harbour, written twice."\r\n',
        b'2,\r\n',                                                   # empty text
        b'3,"A second line\nof the same record about boats."\r\n',  # a quoted line break: lines 4-5
        b'4,"A calm sentence about the harbour, written twice."\r\n',
        b'\r\n',                                                     # blank: no record
        b'5,The last row says something else entirely.\r\n']


def _run(*args) -> tuple[int, str]:
    res = CliRunner().invoke(main, [str(a) for a in args])
    return res.exit_code, res.output


def test_csv_audit_clean_dedup_and_contamination(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    shard = data / "train.csv"
    shard.write_bytes(b"".join(ROWS))
    (data / "notes.tsv").write_bytes(b"id\ttext\n9\tA tab separated row about gulls.\n")

    code, out = _run("audit", data, "--out", tmp_path / "audit", "--engine", "local")
    assert code == 0, out                             # empty_text is a warning
    report = json.loads((tmp_path / "audit" / "report.json").read_text())
    assert [(s["path"].rsplit("/", 1)[-1], s["samples"], s["status"]) for s in report["shards"]] == [
        ("notes.tsv", 1, "ok"), ("train.csv", 5, "ok")]
    flags = pq.read_table(tmp_path / "audit" / "flags.parquet").to_pylist()
    assert [(f["shard"].rsplit("/", 1)[-1], f["row"], f["key"], f["field"], f["check"]) for f in flags] == [
        ("train.csv", 1, "1", "text", "empty_text")]
    assert report["shards"][1]["fields"]["text"] == ["text"] and report["shards"][1]["fields"]["id"] == ["id"]

    code, out = _run("dedup", shard, "--out", tmp_path / "dedup", "--engine", "local", "--threshold", "0.5")
    assert code == 0, out
    keep = pq.read_table(tmp_path / "dedup" / "keep.parquet").column("row").to_pylist()
    assert keep == [0, 1, 2, 4]                       # row 3 repeats row 0

    code, out = _run("clean", shard, "--audit", tmp_path / "audit", "--dedup", tmp_path / "dedup",
                     "--severity", "warning", "--out", tmp_path / "clean")
    assert code == 0, out
    assert (tmp_path / "clean" / "train.csv").read_bytes() == b"".join(ROWS[i] for i in (0, 1, 3, 5, 6))
    dropped = pq.read_table(tmp_path / "clean" / ".dataaudit/dropped.parquet").to_pylist()
    assert [(d["row"], d["line"], d["reasons"]) for d in dropped] == [(1, 3, ["check:empty_text"]),
                                                                     (3, 6, ["dedup"])]

    bench = tmp_path / "bench.csv"
    bench.write_bytes(b"question,answer\nThe last row says something else entirely.,yes\nUnseen question?,no\n")
    code, out = _run("contamination", "--train", shard, "--benchmark", f"qa={bench}:question", "--ngram", "4",
                     "--out", tmp_path / "con", "--decontaminate-train", "--count-short-items")
    assert code == 1, out
    con = json.loads((tmp_path / "con" / "contamination.json").read_text())
    assert con["benchmarks"]["qa"]["contaminated"] == 1 and con["benchmarks"]["qa"]["header"] is True
    assert (tmp_path / "con" / "qa" / "clean.csv").read_bytes() == b"question,answer\nUnseen question?,no\n"
    decon = pq.read_table(tmp_path / "con" / "decontaminate.parquet").to_pylist()
    assert [(d["row"], d["line"]) for d in decon] == [(4, 8)]
