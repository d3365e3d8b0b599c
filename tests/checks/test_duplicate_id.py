"""duplicate_id: a record whose id an earlier record of its shard has (within a batch or across batches), flagged
with the row of the first; ids shared by shards counted in report.json's `duplicate_id` section; its state is
JSON, compact, and survives a resume."""
from __future__ import annotations

import json
import shutil
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from dataaudit.audit.shard import audit_shard
from dataaudit.checks.record_ids import (SAMPLE, distinct, duplicate_id, empty_state, hash_ids, merge_state)
from dataaudit.config import build_config
from dataaudit.pipelines.audit import run_audit
from dataaudit.pipelines.engine import EngineOptions
from tests.checks.chat_shards import audit, cli_audit, write
from tests.paths import shared_file

KEYS = ("row", "field", "role", "check", "severity", "value", "detail")


def _flags(flags: pa.Table) -> list[tuple]:
    dup = flags.filter(pc.equal(flags["check"], "duplicate_id"))
    return [tuple(r[k] for k in KEYS) for r in dup.sort_by("row").to_pylist()]


def _dup(row: int, first: int, shown: str, field: str = "id") -> tuple:
    return (row, field, None, "duplicate_id", "warning", float(first), f"duplicate id {shown} (first at row {first})")


def _shard(tmp_path, ids, name="ids.parquet", column="id", type_=None) -> str:
    texts = [f"record {i} has some text" for i in range(len(ids))]
    return write(tmp_path / name, {column: pa.array(ids, type_), "text": texts})


STRING_IDS = ["a", "b", "a", "c", "b", "a", "d"]
STRING_FLAGS = [_dup(2, 0, "'a'"), _dup(4, 1, "'b'"), _dup(5, 0, "'a'")]


@pytest.mark.parametrize("batch_rows", [4096, 3, 2, 1])
def test_within_a_batch_and_across_batches(tmp_path, batch_rows):
    summary, flags = audit(_shard(tmp_path, STRING_IDS), batch_rows=batch_rows)
    assert _flags(flags) == STRING_FLAGS
    state = summary["duplicate_id"]
    assert {k: state[k] for k in ("records", "ids", "missing", "within", "across")} == \
        {"records": 7, "ids": 7, "missing": 0, "within": 3, "across": 0}
    assert distinct(state) == 4
    assert state["examples"] == [{"id": "a", "row": 2, "first_row": 0}, {"id": "b", "row": 4, "first_row": 1},
                                 {"id": "a", "row": 5, "first_row": 0}]
    assert json.loads(json.dumps(state)) == state


def test_int_ids(tmp_path):
    path = _shard(tmp_path, [5, 7, 5, None, 7, 12, 5], type_=pa.int64())
    summary, flags = audit(path, batch_rows=2)
    assert _flags(flags) == [_dup(2, 0, "5"), _dup(4, 1, "7"), _dup(6, 0, "5")]
    assert summary["duplicate_id"]["missing"] == 1 and summary["fields"]["id"] == ["id"]


def test_null_and_empty_ids_are_missing_not_duplicates(tmp_path):
    summary, flags = audit(_shard(tmp_path, [None, "", None, "", "x", "y", None]), batch_rows=3)
    assert _flags(flags) == []
    state = summary["duplicate_id"]
    assert (state["ids"], state["missing"], distinct(state)) == (2, 5, 2)


def test_the_id_column_of_the_rule(tmp_path):
    """`Fields.id`: a column named like an identifier (here `record_uuid`), flags on that field."""
    summary, flags = audit(_shard(tmp_path, ["u1", "u2", "u1"], column="record_uuid"))
    assert _flags(flags) == [_dup(2, 0, "'u1'", field="record_uuid")]
    assert summary["fields"]["id"] == ["record_uuid"]


def test_ids_longer_than_a_kib(tmp_path):
    long = "k" * 5000
    _, flags = audit(_shard(tmp_path, [long, long + "!", long, "short", "short"]))
    shown = repr(long[:79] + "…")
    assert _flags(flags) == [_dup(2, 0, shown), _dup(4, 3, "'short'")]


