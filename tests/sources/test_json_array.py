"""JSON-array shards (.json, .json.gz): exact rows, keys, byte offsets in errors, streaming, and the folder walk."""
from __future__ import annotations

import gzip
import json
import os
import threading

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dataaudit.cli.paths import InputPathError, expand_shards
from dataaudit.formats import iter_shard, peek_schema
from dataaudit.sources import ERROR, KEY, LINE, ROW, WARNING, ShardReadError
from dataaudit.sources.json_array import holds_json_array
from dataaudit.sources.json_array import iter_json_array
from tests.paths import shared_file

PROV = [KEY, ROW, LINE, ERROR, WARNING]


def write(tmp_path, name: str, data: bytes):
    p = tmp_path / name
    p.write_bytes(data)
    return p


def read(path, **kw) -> tuple[pa.Table | None, str | None]:
    """Everything read before the shard failed (None: no batch), and the failure's message (None: no failure)."""
    batches, error = [], None
    reader = iter_json_array(str(path), **kw) if "chunk_bytes" in kw else iter_shard(str(path), **kw)
    try:
        for b in reader:
            assert b.schema.names[-5:] == PROV
            batches.append(pa.Table.from_batches([b]))
    except ShardReadError as e:
        error = str(e)
    table = pa.concat_tables(batches, promote_options="permissive") if batches else None
    return table, error


def records_bytes(records: list, indent: int | None = 2) -> bytes:
    return json.dumps(records, ensure_ascii=False, indent=indent).encode()


# --- records, keys, rows -------------------------------------------------------------------------------------

def test_array_of_records_keys_rows_and_types(tmp_path):
    recs = [{"instruction": "翻译", "input": "", "output": "translate", "n": 1},
            {"instruction": "b", "input": "x", "output": "y", "n": 2, "extra": 0.5},
            {"instruction": "c", "input": "", "output": "z", "n": 3}]
    t, err = read(write(tmp_path, "a.json", records_bytes(recs)), batch_rows=2)
    assert err is None
    assert t.column(KEY).to_pylist() == ["0", "1", "2"] and t.column(ROW).to_pylist() == [0, 1, 2]
    assert t.column("instruction").to_pylist() == ["翻译", "b", "c"]
    assert t.schema.field("n").type == pa.int64() and t.column("n").to_pylist() == [1, 2, 3]
    assert t.column("extra").to_pylist() == [None, 0.5, None]
    assert t.column(ERROR).null_count == 3 and t.column(WARNING).null_count == 3


def test_compact_and_odd_whitespace(tmp_path):
    t, err = read(write(tmp_path, "a.json", b'\r\n\t[{"a":1},{"a":2}\n,\n\t{"a":3}  ]\n\n'))
    assert err is None and t.column("a").to_pylist() == [1, 2, 3]


def test_empty_array_has_no_rows(tmp_path):
    t, err = read(write(tmp_path, "a.json", b" [ \n ] \n"))
    assert (t, err) == (None, None)


def test_projection(tmp_path):
    p = write(tmp_path, "a.json", b'[{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]')
    t, err = read(p, columns=["b", "nope"])
    assert err is None and t.schema.names == ["b"] + PROV and t.column("b").to_pylist() == ["x", "y"]


def test_dispatch_and_peek_schema(tmp_path):
    p = write(tmp_path, "a.JSON", b'[{"messages": [{"role": "user", "content": "hi"}]}]')
    schema = peek_schema(str(p))
    assert schema.field("messages").type == pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
    assert peek_schema(str(write(tmp_path, "b.json", b'[{"a": 1}, {"a": '))).names == ["a"] + PROV
    assert peek_schema(str(write(tmp_path, "c.json", b'"scalar"'))) is None


# --- errors name the byte offset ----------------------------------------------------------------------------

