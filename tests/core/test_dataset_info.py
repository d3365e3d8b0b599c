"""LLaMA-Factory's dataset_info.json: beside the shards (or --dataset-info) its columns decide the pair layout;
it is never read as a shard."""
from __future__ import annotations

import json

from click.testing import CliRunner

from dataaudit.cli import main


def _write(tmp_path):
    (tmp_path / "dataset_info.json").write_text(json.dumps({
        "mine": {"file_name": "odd.json", "ranking": True, "formatting": "sharegpt",
                 "columns": {"messages": "dialog", "chosen": "good", "rejected": "bad"}}}))
    (tmp_path / "odd.json").write_text(json.dumps([
        {"dialog": [{"from": "human", "value": "Q"}], "good": {"from": "gpt", "value": "A fine answer."},
         "bad": {"from": "gpt", "value": "a  fine ANSWER."}}]))


def test_registry_decides_the_layout(tmp_path):
    _write(tmp_path)
    r = CliRunner().invoke(main, ["audit", str(tmp_path / "*.json"), "--out", str(tmp_path / "o"), "--engine", "local"])
    assert r.exit_code == 1, r.output
    assert "pairs = LLaMA-Factory ranking (prompt dialog, good, bad) (1 shard)" in r.output
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert [s["path"] for s in report["shards"]] == [str(tmp_path / "odd.json")]   # the glob left the registry out
    assert report["checks"]["pair_identical"]["flagged"] == 1


def test_registry_named_as_a_shard(tmp_path):
    _write(tmp_path)
    r = CliRunner().invoke(main, ["audit", str(tmp_path / "dataset_info.json"), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2
    assert r.output.strip().splitlines() == [
        f"Error: {tmp_path / 'dataset_info.json'}: LLaMA-Factory's dataset registry, not a shard (it is read beside "
        "the shards it lists, or named with --dataset-info)"]
