"""Hostile and corrupt inputs, each with the outcome a correct audit reports.

Used by tests/e2e/test_reliability_inputs.py. From the repo root, `.venv/bin/python -m tests.hostile_inputs`
prints the table of inputs, what the report said and records lost (the closing note's table).
"""
from __future__ import annotations

import gzip
import shutil
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tests.builders import make_tar, npy_bytes
from tests.paths import SHARED_DATA, SHARED_MISSING
from tests.sources.damage import damage_column, write_sample

GiB = 1 << 30


@dataclass
class Hostile:
    name: str
    build: callable                 # (folder) -> path of the shard
    records: int                    # records really in the file that a reader can reach
    status: str = "ok"
    flags: dict = field(default_factory=dict)   # check -> flagged samples
    error: str | None = None        # substring of the shard error
    config: dict | None = None
    shared: bool = False            # built from a file of the real data folder (../shared/data)


def _tar(path: Path, members: list[tuple[str, bytes]], mode: str = "w") -> Path:
    return make_tar(path, members, mode, format=tarfile.USTAR_FORMAT)


def _text_members(n: int, prefix: str = "s") -> list[tuple[str, bytes]]:
    return [(f"{prefix}{i:04d}.txt", f"An ordinary caption number {i} about a quiet harbour.".encode())
            for i in range(n)]


def _copy(name: str):
    def build(folder: Path) -> Path:
        return Path(shutil.copy(SHARED_DATA / "parquet-testing" / name, folder / name))
    return build


def _valid_parquet(folder: Path, name="valid.parquet", rows=100) -> Path:
    path = folder / name
    pq.write_table(pa.table({"text": [f"Row {i} says something sensible about boats." for i in range(rows)]}),
                   path, row_group_size=25)
    return path


def _damaged_column(folder):
    """text, timestamp, score in two row groups of 400 rows; the bytes of row group 1's timestamp pages damaged."""
    path = write_sample(folder / "damaged-column.parquet", row_groups=2)
    return damage_column(path, "timestamp", row_group=1)


def _zero_bytes(folder):
    (folder / "empty.parquet").write_bytes(b"")
    return folder / "empty.parquet"


def _wrong_magic(folder):
    path = _valid_parquet(folder, "wrong-magic.parquet")
    data = bytearray(path.read_bytes())
    data[-4:] = b"XXXX"
    path.write_bytes(bytes(data))
    return path


def _truncated_footer(folder):
    path = _valid_parquet(folder, "truncated-footer.parquet")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 40])
    return path


def _wrong_type_column(folder):
    path = folder / "wrong-type.parquet"
    pq.write_table(pa.table({"text": ["fine text here"] * 4, "label": ["cat", "dog", "cat", "eel"],
                             "features": [[0.5, 0.25], [0.1, 0.9], [0.3, 0.4], [0.7, 0.2]]}), path)
    return path


def _nonfinite_everywhere(folder):
    path = folder / "nonfinite.parquet"
    nan, inf = float("nan"), float("inf")
    table = pa.table({
        "scalar": pa.array([1.0, nan, inf, -inf, 2.0], pa.float64()),
        "half": pa.array(np.array([1, np.nan, 2, 3, np.inf], dtype=np.float16)),
        "ragged": pa.array([[1.0, 2.0], [], None, [3.0, nan], [-inf]], pa.list_(pa.float32())),
        "fixed": pa.FixedSizeListArray.from_arrays(pa.array([0.0, 1.0, inf, 2.0, 1.0, 2.0, 3.0, 4.0, nan, nan],
                                                            pa.float32()), 2),
        "nested": pa.array([[[1.0], [nan]], [[2.0]], [[3.0, 4.0]], [], [[inf]]], pa.list_(pa.list_(pa.float64()))),
    })
    pq.write_table(table, path)
    return path


def _npy_nonfinite(folder):
    members = []
    for i, a in enumerate([np.array([1.0, np.nan], np.float32), np.array([[np.inf, 0.0]], np.float64),
                           np.array([0.5, 0.25], np.float32), np.array([-np.inf], np.float16)]):
        members.append((f"n{i}.x.npy", npy_bytes(a)))
    return _tar(folder / "npy-nonfinite.tar", members)


