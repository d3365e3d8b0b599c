"""Shard readers: exact rows, types and messages for Parquet, WebDataset tar and JSONL, plus fuzzing."""
from __future__ import annotations

import gzip
import json
import os
import pickle
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders import make_tar, npy_bytes
from tests.paths import shared_file
from dataaudit.formats import format_of, iter_shard, read_schema
from dataaudit.sources import ERROR, KEY, LINE, ROW, WARNING, ShardReadError

PROV = [KEY, ROW, LINE, ERROR, WARNING]


def data_file(rel: str) -> Path:
    """A file of the real data folder; the test skips when the folder is missing."""
    return shared_file(rel)


def read_all(path, **kw) -> pa.Table:
    batches = list(iter_shard(str(path), **kw))
    assert batches, "no batches"
    # tar/JSONL batches carry only the columns their records have, so schemas may differ between batches
    return pa.concat_tables([pa.Table.from_batches([b]) for b in batches], promote_options="permissive")


def read_until_error(path, **kw) -> tuple[list[pa.RecordBatch], ShardReadError | None]:
    got = []
    try:
        for b in iter_shard(str(path), **kw):
            got.append(b)
    except ShardReadError as e:
        return got, e
    return got, None


def gz(b: bytes) -> bytes:
    return gzip.compress(b)


# --- format dispatch -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,fmt", [
    ("a.parquet", "parquet"), ("a.PQ", "parquet"), ("d/a.tar", "webdataset"), ("a.tar.gz", "webdataset"),
    ("a.tgz", "webdataset"), ("a.jsonl", "jsonl"), ("a.jsonl.gz", "jsonl"), ("a.ndjson", "jsonl"),
    ("a.json", "json"), ("d/a.JSON.gz", "json"), ("a.csv", "csv"), ("a.TSV.gz", "tsv")])
def test_shard_format(name, fmt):
    assert format_of(name).name == fmt


@pytest.mark.parametrize("name", ["a.xls", "a.gz", "a.json5", "tar"])   # .json and .csv are read since they are formats
def test_shard_format_unsupported(name):
    with pytest.raises(ValueError, match=rf"^{name}: unsupported shard format"):
        format_of(name)
    with pytest.raises(ValueError):
        iter_shard(name)


def test_batch_rows_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match="batch_rows"):
        iter_shard(str(tmp_path / "a.jsonl"), batch_rows=0)


# --- Parquet ---------------------------------------------------------------------------------------------

def test_parquet_projection_and_row_numbers_across_row_groups(tmp_path):
    p = tmp_path / "s.parquet"
    pq.write_table(pa.table({"a": list(range(10)), "b": [f"t{i}" for i in range(10)]}), p, row_group_size=3)
    batches = list(iter_shard(str(p), columns=["b", "nope", KEY], batch_rows=2))
    assert len(batches) >= 5 and all(b.num_rows <= 2 for b in batches)
    assert all(b.schema.names == ["b"] + PROV for b in batches)
    t = pa.Table.from_batches(batches)
    assert t.column("b").to_pylist() == [f"t{i}" for i in range(10)]
    assert t.column(ROW).to_pylist() == list(range(10))
    assert t.column(KEY).to_pylist() == [str(i) for i in range(10)]
    assert t.schema.field(ROW).type == pa.int64() and t.schema.field(KEY).type == pa.string()
    assert t.column(ERROR).null_count == 10 and t.column(WARNING).null_count == 10
    # no columns asked for: still one row per record
    t = read_all(p, columns=[], batch_rows=4)
    assert t.schema.names == PROV and t.column(ROW).to_pylist() == list(range(10))


