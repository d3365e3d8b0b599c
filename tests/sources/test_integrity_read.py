"""Integrity by default: the audit decodes every column of every row group of a Parquet shard (what a training
loader reads), so a shard with a column that cannot be decoded is `unreadable`, the column and row group named;
`--read checked-columns` decodes only the columns the checks read and says which it did not decode."""
from __future__ import annotations

import json
import re

import pyarrow as pa
import pyarrow.fs  # noqa: F401  (pa.fs)
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from dataaudit.audit.shard import audit_shard
from dataaudit.cli import main
from dataaudit.config import load_config
from dataaudit.formats import iter_shard
from dataaudit.sources import ShardReadError
from dataaudit.pipelines.audit import run_audit
from dataaudit.pipelines.engine import EngineOptions
from tests.paths import needs_shared, SHARED_DATA
from tests.sources.damage import ROWS_PER_GROUP, damage_column, sample_table, write_sample

COLUMN_ERROR = re.compile(r"^parquet: column '(?P<column>[^']+)' \(row group (?P<rg>\d+)\): \S")


def _audit(shards, out, *args):
    res = CliRunner().invoke(main, ["audit", *map(str, shards), "--out", str(out), "--engine", "local", *args])
    report = json.loads((out / "report.json").read_text()) if (out / "report.json").exists() else None
    return res, report


@pytest.fixture
def damaged(tmp_path):
    """One row group; the `timestamp` column chunk (no check reads it) damaged."""
    path = damage_column(write_sample(tmp_path / "damaged.parquet"), "timestamp")
    return path


def test_damage_breaks_only_that_column(damaged):
    # the file as the tests use it: a loader fails, the other columns read
    with pytest.raises(OSError):
        pq.read_table(damaged)
    assert pq.read_table(damaged, columns=["text", "score"]).num_rows == ROWS_PER_GROUP


def test_default_read_names_the_undecodable_column(damaged, tmp_path):
    res, report = _audit([damaged], tmp_path / "out")
    assert res.exit_code == 1, res.output
    shard = report["shards"][0]
    assert shard["status"] == "unreadable"
    m = COLUMN_ERROR.match(shard["error"])
    assert m and (m["column"], m["rg"]) == ("timestamp", "0"), shard["error"]
    assert "also" not in shard["error"] and "more undecodable" not in shard["error"]   # only that column
    assert shard["samples"] == 0 and shard["not_decoded"] == []
    assert report["config"]["read"] == "all-columns"
    assert report["totals"]["unreadable_shards"] == 1
    assert not any("not decoded" in n for n in report["notes"])
    assert "column 'timestamp' (row group 0)" in " ".join(res.output.split())


def test_checked_columns_skips_the_damaged_column_and_says_so(damaged, tmp_path):
    res, report = _audit([damaged], tmp_path / "out", "--read", "checked-columns")
    assert res.exit_code == 0, res.output
    shard = report["shards"][0]
    assert (shard["status"], shard["error"], shard["samples"]) == ("ok", None, ROWS_PER_GROUP)
    assert shard["not_decoded"] == ["timestamp"]
    assert report["config"]["read"] == "checked-columns"
    notes = [n for n in report["notes"] if "not decoded" in n]
    assert len(notes) == 1 and notes[0].startswith("1 column(s) not decoded (--read checked-columns) in 1 shard(s): "
                                                   "timestamp;"), notes
    output = " ".join(res.output.split())
    assert "unreadable shards: 0; 1 column(s) not decoded (--read checked-columns)" in output
    # the note is no field warning; the column no check reads is one, in both modes (--strict fails on it)
    assert report["totals"]["field_warnings"] == 1
    assert any("not checked by any check: timestamp" in n for n in report["notes"])


def test_a_damaged_checked_column_is_unreadable_in_both_modes(tmp_path):
    path = damage_column(write_sample(tmp_path / "text.parquet"), "text")
    for mode in ("all-columns", "checked-columns"):
        res, report = _audit([path], tmp_path / mode, "--read", mode)
        assert res.exit_code == 1, res.output
        shard = report["shards"][0]
        m = COLUMN_ERROR.match(shard["error"] or "")
        assert shard["status"] == "unreadable" and m and (m["column"], m["rg"]) == ("text", "0"), shard