def _json_nonfinite(folder):
    path = folder / "nonfinite.jsonl"
    path.write_text('{"x": NaN, "v": [1.0, 2.0]}\n{"x": 1.5, "v": [3.0, NaN]}\n{"x": -Infinity, "v": []}\n'
                    '{"x": 2.0, "v": [4.0]}\n', encoding="utf-8")
    return path


def _truncated_tar(folder):
    full = _tar(folder / "full.tar", _text_members(20)).read_bytes()
    path = folder / "truncated.tar"
    # Cut inside the data of the 11th member: 10 records whole, the 11th reported as truncated.
    path.write_bytes(full[: 10 * 1024 + 512 + 20])
    (folder / "full.tar").unlink()
    return path


def _not_a_tar(folder):
    path = folder / "not-a-tar.tar"
    path.write_bytes(np.random.default_rng(7).bytes(5000))
    return path


def _unsafe_paths(folder):
    return _tar(folder / "unsafe-paths.tar", [("/abs/a.txt", b"absolute path member text"),
                                               ("../up/b.txt", b"parent dir member text"),
                                               ("ok/c.txt", b"a normal member text")])


def _non_adjacent(folder):
    return _tar(folder / "non-adjacent.tar", [("a.txt", b"first part of a"), ("b.txt", b"all of b"),
                                               ("a.cls", b"3")])


def _duplicate_keys(folder):
    return _tar(folder / "duplicate-keys.tar", [("a.txt", b"text one"), ("a.txt", b"text two"),
                                                 ("b.txt", b"text of b")])


def _bad_gzip_member(folder):
    return _tar(folder / "bad-gzip.tar", [("a.txt.gz", b"\x1f\x8b\x08\x00 definitely not deflate"),
                                          ("b.txt.gz", gzip.compress(b"fine compressed text", mtime=0))])


def _gzip_bomb(folder):
    bomb = gzip.compress(b"\x00" * (300 << 20), compresslevel=9, mtime=0)
    return _tar(folder / "gzip-bomb.tar", [("bomb.txt.gz", bomb), ("ok.txt", b"a normal member")])


def _huge_member(folder):
    """A 1 GiB member written as a sparse file: the reader must skip it without holding it."""
    path = folder / "huge-member.tar"
    header = tarfile.TarInfo("big.txt")
    header.size = GiB
    with open(path, "wb") as f:
        f.write(header.tobuf(format=tarfile.USTAR_FORMAT))
        f.seek(512 + GiB)
        small = tarfile.TarInfo("small.txt")
        small.size = len(b"a small member")
        f.write(small.tobuf(format=tarfile.USTAR_FORMAT) + b"a small member".ljust(512, b"\0"))
        f.write(b"\0" * 1024)
    return path


def _non_utf8(folder):
    return _tar(folder / "non-utf8.tar", [("a.txt", "caf\u00e9 au lait".encode("latin-1")),
                                          ("b.txt", b"valid text")])


def _pickle_member(folder):
    return _tar(folder / "pickle.tar", [("a.txt", b"caption"), ("a.pkl", b"cos\nsystem\n(S'echo pwned'\ntR.")])


def _broken_jsonl(folder):
    path = folder / "broken.jsonl"
    path.write_bytes(b'{"text": "fine line one"}\n{"text": broken\n\xff\xfe\n{"text": "fine line four"}\n')
    return path


def _csv_unterminated_quote(folder):
    path = folder / "open-quote.csv"
    path.write_bytes(b'text\n"A fine first row, about boats."\nSecond row fine too\n"never closed, runs to the end\n')
    return path


def _csv_huge_cell(folder):
    """A cell over Python's csv limit (128 KiB, process-wide: not raised): the shard is unreadable from its row on,
    with the rows before it counted."""
    path = folder / "huge-cell.csv"
    path.write_bytes(b"text\nA short row about a quiet harbour.\n" + b"x" * 200_000 + b"\nafter\n")
    return path


def _csv_ragged_and_not_utf8(folder):
    path = folder / "ragged.csv"
    path.write_bytes(b"id,text\n1,A calm sentence about the sea.\n2\n3,a,b\n4,caf\xe9 au lait\n5,fine again\n")
    return path


def _schema_a(folder):
    return _valid_parquet(folder, "schema-a.parquet", rows=10)