def test_parquet_batches_are_decoded_into_the_jemalloc_pool(tmp_path):
    """The reader decodes into Arrow's jemalloc pool where pyarrow has one (the default pool stays as it is)."""
    try:
        pool = pa.jemalloc_memory_pool()
    except NotImplementedError:
        pytest.skip("this pyarrow is built without jemalloc")
    p = tmp_path / "s.parquet"
    pq.write_table(pa.table({"text": ["x" * 1000] * 2000}), p)
    default = pa.default_memory_pool().backend_name
    before = pool.bytes_allocated()
    batches = list(iter_shard(str(p), columns=["text"], batch_rows=500))
    assert pool.bytes_allocated() - before >= 2_000_000          # the 2 MB of text, held by the batches
    assert sum(b.num_rows for b in batches) == 2000 and pa.default_memory_pool().backend_name == default
    del batches
    # Arrow's scan threads let go of the last batches they read ahead a moment after the scan ends: the memory is
    # released, not at once (a bounded wait; measured: freed within 50 ms)
    deadline = time.monotonic() + 5
    while pool.bytes_allocated() - before >= 2_000_000 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pool.bytes_allocated() - before < 2_000_000


def test_parquet_read_ahead_only_with_two_arrow_threads_and_the_same_batches(tmp_path):
    """One batch of read-ahead where two row groups can decode at once; with one Arrow thread none (it only
    delayed the first batch). The batches are the same either way."""
    from dataaudit.sources import parquet

    p = tmp_path / "s.parquet"
    pq.write_table(pa.table({"text": [f"row {i}" for i in range(3000)], "n": list(range(3000))}), p, row_group_size=700)
    threads = pa.cpu_count()
    got = {}
    try:
        for n in (1, 2):
            pa.set_cpu_count(n)
            got[n] = (parquet._readahead(), pa.Table.from_batches(list(iter_shard(str(p), columns=["text"],
                                                                                  batch_rows=500))))
    finally:
        pa.set_cpu_count(threads)
    assert got[1][0] == 0 and got[2][0] == 1
    assert got[1][1].equals(got[2][1]) and got[1][1].num_rows == 3000
    assert got[1][1].column("__row__").to_pylist() == list(range(3000))


def test_parquet_schema_is_cheap_and_reported(tmp_path):
    p = tmp_path / "s.parquet"
    pq.write_table(pa.table({"x": [1.5], "y": ["a"]}), p)
    schema = read_schema(str(p))
    assert schema.names == ["x", "y"] and schema.field("x").type == pa.float64()
    assert read_schema(str(make_tar(tmp_path / "s.tar", [("a.txt", b"x")]))) is None
    with pytest.raises(ShardReadError):
        read_schema(str(tmp_path / "missing.parquet"))
    with pytest.raises(ShardReadError):
        read_schema(str(tmp_path / "missing.tar"))


def test_parquet_alltypes_plain_reads():
    t = read_all(data_file("parquet-testing/alltypes_plain.parquet"))
    assert t.num_rows == 8
    assert t.column("id").to_pylist() == [4, 5, 6, 7, 2, 3, 0, 1]
    assert t.column(ROW).to_pylist() == list(range(8))
    assert t.schema.names[-5:] == PROV and len(t.schema.names) == 11 + 5


@pytest.mark.parametrize("name,message", [
    ("PARQUET-1481", "Invalid physical column type"),
    ("ARROW-GH-41321", "bit_width 254"),
    ("ARROW-GH-45185", "repetition level at the start of a record must be 0"),
])
def test_parquet_corrupt_files_raise_shard_read_error(name, message):
    path = data_file(f"parquet-testing/{name}.parquet")
    with pytest.raises(ShardReadError, match=message) as info:
        for _ in iter_shard(str(path)):
            pass
    assert "\n" not in str(info.value)


def test_parquet_not_parquet_truncated_or_missing(tmp_path):
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"this is not parquet at all")
    p = tmp_path / "ok.parquet"
    pq.write_table(pa.table({"a": list(range(100))}), p)
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(p.read_bytes()[:-20])  # footer cut off
    for path in (bad, cut, tmp_path / "missing.parquet"):
        with pytest.raises(ShardReadError, match="^parquet: "):
            list(iter_shard(str(path)))
    before = p.read_bytes()
    assert read_all(p).num_rows == 100
    assert p.read_bytes() == before  # inputs are never modified


# --- WebDataset tar --------------------------------------------------------------------------------------

def test_webdataset_testgz_real_shard():
    t = read_all(data_file("webdataset/testgz.tar"), batch_rows=128)
    assert t.num_rows == 1000
    assert t.column("txt").null_count == 0
    assert t.column(ERROR).null_count == 1000 and t.column(WARNING).null_count == 1000
    assert t.column(ROW).to_pylist() == list(range(1000))
    assert len(set(t.column(KEY).to_pylist())) == 1000