def test_syntax_error_in_chinese_record_names_its_byte_offset(tmp_path):
    good = [{"conversations": [{"from": "human", "value": "你好，世界"}, {"from": "gpt", "value": "您好！"}]}] * 3
    head = records_bytes(good)[:-2]      # without "\n]"
    bad = ',\n  {"conversations": [{"from": "human", "value": "中文"} {"from": "gpt"}]}\n]'.encode()
    data = head + bad
    expected = len(head) + bad.index(b'} {') + 2   # where the ',' should be, in bytes (not characters)
    assert expected != len((head + bad).decode()[:expected])  # the Chinese text makes bytes and characters differ
    t, err = read(write(tmp_path, "a.json", data), batch_rows=2)
    line = data[:expected].count(b"\n") + 1
    assert err == f"json: Expecting ',' delimiter at line {line}, byte {expected} (row 3)" and line == 38
    assert t.num_rows == 3 and t.column(ERROR).null_count == 3   # records before it stay valid
    assert t.column("conversations").to_pylist()[2] == good[2]["conversations"]


def test_missing_comma_between_records(tmp_path):
    data = '[{"t": "一"}\n {"t": "二"}]'.encode()
    t, err = read(write(tmp_path, "a.json", data))
    expected = data.index(b" {") + 1
    assert err == f"json: Expecting ',' delimiter at line 2, byte {expected} (after row 0)"
    assert t.column("t").to_pylist() == ["一"]


def test_trailing_comma_is_an_error(tmp_path):
    data = b'[{"a": 1},\n]'
    t, err = read(write(tmp_path, "a.json", data))
    assert err == f"json: Expecting value at line 2, byte {data.index(b']')} (row 1)" and t.num_rows == 1


def test_non_object_elements_are_error_rows(tmp_path):
    data = '[{"a": "é"}, "text", 3, [1], null, {"a": "b"}]'.encode()
    t, err = read(write(tmp_path, "a.json", data))
    assert err is None
    assert t.column(KEY).to_pylist() == ["0", "1", "2", "3", "4", "5"]
    text_at = data.index(b'"text"')
    assert t.column(ERROR).to_pylist() == [
        None,
        f"row 1 (line 1) at byte {text_at}: not a JSON object (str)",
        f"row 2 (line 1) at byte {data.index(b'3')}: not a JSON object (int)",
        f"row 3 (line 1) at byte {data.index(b'[1]')}: not a JSON object (list)",
        f"row 4 (line 1) at byte {data.index(b'null')}: not a JSON object (NoneType)",
        None]
    assert t.column("a").to_pylist() == ["é", None, None, None, None, "b"]


def test_invalid_utf8_is_an_error_row_and_reading_goes_on(tmp_path):
    data = '[{"a": "中"}, {"a": "caf'.encode() + b"\xe9" + b'"}, {"a": "ok"}]'
    t, err = read(write(tmp_path, "a.json", data))
    assert err is None
    start, bad = data.index(b'{"a": "caf'), data.index(b"\xe9")
    assert t.column(ERROR).to_pylist() == [None, f"row 1 (line 1) at byte {start}: invalid UTF-8 at byte {bad}", None]
    assert t.column("a").to_pylist() == ["中", None, "ok"]


def test_truncated_file_keeps_records_read(tmp_path):
    full = records_bytes([{"a": "é" * 3, "i": i} for i in range(5)], indent=None)
    t, err = read(write(tmp_path, "a.json", full[:-1]), batch_rows=2)   # no closing ']'
    assert err == f"json: truncated at byte {len(full) - 1} (no closing ']')"
    assert t.column("i").to_pylist() == [0, 1, 2, 3, 4]
    cut = full.index(b'{"a"', full.index(b'"i": 2'))      # record 3 starts here; cut inside it
    t, err = read(write(tmp_path, "b.json", full[:cut + 8]))
    assert err == f"json: truncated at byte {cut + 8} (no closing ']'): row 3 (line 1) at byte {cut} is incomplete"
    assert t.column("i").to_pylist() == [0, 1, 2]