def test_records_before_the_broken_row_group_are_counted_and_audited(tmp_path):
    """Three row groups, the second's `timestamp` damaged: the first row group's records are counted and checked
    (its planted empty text is flagged), the third is not reached."""
    table = sample_table(3 * ROWS_PER_GROUP)
    texts = table.column("text").to_pylist()
    texts[7] = ""                       # flagged by empty_text, in row group 0
    texts[ROWS_PER_GROUP + 7] = ""      # in the broken row group: never reached
    table = table.set_column(0, "text", pa.array(texts))
    path = damage_column(write_sample(tmp_path / "three.parquet", table=table), "timestamp", row_group=1)
    with pytest.raises(OSError):
        pq.read_table(path)

    res, report = _audit([path], tmp_path / "out")
    assert res.exit_code == 1, res.output
    shard = report["shards"][0]
    m = COLUMN_ERROR.match(shard["error"])
    assert m and (m["column"], m["rg"]) == ("timestamp", "1"), shard["error"]
    assert shard["samples"] == ROWS_PER_GROUP
    # the checks got only the columns they read
    assert shard["fields"]["text"] == ["text"] and shard["fields"]["numeric"] == ["score"]
    flags = pq.read_table(tmp_path / "out" / "flags.parquet").to_pylist()
    assert {(f["row"], f["check"]) for f in flags} == {(7, "empty_text")}

    res, report = _audit([path], tmp_path / "checked", "--read", "checked-columns")
    assert report["shards"][0]["status"] == "ok" and report["shards"][0]["samples"] == 3 * ROWS_PER_GROUP
    flags = pq.read_table(tmp_path / "checked" / "flags.parquet").to_pylist()
    assert {(f["row"], f["check"]) for f in flags} == {(7, "empty_text"), (ROWS_PER_GROUP + 7, "empty_text")}


def test_reader_decodes_everything_but_yields_the_requested_columns(tmp_path):
    path = write_sample(tmp_path / "clean.parquet", row_groups=3)
    fast = pa.Table.from_batches(list(iter_shard(str(path), columns=["text"], batch_rows=256)))
    full = pa.Table.from_batches(list(iter_shard(str(path), columns=["text"], batch_rows=256, decode_all=True)))
    assert full.equals(fast)
    assert full.column_names == ["text", "__key__", "__row__", "__line__", "__error__", "__warning__"]
    assert full.num_rows == 3 * ROWS_PER_GROUP

    damage_column(path, "score", row_group=2)
    assert pa.Table.from_batches(list(iter_shard(str(path), columns=["text"]))).num_rows == 3 * ROWS_PER_GROUP
    seen = 0
    with pytest.raises(ShardReadError, match=r"^parquet: column 'score' \(row group 2\): ") as info:
        for batch in iter_shard(str(path), columns=["text"], batch_rows=256, decode_all=True):
            seen += batch.num_rows
    assert seen == 2 * ROWS_PER_GROUP       # the read-ahead lost nothing before the broken row group
    assert "\n" not in str(info.value)


def test_several_undecodable_columns_are_counted_in_the_error(tmp_path):
    path = write_sample(tmp_path / "two.parquet")
    damage_column(path, "timestamp")
    damage_column(path, "score")
    with pytest.raises(ShardReadError) as info:
        for _ in iter_shard(str(path), decode_all=True):
            pass
    assert str(info.value).startswith("parquet: column 'timestamp' (row group 0): ")
    assert str(info.value).endswith("(and 1 more undecodable column(s) in this row group: 'score')")


def test_rerun_under_the_other_mode_does_not_reuse_parts(damaged, tmp_path):
    out = tmp_path / "out"
    config = load_config(None)
    first = run_audit([str(damaged)], config, out, options=EngineOptions("local"))
    assert first["shards"][0]["status"] == "unreadable" and first["run"]["resumed_shards"] == 0
    again = run_audit([str(damaged)], config, out, options=EngineOptions("local"))
    assert again["run"]["resumed_shards"] == 1                      # same mode: the part is reused
    other = run_audit([str(damaged)], config, out, options=EngineOptions("local"), read="checked-columns")
    assert other["run"]["resumed_shards"] == 0                      # other mode: read again
    assert other["shards"][0]["status"] == "ok" and other["config"]["read"] == "checked-columns"
    back = run_audit([str(damaged)], config, out, options=EngineOptions("local"), read="all-columns")
    assert back["run"]["resumed_shards"] == 0 and back["shards"][0]["status"] == "unreadable"