def test_tar_decodes_txt_json_cls_npy(tmp_path):
    p = make_tar(tmp_path / "s.tar", [
        ("d/s0.txt", "hello".encode()),
        ("d/s0.json", json.dumps({"caption": "a cat", "score": 0.5, "n": 3, "ok": True, "ids": [1, 2, 3],
                                 "meta": {"x": 1}, "tags": ["a"]}).encode()),
        ("d/s0.cls", b"7\n"),
        ("d/s0.input_ids.npy", npy_bytes(np.arange(6, dtype=np.int32).reshape(2, 3))),
        ("d/s0.jpg", b"\xff\xd8not really a jpeg"),
        ("d/s1.txt", "héllo".encode()),
        ("d/s1.json", json.dumps({"caption": "dog", "score": 1, "n": 4, "ok": False, "ids": [0.5]}).encode()),
        ("d/s1.cls", b" 2 "),
        ("d/s1.input_ids.npy", npy_bytes(np.array([0.5, 1.5], dtype=np.float32))),
        ("d/s2.caption.txt.gz", gz(b"zipped")),
        ("d/s2.json", b"[1, 2]"),
    ])
    t = read_all(p)
    assert t.column(KEY).to_pylist() == ["d/s0", "d/s1", "d/s2"]
    assert t.column(ERROR).to_pylist() == [None, None, None]
    assert t.column(WARNING).to_pylist() == [None, None, None]
    s = t.schema
    assert s.field("txt").type == pa.string() and t.column("txt").to_pylist() == ["hello", "héllo", None]
    assert t.column("caption").to_pylist() == ["a cat", "dog", "zipped"]
    assert s.field("score").type == pa.float64() and t.column("score").to_pylist() == [0.5, 1.0, None]
    assert s.field("n").type == pa.int64() and t.column("n").to_pylist() == [3, 4, None]
    assert s.field("ok").type == pa.bool_() and t.column("ok").to_pylist() == [True, False, None]
    assert s.field("ids").type == pa.list_(pa.float64()) and t.column("ids").to_pylist() == [[1, 2, 3], [0.5], None]
    # Nested values are Arrow nested types (they were JSON text before the nested-JSON change).
    assert s.field("meta").type == pa.struct([("x", pa.int64())])
    assert t.column("meta").to_pylist() == [{"x": 1}, None, None]
    assert s.field("tags").type == pa.list_(pa.string()) and t.column("tags").to_pylist() == [["a"], None, None]
    assert s.field("cls").type == pa.int64() and t.column("cls").to_pylist() == [7, 2, None]
    # int and float arrays in one batch: values as float64, the dtype column keeps the truth
    assert s.field("input_ids").type == pa.list_(pa.float64())
    assert t.column("input_ids").to_pylist() == [[0, 1, 2, 3, 4, 5], [0.5, 1.5], None]
    assert t.column("input_ids.shape").to_pylist() == [[2, 3], [2], None]
    assert t.column("input_ids.dtype").to_pylist() == ["int32", "float32", None]
    # A .json member that is not an object is typed like a field (it was JSON text before the nested-JSON change).
    assert s.field("json").type == pa.list_(pa.int64()) and t.column("json").to_pylist() == [None, None, [1, 2]]
    # image members are kept as bytes, decoded only by the image checks
    assert s.field("jpg").type == pa.binary() and t.column("jpg").to_pylist() == [b"\xff\xd8not really a jpeg", None, None]
    # projection keeps only requested data columns
    t = read_all(p, columns=["cls", "input_ids.dtype", "nope"])
    assert t.schema.names == ["cls", "input_ids.dtype"] + PROV
    assert t.column("cls").to_pylist() == [7, 2, None]


def test_tar_int_npy_and_fortran_order(tmp_path):
    a = np.asfortranarray(np.arange(6, dtype=np.int64).reshape(2, 3))
    p = make_tar(tmp_path / "s.tar", [("a.x.npy", npy_bytes(a)), ("b.x.npy", npy_bytes(np.array([True, False])))])
    t = read_all(p)
    assert t.schema.field("x").type == pa.list_(pa.int64())
    assert t.column("x").to_pylist() == [[0, 1, 2, 3, 4, 5], [1, 0]]
    assert t.column("x.dtype").to_pylist() == ["int64", "bool"]