def _schema_b(folder):
    path = folder / "schema-b.parquet"
    pq.write_table(pa.table({"text": pa.array([1, 2, 3], pa.int64()), "other": ["x", "y", "z"]}), path)
    return path


# --- issue 38, the readers' half: one record of each hostile kind costs that record, never the shard or the job

def _jsonl(path: Path, rows: list[dict]) -> Path:
    import json
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _turns(reply: str | None = "A calm reply about the harbour.") -> list[dict]:
    turns = [{"role": "user", "content": "Tell me about the harbour at dawn."}]
    return turns + ([{"role": "assistant", "content": reply}] if reply is not None else [])


def _f01_one_record_of_another_type(folder):
    """F01: 4096 records (one batch); record 0 holds a list for `text` and a string for `messages`. Among the
    others, 20 empty texts (rows 2, 4, ..., 40) and 30 conversations without an assistant turn (rows 101..130)."""
    rows = [{"text": f"Record {i} says something sensible about boats.", "messages": _turns()} for i in range(4096)]
    rows[0] = {"text": ["not", "a", "string"], "messages": "not a conversation"}
    for i in range(2, 42, 2):
        rows[i]["text"] = ""
    for i in range(101, 131):
        rows[i]["messages"] = _turns(None)
    return _jsonl(folder / "one-of-another-type.jsonl", rows)


def invalid_utf8_strings(values: list[bytes]) -> pa.Array:
    """A string array holding the bytes as they are: pyarrow validates nothing here (what a careless writer does)."""
    offsets = np.cumsum([0] + [len(v) for v in values]).astype(np.int32)
    return pa.Array.from_buffers(pa.string(), len(values),
                                 [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(values))])


F04_ROWS = 10_000
F04_BAD_TEXT = (3, 9000)      # 9000: past any sampled rows
F04_BAD_CONTENT = (5,)        # inside a list<struct<role, content>> (a conversation)


def _f04_invalid_utf8_parquet(folder):
    """F04: a Parquet string column and a conversation's content holding bytes that are not UTF-8."""
    text = [f"Row {i} of a calm corpus about the sea, boats and {i % 97} gulls.".encode() for i in range(F04_ROWS)]
    content = [f"Reply {i} about the harbour.".encode() for i in range(F04_ROWS)]
    for i in F04_BAD_TEXT:
        text[i] = b"caf\xe9 au lait, badly encoded \xff"
    for i in F04_BAD_CONTENT:
        content[i] = b"a reply cut inside a character \xc3"
    roles = pa.array(["user", "assistant"] * F04_ROWS)
    turns = pa.StructArray.from_arrays(
        [roles, invalid_utf8_strings([c for pair in zip([b"A question."] * F04_ROWS, content) for c in pair])],
        ["role", "content"])
    messages = pa.ListArray.from_arrays(pa.array(np.arange(0, 2 * F04_ROWS + 1, 2, dtype=np.int32)), turns)
    path = folder / "invalid-utf8.parquet"
    pq.write_table(pa.table({"text": invalid_utf8_strings(text), "messages": messages}), path)
    return path


def _npy_header(shape: tuple, fortran: bool, descr: str = "<f4") -> bytes:
    import io
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": fortran, "shape": shape})
    return buf.getvalue()


def _f05_npy_negative_shapes(folder):
    """F05/F05b: .npy headers np.load refuses (negative dimensions; one Fortran-ordered), between good samples."""
    good = npy_bytes(np.array([[0.5, 0.25]], np.float32))
    return _tar(folder / "npy-negative-shape.tar", [
        ("a.x.npy", good),
        ("b.x.npy", _npy_header((-2, -3), True) + b"\0" * 24),
        ("c.x.npy", _npy_header((-1,), False) + b"\0" * 4),
        ("d.x.npy", _npy_header((2, -3), False)),
        ("e.x.npy", good)])


def _f15_reserved_names(folder):
    """F15: members named like the reader's provenance columns (`KEY.__row__.cls`, `KEY.__key__.txt`)."""
    return _tar(folder / "reserved-names.tar", [
        ("a.txt", b"A caption about a quiet harbour."), ("a.__row__.cls", b"3"),
        ("b.txt", b"Another caption about boats."), ("b.__key__.txt", b"not a key"),
        ("c.txt", b"A third caption, nothing odd.")])


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | 0x80 if n else b)
        if not n:
            return bytes(out)