def test_python_api_read_mode(damaged, tmp_path):
    config = load_config(None)
    assert config.read == "all-columns" and config.fingerprint()["read"] == "all-columns"
    result, _ = audit_shard(str(damaged), config.with_read("checked-columns"))
    assert (result.status, result.records, result.not_decoded) == ("ok", ROWS_PER_GROUP, ["timestamp"])
    result, _ = audit_shard(str(damaged), config)
    assert result.status == "unreadable" and result.error.startswith("parquet: column 'timestamp' (row group 0): ")
    with pytest.raises(ValueError, match="read mode must be one of all-columns, checked-columns"):
        run_audit([str(damaged)], config, tmp_path / "bad", options=EngineOptions("local"), read="some-columns")
    res = CliRunner().invoke(main, ["audit", str(damaged), "--out", str(tmp_path / "o"), "--read", "some"])
    assert res.exit_code == 2 and "--read" in res.output


def test_other_formats_read_whole_records_and_note_nothing(tmp_path):
    shard = tmp_path / "records.jsonl"
    shard.write_text("".join(json.dumps({"text": f"Line {i} is a calm sentence about rivers.", "ts": i}) + "\n"
                             for i in range(5)))
    res, report = _audit([shard], tmp_path / "out", "--read", "checked-columns")
    assert res.exit_code == 0, res.output
    assert report["shards"][0]["not_decoded"] == [] and not any("not decoded" in n for n in report["notes"])


def test_clean_shard_same_report_in_both_modes(tmp_path):
    path = write_sample(tmp_path / "clean.parquet", row_groups=2)
    _, full = _audit([path], tmp_path / "a")
    _, fast = _audit([path], tmp_path / "b", "--read", "checked-columns")
    strip = lambda r: {k: v for k, v in r.items() if k not in ("run", "config", "notes", "shards")}  # noqa: E731
    assert strip(full) == strip(fast)
    assert full["shards"][0]["not_decoded"] == [] and fast["shards"][0]["not_decoded"] == ["timestamp"]


# ------------------------------------------------------------------ real corrupt files (apache/parquet-testing)

@needs_shared
@pytest.mark.parametrize("name,column,message", [
    # row group 0 of ARROW-GH-41321 has two undecodable columns; `string` (text) decodes fine
    ("ARROW-GH-41321", "int64", "Invalid or corrupted bit_width 254"),
    ("ARROW-GH-45185", "x", "The repetition level at the start of a record must be 0 but got 1"),
])
def test_real_corrupt_files_name_the_column(name, column, message, tmp_path):
    path = SHARED_DATA / "parquet-testing" / f"{name}.parquet"
    res, report = _audit([path], tmp_path / "out")
    assert res.exit_code == 1, res.output
    shard = report["shards"][0]
    m = COLUMN_ERROR.match(shard["error"])
    assert shard["status"] == "unreadable" and m and (m["column"], m["rg"]) == (column, "0"), shard["error"]
    assert message in shard["error"]


@needs_shared
def test_real_file_a_loader_cannot_read_passed_only_the_checked_read(tmp_path):
    """The issue's case: reading only the text column of ARROW-GH-41321 gives 5 records and no error, while a
    loader (pq.read_table) fails on the file; the full read refuses it."""
    path = str(SHARED_DATA / "parquet-testing" / "ARROW-GH-41321.parquet")
    with pytest.raises(OSError):
        pq.read_table(path)
    assert sum(b.num_rows for b in iter_shard(path, columns=["string"])) == 5
    with pytest.raises(ShardReadError, match=r"^parquet: column 'int64' \(row group 0\): Invalid or corrupted "
                                             r"bit_width 254\. .*\(and 1 more undecodable column\(s\) in this row "
                                             r"group: 'large_binary'\)$"):
        for _ in iter_shard(path, columns=["string"], decode_all=True):
            pass


@needs_shared
def test_real_valid_and_footer_broken_files_unchanged(tmp_path):
    folder = SHARED_DATA / "parquet-testing"
    res, report = _audit([folder / "alltypes_plain.parquet", folder / "PARQUET-1481.parquet"], tmp_path / "out")
    assert res.exit_code == 1
    ok, bad = report["shards"]
    assert (ok["status"], ok["samples"]) == ("ok", 8)
    # a footer that cannot be parsed names no column: nothing was decoded
    assert bad["status"] == "unreadable" and bad["error"] == "parquet: Invalid physical column type: UNKNOWN"


class _FailingScan:
    """A fragment whose read-ahead scan breaks after `after` batches (as a real one does when a later row group
    cannot be decoded, possibly mid row group); reading it row group by row group works, except row group
    `broken_group`'s column `broken_column`."""

    def __init__(self, fragment, after: int, broken_group: int, broken_column: str):
        self.fragment, self.after, self.broken_group, self.broken_column = fragment, after, broken_group, broken_column

    def __getattr__(self, name):
        return getattr(self.fragment, name)

    def to_batches(self, **kw):
        batches = self.fragment.to_batches(**kw)
        for _ in range(self.after):
            yield next(batches)
        raise OSError("the read-ahead scan broke")

    def subset(self, row_group_ids):
        piece = self.fragment.subset(row_group_ids=row_group_ids)
        if row_group_ids != [self.broken_group]:
            return piece
        column = self.broken_column

        class Broken:
            def to_batches(self, columns, **kw):
                if column in columns:
                    raise OSError(f"cannot decode {column}")
                return piece.to_batches(columns=columns, **kw)
        return Broken()


