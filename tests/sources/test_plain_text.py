"""Plain-text shards: one record per line or per paragraph; blank lines are no records; every record keeps its
physical line; a record that is not UTF-8 or is over the limit is a row with its error; the reader and the writer
walk the file the same way (`pieces`), so a rewrite without drops gives the same bytes back."""
from __future__ import annotations

import gzip

import numpy as np
import pyarrow as pa
import pytest

from dataaudit.formats import iter_shard
from dataaudit.sources.plain_text import text_records
from dataaudit.writers.base import WriteOptions
from dataaudit.writers.plain_text import rewrite_text

DATA = b"\xef\xbb\xbfa b\r\n\n  \nc\nd\n\n\ne\xff\nf"


def _got(path, unit, limit=1 << 20):
    return [(v.get("text", (None, None))[1], e, line) for v, e, _, _, line in text_records(str(path), unit, limit)]


def test_lines_and_paragraphs(tmp_path):
    path = tmp_path / "c.txt"
    path.write_bytes(DATA)
    assert _got(path, "line") == [("a b", None, 1), ("c", None, 4), ("d", None, 5),
                                  (None, "row 3 (line 8): invalid UTF-8 at byte 1", 8), ("f", None, 9)]
    assert _got(path, "paragraph") == [("a b", None, 1), ("c\nd", None, 4),
                                       (None, "row 2 (line 8): invalid UTF-8 at byte 1", 8)]
    t = pa.Table.from_batches(list(iter_shard(str(path), text_unit="paragraph")))
    assert t.column("__row__").to_pylist() == [0, 1, 2] and t.column("__key__").to_pylist() == ["0", "1", "2"]
    assert t.column("__warning__").to_pylist()[0] == "row 0 (line 1): UTF-8 byte order mark ignored"


def test_an_overlong_record_is_a_row_and_is_never_held(tmp_path):
    path = tmp_path / "long.txt.gz"
    path.write_bytes(gzip.compress(b"x" * 30 + b"\nshort\n\nyy\nzz\n"))
    assert _got(path, "line", 10) == [(None, "row 0 (line 1): longer than 10 bytes (not read)", 1),
                                      ("short", None, 2), ("yy", None, 4), ("zz", None, 5)]
    assert _got(path, "paragraph", 10) == [(None, "row 0 (line 1): longer than 10 bytes (not read)", 1),
                                           ("yy\nzz", None, 4)]


@pytest.mark.parametrize("unit, drop, expected", [
    ("line", [0, 3], b"\n  \nc\nd\n\n\nf"),
    ("paragraph", [1], b"\xef\xbb\xbfa b\r\n\n  \ne\xff\nf"),     # the blank lines after a dropped paragraph go too
    ("paragraph", [2], b"\xef\xbb\xbfa b\r\n\n  \nc\nd\n\n\n"),
])
def test_the_writer_numbers_records_as_the_reader(tmp_path, unit, drop, expected):
    src = tmp_path / "c.txt"
    src.write_bytes(DATA)
    same = tmp_path / "same.txt"
    n = len(_got(src, unit))
    assert rewrite_text(str(src), same, np.zeros(0, np.int64), n, unit)["kept"] == n
    assert same.read_bytes() == DATA
    out = tmp_path / "out.txt"
    wrote = rewrite_text(str(src), out, np.array(drop), n, unit, WriteOptions())
    assert out.read_bytes() == expected
    assert wrote["records"] == n and wrote["kept"] == n - len(drop)
    assert wrote["dropped_lines"] == [_got(src, unit)[r][2] for r in drop]


def test_a_walk_skips_a_folders_notes(tmp_path):
    from dataaudit.cli.paths import expand_shards

    for name in ("README.txt", "LICENSE.txt", "requirements.txt", "train.txt", "val.txt.gz"):
        (tmp_path / name).write_bytes(b"x\n")
    assert [p.rsplit("/", 1)[-1] for p in expand_shards([str(tmp_path)])] == ["train.txt", "val.txt.gz"]
    assert expand_shards([str(tmp_path / "README.txt")]) == [str(tmp_path / "README.txt")]   # named: read
