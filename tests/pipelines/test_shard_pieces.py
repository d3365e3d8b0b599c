"""A large Parquet shard audited in pieces (runs of its row groups) on every lane: the outputs are the whole shard's
whether the merge takes the pieces or refuses them (the shard then runs whole), and shards whose audit is
sequential (stateful checks, samples, tiny row groups, other formats) are never cut."""
from __future__ import annotations

import json
from dataclasses import replace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dataaudit.audit.pieces import split_parquet
from dataaudit.config import load_config
from dataaudit.pipelines import engine
from dataaudit.pipelines.engine import EngineOptions, piece_bytes
from dataaudit.sources.parquet import parquet_layout
from tests.paths import REPO

MiB = 2**20


def _write(path, table: pa.Table, rows_per_group: int) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, row_group_size=rows_per_group)
    return str(path)


def _texts(n: int) -> list[str]:
    """Prose with a few flagged records (empty, repeated, a long run), different in every row group."""
    out = []
    for i in range(n):
        if i % 97 == 3:
            out.append("")
        elif i % 89 == 5:
            out.append("the same line again\n" * 12)
        elif i % 83 == 7:
            out.append("x" * 2000)
        else:
            out.append(f"Record {i} tells of rivers and of the towns built on their banks, {i % 7} times over.")
    return out


@pytest.fixture
def merges(monkeypatch) -> list:
    """Pieces as small as the row groups allow, 2 cores; the merges' outcomes, in order (True: taken)."""
    from dataaudit.pipelines import audit as job

    monkeypatch.setattr(engine, "MIN_PIECE_BYTES", 1)
    monkeypatch.setattr(engine, "LOCAL_PARALLEL_BYTES", 1)
    monkeypatch.setattr(engine, "cores", lambda: 2)
    seen: list[bool] = []
    real = job.merge_pieces

    def spy(results, examples):
        merged = real(results, examples)
        seen.append(merged is not None)
        return merged

    monkeypatch.setattr(job, "merge_pieces", spy)
    return seen


def _audit_both(paths, tmp_path, config=None):
    """(whole, pieces): report.json without `run` and flags.parquet of one process, and of the default lanes."""
    from dataaudit.pipelines.audit import run_audit

    config = config or load_config(None)
    whole = run_audit(paths, config, tmp_path / "whole", options=EngineOptions("local", workers=1))
    pieces = run_audit(paths, config, tmp_path / "pieces", options=EngineOptions("local"))
    whole.pop("run"), pieces.pop("run")
    flags = [pq.read_table(tmp_path / name / "flags.parquet") for name in ("whole", "pieces")]
    return (whole, flags[0]), (pieces, flags[1])


