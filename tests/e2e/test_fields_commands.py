"""One shard, every command: the same text column, by the one field rule (dataaudit.fields).

The shard has an integer column named `text` and a string column `body`: before the rule was shared, dedup took
`text` (whatever its type) and found only empty documents, while the audit and contamination read `body`."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
from click.testing import CliRunner

from dataaudit.cli import main
from dataaudit.tokenization.sample import read_sample

BODIES = ["the first record speaks of ships and the sea at night",
          "the second record speaks of mountains and snow in spring",
          "the third record speaks of rivers and bridges in the town"]


def test_every_command_reads_the_same_text_column(tmp_path):
    shard = tmp_path / "s.parquet"
    pq.write_table(pa.table({"n": [1, 2, 3], "text": [7, 8, 9], "body": BODIES}), shard)
    bench = tmp_path / "bench.jsonl"
    bench.write_text(json.dumps({"question": BODIES[1], "answer": "x"}) + "\n")
    run = CliRunner().invoke

    res = run(main, ["audit", str(shard), "--out", str(tmp_path / "a"), "--engine", "local"])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "a" / "report.json").read_text())["shards"][0]["fields"] == {"text": ["body"]}

    res = run(main, ["dedup", str(shard), "--out", str(tmp_path / "d"), "--engine", "local"])
    assert res.exit_code == 0, res.output
    dedup = json.loads((tmp_path / "d" / "dedup.json").read_text())
    assert (dedup["shards"][0]["text_field"], dedup["empty_documents"]) == ("body", 0)

    res = run(main, ["contamination", "--train", str(shard), "--benchmark", f"gsm8k={bench}",
                     "--out", str(tmp_path / "c"), "--engine", "local"])
    assert res.exit_code == 1, res.output          # the benchmark item is the second record
    contamination = json.loads((tmp_path / "c" / "contamination.json").read_text())
    assert contamination["train"]["shards"][0]["text_field"] == "body"
    assert contamination["totals"]["contaminated"] == 1
    assert "fields: text = body (1 shard)\n" in res.output

    sample = read_sample([str(shard)], 0)
    assert (sample.texts, sample.text_fields) == (BODIES, {str(shard): "body"})
