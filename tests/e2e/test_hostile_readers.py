"""Issue 38, the readers' half: hostile input may cost a record, never the job.

Each input is built small in tmp_path (compressed or sparse where it stands for gigabytes) and read by the command
line in a bounded child (tests.hostile_run): the job finishes with a report, no traceback, peak RSS < 2 GB, < 60 s,
the records before (and after, where the format allows) counted. The cheap inputs share one audit run (one child:
its peak covers them all) next to a good shard, whose findings must be those of an audit of it alone. The inputs
that fit the shape of tests/hostile_inputs.py's table (F01, F03, F04, F05, F15) are there too.
"""
from __future__ import annotations

import gzip
import json
import tarfile

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.hostile_inputs import (F04_ROWS, _f01_one_record_of_another_type, _f03_zero_columns_2_40_rows,
                                  _f04_invalid_utf8_parquet, _f05_npy_negative_shapes, _f15_reserved_names)
from tests.hostile_run import run_cli

MiB, GiB = 1 << 20, 1 << 30
FIRST = "A caption before the hostile member."


def _member(name: str, data: bytes) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info.tobuf(format=tarfile.GNU_FORMAT) + data + b"\0" * (-len(data) % 512)


def _header(name: str, size: int, kind: bytes) -> bytes:
    """A header block only (the data that should follow is up to the caller)."""
    info = tarfile.TarInfo(name)
    info.size, info.type = size, kind
    return info.tobuf(format=tarfile.GNU_FORMAT)


def _end(*members: tuple[str, bytes]) -> bytes:
    return b"".join(_member(n, d) for n, d in members) + b"\0" * 1024


def _gz(data: bytes) -> bytes:
    return gzip.compress(data, 6, mtime=0)


def _zeros_gz(n: int, piece: int = 64 * MiB) -> bytes:
    """n bytes of zeros as gzip members (a file of several members is one gzip stream): compressed once."""
    assert n % piece == 0
    return _gz(b"\0" * piece) * (n // piece)


def _values_line(n: int) -> bytes:
    return b'{"x": [' + b",".join([b"{}"] * n) + b"]}"


# --- the inputs ------------------------------------------------------------------------------------------------

def f02_jsonl_gz(folder):
    """F02: the issue's input, 20M empty objects in one record (~60 KB gzipped), between two good records."""
    path = folder / "f02-values.jsonl.gz"
    path.write_bytes(_gz(b'{"text": "A record before."}\n' + _values_line(20_000_000) + b"\n"
                         b'{"text": "A record after."}\n'))
    return path


def f02_json_gz(folder):
    path = folder / "f02-values.json.gz"
    path.write_bytes(_gz(b'[{"text": "A record before."},\n' + _values_line(3_000_000) + b',\n'
                         b'{"text": "A record after."}]\n'))
    return path


def f06_long_name_gz(folder):
    """F06: a GNU long name header declaring 1 GiB (of zeros, gzipped to ~1 MB) after a good sample."""
    path = folder / "f06-long-name.tar.gz"
    path.write_bytes(_gz(_member("a.txt", FIRST.encode()) + _header("././@LongLink", GiB, tarfile.GNUTYPE_LONGNAME))
                     + _zeros_gz(GiB) + _gz(_end(("b.txt", b"after"))))
    return path


def f06_long_name_8k(folder):
    """F06: 8 KB on disk, a long name header declaring 2**40 bytes."""
    path = folder / "f06-long-name-8k.tar"
    path.write_bytes((_member("a.txt", FIRST.encode()) + _header("././@LongLink", 1 << 40, tarfile.GNUTYPE_LONGNAME)
                      + _end(("b.txt", b"after"))).ljust(8192, b"\0"))
    return path


def _pax(data: bytes) -> bytes:
    return _header("././@PaxHeader", len(data), tarfile.XHDTYPE) + data + b"\0" * (-len(data) % 512)


def f08_pax(name: str, data: bytes):
    def build(folder):
        path = folder / name
        path.write_bytes(_member("a.txt", FIRST.encode()) + _pax(data) + _end(("b.txt", b"after")))
        return path
    return build


f08_pax_256k = f08_pax("f08-pax-256k.tar", b"1" * (256 << 10))          # the issue's: refused by its size
f08_pax_digits = f08_pax("f08-pax-digits.tar", b"1" * (60 << 10))      # under the size limit: by its digits
f08_pax_keyword = f08_pax("f08-pax-keyword.tar", b"9 " + b"a" * (60 << 10) + b"=x\n")   # '=' past the record


def good_shard(folder):
    path = folder / "good.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in
                            ["A calm sentence about the sea.", "", "Another line about boats and gulls."]))
    return path