def test_cut_inside_a_string_is_truncated(tmp_path):
    data = b'[{"a": 1}, {"a": "unterminated'
    t, err = read(write(tmp_path, "a.json", data))
    assert err == f"json: truncated at byte {len(data)} (no closing ']'): row 1 (line 1) at byte 11 is incomplete"
    assert t.num_rows == 1


def test_extra_data_after_the_array(tmp_path):
    t, err = read(write(tmp_path, "a.json", b'[{"a": 1}]\n[{"a": 2}]'))
    assert err == "json: extra data at line 2, byte 11 after the records" and t.column("a").to_pylist() == [1]


@pytest.mark.parametrize("data,kind", [(b'"just text"', "string"), (b" 42 ", "number"), (b"1.5", "number"),
                                       (b"true", "boolean"), (b"null", "null")])
def test_scalar_top_level_value(tmp_path, data, kind):
    t, err = read(write(tmp_path, "a.json", data))
    assert (t, err) == (None, f"json: top-level value is a {kind}, expected an array of records")


@pytest.mark.parametrize("data,message", [
    (b"", "json: empty file, expected an array of records"),
    (b" \n ", "json: empty file, expected an array of records"),
    (b"hello", "json: Expecting value at line 1, byte 0 (row 0)"),
])
def test_empty_or_not_json(tmp_path, data, message):
    assert read(write(tmp_path, "a.json", data)) == (None, message)


def test_record_over_max_record_bytes(tmp_path):
    data = b'[{"a": "1"}, {"a": "' + b"x" * 5000 + b'"}, {"a": "3"}]'
    t, err = read(write(tmp_path, "a.json", data), max_member_bytes=1000)   # iter_shard passes the limit on
    assert err == "json: row 1 (line 1) at byte 13 is larger than 1000 bytes (max_record_bytes)"
    assert t.column("a").to_pylist() == ["1"]
    for chunk in (64, 1 << 20):   # refused whether the window had to grow to hold it or not
        t, err = read(write(tmp_path, "b.json", data), max_record_bytes=1000, chunk_bytes=chunk)
        assert err == "json: row 1 (line 1) at byte 13 is larger than 1000 bytes (max_record_bytes)"
    t, err = read(write(tmp_path, "b.json", data), max_record_bytes=6000, chunk_bytes=64)
    assert err is None and t.column("a").to_pylist() == ["1", "x" * 5000, "3"]


def test_missing_file(tmp_path):
    with pytest.raises(ShardReadError, match=r"^json: .*No such file"):
        list(iter_shard(str(tmp_path / "missing.json")))


# --- top-level objects, BOM, gzip ----------------------------------------------------------------------------

def test_top_level_object_is_one_record(tmp_path):
    t, err = read(write(tmp_path, "a.json", b'{"data": [1, 2], "tags": [], "version": "1"}\n'))
    assert err is None and t.num_rows == 1 and t.column(KEY).to_pylist() == ["0"]
    assert t.column("data").to_pylist() == [[1, 2]] and t.column("version").to_pylist() == ["1"]


WRAPPED = {"version": "1.0", "data": [{"q": "a"}, {"q": "b", "n": [1, 2]}, {"q": "c"}], "source": {"site": "x"}}


@pytest.mark.parametrize("gz", [False, True])
def test_a_wrapper_object_is_read_as_the_records_of_its_one_array(tmp_path, gz):
    """Issue 36: {"version": ..., "data": [...]} (one object alone, exactly one member a non-empty array of
    objects) is read as that array's records, with their lines and byte spans (a writer keeps the wrapper)."""
    from dataaudit.sources.json_array import element_spans, wrapped_member

    text = ("\ufeff" + json.dumps(WRAPPED, indent=1)).encode()
    path = write(tmp_path, "w.json.gz" if gz else "w.json", gzip.compress(text) if gz else text)
    t, err = read(path, batch_rows=2)
    assert err is None and t.column("q").to_pylist() == ["a", "b", "c"]
    assert t.column(KEY).to_pylist() == ["0", "1", "2"] and t.column(ROW).to_pylist() == [0, 1, 2]
    lines = text.decode().splitlines()
    assert [lines[n - 1].strip() for n in t.column(LINE).to_pylist()] == ["{"] * 3
    assert t.column(LINE).to_pylist() == [4, 7, 14]
    assert t.column(WARNING).to_pylist() == ["UTF-8 byte order mark ignored", None, None]
    assert wrapped_member(str(path)) == "data"
    with open(path, "rb") as f:
        spans = element_spans(gzip.GzipFile(fileobj=f) if gz else f)
    assert [json.loads(text[s:s + n]) for s, n, _ in spans.tolist()] == WRAPPED["data"]