def test_the_same_id_as_int_and_as_string():
    a, valid_a = hash_ids(pa.array([5, None, 1234567890123], pa.int64()))
    b, valid_b = hash_ids(pa.array(["5", None, "1234567890123"]))
    assert a.tolist() == b.tolist() and valid_a.tolist() == valid_b.tolist() == [True, False, True]


def test_duplicates_across_shards_are_counted_in_the_report(tmp_path):
    a = _shard(tmp_path, ["a", "b", "a", "c"], name="a.parquet")
    b = tmp_path / "b.jsonl"
    b.write_text("".join(json.dumps({"id": i, "text": f"text {n}"}) + "\n" for n, i in enumerate(["c", "d", "a", "d"])))
    c = _shard(tmp_path, [5, 6], name="c.parquet", type_=pa.int64())
    d = _shard(tmp_path, ["6", "e"], name="d.parquet")
    paths = [a, str(b), c, d]
    report = run_audit(paths, build_config({}), tmp_path / "out", options=EngineOptions("local"),
                       stage=partial(audit_shard, batch_rows=2))
    section = report["duplicate_id"]
    # within: a (a.parquet), d (b.jsonl); across: c and a (b.jsonl, seen in a.parquet), 6 (d.parquet, in c.parquet)
    assert {k: v for k, v in section.items() if not k.startswith("examples")} == {
        "severity": "warning", "shards": 4, "ids": 12, "distinct": 7, "missing": 0, "duplicates": 5,
        "duplicates_within_shards": 2, "duplicates_across_shards": 3}
    assert section["examples_within_shards"] == [{"shard": a, "id": "a", "row": 2, "first_row": 0},
                                                 {"shard": str(b), "id": "d", "row": 3, "first_row": 1}]
    across = {e["id"]: e["shards"] for e in section["examples_across_shards"]}
    assert across == {"a": [a, str(b)], "c": [a, str(b)], "6": [c, d]}   # named as the later shard has it
    assert report["checks"]["duplicate_id"]["flagged"] == 2          # only within a shard
    [note] = [n for n in report["notes"] if n.startswith("duplicate_id:")]
    assert note.startswith("duplicate_id: 5 of 12 record ids are repeats (2 within a shard, 3 across shards); e.g. ")
    flags = pq.read_table(tmp_path / "out" / "flags.parquet")
    assert [(Path(r["shard"]).name, r["row"], r["detail"]) for r in flags.to_pylist()
            if r["check"] == "duplicate_id"] == [("a.parquet", 2, "duplicate id 'a' (first at row 0)"),
                                                  ("b.jsonl", 3, "duplicate id 'd' (first at row 1)")]


def test_ids_across_shards_are_compared_under_the_same_column_name_only(tmp_path):
    """Issue 36: one file's `id` and another file's `doc_id` (both small integers) are unrelated numberings, not
    repeats; a third file's `id` repeats the first's."""
    a = _shard(tmp_path, [0, 1, 2, 3], name="a.parquet", type_=pa.int64())
    b = _shard(tmp_path, [0, 1, 2, 3], name="b.parquet", column="doc_id", type_=pa.int64())
    c = _shard(tmp_path, [3, 4], name="c.parquet", type_=pa.int64())
    report = run_audit([a, b, c], build_config({}), tmp_path / "out", options=EngineOptions("local"))
    section = report["duplicate_id"]
    assert (section["ids"], section["distinct"], section["duplicates_within_shards"],
            section["duplicates_across_shards"]) == (10, 9, 0, 1)
    assert section["examples_across_shards"] == [{"id": 3, "shards": [a, c]}]
    [note] = [n for n in report["notes"] if n.startswith("duplicate_id:")]
    assert note == "duplicate_id: 1 of 10 record ids are repeats (0 within a shard, 1 across shards); e.g. 3"


def test_no_id_column_no_section(tmp_path):
    path = write(tmp_path / "t.parquet", {"text": ["one text", "another text"]})
    report = run_audit([path], build_config({}), tmp_path / "out", options=EngineOptions("local"))
    assert "duplicate_id" not in report
    assert report["checks"]["duplicate_id"]["skipped"] == "no ids field in the shard"