SHARED = {   # the cheap inputs, audited together: name -> (builder, status, samples, error start, flags)
    "f02_jsonl": (f02_jsonl_gz, "ok", 3, None, {"unreadable_record": 1}),
    "f02_json": (f02_json_gz, "ok", 3, None, {"unreadable_record": 1}),
    "f03": (_f03_zero_columns_2_40_rows, "unreadable", 0,
            "parquet: row group 0 declares 1099511627776 rows but holds no column", {}),
    "f06_gz": (f06_long_name_gz, "unreadable", 1,
               "tar: GNU long name header at byte 1024 declares 1073741824 bytes, more than 65536 (not read)",
               {"unreadable_record": 1}),
    "f06_8k": (f06_long_name_8k, "unreadable", 1,
               "tar: GNU long name header at byte 1024 declares 1099511627776 bytes, more than 65536 (not read)",
               {"unreadable_record": 1}),
    "f08_256k": (f08_pax_256k, "unreadable", 1,
                 "tar: pax header at byte 1024 declares 262144 bytes, more than 65536 (not read)",
                 {"unreadable_record": 1}),
    "f08_digits": (f08_pax_digits, "unreadable", 1,
                   "tar: pax header at byte 1024: a run of more than 64 digits (not parsed)", {"unreadable_record": 1}),
    "f08_keyword": (f08_pax_keyword, "unreadable", 1,
                    "tar: pax header at byte 1024: malformed record at byte 0 (not parsed)", {"unreadable_record": 1}),
    "f05": (_f05_npy_negative_shapes, "ok", 5, None, {"unreadable_record": 3}),
    "f15": (_f15_reserved_names, "ok", 3, None, {"reader_warning": 2}),
}


def _flags(out, shard: str) -> list[dict]:
    rows = pq.read_table(out / "flags.parquet").to_pylist()
    return sorted(({k: v for k, v in r.items() if k != "shard"} for r in rows if r["shard"] == shard),
                  key=lambda r: (r["row"], r["check"], str(r["field"])))


@pytest.fixture(scope="module")
def together(tmp_path_factory):
    """One audit of every cheap hostile input next to a good shard, and one of the good shard alone."""
    folder = tmp_path_factory.mktemp("hostile")
    paths = {name: spec[0](folder) for name, spec in SHARED.items()}
    good = good_shard(folder)
    out, alone = folder / "out", folder / "alone"
    outcome = run_cli("audit", good, *paths.values(), "--out", out)
    by_path = {s["path"]: s for s in outcome.report(out)["shards"]}
    return {"outcome": outcome, "out": out, "paths": paths, "shards": by_path, "good": good,
            "alone": (run_cli("audit", good, "--out", alone), alone)}


def _check(together, name: str) -> list[dict]:
    builder, status, samples, error, flags = SHARED[name]
    path = str(together["paths"][name])
    shard = together["shards"][path]
    assert (shard["status"], shard["samples"]) == (status, samples), shard
    if error is None:
        assert shard["error"] is None
    else:
        assert shard["error"] == error
    found = {}
    for r in _flags(together["out"], path):
        found[r["check"]] = found.get(r["check"], 0) + 1
    assert found == flags
    return _flags(together["out"], path)


def test_the_job_finishes_bounded_and_good_shards_are_unchanged(together):
    outcome = together["outcome"]
    outcome.assert_bounded()
    assert outcome.rc == 1          # findings and unreadable shards; never 2, never a crash
    alone, out = together["alone"]
    alone.assert_bounded()
    good = str(together["good"])
    assert _flags(together["out"], good) == _flags(out, good)
    mine = together["shards"][good]
    theirs = {s["path"]: s for s in alone.report(out)["shards"]}[good]
    assert {k: v for k, v in mine.items() if k != "fingerprint"} == {k: v for k, v in theirs.items()
                                                                    if k != "fingerprint"}


def test_f02_jsonl_record_past_the_json_values_budget_is_flagged(together):
    flagged = _check(together, "f02_jsonl")
    assert [(r["row"], r["detail"]) for r in flagged] == [
        (1, "row 1 (line 2): 40000001 JSON containers and separators, more than 1048576 (the budget of one record): "
            "not parsed")]


def test_f02_json_array_element_past_the_budget_is_flagged_and_the_next_read(together):
    flagged = _check(together, "f02_json")
    assert [(r["row"], r["detail"]) for r in flagged] == [
        (1, "row 1 (line 2) at byte 31: 6000001 JSON containers and separators, more than 1048576 (the budget of one "
            "record): not parsed")]


def test_f03_footer_declaring_rows_no_column_holds(together):
    _check(together, "f03")


