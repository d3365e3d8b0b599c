"""Every command: a configured field that no shard has is a usage error (exit 2, one line); the summary names the
columns the fields resolved to."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from dataaudit.cli import main
from dataaudit.cli.fields import fields_line


@pytest.fixture()
def shards(tmp_path):
    pq.write_table(pa.table({"id": ["a", "b"], "body": ["first text here", "second text here"]}), tmp_path / "a.parquet")
    (tmp_path / "b.jsonl").write_text("".join(json.dumps({"caption": f"caption {i}"}) + "\n" for i in range(3)))
    (tmp_path / "gsm.jsonl").write_text(json.dumps({"question": "what is two and two", "answer": "4"}) + "\n")
    return tmp_path


def _run(args):
    return CliRunner().invoke(main, args)


def test_audit_refuses_a_field_no_shard_has(shards, tmp_path):
    cfg = tmp_path / "audit.toml"
    cfg.write_text('[fields]\ntext = "caption"\nnumeric = ["pixels"]\n')
    res = _run(["audit", str(shards / "a.parquet"), str(shards / "b.jsonl"), "--config", str(cfg),
                "--out", str(tmp_path / "o")])
    assert res.exit_code == 2
    assert res.output.strip().splitlines() == [
        f"Error: {cfg}: [fields]: numeric 'pixels' found in none of the 2 shards (Parquet footers, the first "
        "256 records of other shards)"]
    assert not (tmp_path / "o").exists()


def test_a_field_some_shards_have_is_fine_and_the_summary_says_where(shards, tmp_path):
    cfg = tmp_path / "audit.toml"
    cfg.write_text('[fields]\ntext = "caption"\n')
    res = _run(["audit", str(shards / "a.parquet"), str(shards / "b.jsonl"), "--config", str(cfg),
                "--out", str(tmp_path / "o"), "--engine", "local"])
    assert res.exit_code == 0, res.output
    assert "fields: text = caption (1 shard); id = id [identifier (not audited as prose)] (1 shard)\n" in res.output
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert [s["fields"] for s in report["shards"]] == [{"id": ["id"]}, {"text": ["caption"]}]
    # the shard without the configured text is named: never a silent pass
    assert f"{shards / 'a.parquet'}: warning: no text field (none of the configured text fields (caption) is in " \
        "it): the text checks did not run" in report["notes"]


def test_dedup_and_contamination_refuse_a_text_field_no_shard_has(shards, tmp_path):
    res = _run(["dedup", str(shards / "a.parquet"), "--text-field", "nope", "--out", str(tmp_path / "d")])
    assert res.exit_code == 2
    assert "Error: --text-field: text 'nope' found in none of the 1 shard" in res.output
    cfg = tmp_path / "c.toml"
    cfg.write_text('[train]\ntext_field = "nope"\n')
    res = _run(["contamination", "--train", str(shards / "a.parquet"), "--benchmark",
                f"gsm8k={shards / 'gsm.jsonl'}", "--config", str(cfg), "--out", str(tmp_path / "c")])
    assert res.exit_code == 2
    assert f"Error: {cfg}: [train] text_field: text 'nope' found in none of the 1 shard" in res.output


def test_fields_line():
    assert fields_line([{"text": ["text"], "numeric": ["x", "y"]}, {"text": ["txt"]}, {"text": ["text"]}, {}]) == \
        "fields: text = text (2 shards), txt (1 shard); numeric = x (1 shard), y (1 shard)"
    assert fields_line([{}, {}]) == "fields: none resolved"


def test_a_shard_with_no_records_is_a_field_warning_not_a_pass(tmp_path):
    import io
    import tarfile

    with tarfile.open(tmp_path / "noext.tar", "w") as t:   # members without an extension: in no sample
        for name in ("0001", "0002"):
            info = tarfile.TarInfo(name)
            info.size = 5
            t.addfile(info, io.BytesIO(b"hello"))
    res = _run(["audit", str(tmp_path / "noext.tar"), "--out", str(tmp_path / "out"), "--engine", "local"])
    note = (f"{tmp_path / 'noext.tar'}: warning: no records in it (nothing was checked; in a tar, members without "
            "an extension belong to no sample, as for webdataset)")
    assert res.exit_code == 0 and f"note: {note}" in res.output.splitlines()
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert note in report["notes"] and report["totals"]["field_warnings"] == 1
    res = _run(["audit", str(tmp_path / "noext.tar"), "--out", str(tmp_path / "out2"), "--engine", "local", "--strict"])
    assert res.exit_code == 1
