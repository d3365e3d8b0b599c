"""A hostile shard costs only itself: a good shard audited beside it gets exactly the summary and flags it gets
alone (issue: "outputs of good shards identical with and without a hostile shard beside them")."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dataaudit.pipelines.engine import EngineOptions
from tests.hostile_inputs import HOSTILE
from tests.paths import needs_shared

ROWS = 64


def _good_shard(folder: Path) -> Path:
    """64 records: a NaN score in rows 3 and 40, an empty text in row 7 (flags to compare, not an empty list)."""
    folder.mkdir(parents=True, exist_ok=True)
    texts = [f"record {i} says something ordinary about sample number {i}." for i in range(ROWS)]
    texts[7] = ""
    scores = [float(i) for i in range(ROWS)]
    scores[3] = scores[40] = float("nan")
    path = folder / "good.parquet"
    pq.write_table(pa.table({"text": texts, "score": scores}), path)
    return path


def _audit(paths: list[Path], config: dict | None, out: Path) -> tuple[dict, list[dict]]:
    """The good shard's (last path's) summary and its flag rows, without what names where it was read from."""
    from dataaudit.config import build_config
    from dataaudit.pipelines.audit import run_audit

    report = run_audit([str(p) for p in paths], build_config(config or {}), out, options=EngineOptions("local"))
    good = str(paths[-1])
    summary = next(s for s in report["shards"] if s["path"] == good)
    summary = {k: v for k, v in summary.items() if k not in ("path", "fingerprint")}
    flags = [{k: v for k, v in row.items() if k != "shard"}
             for row in pq.read_table(out / "flags.parquet").to_pylist() if row["shard"] == good]
    return summary, sorted(flags, key=lambda r: json.dumps(r, sort_keys=True, default=str))


@pytest.fixture(scope="module")
def alone(tmp_path_factory):
    """The good shard audited alone, once per config the hostile inputs use."""
    folder = tmp_path_factory.mktemp("good")
    good = _good_shard(folder)
    cache: dict[str, tuple] = {}

    def get(config: dict | None):
        key = json.dumps(config or {}, sort_keys=True)
        if key not in cache:
            cache[key] = _audit([good], config, folder / f"out-{len(cache)}")
        return good, cache[key]
    return get


def test_the_good_shard_has_findings_to_compare(alone):
    _, (summary, flags) = alone(None)
    assert (summary["samples"], summary["status"]) == (ROWS, "ok")
    assert sorted((f["row"], f["check"]) for f in flags) == [(3, "nonfinite"), (7, "empty_text"),
                                                             (40, "nonfinite")]


@pytest.mark.parametrize("hostile", [pytest.param(h, marks=needs_shared if h.shared else ()) for h in HOSTILE],
                         ids=[h.name for h in HOSTILE])
def test_a_good_shard_is_audited_the_same_beside_a_hostile_one(hostile, alone, tmp_path):
    good, expected = alone(hostile.config)
    bad = hostile.build(tmp_path)
    assert _audit([bad, good], hostile.config, tmp_path / "out") == expected