def test_f05_npy_negative_dimensions_flagged_per_record(together):
    flagged = _check(together, "f05")
    assert [(r["key"], r["detail"]) for r in flagged] == [
        ("b", "member 'b.x.npy': invalid .npy header: shape (-2, -3) has a negative dimension"),
        ("c", "member 'c.x.npy': invalid .npy header: shape (-1,) has a negative dimension"),
        ("d", "member 'd.x.npy': invalid .npy header: shape (2, -3) has a negative dimension")]


def test_f06_long_name_header_refused_before_it_is_read(together):
    for name in ("f06_gz", "f06_8k"):
        flagged = _check(together, name)
        assert [(r["key"], r["detail"].split(":")[0]) for r in flagged] == [("a", "truncated")]


def test_f08_pax_headers_refused_before_tarfile_parses_them(together):
    for name in ("f08_256k", "f08_digits", "f08_keyword"):
        _check(together, name)


def test_f15_reserved_member_names_dropped_per_record(together):
    flagged = _check(together, "f15")
    assert [(r["key"], r["detail"]) for r in flagged] == [
        ("a", "field '__row__' is a reserved name (dropped)"), ("b", "field '__key__' is a reserved name (dropped)")]


def test_f01_a_record_of_another_type_is_flagged_the_batch_checked_as_its_own(tmp_path):
    from dataaudit.formats import iter_shard

    (batch,) = list(iter_shard(str(_f01_one_record_of_another_type(tmp_path))))
    assert batch.schema.field("text").type == pa.string()
    assert pa.types.is_list(batch.schema.field("messages").type)      # conversations stay conversations
    texts = batch.column("text").to_pylist()
    assert texts[0] is None and texts[2] == "" and texts.count("") == 20      # "" stays empty, not '""'
    warnings = batch.column("__warning__").to_pylist()
    assert warnings[0] == (
        "field_type: column 'text' is list or object here, text in 4095 of the batch's 4096 records (value not read); "
        "field_type: column 'messages' is text here, list or object in 4095 of the batch's 4096 records (value not "
        "read)")
    assert warnings[1:] == [None] * 4095


def test_f04_every_command_reads_invalid_utf8_as_unreadable_records(tmp_path):
    shard = _f04_invalid_utf8_parquet(tmp_path)
    dedup = run_cli("dedup", shard, "--out", tmp_path / "dedup")
    dedup.assert_bounded()
    summary = json.loads((tmp_path / "dedup" / "dedup.json").read_text())
    assert (dedup.rc, summary["documents"], summary["unreadable_records"], summary["empty_documents"]) == \
        (0, F04_ROWS, 3, 0)
    bench = tmp_path / "bench.jsonl"
    bench.write_text(json.dumps({"question": "What is seven times six?", "answer": "42"}) + "\n")
    contamination = run_cli("contamination", "--train", shard, "--benchmark", f"b={bench}:question",
                            "--out", tmp_path / "contamination")
    contamination.assert_bounded()
    totals = json.loads((tmp_path / "contamination" / "contamination.json").read_text())["totals"]
    assert (contamination.rc, totals["train_records"], totals["unreadable_records"]) == (0, F04_ROWS, 3)


def test_f04_audit_flags_the_rows_wherever_they_are(tmp_path):
    from dataaudit.formats import iter_shard

    batches = list(iter_shard(str(_f04_invalid_utf8_parquet(tmp_path)), batch_rows=4096))
    errors = {r: e for b in batches for r, e in zip(b.column("__row__").to_pylist(), b.column("__error__").to_pylist())
              if e is not None}
    assert errors == {3: "column 'text': invalid UTF-8", 5: "column 'messages': invalid UTF-8",
                      9000: "column 'text': invalid UTF-8"}
    texts = {r: t for b in batches for r, t in zip(b.column("__row__").to_pylist(), b.column("text").to_pylist())}
    assert texts[3] is None and texts[9000] is None and texts[5] is None and texts[4].startswith("Row 4 ")


def test_f02_benchmark_loader_refuses_the_record_in_one_line(tmp_path):
    bench = f02_json_gz(tmp_path)
    train = good_shard(tmp_path)
    outcome = run_cli("contamination", "--train", train, "--benchmark", f"b={bench}:text", "--out", tmp_path / "c")
    outcome.assert_bounded()
    assert outcome.rc == 2
    assert outcome.stderr.strip().splitlines()[-1] == (
        f"Error: {bench}: row 1 (line 2) at byte 31: 6000001 JSON containers and separators, more than 1048576 (the "
        "budget of one record): not parsed")