def test_tar_conflicting_json_types_flag_the_records_of_another_type(tmp_path):
    """F01: a column keeps the type most records hold (the first seen on a tie); a record of another type is flagged
    and its value left out, the others keep their own values (no JSON text that hides them)."""
    p = make_tar(tmp_path / "s.tar", [("a.json", b'{"v": "x", "w": 1}'), ("b.json", b'{"v": [1], "w": true}'),
                                      ("c.json", b'{"v": null}')])
    t = read_all(p)
    assert t.column("v").to_pylist() == ["x", None, None]
    assert t.column("w").to_pylist() == [1, None, None]
    assert t.column(ERROR).null_count == 3
    assert t.column(WARNING).to_pylist() == [
        None,
        "field_type: column 'v' is list or object here, text in 1 of the batch's 2 records (value not read); "
        "field_type: column 'w' is boolean here, number in 1 of the batch's 2 records (value not read)",
        None]


class _Trap:
    """Unpickling this creates a directory: proof that something was unpickled."""

    def __init__(self, target: str):
        self.target = target

    def __reduce__(self):
        return (os.mkdir, (self.target,))


def test_tar_pickle_members_are_never_unpickled(tmp_path):
    trap = tmp_path / "unpickled"
    payload = pickle.dumps(_Trap(str(trap)))
    p = make_tar(tmp_path / "s.tar", [("s0.txt", b"ok"), ("s0.pkl", payload), ("s0.model.pt", payload),
                                      ("s1.npz", payload), ("s2.npy", npy_bytes(np.array([{"a": 1}], dtype=object)))])
    t = read_all(p)
    assert not trap.exists()
    assert t.column(WARNING).to_pylist() == [
        "member 's0.pkl': unsupported type .pkl (not unpickled); member 's0.model.pt': unsupported type .pt "
        "(not unpickled)",
        None, None]
    assert t.column("txt").to_pylist() == ["ok", None, None]
    # an .npz is a zip of .npy arrays, read by our own parser: a pickle in its place is no zip
    assert t.column(ERROR).to_pylist()[:2] == [None, "member 's1.npz': invalid .npz: File is not a zip file"]
    assert t.column(ERROR)[2].as_py() == "member 's2.npy': object array in .npy (would need unpickling; not loaded)"
    pickle.loads(payload)  # the trap is live: reading the shard would have been caught
    assert trap.exists()


def test_tar_invalid_utf8_is_an_error_row(tmp_path):
    p = make_tar(tmp_path / "s.tar", [("k11.txt", b"fine"), ("k12.txt", b"caf\xe9 ok"), ("k12.cls", b"3"),
                                      ("k13.txt", b"also fine")])
    t = read_all(p)
    assert t.column(KEY).to_pylist() == ["k11", "k12", "k13"]
    assert t.column(ERROR).to_pylist() == [None, "member 'k12.txt': invalid UTF-8 at byte 3", None]
    assert t.column("txt").to_pylist() == ["fine", None, "also fine"]
    assert "cls" not in t.schema.names  # an error row's data columns are null: its good cls is not kept


def test_tar_bad_cls_and_bad_json_are_error_rows(tmp_path):
    p = make_tar(tmp_path / "s.tar", [("a.cls", b"seven"), ("b.json", b'{"a": 1,}'), ("c.cls", b"1")])
    t = read_all(p)
    assert t.column(ERROR).to_pylist() == [
        "member 'a.cls': not an integer: 'seven'",
        "member 'b.json': invalid JSON: Expecting property name enclosed in double quotes at line 1 column 9",
        None]
    assert t.column("cls").to_pylist() == [None, None, 1]