def test_a_shard_is_cut_into_runs_of_row_groups_of_about_equal_bytes(tmp_path):
    path = _write(tmp_path / "s.parquet", pa.table({"text": _texts(8000)}), 1000)   # 8 row groups
    size = sum(parquet_layout(path))     # the row groups' compressed bytes
    config = load_config(None)
    assert split_parquet(path, config, size // 4) == [(0, 1), (2, 3), (4, 5), (6, 7)]
    assert split_parquet(path, config, size // 2) == [(0, 1, 2, 3), (4, 5, 6, 7)]
    assert split_parquet(path, config, size // 100) == [(i,) for i in range(8)]   # at most one piece a row group
    assert split_parquet(path, config, size) is None                               # one piece: not cut
    assert piece_bytes(100 * MiB, 2) == 8 * MiB                                   # at least MIN_PIECE_BYTES
    assert piece_bytes(2**30, 4) == 32 * MiB                                      # the bytes over 8 pieces a lane
    assert piece_bytes(2**40, 2) == 256 * MiB                                     # at most MAX_PIECE_BYTES


def test_shards_whose_audit_is_sequential_are_not_cut(tmp_path):
    config = load_config(None)
    texts = _texts(4000)
    ids = _write(tmp_path / "ids.parquet", pa.table({"id": [f"r{i % 3000}" for i in range(4000)], "text": texts}),
                 500)                                             # duplicate_id carries the ids seen before
    tiny = _write(tmp_path / "tiny.parquet", pa.table({"text": texts[:400]}), 10)   # read across its row groups
    plain = _write(tmp_path / "plain.parquet", pa.table({"text": texts}), 500)
    jsonl = tmp_path / "s.jsonl"
    jsonl.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    assert split_parquet(ids, config, 1) is None
    assert split_parquet(tiny, config, 1) is None
    assert split_parquet(str(jsonl), config, 1) is None
    assert len(split_parquet(plain, config, 1)) == 8
    sample = replace(config, sample={"design": "records", "seed": 0, "threshold": 1})
    assert split_parquet(plain, sample, 1) is None                  # a sample reads the row groups it draws


def test_the_pieces_give_the_whole_shards_outputs(tmp_path, merges):
    texts = _texts(6000)
    paths = [_write(tmp_path / "data" / "a.parquet", pa.table({"text": texts}), 750),
             _write(tmp_path / "data" / "b.parquet", pa.table({"text": texts[:2500]}), 500)]
    (whole, whole_flags), (pieces, piece_flags) = _audit_both(paths, tmp_path)
    assert merges == [True, True]                  # both shards ran in pieces, and the merges took them
    assert pieces == whole and piece_flags.equals(whole_flags)
    assert whole["totals"]["samples"] == 8500 and whole_flags.num_rows > 100
    rows = whole_flags.filter(pa.compute.equal(whole_flags["shard"], paths[0]))["row"].to_pylist()
    assert min(rows) < 750 and max(rows) > 5250    # record numbers run over the whole shard, not each piece
    parts = sorted(p.name for p in (tmp_path / "pieces" / "parts").iterdir())
    assert len([p for p in parts if p.endswith(".flags.parquet")]) == 2   # one part per shard, as before


def test_the_fixture_shards_in_pieces_give_the_whole_shards_outputs(fixture_dir, tmp_path, merges):
    """Numbers, token ids, labels and text in one shard: every check's flags and statistics merge exactly."""
    table = pq.read_table(fixture_dir / "train-000.parquet")
    path = _write(tmp_path / "data" / "t.parquet", pa.concat_tables([table] * 6), table.num_rows)
    config = load_config(REPO / "fixtures" / "audit.toml")
    (whole, whole_flags), (pieces, piece_flags) = _audit_both([path], tmp_path, config)
    assert merges == [True]
    assert pieces == whole and piece_flags.equals(whole_flags)
    assert whole["totals"]["samples"] == 6 * table.num_rows and whole_flags.num_rows > 0


def test_real_chat_and_reasoning_shards_in_pieces_give_the_whole_shards_outputs(shared_data, tmp_path, merges):
    rows = json.loads((shared_data / "chat" / "glaive_toolcall_zh_demo.json").read_text())
    reason = [json.loads(line) for line in (shared_data / "posttrain" / "reason_tool_use_demo_50.jsonl")
              .read_text().splitlines() if line.strip()]
    paths = [_write(tmp_path / "data" / "chat.parquet", pa.Table.from_pylist(rows * 4), 100),
             _write(tmp_path / "data" / "reason.parquet", pa.Table.from_pylist(reason * 16), 100)]
    (whole, whole_flags), (pieces, piece_flags) = _audit_both(paths, tmp_path)
    assert merges == [True, True]
    assert pieces == whole and piece_flags.equals(whole_flags)
    assert whole["totals"]["samples"] == 4 * len(rows) + 16 * len(reason) and whole_flags.num_rows > 0


def test_pieces_whose_plans_differ_are_refused_and_the_shard_runs_whole(tmp_path, merges):
    """A string column that is JSON in the first row group and prose after: the first piece reads it as JSON, the
    others as text; the merge refuses them and the shard's outputs are those of one run over it."""
    meta = [json.dumps({"k": i}) if i < 1000 else f"plain words {i}" for i in range(4000)]
    path = _write(tmp_path / "data" / "s.parquet", pa.table({"meta": meta, "text": _texts(4000)}), 1000)
    (whole, whole_flags), (pieces, piece_flags) = _audit_both([path], tmp_path)
    assert merges == [False]
    assert pieces == whole and piece_flags.equals(whole_flags)
    assert whole["checks"]["json_invalid"]["flagged"] == 3000   # read as JSON from the first batch on


def test_a_broken_row_group_in_a_piece_gives_the_whole_shards_error_and_counts(tmp_path, merges):
    path = tmp_path / "data" / "s.parquet"
    _write(path, pa.table({"text": _texts(6000)}), 1000)
    chunk = pq.read_metadata(path).row_group(3).column(0)
    data = bytearray(path.read_bytes())
    at = chunk.data_page_offset + 8
    data[at:at + chunk.total_compressed_size - 16] = b"\xff" * (chunk.total_compressed_size - 16)
    path.write_bytes(bytes(data))
    (whole, whole_flags), (pieces, piece_flags) = _audit_both([str(path)], tmp_path)
    assert merges == [False]
    assert pieces == whole and piece_flags.equals(whole_flags)
    assert whole["totals"]["unreadable_shards"] == 1 and whole["totals"]["samples"] == 3000


def test_a_large_parquet_shard_counts_as_several_units_for_the_lanes(tmp_path, monkeypatch):
    from dataaudit.audit.pieces import likely_units
    from dataaudit.cli.audit import _planned_lanes

    monkeypatch.setattr(engine, "cores", lambda: 4)
    big = tmp_path / "big.parquet"
    with open(big, "wb") as f:      # stored bytes count, not the size a sparse file claims
        f.write(b"\1" * (5 * engine.MIN_PIECE_BYTES))
    small = tmp_path / "small.parquet"
    small.write_bytes(b"\1" * 1000)
    jsonl = tmp_path / "big.jsonl"
    jsonl.write_bytes(big.read_bytes())
    paths = [str(big), str(small), str(jsonl)]
    assert likely_units(paths, engine.shard_sizes(paths), engine.MIN_PIECE_BYTES) == 2 + 1 + 1   # Parquet only
    assert _planned_lanes([str(big)], EngineOptions("local"), None) == 2     # the workers the command starts
    assert _planned_lanes([str(small)], EngineOptions("local"), None) == 1
    assert _planned_lanes([str(jsonl)], EngineOptions("local"), None) == 1
    assert engine.local_workers([str(big)], units=5) == 4
    assert engine.local_workers([str(big)]) == 1                 # one shard, no pieces: one lane
