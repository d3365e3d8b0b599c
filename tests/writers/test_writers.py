"""Each format's writer on its own: exactly the kept records, in the input's bytes and layout."""
from __future__ import annotations

import gzip
import io
import json
import tarfile

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dataaudit.formats import iter_shard
from dataaudit.writers.base import ShardMismatch, WriteOptions
from dataaudit.writers.json_array import rewrite_json_array
from dataaudit.writers.jsonl import rewrite_jsonl
from dataaudit.writers.parquet import rewrite_parquet
from dataaudit.writers.tar import rewrite_tar

rows = lambda *r: np.array(r, np.int64)  # noqa: E731


def test_jsonl_lines_byte_for_byte(tmp_path):
    lines = [b'\xef\xbb\xbf{"a": 1}\r\n', b"\n", b'  {"a":2}\n', b"{broken\n", b"   \r\n", b'{"a": "\xc3\xa9"}\n',
             b'{"a": 5}']
    src = tmp_path / "x.jsonl"
    src.write_bytes(b"".join(lines))
    assert sum(b.num_rows for b in iter_shard(str(src))) == 5          # records: the non-blank lines
    r = rewrite_jsonl(str(src), tmp_path / "o.jsonl", rows(1, 2), 5)
    assert r == {"records": 5, "kept": 3, "dropped_lines": [3, 4]}   # rows 1 and 2: lines 3 and 4 (line 2 is blank)
    assert (tmp_path / "o.jsonl").read_bytes() == b"".join(lines[i] for i in (0, 1, 4, 5, 6))   # blank lines stay
    with pytest.raises(ShardMismatch):
        rewrite_jsonl(str(src), tmp_path / "m.jsonl", rows(), 6)
    assert not (tmp_path / "m.jsonl").exists()


def test_jsonl_gz(tmp_path):
    body = b"".join(b'{"i": %d}\n' % i for i in range(10))
    src = tmp_path / "x.jsonl.gz"
    src.write_bytes(gzip.compress(body))
    rewrite_jsonl(str(src), tmp_path / "o.jsonl.gz", rows(0, 9), 10)
    out = (tmp_path / "o.jsonl.gz").read_bytes()
    assert out[:2] == b"\x1f\x8b"
    assert gzip.decompress(out) == b"".join(b'{"i": %d}\n' % i for i in range(1, 9))


@pytest.mark.parametrize("text, drop, expect, lines", [
    ('[\n  {"a": 1},\n  {"a": "\u00e9"},\n  {"a": 3}\n]\n', (1,), '[\n  {"a": 1},\n  {"a": 3}\n]\n', [3]),
    ('[\n  {"a": 1},\n  {"a": "\u00e9"},\n  {"a": 3}\n]\n', (0,), '[\n  {"a": "\u00e9"},\n  {"a": 3}\n]\n', [2]),
    ('[{"a":1}, 7, {"b": [1, 2]}]', (), '[{"a":1}, 7, {"b": [1, 2]}]', []),
    ('[{"a":1}, 7, {"b": [1, 2]}]', (0, 1, 2), '[]', [1, 1, 1]),
    ('\ufeff{"a": 1}\n{"a": 2}\n{"a": 3}\n', (1,), '\ufeff{"a": 1}\n{"a": 3}\n', [2]),
    ('[]', (), '[]', []),
])
def test_json_array_elements_as_bytes(tmp_path, text, drop, expect, lines):
    src = tmp_path / "x.json"
    src.write_text(text, encoding="utf-8")
    n = sum(b.num_rows for b in iter_shard(str(src)))
    r = rewrite_json_array(str(src), tmp_path / "o.json", rows(*drop), n)
    assert (tmp_path / "o.json").read_text(encoding="utf-8") == expect
    assert r == {"records": n, "kept": n - len(drop), "dropped_lines": lines}   # where each dropped element starts
    if expect.startswith("["):
        json.loads(expect)                                             # still one valid JSON array


def _tar(members: list[tuple[str, bytes]], gz: bool = False) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz" if gz else "w") as tf:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.uname = len(data), 1700000000, "someone"
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


MEMBERS = [("a/000.txt", b"first"), ("a/000.jpg", b"\xff\xd8" + bytes(range(256)) * 3),
           ("a/001.txt", b"second"), ("a/001.jpg", b"\xff\xd8x"),
           ("a/" + "long-" * 40 + "002.txt", b"a key over 100 characters: a pax/GNU header"),
           ("a/003.txt", b"fourth"), ("a/003.json", b'{"k": 1}')]


