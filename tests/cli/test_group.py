"""The `dataaudit` group is the one place that turns the user's errors into one line and exit 2: every
DataAuditError (with its prefix, "refused: " for a refusal) and a file that cannot be written; and the folder walk
skips each job's own files as the jobs declare them."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from dataaudit.cli import main
from dataaudit.cli.paths import job_files


def _audit(tmp_path) -> list[str]:
    shard = tmp_path / "s.jsonl"
    shard.write_text('{"text": "A short and perfectly ordinary sentence."}\n')
    return ["audit", str(shard), "--out", str(tmp_path / "out"), "--engine", "local"]


def test_a_data_audit_error_is_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[fields\n")
    res = CliRunner().invoke(main, [*_audit(tmp_path), "--config", str(bad)])
    assert res.exit_code == 2 and res.exception.__class__ is SystemExit
    (line,) = [ln for ln in res.output.splitlines() if ln.strip()]
    assert line.startswith(f"Error: {bad}: not valid TOML: ")
    res = CliRunner().invoke(main, ["clean", str(tmp_path / "s.jsonl"), "--audit", str(tmp_path / "none"),
                                    "--out", str(tmp_path / "c")])
    assert res.exit_code == 2
    assert res.output.strip() == f"Error: refused: {tmp_path / 'none' / 'report.json'}: not found: is " \
                                 f"{tmp_path / 'none'} the --out folder of `dataaudit audit`?"


def test_a_file_that_cannot_be_written_is_one_line_and_exit_2(tmp_path, monkeypatch):
    import dataaudit.audit.report as report

    def full_disk(path, obj):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(report, "write_json", full_disk)
    res = CliRunner().invoke(main, _audit(tmp_path))
    assert res.exit_code == 2
    assert res.output.strip().splitlines()[-1] == f"Error: {tmp_path / 'out' / 'report.json'}: No space left on device"


@pytest.mark.parametrize("record, tables", [
    ("report.json", ("flags.parquet",)), (".dataaudit/clean.json", (".dataaudit/dropped.parquet",)),
    ("dedup.json", ("clusters.parquet", "keep.parquet", "overlap.parquet")),
    ("contamination.json", ("decontaminate.parquet",)), ("tokenizer_drift.json", ())])
def test_the_walk_skips_what_each_job_declares(record, tables):
    assert job_files()[record] == tables
    assert len(job_files()) == 5