@pytest.mark.parametrize("data", [
    b'{"a": [{"q": 1}], "b": [{"q": 2}]}',                 # two arrays of objects: no one array holds the records
    b'{"data": [{"q": 1}, 2]}',                             # an array not all objects
    b'{"data": []}',                                        # empty
    b'{"data": [{"q": 1}]}\n{"data": [{"q": 2}]}\n',        # objects one after another (JSON Lines named .json)
])
def test_objects_that_are_no_wrapper_stay_records(tmp_path, data):
    from dataaudit.sources.json_array import wrapped_member

    path = write(tmp_path, "a.json", data)
    t, err = read(path)
    assert err is None and t.num_rows == data.count(b"\n") + (not data.endswith(b"\n"))
    assert wrapped_member(str(path)) is None


def test_a_broken_wrapper_fails_as_the_one_record_it_would_be(tmp_path):
    t, err = read(write(tmp_path, "a.json", b'{"data": [{"q": 1}, {"q": 2]}'))
    assert t is None and err.startswith("json: ")


def test_json_lines_named_json_are_records(tmp_path):
    data = b'{"a": 1}\n{"a": 2}\n\n[3]\n{"a": 4}\n'
    t, err = read(write(tmp_path, "a.json", data))
    assert err is None and t.column(KEY).to_pylist() == ["0", "1", "2", "3"]
    assert t.column("a").to_pylist() == [1, 2, None, 4]
    assert t.column(ERROR).to_pylist() == [None, None, f"row 2 (line 4) at byte {data.index(b'[3]')}: not a "
                                                       "JSON object (list)", None]
    assert t.column(LINE).to_pylist() == [1, 2, 4, 5]   # the blank line 3 is no record


def test_bom_is_ignored_with_a_warning_and_offsets_count_it(tmp_path):
    data = b"\xef\xbb\xbf" + '[{"a": "文"}, {"a": 2 "b": 1}]'.encode()
    t, err = read(write(tmp_path, "a.json", data))
    assert t.column(WARNING).to_pylist() == ["UTF-8 byte order mark ignored"]
    assert t.column("a").to_pylist() == ["文"]
    expected = data.index(b' "b"') + 1
    assert err == f"json: Expecting ',' delimiter at line 1, byte {expected} (row 1)"


def test_gzip_by_magic_and_by_name(tmp_path):
    recs = [{"text": f"第{i}条", "i": i} for i in range(3000)]
    raw = records_bytes(recs)
    for name in ("a.json.gz", "b.json"):   # a gzip named .json is still read: the magic decides
        t, err = read(write(tmp_path, name, gzip.compress(raw)), batch_rows=1000)
        assert err is None and t.column("i").to_pylist() == list(range(3000))
        assert t.column("text").to_pylist()[2999] == "第2999条" and t.column(ROW).to_pylist() == list(range(3000))


def test_truncated_gzip_keeps_records_read(tmp_path):
    raw = records_bytes([{"i": i, "pad": "x" * 50} for i in range(3000)])
    t, err = read(write(tmp_path, "a.json.gz", gzip.compress(raw)[:-2000]), batch_rows=500)
    assert err.startswith("json: Compressed file ended before the end-of-stream marker was reached (after byte ")
    assert 0 < t.num_rows < 3000 and t.column("i").to_pylist() == list(range(t.num_rows))
    # only the gzip trailer missing: every record is there, and the shard still fails
    t, err = read(write(tmp_path, "b.json.gz", gzip.compress(raw)[:-4]))
    assert t.num_rows == 3000 and err.startswith("json: Compressed file ended")