def test_rows_yielded_before_a_failure_mid_row_group_are_not_read_twice(tmp_path, monkeypatch):
    import dataaudit.sources.parquet as parquet

    path = write_sample(tmp_path / "three.parquet", row_groups=3)
    monkeypatch.setattr(parquet, "_READ_ROWS", 100)         # 4 batches per row group of 400 rows
    real = parquet._parquet_format()

    class Format:
        def make_fragment(self, *args):
            # the scan yields row group 0 and half of row group 1, then breaks; row group 2 cannot be decoded
            return _FailingScan(real.make_fragment(*args), after=6, broken_group=2, broken_column="score")

    monkeypatch.setattr(parquet, "_parquet_format", Format)
    rows = []
    with pytest.raises(ShardReadError, match=r"^parquet: column 'score' \(row group 2\): cannot decode score$"):
        for batch in iter_shard(str(path), columns=["text"], batch_rows=64, decode_all=True):
            rows += batch.column("__row__").to_pylist()
    assert rows == list(range(2 * ROWS_PER_GROUP))           # each once, in order: the rest of row group 1 too


def test_a_failure_no_row_group_reproduces_keeps_the_read_error(tmp_path, monkeypatch):
    import dataaudit.sources.parquet as parquet

    path = write_sample(tmp_path / "two.parquet", row_groups=2)
    real = parquet._parquet_format()

    class Format:
        def make_fragment(self, *args):
            return _FailingScan(real.make_fragment(*args), after=0, broken_group=-1, broken_column="")

    monkeypatch.setattr(parquet, "_parquet_format", Format)
    rows = 0
    with pytest.raises(ShardReadError, match=r"^parquet: the read-ahead scan broke$"):
        for batch in iter_shard(str(path), decode_all=True):
            rows += batch.num_rows
    assert rows == 2 * ROWS_PER_GROUP


def test_the_recovery_starts_no_read_past_its_budget(tmp_path):
    """A file whose every decode is slow to fail is not retried once per row group and column without end: past
    the recovery's budget no read starts, and the error says what was not read or tried (issue 36)."""
    from dataaudit.sources.parquet import _Budget, _named_error, _parquet_format, iter_parquet

    path = damage_column(write_sample(tmp_path / "one.parquet"), "timestamp")
    with pytest.raises(ShardReadError) as info:
        list(iter_parquet(str(path), decode_all=True, recovery_seconds=0))
    assert re.fullmatch(r"parquet: .+ \(rows 0 on not read: the recovery stopped at row group 0 after its time "
                        r"budget\)", str(info.value)), str(info.value)

    fragment = _parquet_format().make_fragment(str(path), pa.fs.LocalFileSystem())
    columns = fragment.physical_schema.names
    error = _named_error(fragment, 0, columns, 1024, OSError("the first failure"), _Budget(0))
    assert str(error) == (f"parquet: row group 0: the first failure ({len(columns)} column(s) not tried: the "
                          "recovery stopped after its time budget)")
    with pytest.raises(ShardReadError, match=r"^parquet: column 'timestamp' \(row group 0\): [^(]*$"):
        list(iter_parquet(str(path), decode_all=True))          # within the budget: the column is named


def test_the_recovery_budget_is_spent_by_its_reads_not_by_the_caller(tmp_path):
    """The caller's work on the batches handed out during the recovery (an audit's checks, a first call compiling
    kernels on a loaded machine) does not spend the budget: the broken column is still named."""
    import time

    from dataaudit.sources.parquet import iter_parquet

    path = damage_column(write_sample(tmp_path / "two.parquet", row_groups=2), "timestamp", row_group=1)
    rows = 0
    with pytest.raises(ShardReadError, match=r"^parquet: column 'timestamp' \(row group 1\): [^(]*$"):
        for batch in iter_parquet(str(path), batch_rows=100, decode_all=True, recovery_seconds=0.5):
            rows += batch.num_rows
            time.sleep(0.2)                                       # 4 batches of row group 0: 0.8 s of the caller's
    assert rows == ROWS_PER_GROUP
