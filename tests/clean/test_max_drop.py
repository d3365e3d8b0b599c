"""`clean` says what share of each shard it drops, and refuses (exit 2, one line, nothing written) when a shard
would lose more than --max-drop of its records (issue 30: a misread layout dropped every preference pair)."""
from __future__ import annotations

import json

from click.testing import CliRunner

from dataaudit.cli import main


def _shard(tmp_path, empty: int, total: int = 4) -> str:
    (tmp_path / "in").mkdir()
    p = tmp_path / "in" / "pairs.json"
    p.write_text(json.dumps([{"conversations": [{"from": "human", "value": "Q"}],
                              "chosen": {"from": "gpt", "value": "" if i < empty else "Answer number %d." % i},
                              "rejected": {"from": "gpt", "value": "No idea %d." % i}} for i in range(total)]))
    return str(p)


def _clean(tmp_path, shard, *extra):
    r = CliRunner().invoke(main, ["audit", shard, "--out", str(tmp_path / "a"), "--engine", "local"])
    assert r.exit_code == 1, r.output      # error flags
    return CliRunner().invoke(main, ["clean", shard, "--audit", str(tmp_path / "a"), "--out", str(tmp_path / "c"),
                                     "--engine", "local", *extra])


def test_refuses_heavy_drop(tmp_path):
    shard = _shard(tmp_path, empty=3)
    r = _clean(tmp_path, shard)
    assert r.exit_code == 2
    assert r.output.strip().splitlines() == [
        f"Error: refused: {shard} would lose 3 of 4 records (75.0%), more than --max-drop 50%: nothing written; "
        "check the audit's findings, or raise --max-drop"]
    assert not (tmp_path / "c").exists()


def test_raised_limit_cleans_and_says_the_share(tmp_path):
    shard = _shard(tmp_path, empty=3)
    r = _clean(tmp_path, shard, "--max-drop", "80")
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[0] == f"{shard}: dropping 3 of 4 records (75.0%)"
    assert len(json.loads((tmp_path / "c" / "pairs.json").read_text())) == 1
