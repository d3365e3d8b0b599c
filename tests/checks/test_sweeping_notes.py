"""A check with thresholds that flags nearly every record gets a note naming its per-dataset settings (issue 36:
28-pixel digits were 90 of 90 image_too_small with no hint)."""
from __future__ import annotations

from tests.stats.conversation_helpers import audit, write_shard


def test_a_check_flagging_nearly_every_record_names_its_settings(tmp_path):
    runs = ["word " + "x" * 150 for _ in range(19)] + ["plain words only"]
    shard = write_shard(tmp_path / "t.parquet", {"text": runs})
    report = audit(tmp_path, [shard], {})
    assert [n for n in report["notes"] if "flags nearly everything" in n] == [
        "long_unbroken_run: flags 19 of 20 records (95%): a check that flags nearly everything usually has thresholds "
        "that do not fit this data; its settings are per dataset: [checks.long_unbroken_run] max_run = 100, "
        "url_max = 400, code_max_run = 300"]
    assert report["totals"]["field_warnings"] == 0      # a hint, not a warning --strict fails on


def test_no_note_under_the_share_or_on_few_records(tmp_path):
    shard = write_shard(tmp_path / "t.parquet", {"text": ["word " + "x" * 150] * 17 + ["plain words"] * 3})
    assert not [n for n in audit(tmp_path, [shard], {})["notes"] if "flags nearly everything" in n]   # 85%
    shard = write_shard(tmp_path / "few.parquet", {"text": ["word " + "x" * 150] * 10})
    assert not [n for n in audit(tmp_path, [shard], {})["notes"] if "flags nearly everything" in n]   # 10 records
