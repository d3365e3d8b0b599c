"""Outputs honour the umask: created like any file the user makes (0o666 less the umask), not 0o600."""
from __future__ import annotations

import os
import stat

import pytest
from click.testing import CliRunner

from dataaudit.cli import main


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def test_audit_outputs_are_readable_by_the_group_and_others(tmp_path, umask_022):
    shard = tmp_path / "a.jsonl"
    shard.write_text('{"text": "hello world"}\n')
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["audit", str(shard), "--out", str(out), "--engine", "local"])
    assert res.exit_code == 0, res.output
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in out.iterdir() if p.is_file()}
    assert modes == {"report.json": 0o644, "flags.parquet": 0o644, "report.html": 0o644}


def test_a_stricter_umask_is_honoured_too(tmp_path):
    from dataaudit.atomic import write_json

    old = os.umask(0o077)
    try:
        write_json(tmp_path / "x.json", {"a": 1})
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "x.json").stat().st_mode) == 0o600