def test_corrupt_gzip_header(tmp_path):
    t, err = read(write(tmp_path, "a.json.gz", b"\x1f\x8b" + b"\x00" * 30))
    assert t is None and err.startswith("json: ")


# --- streaming ------------------------------------------------------------------------------------------------

def test_small_chunks_give_the_same_records_and_offsets(tmp_path):
    recs = [{"id": 10 ** 12 + i, "f": i / 3, "text": "中文混合 text " * (i % 7), "tags": ["一", "b"][: i % 3],
             "emoji": "🙂" * (i % 4)} for i in range(200)]
    data = records_bytes(recs, indent=1)
    p = write(tmp_path, "a.json", data)
    want, err = read(p)
    assert err is None and want.num_rows == 200
    for chunk in (1, 2, 3, 7, 64):
        t, err = read(p, chunk_bytes=chunk, batch_rows=37)
        assert err is None and t.equals(want)
    assert t.column("id").to_pylist() == [10 ** 12 + i for i in range(200)]
    assert t.column("text").to_pylist() == [r["text"] for r in recs]
    # a syntax error far into the file: the same byte offset whatever the chunk size
    broken = data[:-2] + b" x]"     # data ends with "}\n]"
    offset = len(broken) - 2
    for chunk in (1, 5, 4096):
        t, err = read(write(tmp_path, "b.json", broken), chunk_bytes=chunk)
        line = broken.count(b"\n") + 1
        assert err == f"json: Expecting ',' delimiter at line {line}, byte {offset} (after row 199)"
        assert t.num_rows == 200


def test_numbers_split_across_chunks(tmp_path):
    data = b'[{"a": 1}, 1234567890123, -0.5e-10, {"a": 2}]'
    t, err = read(write(tmp_path, "a.json", data), chunk_bytes=2)
    assert err is None and t.column("a").to_pylist() == [1, None, None, 2]
    assert t.column(ERROR).to_pylist()[1:3] == ["row 1 (line 1) at byte 11: not a JSON object (int)",
                                                "row 2 (line 1) at byte 26: not a JSON object (float)"]


def test_streams_without_reading_the_whole_file(tmp_path, monkeypatch):
    """A FIFO holds back the second half of the file until the first batch has come out. (dataaudit.io opens
    regular files only, issue 38: the reader is handed the FIFO opened here.)"""
    from dataaudit.sources import record_stream

    fifo = tmp_path / "s.json"
    os.mkfifo(fifo)
    monkeypatch.setattr(record_stream, "open_input", lambda path, *a, **k: open(path, "rb"))
    first = b"[" + b",".join(b'{"i": %d}' % i for i in range(50)) + b","
    second = b",".join(b'{"i": %d}' % i for i in range(50, 100)) + b"]"
    released, waited_out = threading.Event(), []

    def writer():
        with open(fifo, "wb") as f:
            f.write(first)
            f.flush()
            if not released.wait(20):
                waited_out.append(True)
            f.write(second)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        batches = iter_json_array(str(fifo), batch_rows=10, chunk_bytes=64)
        got = [next(batches)]
        released.set()
        got += list(batches)
    finally:
        released.set()
        thread.join()
    assert not waited_out
    assert pa.Table.from_batches(got).column("i").to_pylist() == list(range(100))


def test_one_record_much_bigger_than_the_chunk(tmp_path):
    big = "长" * 100_000
    data = json.dumps([{"a": "1"}, {"a": big, "b": [big]}, {"a": "end"}], ensure_ascii=False).encode()
    t, err = read(write(tmp_path, "a.json", data), chunk_bytes=100)
    assert err is None and t.column("a").to_pylist() == ["1", big, "end"]
    assert t.column("b").to_pylist() == [None, [big], None]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.text(max_size=20), max_size=12), chunk=st.integers(1, 40),
       indent=st.sampled_from([None, 0, 2]), ascii_=st.booleans())