def test_tar_non_adjacent_key_is_a_second_row_with_warning(tmp_path):
    p = make_tar(tmp_path / "s.tar", [("a.txt", b"1"), ("b.txt", b"2"), ("a.cls", b"3")])
    t = read_all(p)
    assert t.column(KEY).to_pylist() == ["a", "b", "a"]
    assert t.column(WARNING).to_pylist() == [None, None,
                                             "key 'a' is not adjacent: members split (first seen at row 0)"]
    assert t.column("txt").to_pylist() == ["1", "2", None] and t.column("cls").to_pylist() == [None, None, 3]


def test_tar_unsafe_paths_and_duplicates_warn(tmp_path):
    p = make_tar(tmp_path / "s.tar", [("../evil.txt", b"x"), ("ok.txt", b"first"), ("ok.txt", b"second")])
    t = read_all(p)
    assert t.column(KEY).to_pylist() == ["../evil", "ok"]
    assert t.column(WARNING).to_pylist() == ["member '../evil.txt': unsafe path (absolute or '..')",
                                             "member 'ok.txt': duplicate extension 'txt' in sample (first kept)"]
    assert t.column("txt").to_pylist() == ["x", "first"]
    assert not (tmp_path.parent / "evil.txt").exists()


def test_tar_bad_gzip_member_and_gzip_bomb_are_error_rows(tmp_path):
    broken = bytearray(gz(b"hello world"))
    broken[10] = 0xFF  # first deflate block header after the 10-byte gzip header: invalid block type
    p = make_tar(tmp_path / "s.tar", [("a.txt.gz", bytes(broken)), ("b.txt.gz", gz(b"\0" * 5000)),
                                      ("c.txt.gz", gz(b"small")), ("d.txt.gz", gz(b"cut")[:-12])])
    t = read_all(p, max_member_bytes=1000)
    errors = t.column(ERROR).to_pylist()
    assert errors[0] == "member 'a.txt.gz': gzip: Error -3 while decompressing data: invalid block type"
    assert errors[1] == "member 'b.txt.gz': gzip: decompresses to more than 1000 bytes (max_member_bytes)"
    assert errors[2] is None and t.column("txt").to_pylist()[2] == "small"
    assert errors[3] == "member 'd.txt.gz': gzip: truncated data"


def test_tar_oversized_member_is_skipped_with_error(tmp_path):
    p = make_tar(tmp_path / "s.tar", [("a.txt", b"y" * 200), ("a.jpg", b"z" * 500), ("b.txt", b"fine")])
    t = read_all(p, max_member_bytes=100)
    assert t.column(ERROR).to_pylist() == ["member 'a.txt': 200 bytes exceeds max_member_bytes 100 (not read); "
                                           "member 'a.jpg': 500 bytes exceeds max_member_bytes 100 (not read)", None]
    assert t.column("txt").to_pylist() == [None, "fine"]


def test_tar_bad_npy_is_an_error_row(tmp_path):
    good = npy_bytes(np.arange(10, dtype=np.float64))
    p = make_tar(tmp_path / "s.tar", [("a.npy", good[:-8]), ("b.npy", b"not numpy"), ("c.npy", good)])
    t = read_all(p)
    errors = t.column(ERROR).to_pylist()
    assert errors[0] == "member 'a.npy': .npy data is 72 bytes, header (10,) float64 needs 80"
    assert errors[1].startswith("member 'b.npy': invalid .npy header")
    assert errors[2] is None and t.column("npy").to_pylist()[2] == list(range(10))


def _five_samples(tmp_path: Path, mode: str = "w", suffix: str = ".tar") -> Path:
    return make_tar(tmp_path / f"full{suffix}", [(f"s{i}.txt", bytes([97 + i]) * 1000) for i in range(5)], mode)


def test_tar_truncated_mid_member_yields_rows_then_raises(tmp_path):
    full = _five_samples(tmp_path).read_bytes()
    cut = tmp_path / "cut.tar"
    cut.write_bytes(full[:3 * 1536 + 512 + 300])  # members are 512 header + 1024 data: cut inside s3's data
    batches, err = read_until_error(cut, batch_rows=2)
    assert err is not None and "unexpected end of data" in str(err)
    t = pa.Table.from_batches(batches)
    assert t.column(KEY).to_pylist() == ["s0", "s1", "s2", "s3"]
    assert t.column(ROW).to_pylist() == [0, 1, 2, 3]
    assert t.column(ERROR).to_pylist()[:3] == [None, None, None]
    assert t.column(ERROR)[3].as_py().startswith("truncated")
    assert t.column("txt").to_pylist()[:3] == ["a" * 1000, "b" * 1000, "c" * 1000]