def test_f03_tiny_row_groups_are_read_in_full_batches(tmp_path):
    from dataaudit.formats import iter_shard

    path = tmp_path / "tiny-row-groups.parquet"
    pq.write_table(pa.table({"text": [f"Row {i}, a short line about boats." for i in range(30_000)]}), path,
                   row_group_size=1)
    sizes = [b.num_rows for b in iter_shard(str(path))]
    assert sizes == [4096] * 7 + [30_000 - 7 * 4096]
    outcome = run_cli("audit", path, "--out", tmp_path / "out")
    outcome.assert_bounded(seconds=15)      # was one batch per row group: ~1.5 ms each for every check
    assert (outcome.rc, outcome.report(tmp_path / "out")["totals"]["samples"]) == (0, 30_000)


def test_f07_a_sample_past_its_decoded_bytes_budget_is_flagged_and_the_shard_goes_on(tmp_path):
    piece = _gz(b"a" * (256 * MiB - 4096))      # ten of these: 2.5 GiB in one sample overflowed Arrow's offsets
    path = tmp_path / "f07-ten-members.tar"
    path.write_bytes(_member("a.txt", FIRST.encode()) + b"".join(_member(f"b.p{i}.txt.gz", piece) for i in range(10))
                     + _end(("c.txt", b"A caption after the big sample.")))
    outcome = run_cli("audit", path, "--out", tmp_path / "out")
    outcome.assert_bounded()
    report = outcome.report(tmp_path / "out")
    assert (outcome.rc, report["shards"][0]["status"], report["totals"]["samples"]) == (1, "ok", 3)
    left = 4096      # after b.p0: the other members are not even read
    budget = "left of the sample's budget, max_member_bytes 268435456 for all its members"
    assert [(r["key"], r["detail"]) for r in _flags(tmp_path / "out", str(path))
            if r["check"] == "unreadable_record"] == [
        ("b", "; ".join(f"member 'b.p{i}.txt.gz': {len(piece)} bytes exceeds the {left} {budget} (not read)"
                        for i in range(1, 10)))]


def test_slow_gzip_zeros_are_skipped_fast(tmp_path):
    """8 GiB of zeros in an 8 MB .tar.gz took 174 s to skip (tarfile's 10 KiB reads, ~22 s a GiB); here 1 GiB must
    take < 12 s."""
    path = tmp_path / "zeros.tar.gz"
    path.write_bytes(_gz(_member("a.txt", FIRST.encode()) + _header("big.txt", GiB, tarfile.REGTYPE))
                     + _zeros_gz(GiB) + _gz(_end(("c.txt", b"A caption after the zeros."))))
    outcome = run_cli("audit", path, "--out", tmp_path / "out")
    outcome.assert_bounded(seconds=12)
    report = outcome.report(tmp_path / "out")
    assert (outcome.rc, report["shards"][0]["status"], report["totals"]["samples"]) == (1, "ok", 3)
    assert [r["detail"] for r in _flags(tmp_path / "out", str(path))] == [
        f"member 'big.txt': {GiB} bytes exceeds max_member_bytes 268435456 (not read)"]


def test_pax_headers_of_real_archives_still_read(tmp_path):
    """Long names, non-ASCII names and extended attributes (pax records) are read as before."""
    from dataaudit.formats import iter_shard

    path = tmp_path / "pax.tar"
    long = "d/" + "x" * 300
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tf:
        for name, text in [(f"{long}.txt", b"long"), ("caf\u00e9/\u6587.txt", b"non-ascii"), ("plain.txt", b"plain")]:
            info = tarfile.TarInfo(name)
            info.size, info.pax_headers = len(text), {"SCHILY.xattr.user.note": "a=b " * 100, "mtime": "1.5"}
            tf.addfile(info, __import__("io").BytesIO(text))
    (batch,) = list(iter_shard(str(path)))
    assert batch.column("__key__").to_pylist() == [long, "caf\u00e9/\u6587", "plain"]
    assert batch.column("txt").to_pylist() == ["long", "non-ascii", "plain"]
    assert batch.column("__error__").null_count == 3 and batch.column("__warning__").null_count == 3


def test_f02_a_batch_flushes_on_the_json_values_its_records_hold(tmp_path):
    """Records under the budget still add up: a batch is cut when their values would take MAX_BATCH_BYTES."""
    import math

    from dataaudit.formats import iter_shard
    from dataaudit.sources.batch import MAX_BATCH_BYTES
    from dataaudit.sources.json_budget import memory_bytes

    line = b'{"x": [' + b",".join([b"1"] * 50_000) + b"]}\n"     # 100 KB: 50,001 values, ~3.2 MB once parsed
    path = tmp_path / "dense.jsonl"
    path.write_bytes(line * 100)
    per_batch = math.ceil(MAX_BATCH_BYTES / memory_bytes(line))
    assert per_batch == 84
    assert [b.num_rows for b in iter_shard(str(path))] == [84, 16]     # was one batch of 100
