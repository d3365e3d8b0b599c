"""Options that take several values (`dedup --against`, `contamination --train`) read every value up to the next
option; given none, the error names them."""
from __future__ import annotations

import json

from click.testing import CliRunner

from dataaudit.cli import main


def test_contamination_usage_has_no_positional_shards_and_train_takes_several(tmp_path):
    res = CliRunner().invoke(main, ["contamination", "--help"])
    assert res.output.splitlines()[0] == "Usage: main contamination [OPTIONS]"
    bench = tmp_path / "b.jsonl"
    bench.write_text(json.dumps({"text": "what is the capital of a country far away from here"}) + "\n")
    a, b = tmp_path / "a.jsonl", tmp_path / "c.jsonl"
    for p in (a, b):
        p.write_text(json.dumps({"text": "nothing in common"}) + "\n")
    res = CliRunner().invoke(main, ["contamination", "--train", str(a), str(b), "--benchmark", f"b={bench}",
                                    "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "out" / "contamination.json").read_text())
    assert [s["path"] for s in report["train"]["shards"]] == [str(a), str(b)]
    res = CliRunner().invoke(main, ["contamination", "--train", "--benchmark", f"b={bench}", "--out", "x"])
    assert res.exit_code == 2
    assert res.output.splitlines()[-1] == "Error: --train needs at least one value (files, folders or quoted globs)"


def test_dedup_against_without_a_value_names_against(tmp_path):
    shard = tmp_path / "a.jsonl"
    shard.write_text(json.dumps({"text": "hello"}) + "\n")
    res = CliRunner().invoke(main, ["dedup", str(shard), "--against", "--out", str(tmp_path / "out")])
    assert res.exit_code == 2 and not (tmp_path / "out").exists()
    assert res.output.splitlines()[-1] == "Error: --against needs at least one value (files, folders or quoted globs)"