def test_tar_truncated_at_member_boundary_raises(tmp_path):
    full = _five_samples(tmp_path).read_bytes()
    cut = tmp_path / "cut.tar"
    cut.write_bytes(full[:2 * 1536])  # no end-of-archive blocks: tarfile alone would call this a clean end
    batches, err = read_until_error(cut)
    assert err is not None and "no end-of-archive marker" in str(err)
    t = pa.Table.from_batches(batches)
    assert t.column(KEY).to_pylist() == ["s0", "s1"]
    assert t.column(ERROR).to_pylist() == [None, "truncated: no end-of-archive marker after byte 3072 (truncated?)"]


def test_tar_garbage_after_members_raises(tmp_path):
    full = _five_samples(tmp_path).read_bytes()
    bad = tmp_path / "bad.tar"
    bad.write_bytes(full[:1536] + b"\x07" * 512 + full[1536:])
    batches, err = read_until_error(bad)
    assert err is not None and "bad tar header at byte 1536" in str(err)
    assert sum(b.num_rows for b in batches) == 1


def test_tar_gz_shard_and_truncated_tar_gz(tmp_path):
    p = _five_samples(tmp_path, "w:gz", ".tar.gz")
    t = read_all(p)
    assert t.column(KEY).to_pylist() == [f"s{i}" for i in range(5)] and t.column(ERROR).null_count == 5
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(p.read_bytes()[:-30])  # compressed stream ends inside the tar data
    batches, err = read_until_error(cut)
    assert err is not None and str(err).startswith("tar: ")
    t = pa.Table.from_batches(batches)
    assert 1 <= t.num_rows < 5 and t.column(ROW).to_pylist() == list(range(t.num_rows))
    assert t.column(ERROR)[t.num_rows - 1].as_py().startswith("truncated: ")


@pytest.mark.parametrize("content", [b"", b"definitely not a tar file" * 40, gz(b"not a tar inside gzip" * 40)],
                         ids=["empty", "text", "gzip"])
def test_not_a_tar_raises(tmp_path, content):
    p = tmp_path / "bad.tar"
    p.write_bytes(content)
    with pytest.raises(ShardReadError, match="^tar: "):
        list(iter_shard(str(p)))


def test_tar_missing_file_raises(tmp_path):
    with pytest.raises(ShardReadError, match="No such file"):
        list(iter_shard(str(tmp_path / "missing.tar")))


def test_tar_row_numbers_across_batches(tmp_path):
    p = make_tar(tmp_path / "s.tar", [(f"k{i:03d}.cls", str(i).encode()) for i in range(10)])
    batches = list(iter_shard(str(p), batch_rows=3))
    assert [b.num_rows for b in batches] == [3, 3, 3, 1]
    t = pa.Table.from_batches(batches)
    assert t.column(ROW).to_pylist() == list(range(10)) and t.column("cls").to_pylist() == list(range(10))


# --- JSONL -----------------------------------------------------------------------------------------------

JSONL_LINES = [b'{"a": 1, "b": "x"}', b'{"a": 2 "b": "y"}', b"", b"[1, 2]", b'{"a": "caf\xe9"}',
               b'{"a": 3, "c": [1.5]}']