@pytest.mark.parametrize("gz", [False, True])
def test_tar_members_and_headers_byte_for_byte(tmp_path, gz):
    src = tmp_path / ("x.tar.gz" if gz else "x.tar")
    src.write_bytes(_tar(MEMBERS, gz))
    r = rewrite_tar(str(src), tmp_path / "o.tar", rows(1, 3), 4)
    assert r == {"records": 4, "kept": 2, "dropped_keys": ["a/001", "a/003"]}
    out = (tmp_path / "o.tar").read_bytes()
    assert (out[:2] == b"\x1f\x8b") == gz
    kept = [MEMBERS[i] for i in (0, 1, 4)]
    assert (gzip.decompress(out) if gz else out) == _tar(kept)        # headers, data, padding: as tarfile wrote them
    with tarfile.open(tmp_path / "o.tar") as tf:
        got = [(m.name, tf.extractfile(m).read(), m.mtime, m.uname) for m in tf]
    assert got == [(n, d, 1700000000, "someone") for n, d in kept]


def test_tar_unchanged_is_identical(tmp_path):
    src = tmp_path / "x.tar"
    src.write_bytes(_tar(MEMBERS))
    rewrite_tar(str(src), tmp_path / "o.tar", rows(), 4)
    assert (tmp_path / "o.tar").read_bytes() == src.read_bytes()


def test_parquet_layout(tmp_path):
    n = 1000
    t = pa.table({"id": pa.array(range(n)), "img": [bytes([i % 256]) * 7 for i in range(n)],
                  "msgs": pa.array([[{"role": "user", "content": str(i)}] for i in range(n)])},
                 metadata={"huggingface": '{"info": 1}'})
    src = tmp_path / "x.parquet"
    pq.write_table(t, src, row_group_size=100, compression={"id": "snappy", "img": "gzip",
                                                            "msgs.list.element.role": "zstd",
                                                            "msgs.list.element.content": "zstd"})
    drop = np.arange(0, n, 3)
    r = rewrite_parquet(str(src), tmp_path / "o.parquet", drop, n)
    keep = np.setdiff1d(np.arange(n), drop)
    assert r == {"records": n, "kept": len(keep), "row_group_rows": 100}
    out = pq.ParquetFile(tmp_path / "o.parquet")
    assert out.read().equals(t.take(keep))
    assert out.schema_arrow.equals(pq.ParquetFile(src).schema_arrow, check_metadata=True)
    md = out.metadata
    assert [md.row_group(i).num_rows for i in range(md.num_row_groups)] == [100] * 6 + [66]
    assert [md.row_group(0).column(i).compression for i in range(4)] == ["SNAPPY", "GZIP", "ZSTD", "ZSTD"]
    rewrite_parquet(str(src), tmp_path / "o2.parquet", drop, n, WriteOptions(row_group_rows=250))
    md = pq.ParquetFile(tmp_path / "o2.parquet").metadata
    assert [md.row_group(i).num_rows for i in range(md.num_row_groups)] == [250, 250, 166]


def test_csv_header_and_kept_rows_byte_for_byte(tmp_path):
    from dataaudit.writers.delimited import rewrite_delimited

    src = tmp_path / "x.csv"
    src.write_bytes(b'\xef\xbb\xbfq,a\r\n"one, two",1\r\n\r\n"multi\nline",2\r\nlast,3')
    r = rewrite_delimited(str(src), tmp_path / "o.csv", rows(0), 3, ",")
    assert r == {"records": 3, "kept": 2, "dropped_lines": [2]}
    assert (tmp_path / "o.csv").read_bytes() == b'\xef\xbb\xbfq,a\r\n\r\n"multi\nline",2\r\nlast,3'
    # without a header (a benchmark file whose first row is an item), the first row is a record like the others
    r = rewrite_delimited(str(src), tmp_path / "n.csv", rows(0, 1), 4, ",", WriteOptions(header=False))
    assert r == {"records": 4, "kept": 2, "dropped_lines": [1, 2]}
    assert (tmp_path / "n.csv").read_bytes() == b'\r\n"multi\nline",2\r\nlast,3'
    with pytest.raises(ShardMismatch, match=r"x\.csv: read 3 records, the audit read 4"):
        rewrite_delimited(str(src), tmp_path / "m.csv", rows(), 4, ",")
    assert not (tmp_path / "m.csv").exists()


def test_compression_follows_the_input_unless_asked(tmp_path):
    src = tmp_path / "x.jsonl.gz"
    src.write_bytes(gzip.compress(b'{"a": 1}\n{"a": 2}\n'))
    rewrite_jsonl(str(src), tmp_path / "same.jsonl.gz", rows(0), 2)
    assert gzip.decompress((tmp_path / "same.jsonl.gz").read_bytes()) == b'{"a": 2}\n'
    rewrite_jsonl(str(src), tmp_path / "plain.jsonl", rows(0), 2, WriteOptions(compress=False))
    assert (tmp_path / "plain.jsonl").read_bytes() == b'{"a": 2}\n'