def zero_column_parquet(rows: int) -> bytes:
    """F03: a Parquet file with no column whose footer declares `rows` rows (pyarrow writes 0; the footer is
    patched: thrift compact i64 fields are zigzag varints)."""
    import io
    import struct

    buf = io.BytesIO()
    pq.write_table(pa.table({"a": [1]}).drop_columns(["a"]), buf)
    data = buf.getvalue()
    length = struct.unpack("<I", data[-8:-4])[0]
    footer = data[-8 - length:-8]
    declared = b"\x16" + _varint(2 * rows)
    patched = (footer.replace(b"\x15\x00\x00\x16\x00", b"\x15\x00\x00" + declared, 1)     # FileMetaData.num_rows
               .replace(b"\x19\x0c\x16\x00\x16\x00", b"\x19\x0c\x16\x00" + declared, 1))  # RowGroup.num_rows
    assert patched.count(declared) == 2
    return data[:-8 - length] + patched + struct.pack("<I", len(patched)) + b"PAR1"


def _f03_zero_columns_2_40_rows(folder):
    path = folder / "zero-columns.parquet"
    path.write_bytes(zero_column_parquet(1 << 40))
    return path


def _f03_one_column_2_40_rows(folder):
    """F03: one int64 column of 100 values in ~900 bytes, its row group's footer patched to declare 2**40 rows."""
    import io
    import struct

    buf = io.BytesIO()
    pq.write_table(pa.table({"a": pa.array([7] * 100, pa.int64())}), buf, use_dictionary=False,
                   compression="none")
    data = buf.getvalue()
    length = struct.unpack("<I", data[-8:-4])[0]
    footer = data[-8 - length:-8]
    old, new = b"\x16" + _varint(200), b"\x16" + _varint(2 << 40)   # i64 fields: zigzag varints
    assert footer.count(old) == 3      # FileMetaData, RowGroup and ColumnMetaData num_rows / num_values
    patched = footer.replace(old, new)
    path = folder / "forged-rows.parquet"
    path.write_bytes(data[:-8 - length] + patched + struct.pack("<I", len(patched)) + b"PAR1")
    return path


