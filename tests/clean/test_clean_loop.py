"""audit -> clean -> audit: the cleaned shards keep exactly the records not selected, in the input's own format and
layout, and a second audit flags nothing at the dropped selection."""
from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pyarrow.parquet as pq

from tests.clean.helpers import (CONTAMINATED_ROW, DUPLICATE_ROW, NONFINITE_ROWS, NOT_IMAGE_ROW, cli, flagged_rows,
                                 flags, parquet_table, write_parquet_corpus)
from tests.paths import REPO

FIXTURES = REPO / "fixtures"


def _clean_json(out: Path) -> dict:
    r = json.loads((out / ".dataaudit/clean.json").read_text())
    r.pop("run")
    return r


def test_parquet_audit_dedup_contamination_clean_audit(tmp_path):
    src = write_parquet_corpus(tmp_path)
    data = tmp_path / "data"
    assert cli("audit", data, "--out", tmp_path / "a")[0] == 1
    assert cli("dedup", data, "--out", tmp_path / "d")[0] == 0
    assert cli("contamination", "--train", data, "--benchmark", f"b={tmp_path / 'bench.jsonl'}:q",
               "--decontaminate-train", "--out", tmp_path / "co")[0] == 1
    out = tmp_path / "clean"
    code, text = cli("clean", data, "--audit", tmp_path / "a", "--dedup", tmp_path / "d",
                     "--contamination", tmp_path / "co", "--out", out)
    assert code == 0, text
    dst = out / "part-0.parquet"          # relative to the inputs' common parent folder (data/pq)
    dropped = sorted([*NONFINITE_ROWS, NOT_IMAGE_ROW, DUPLICATE_ROW, CONTAMINATED_ROW])
    kept = [i for i in range(40) if i not in dropped]
    # the kept rows, all columns (nested, binary) equal; schema with its metadata, codec, row groups as the input
    assert pq.read_table(dst).equals(parquet_table().take(kept))
    a, b = pq.ParquetFile(src), pq.ParquetFile(dst)
    assert b.schema_arrow.equals(a.schema_arrow, check_metadata=True)
    assert b.schema_arrow.metadata[b"origin"] == b"clean-test"
    assert [b.metadata.row_group(i).num_rows for i in range(b.metadata.num_row_groups)] == [8, 8, 8, 8, 3]
    assert {b.metadata.row_group(0).column(i).compression for i in range(b.metadata.num_columns)} == {"ZSTD"}
    report = _clean_json(out)
    assert report["totals"] == {"shards": 1, "rows": 40, "kept": 35, "dropped": 5, "skipped_shards": 0,
                                "failed_shards": 0,
                                "dropped_by": {"check:nonfinite": 2, "check:not_an_image": 1, "dedup": 1,
                                               "contamination": 1}}
    assert report["shards"][0]["output"] == "part-0.parquet" and report["shards"][0]["row_group_rows"] == 8
    assert report["selection"] == {"severity": "error", "checks": [], "dedup": True, "contamination": True}
    assert report["findings"]["dedup"] == [str(tmp_path / "d")]
    d = pq.read_table(out / ".dataaudit/dropped.parquet").to_pylist()
    assert [(r["row"], r["key"], r["reasons"]) for r in d] == [
        (3, "3", ["check:nonfinite"]), (9, "9", ["check:not_an_image"]), (17, "17", ["check:nonfinite"]),
        (21, "21", ["dedup"]), (30, "30", ["contamination"])]
    assert {r["shard"] for r in d} == {str(src)}
    # audited again: nothing at error severity
    assert cli("audit", dst, "--out", tmp_path / "a2")[0] == 0
    assert flagged_rows(tmp_path / "a2") == {}


def _members(path: Path) -> list[tuple[str, bytes]]:
    with tarfile.open(path) as tf:
        return [(m.name, tf.extractfile(m).read()) for m in tf if m.isreg()]


def test_webdataset_fixture_severity_warning(tmp_path):
    wds = FIXTURES / "images" / "webdataset"
    assert cli("audit", wds, "--out", tmp_path / "a")[0] == 1
    bad = flagged_rows(tmp_path / "a", ("warning", "error"))
    assert bad == {"shard-00000.tar": [0, 5, 6, 8], "shard-00001.tar": [0, 1, 4, 5, 7, 8, 11]}
    out = tmp_path / "clean"
    code, text = cli("clean", wds, "--audit", tmp_path / "a", "--out", out, "--severity", "warning",
                     "--max-drop", "100")   # 7 of 12 records of a planted fixture
    assert code == 0, text
    for name, rows in bad.items():
        before, after = _members(wds / name), _members(out / name)
        keys = list(dict.fromkeys(n.split(".")[0] for n, _ in before))
        dropped_keys = {keys[r] for r in rows}
        # the kept samples' members: same names, same bytes, same order
        assert after == [(n, b) for n, b in before if n.split(".")[0] not in dropped_keys]
    report = _clean_json(out)
    assert [(s["rows"], s["kept"], s["dropped"]) for s in report["shards"]] == [(12, 8, 4), (12, 5, 7)]
    d = pq.read_table(out / ".dataaudit/dropped.parquet")
    assert d.column("key").to_pylist() == ["000000", "000005", "000006", "000008",
                                           "000012", "000013", "000016", "000017", "000019", "000020", "000023"]
    assert d.column("row").to_pylist() == [0, 5, 6, 8, 0, 1, 4, 5, 7, 8, 11]
    assert cli("audit", out / "shard-00000.tar", out / "shard-00001.tar", "--out", tmp_path / "a2")[0] == 0
    assert flagged_rows(tmp_path / "a2", ("warning", "error")) == {}


def test_chat_jsonl_fixture_by_check(tmp_path):
    src = FIXTURES / "chat" / "jsonl"
    assert cli("audit", src, "--out", tmp_path / "a")[0] == 1
    out = tmp_path / "clean"
    code, text = cli("clean", src, "--audit", tmp_path / "a", "--out", out, "--check", "control_chars,empty_text",
                     "--check", "duplicate_id")
    assert code == 0, text
    f = flags(tmp_path / "a").to_pylist()
    picked = {"control_chars", "empty_text", "duplicate_id"}
    drop = {(Path(r["shard"]).relative_to(src).as_posix(), r["row"]) for r in f
            if r["severity"] == "error" or r["check"] in picked}
    report = _clean_json(out)
    assert report["totals"]["dropped"] == len(drop) and report["totals"]["rows"] == 60
    assert report["totals"]["kept"] == 60 - len(drop)
    for s in report["shards"]:
        lines = (src / s["output"]).read_bytes().splitlines(keepends=True)
        records = [ln for ln in lines if ln.strip()]
        expect = [ln for i, ln in enumerate(records) if (s["output"], i) not in drop]
        assert (out / s["output"]).read_bytes() == b"".join(expect)     # the original lines, byte for byte
    assert cli("audit", *sorted(out.rglob("*.jsonl")), "--out", tmp_path / "a2")[0] == 0
    again = flags(tmp_path / "a2").to_pylist()
    assert [r for r in again if r["severity"] == "error" or r["check"] in picked] == []


def test_unknown_check_is_a_usage_error(tmp_path):
    code, text = cli("clean", FIXTURES / "chat" / "jsonl", "--audit", tmp_path, "--out", tmp_path / "o",
                     "--check", "no_such_check")
    assert code == 2 and "unknown check 'no_such_check'" in text
    assert not (tmp_path / "o").exists()