def test_fuzz_any_text_any_chunking(tmp_path, texts, chunk, indent, ascii_):
    data = json.dumps([{"t": s} for s in texts], ensure_ascii=ascii_, indent=indent).encode()
    t, err = read(write(tmp_path, "f.json", data), chunk_bytes=chunk)
    assert err is None
    assert (t.column("t").to_pylist() if texts else []) == texts


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(0, 400), patches=st.lists(st.tuples(st.integers(0, 400), st.binary(min_size=1, max_size=4)),
                                                 max_size=3), chunk=st.integers(1, 64))
def test_fuzz_corrupted_arrays_end_in_rows_or_shard_read_error(tmp_path, cut, patches, chunk):
    data = bytearray('[{"a": "中文", "n": [1, 2.5]}, {"m": [{"role": "u", "content": "x"}]}, "s", {"z": null}]'.encode())
    for pos, b in patches:
        pos %= len(data)
        data[pos:pos + len(b)] = b
    p = write(tmp_path, "c.json", bytes(data[:cut]))
    rows = []
    try:
        for b in iter_json_array(str(p), batch_rows=2, chunk_bytes=chunk):
            rows += b.column(ROW).to_pylist()
    except ShardReadError as e:
        assert "\n" not in str(e) and str(e).startswith("json: ")
    assert rows == list(range(len(rows)))


# --- real data, folder walk -----------------------------------------------------------------------------------

def test_real_glaive_toolcall_zh_demo():
    t, err = read(shared_file("chat/glaive_toolcall_zh_demo.json"))
    assert err is None and t.num_rows == 300 and t.column(ERROR).null_count == 300
    assert t.column(KEY).to_pylist() == [str(i) for i in range(300)]
    assert t.schema.field("conversations").type == pa.list_(pa.struct([("from", pa.string()), ("value", pa.string())]))
    assert t.schema.field("tools").type == pa.string()
    first = t.column("conversations")[0].as_py()
    assert first[0]["from"] == "human" and first[0]["value"].startswith("我需要为John Doe生成一张发票")


def test_holds_json_array_sniffs_the_first_value(tmp_path):
    assert holds_json_array(write(tmp_path, "a.json", b"\xef\xbb\xbf \n [{}]"))
    assert holds_json_array(write(tmp_path, "b.json.gz", gzip.compress(b"\n[1]")))
    assert not holds_json_array(write(tmp_path, "c.json", b'{"shards": []}'))
    assert not holds_json_array(write(tmp_path, "d.json", b""))
    assert holds_json_array(write(tmp_path, "e.json.gz", b"\x1f\x8bbroken"))   # unreadable: the audit reports it


def test_folder_walk_takes_json_arrays_not_metadata_objects(tmp_path):
    (tmp_path / "sub").mkdir()
    arr = write(tmp_path, "sub/sft.json", b'[{"a": 1}]')
    write(tmp_path, "dataset_info.json", b'{"sft": {"file_name": "sft.json"}}')
    jl = write(tmp_path, "b.jsonl", b'{"a": 1}\n')
    assert expand_shards([str(tmp_path)]) == [str(jl), str(arr)]
    with pytest.raises(InputPathError, match="dataset_info.json: LLaMA-Factory's dataset registry, not a shard"):
        expand_shards([str(tmp_path / "dataset_info.json")])
    meta = write(tmp_path, "meta.json", b'{"sft": {"file_name": "sft.json"}}')
    assert expand_shards([str(meta)]) == [str(meta)]    # another object named explicitly: read (one record)
    only_meta = tmp_path / "meta"
    only_meta.mkdir()
    write(only_meta, "manifest.json", b"{}")
    with pytest.raises(InputPathError, match="holds no Parquet, WebDataset, JSONL, JSON-array, CSV, TSV, plain text or Arrow IPC shard"):
        expand_shards([str(only_meta)])