def test_disabled(tmp_path):
    path = _shard(tmp_path, ["a", "a"])
    config = build_config({"checks": {"duplicate_id": {"enabled": False}}})
    report = run_audit([path], config, tmp_path / "out", options=EngineOptions("local"))
    assert "duplicate_id" not in report and report["checks"]["duplicate_id"]["flagged"] == 0


def _feed(ids: pa.Array, batch: int, state: dict | None = None) -> tuple[dict, int]:
    state = state or empty_state()
    flagged = 0
    for start in range(0, len(ids), batch):
        out = duplicate_id(ids.slice(start, batch), state)
        merge_state(state, out.state)
        flagged += int(out.flagged.sum())
    return state, flagged


def test_the_state_is_compact_and_chunked():
    n = 100_000
    ids = pa.array([f"rec-{i:07d}" for i in range(n)])
    state, flagged = _feed(ids, 1000)
    size = len(json.dumps(state))
    assert flagged == 0 and distinct(state) == n
    assert size < 17 * n             # 8 bytes of hash + 4 of row a distinct id, base64: 16 characters
    assert len(state["chunks"]) <= int(np.log2(n / 1000)) + 2
    assert len(state["sample"]) == SAMPLE and state["examples"] == []


def test_the_decode_cache_holds_the_live_chunks_only():
    """Chunks merged away leave the cache: it held them (and their base64) until its 256 MB budget pushed them out,
    145 MB for a shard of 620,000 ids."""
    from dataaudit.checks import record_ids

    record_ids._cache.clear()
    record_ids._cache_bytes = 0
    n = 100_000
    state, _ = _feed(pa.array([f"rec-{i:07d}" for i in range(n)]), 1000)
    live = {id(c[k]) for c in state["chunks"] for k in ("hashes", "rows")}
    assert set(record_ids._cache) <= live
    assert record_ids._cache_bytes == sum(a.nbytes for _, a in record_ids._cache.values()) <= 12 * n


def test_the_state_survives_json_as_in_a_resumed_job():
    ids = pa.array([f"id{i}" for i in range(50)])
    state, _ = _feed(ids, 7)
    state = json.loads(json.dumps(state))
    state, flagged = _feed(pa.array(["id3", "new", "id49"]), 2, state)
    assert flagged == 2 and state["within"] == 2 and state["records"] == 53


def test_merging_shards_counts_what_the_total_already_has():
    one, _ = _feed(pa.array([f"x{i}" for i in range(300)]), 64)
    two, _ = _feed(pa.array([f"x{i}" for i in range(200, 400)]), 64)
    total = merge_state(merge_state(empty_state(), one), two)
    assert (total["ids"], distinct(total), total["across"], total["within"]) == (500, 400, 100, 0)
    # the shared ids named are among those the shards keep by name (their smallest hashes)
    assert total["shared"] and all(name in {f"x{i}" for i in range(200, 300)} for _, name in total["shared"])


# ---------------------------------------------------------------------------------------------- real data

def test_arc_challenge_has_no_duplicate_ids(tmp_path):
    path = shared_file("benchmarks/arc_challenge_test.jsonl")
    lines = sum(1 for line in path.read_text().splitlines() if line.strip())
    res, report, flags = cli_audit([str(path)], tmp_path / "out")
    assert res.exit_code in (0, 1), res.output
    section = report["duplicate_id"]
    assert (section["ids"], section["distinct"], section["missing"], section["duplicates"]) == (lines, lines, 0, 0)
    assert report["checks"]["duplicate_id"]["ran"] and report["checks"]["duplicate_id"]["flagged"] == 0
    assert report["shards"][0]["fields"]["id"] == ["id"]
    # the same file twice: every id is a duplicate across shards, and the first few are named
    copy = tmp_path / "copy.jsonl"
    shutil.copyfile(path, copy)
    res, report, _ = cli_audit([str(path), str(copy)], tmp_path / "out2")
    section = report["duplicate_id"]
    assert (section["ids"], section["distinct"], section["duplicates_across_shards"]) == (2 * lines, lines, lines)
    assert len(section["examples_across_shards"]) == 5
    assert all(e["shards"] == [str(path), str(copy)] for e in section["examples_across_shards"])
