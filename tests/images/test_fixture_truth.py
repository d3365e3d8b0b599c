"""The bundled image fixtures (fixtures/images, made by fixtures/image_data.py from real photos with planted
defects): every planted record is flagged by exactly the checks truth.json expects, every clean record passes."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.images.image_shards import cli_audit
from tests.paths import REPO

FIXTURES = REPO / "fixtures" / "images"
TRUTH = json.loads((FIXTURES / "truth.json").read_text())["layouts"]


@pytest.mark.parametrize("layout", sorted(TRUTH))
def test_every_planted_defect_and_no_clean_record(layout, tmp_path):
    truth = TRUTH[layout]
    res, report, _ = cli_audit([FIXTURES / layout], tmp_path / "out")
    assert res.exit_code == 1, res.output
    import pyarrow.parquet as pq

    got: dict[tuple[str, str], set[str]] = {}
    for f in pq.read_table(tmp_path / "out" / "flags.parquet").to_pylist():
        shard = Path(f["shard"]).relative_to(FIXTURES).as_posix()
        got.setdefault((shard, f["key"]), set()).add(f["check"])
    expected = {(shard, key): set(checks) for shard, keys in truth["planted"].items() for key, checks in keys.items()}
    assert got == expected
    clean = sum(len(keys) for keys in truth["clean"].values())
    assert report["totals"]["samples"] == clean + len(expected)
    assert report["totals"]["flagged"] == len(expected) and report["totals"]["unreadable_shards"] == 0
