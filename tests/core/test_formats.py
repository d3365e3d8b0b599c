"""The one format table (dataaudit.formats): every format is one row with a reader, a schema peek and a writer; the
messages that list what is supported come from it; and for every format, writing a shard without dropping anything
gives back its bytes, and dropping records drops exactly those the reader numbered."""
from __future__ import annotations

import gzip
import io as stdio
import json
import tarfile

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dataaudit.formats import BY_NAME, FORMATS, format_of, iter_shard, read_schema, supported, titles
from dataaudit.sources import ROW, ShardReadError
from dataaudit.writers.base import WriteOptions


def test_one_row_per_format_and_no_suffix_twice():
    assert [f.name for f in FORMATS] == ["parquet", "webdataset", "jsonl", "json", "csv", "tsv", "text", "arrow"]
    suffixes = [s for f in FORMATS for s in f.suffixes]
    assert len(suffixes) == len(set(suffixes))
    assert all(format_of(f"x{s}") is f for f in FORMATS for s in f.suffixes)
    assert supported() == (".parquet/.pq, .tar/.tar.gz/.tgz, .jsonl/.jsonl.gz/.ndjson, .json/.json.gz, "
                           ".csv/.csv.gz, .tsv/.tsv.gz, .txt/.txt.gz/.text or .arrow")
    assert titles() == "Parquet, WebDataset, JSONL, JSON-array, CSV, TSV, plain text or Arrow IPC"
    with pytest.raises(ValueError, match=r"^a\.xls: unsupported shard format \(expected \.parquet/\.pq, "):
        format_of("a.xls")


def test_only_parquet_knows_its_schema_before_reading(tmp_path):
    pq.write_table(pa.table({"text": ["a"], "n": [1]}), tmp_path / "s.parquet")
    (tmp_path / "s.jsonl").write_text('{"text": "a"}\n')
    assert read_schema(str(tmp_path / "s.parquet")).names == ["text", "n"]
    assert read_schema(str(tmp_path / "s.jsonl")) is None
    assert [f.name for f in FORMATS if f.schema_peek(str(tmp_path / "s.parquet")) is not None] == ["parquet"]
    with pytest.raises(ShardReadError, match=r"missing\.jsonl: no such file"):
        read_schema(str(tmp_path / "missing.jsonl"))


def _tar(path, keys):
    with tarfile.open(path, "w") as tf:
        for key in keys:
            data = f"text of {key}".encode()
            info = tarfile.TarInfo(f"{key}.txt")
            info.size = len(data)
            tf.addfile(info, stdio.BytesIO(data))


def _shards(tmp_path) -> dict[str, tuple[str, int]]:
    """One shard of every format, 4 records each: (path, records)."""
    pq.write_table(pa.table({"text": [f"r{i}" for i in range(4)]}), tmp_path / "s.parquet", row_group_size=3)
    _tar(tmp_path / "s.tar", ["a", "b", "c", "d"])
    (tmp_path / "s.jsonl").write_bytes(b'{"text": "r0"}\r\n\n{"text": "r1"}\n{"text": "r2"}\n{"text": "r3"}')
    (tmp_path / "s.json").write_text(json.dumps([{"text": f"r{i}"} for i in range(4)], indent=2) + "\n")
    (tmp_path / "s.csv.gz").write_bytes(gzip.compress(b'text,n\r\n"r0, x",0\r\n"r\n1",1\r\n\r\nr2,2\r\nr3,3\r\n'))
    (tmp_path / "s.tsv").write_bytes("\ufefftext\tn\nr0\t0\nr1\t1\nr2\t2\nr3\t3\n".encode())
    (tmp_path / "s.txt").write_bytes(b"\nr0\r\n\n  \nr1\nr2 \nr3")
    table = pa.table({"text": [f"r{i}" for i in range(4)]})
    with pa.OSFile(str(tmp_path / "s.arrow"), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table, max_chunksize=3)
    return {f.name: (str(tmp_path / f"s{f.suffixes[0] if f.name != 'csv' else '.csv.gz'}"), 4) for f in FORMATS}