def test_jsonl_broken_lines_are_error_rows(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_bytes(b"\n".join(JSONL_LINES) + b"\n")
    t = read_all(p, batch_rows=2)
    assert t.column(KEY).to_pylist() == ["0", "1", "2", "3", "4"]
    assert t.column(ROW).to_pylist() == [0, 1, 2, 3, 4]
    assert t.column(LINE).to_pylist() == [1, 2, 4, 5, 6]   # line 3 is blank: no record, no row
    assert t.column(ERROR).to_pylist() == [None, "row 1 (line 2): Expecting ',' delimiter at column 9",
                                           "row 2 (line 4): not a JSON object (list)",
                                           "row 3 (line 5): invalid UTF-8 at byte 10", None]
    assert t.column("a").to_pylist() == [1, None, None, None, 3]
    assert t.column("c").to_pylist() == [None, None, None, None, [1.5]]


def test_jsonl_overlong_line_is_an_error_row(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_bytes(b'{"a": 1}\n{"a": "' + b"x" * 50 + b'"}\n{"a": 3}')
    t = read_all(p, max_member_bytes=20)
    assert t.column(ERROR).to_pylist() == [None, "row 1 (line 2): longer than 20 bytes (not parsed)", None]
    assert t.column("a").to_pylist() == [1, None, 3]


def test_jsonl_gz_and_truncated_gz(tmp_path):
    p = tmp_path / "s.jsonl.gz"
    p.write_bytes(gz(b"\n".join(b'{"i": %d}' % i for i in range(2000))))
    t = read_all(p, batch_rows=500)
    assert t.column("i").to_pylist() == list(range(2000)) and t.column(ROW).to_pylist() == list(range(2000))
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(p.read_bytes()[:-40])
    batches, err = read_until_error(cut, batch_rows=500)
    assert err is not None and str(err).startswith("jsonl: ")
    rows = [r for b in batches for r in b.column(ROW).to_pylist()]
    assert rows == list(range(len(rows)))


def test_jsonl_real_gsm8k():
    t = read_all(data_file("benchmarks/gsm8k_test.jsonl"))
    assert t.num_rows == 1319 and t.column(ERROR).null_count == 1319
    assert t.column("question").null_count == 0 and t.column("answer").null_count == 0


def test_jsonl_lone_surrogate_is_kept_escaped(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_bytes(b'{"t": "ok"}\n{"t": "bad \\ud800 x"}\n')
    t = read_all(p)
    assert t.column("t").to_pylist() == ["ok", "bad \\ud800 x"]
    assert t.column(WARNING).to_pylist() == [None, "column 't': invalid Unicode escaped"]


# --- fuzzing: anything a shard can contain ends in rows or ShardReadError --------------------------------

def _valid_shard(fmt: str, tmp: Path) -> bytes:
    if fmt == "tar":
        return make_tar(tmp / "v.tar", [("a.txt", b"hi"), ("a.json", b'{"x": 1}'), ("a.cls", b"1"),
                                        ("b.npy", npy_bytes(np.arange(3))), ("b.txt.gz", gz(b"z"))]).read_bytes()
    if fmt == "parquet":
        pq.write_table(pa.table({"x": [1, 2, 3], "s": ["a", None, "c"]}), tmp / "v.parquet", row_group_size=2)
        return (tmp / "v.parquet").read_bytes()
    if fmt == "json":
        return '[{"x": 1, "m": [{"r": "u", "c": "中"}]}, {"x": [1, 2]}, "s", {"m": [{"r": "a", "c": ["p"]}]}]'.encode()
    return b'{"x": 1}\n{"x": [1, 2]}\n{"y": "s"}\n'


def _check_shard(path: Path) -> None:
    rows = []
    try:
        for b in iter_shard(str(path), batch_rows=2):
            assert b.schema.names[-5:] == PROV
            rows.extend(b.column(ROW).to_pylist())
    except ShardReadError as e:
        assert "\n" not in str(e)
    assert rows == list(range(len(rows)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fmt=st.sampled_from(["tar", "parquet", "jsonl", "json"]), data=st.binary(max_size=3000))
def test_fuzz_random_bytes(tmp_path, fmt, data):
    p = tmp_path / f"r.{fmt}"
    p.write_bytes(data)
    _check_shard(p)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fmt=st.sampled_from(["tar", "parquet", "jsonl", "json"]), cut=st.integers(0, 10_000),
       patches=st.lists(st.tuples(st.integers(0, 10_000), st.binary(min_size=1, max_size=8)), max_size=4))
def test_fuzz_corrupted_valid_shards(tmp_path, fmt, cut, patches):
    data = bytearray(_valid_shard(fmt, tmp_path))
    for pos, b in patches:
        pos %= len(data)
        data[pos:pos + len(b)] = b
    p = tmp_path / f"c.{fmt}"
    p.write_bytes(bytes(data[:cut] if cut < len(data) else data))
    _check_shard(p)