HOSTILE = [
    Hostile("parquet-testing/alltypes_plain.parquet", _copy("alltypes_plain.parquet"), 8, shared=True),
    Hostile("parquet-testing/PARQUET-1481.parquet", _copy("PARQUET-1481.parquet"), 0, "unreadable",
            error="parquet: ", shared=True),
    Hostile("parquet-testing/ARROW-GH-41321.parquet", _copy("ARROW-GH-41321.parquet"), 0, "unreadable",
            error="parquet: column 'int64' (row group 0): ", shared=True),
    Hostile("parquet-testing/ARROW-GH-45185.parquet", _copy("ARROW-GH-45185.parquet"), 0, "unreadable",
            error="parquet: column 'x' (row group 0): ", shared=True),
    Hostile("parquet, a column no check reads damaged in row group 1 of 2", _damaged_column, 400, "unreadable",
            error="parquet: column 'timestamp' (row group 1): "),
    Hostile("parquet, zero bytes", _zero_bytes, 0, "unreadable", error="parquet: "),
    Hostile("parquet, wrong magic", _wrong_magic, 0, "unreadable", error="parquet: "),
    Hostile("parquet, truncated footer", _truncated_footer, 0, "unreadable", error="parquet: "),
    Hostile("parquet, label column of the wrong type (strings)", _wrong_type_column, 4,
            config={"fields": {"label": "label"}, "data": {"num_classes": 3}}),
    Hostile("parquet, schema A (text: string)", _schema_a, 10),
    Hostile("parquet, schema B (text: int64) in the same job", _schema_b, 3),
    Hostile("parquet, NaN/Inf in float64/float16 scalars, ragged, fixed-size and nested lists",
            # missing_value: rows 1 and 2 of `ragged` ([] and null) and row 3 of `nested` ([]) hold no element
            _nonfinite_everywhere, 5, flags={"nonfinite": 5, "missing_value": 3}),
    Hostile("tar, .npy members with NaN/Inf (float16/32/64)", _npy_nonfinite, 4, flags={"nonfinite": 3}),
    Hostile("jsonl, NaN/Infinity numbers", _json_nonfinite, 4, flags={"nonfinite": 3, "missing_value": 1}),  # "v": []
    Hostile("tar, truncated mid-member", _truncated_tar, 11, "unreadable", flags={"unreadable_record": 1},
            error="tar: "),
    Hostile("not a tar (random bytes)", _not_a_tar, 0, "unreadable", error="tar: "),
    Hostile("tar, absolute and '..' member paths", _unsafe_paths, 3, flags={"reader_warning": 2}),
    # The split-off fragment `a.cls` has no text member: its text is missing, hence empty_text too.
    Hostile("tar, non-adjacent keys", _non_adjacent, 3, flags={"reader_warning": 1, "empty_text": 1}),
    Hostile("tar, duplicate member in one key", _duplicate_keys, 2, flags={"reader_warning": 1}),
    Hostile("tar, gzip member that fails to decompress", _bad_gzip_member, 2, flags={"unreadable_record": 1}),
    Hostile("tar, gzip bomb member (300 MiB of zeros)", _gzip_bomb, 2, flags={"unreadable_record": 1}),
    Hostile("tar, 1 GiB single member", _huge_member, 2, flags={"unreadable_record": 1}),
    Hostile("tar, text member not UTF-8", _non_utf8, 2, flags={"unreadable_record": 1}),
    Hostile("tar, pickle member (not unpickled)", _pickle_member, 1, flags={"reader_warning": 1}),
    Hostile("jsonl, broken and non-UTF-8 lines", _broken_jsonl, 4, flags={"unreadable_record": 2}),
    Hostile("csv, a quote never closed", _csv_unterminated_quote, 2, "unreadable",
            error="csv: line 4: unexpected end of data"),
    Hostile("csv, one cell of 200 KB", _csv_huge_cell, 1, "unreadable",
            error="csv: line 3: field larger than field limit (131072)"),
    Hostile("csv, rows with too few or too many cells, a row not UTF-8", _csv_ragged_and_not_utf8, 5,
            flags={"unreadable_record": 3}),
    Hostile("F01 jsonl, one record of another type among 4096", _f01_one_record_of_another_type, 4096,
            flags={"reader_warning": 1, "empty_text": 21, "no_assistant_turn": 31}),
    Hostile("F04 parquet, invalid UTF-8 in a string column and in a conversation", _f04_invalid_utf8_parquet,
            F04_ROWS, flags={"unreadable_record": 3}),
    Hostile("F05 tar, .npy headers with negative dimensions", _f05_npy_negative_shapes, 5,
            flags={"unreadable_record": 3}),
    Hostile("F15 tar, members named __row__ and __key__", _f15_reserved_names, 3, flags={"reader_warning": 2}),
    Hostile("F03 parquet, no column and a row group declaring 2**40 rows", _f03_zero_columns_2_40_rows, 0,
            "unreadable", error="parquet: row group 0 declares 1099511627776 rows but holds no column"),
    Hostile("F03 parquet, a 100-row column whose footer declares 2**40 rows", _f03_one_column_2_40_rows, 0,
            "unreadable", error="parquet: row group 0 declares 1099511627776 rows, more than its "),
]


def audit_one(h: Hostile, folder: Path) -> dict:
    from dataaudit.config import build_config
    from dataaudit.pipelines.audit import run_audit
    from dataaudit.pipelines.engine import EngineOptions

    folder.mkdir(parents=True, exist_ok=True)
    path = h.build(folder)
    report = run_audit([str(path)], build_config(h.config or {}), folder / "out", options=EngineOptions("local"))
    return report


if __name__ == "__main__":
    import sys
    import tempfile

    if not SHARED_DATA.is_dir():
        sys.exit(SHARED_MISSING)
    print("| hostile input | status | error / findings | records in file | samples counted | records lost |")
    print("| --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for i, h in enumerate(HOSTILE):
            report = audit_one(h, Path(tmp) / str(i))
            shard = report["shards"][0]
            found = {k: v["flagged"] for k, v in report["checks"].items() if v["flagged"]}
            said = "; ".join(filter(None, [shard["error"], ", ".join(f"{k}={v}" for k, v in found.items()),
                                           *shard["problems"]]))
            print(f"| {h.name} | {shard['status']} | {said.replace('|', '/') or '-'} | {h.records} | "
                  f"{shard['samples']} | {h.records - shard['samples']} |")