def _decompressed(path: str) -> bytes:
    data = open(path, "rb").read()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


@pytest.mark.parametrize("name", [f.name for f in FORMATS])
def test_every_format_reads_and_writes_itself_back(tmp_path, name):
    path, n = _shards(tmp_path)[name]
    fmt = BY_NAME[name]
    rows = pa.Table.from_batches(list(iter_shard(path))).column(ROW).to_pylist()
    assert rows == list(range(n))
    same = str(tmp_path / f"same-{name}{fmt.suffixes[0]}")
    wrote = fmt.write(path, same, np.zeros(0, np.int64), n, WriteOptions())
    assert (wrote["records"], wrote["kept"]) == (n, n)
    if name == "parquet":
        assert pq.read_table(same).equals(pq.read_table(path))
    else:
        assert _decompressed(same) == _decompressed(path)
    fewer = str(tmp_path / f"fewer-{name}{fmt.suffixes[0]}")
    wrote = fmt.write(path, fewer, np.array([1, 3]), n, WriteOptions())
    assert (wrote["records"], wrote["kept"]) == (n, 2)
    kept = pa.Table.from_batches(list(iter_shard(fewer)))
    texts = kept.column("text").to_pylist() if "text" in kept.column_names else kept.column("txt").to_pylist()
    first = {"webdataset": "text of a", "csv": "r0, x"}.get(name, "r0")
    third = {"webdataset": "text of c", "text": "r2 "}.get(name, "r2")
    assert texts == [first, third]


def test_records_are_the_parsed_objects_before_arrow(tmp_path):
    shards = _shards(tmp_path)
    jsonl = list(BY_NAME["jsonl"].records(shards["jsonl"][0], 1 << 20))
    assert [(v, e, line) for v, e, _, _, line in jsonl] == [({"text": ("str", f"r{i}")}, None, line)
                                                           for i, line in enumerate((1, 3, 4, 5))]
    csv_rows = list(BY_NAME["csv"].records(shards["csv"][0], 1 << 20))   # by position, the header row included
    assert [({k: v for k, (_, v) in values.items()}, line) for values, _, _, _, line in csv_rows] == [
        ({"0": "text", "1": "n"}, 1), ({"0": "r0, x", "1": "0"}, 2), ({"0": "r\n1", "1": "1"}, 3),
        ({"0": "r2", "1": "2"}, 6), ({"0": "r3", "1": "3"}, 7)]
    assert BY_NAME["parquet"].records(shards["parquet"][0], 1 << 20) is None


def test_csv_rows_keep_their_lines_and_a_bad_row_is_a_row(tmp_path):
    path = tmp_path / "d.csv"
    path.write_bytes(b'id,text\n1,"two\nlines"\n\n2\n3,"caf\xc3\xa9"\n4,"bad \xff"\n')
    t = pa.Table.from_batches(list(iter_shard(str(path))))
    assert t.column("__line__").to_pylist() == [2, 5, 6, 7]
    assert t.column("text").to_pylist() == ["two\nlines", None, "caf\u00e9", None]
    assert t.column("__error__").to_pylist() == [None, "row 1 (line 5): 1 columns, expected 2 (as in the header)",
                                                 None, "row 3 (line 7): invalid UTF-8 at byte 7"]
    (tmp_path / "dup.csv").write_bytes(b"a,a\n1,2\n")
    with pytest.raises(ShardReadError, match=r"^csv: line 1: the header names column 'a' twice$"):
        list(iter_shard(str(tmp_path / "dup.csv")))
    (tmp_path / "open.tsv").write_bytes(b'a\tb\n1\t2\n"unterminated\t3\n')
    got, error = [], None
    try:
        for b in iter_shard(str(tmp_path / "open.tsv")):
            got += b.column("a").to_pylist()
    except ShardReadError as e:
        error = str(e)
    assert got == ["1"] and error == "tsv: line 3: unexpected end of data"
