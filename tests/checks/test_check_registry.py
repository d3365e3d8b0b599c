"""A check is one function and its registration: a stateful check registered here, in a test module, runs in the
audit, its state merges over batches and shards with its own merge, and its report section and notes appear,
with no runner knowing its name."""
from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from dataaudit.audit.shard import audit_shard
from dataaudit.checks import REGISTRY, CheckOutput, SettingError, ShardState, register
from dataaudit.config import ConfigError, build_config
from dataaudit.pipelines.audit import run_audit
from dataaudit.pipelines.engine import EngineOptions

NAME = "probe_text_chars"
A_TEXTS = ["short", "a much longer text", "tiny", "another long one here", "x"]   # 5, 18, 4, 21, 1 chars
B_TEXTS = ["hello world!!", "ok", "abcdefghijk"]                                   # 13, 2, 11 chars


def _start() -> dict:
    return {"rows": 0, "chars": 0, "batches": 0}


def _merge(into: dict, part: dict) -> dict:
    for k in into:
        into[k] += part[k]
    return into


def _section(total: dict, shards: list, settings, data) -> dict | None:
    if not settings.enabled:
        return None
    return {**total, "per_shard": {Path(p).name: st["rows"] for p, st in shards if st is not None}}


def _notes(section: dict) -> list[str]:
    return [f"{NAME}: {section['chars']} characters in {section['rows']} records"]


def _resolve_data(data: dict, folder) -> None:
    n = data.get("probe_max_chars", 10)
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise SettingError(f"[data] probe_max_chars must be a positive integer, got {n!r}")


@pytest.fixture
def probe():
    """Register the check for one test (every config built meanwhile includes it), then remove it."""

    @register(NAME, target="text", severity="warning", params={"max_chars": 10},
              data={"probe_max_chars": "max_chars"}, resolve_data=_resolve_data,
              state=ShardState(start=_start, merge=_merge, section=_section, notes=_notes),
              detail="{value:.0f} chars > {max_chars}", description="test: texts longer than max_chars")
    def probe_text_chars(texts: pa.Array, state: dict, max_chars: int = 10) -> CheckOutput:
        lengths = pc.fill_null(pc.utf8_length(texts), 0).to_numpy(zero_copy_only=False)
        part = {"rows": len(texts), "chars": int(lengths.sum()), "batches": 1}
        return CheckOutput(flagged=lengths > max_chars, value=lengths.astype("float64"), state=part)

    yield REGISTRY[NAME]
    del REGISTRY[NAME]


@pytest.fixture
def shards(tmp_path) -> list[str]:
    pq.write_table(pa.table({"text": A_TEXTS}), tmp_path / "a.parquet")
    (tmp_path / "b.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in B_TEXTS))
    return [str(tmp_path / "a.parquet"), str(tmp_path / "b.jsonl")]


def test_registered_stateful_check_runs_merges_and_reports(probe, shards, tmp_path):
    config = build_config({"data": {"probe_max_chars": 10}})
    assert config.check(NAME).params == {"max_chars": 10}
    # Two rows per batch: three batches in a.parquet, two in b.jsonl.
    report = run_audit(shards, config, tmp_path / "out",
                       options=EngineOptions("local"), stage=partial(audit_shard, batch_rows=2))
    assert report[NAME] == {"rows": 8, "chars": 75, "batches": 5, "per_shard": {"a.parquet": 5, "b.jsonl": 3}}
    assert list(report)[-1] == NAME and list(report["checks"])[-1] == NAME   # registry order: registered last
    assert report["checks"][NAME] == {"severity": "warning", "flagged": 4, "ran": True, "skipped": None,
                                      "params": {"max_chars": 10},
                                      "description": "test: texts longer than max_chars"}
    assert f"{NAME}: 75 characters in 8 records" in report["notes"]
    assert NAME not in report["examples"]     # its section is where it reports (ShardState.examples)
    flags = pq.read_table(tmp_path / "out" / "flags.parquet").filter(pc.equal(pc.field("check"), NAME))
    assert [(Path(r["shard"]).name, r["row"], r["field"], r["value"], r["detail"]) for r in flags.to_pylist()] == [
        ("a.parquet", 1, "text", 18.0, "18 chars > 10"), ("a.parquet", 3, "text", 21.0, "21 chars > 10"),
        ("b.jsonl", 0, "text", 13.0, "13 chars > 10"), ("b.jsonl", 2, "text", 11.0, "11 chars > 10")]


def test_state_is_per_shard_and_in_its_summary(probe, shards):
    config = build_config({})
    result, flags = audit_shard(shards[0], config, batch_rows=2)
    assert result.summary()[NAME] == {"rows": 5, "chars": 49, "batches": 3}
    assert result.checks[NAME] == 2 and flags.num_rows == 2


def test_disabled_check_has_no_state_and_no_section(probe, shards, tmp_path):
    config = build_config({"checks": {NAME: {"enabled": False}}})
    result, _ = audit_shard(shards[0], config)
    assert result.summary()[NAME] is None and result.skipped[NAME] == "disabled in config"
    report = run_audit(shards, config, tmp_path, options=EngineOptions("local"))
    assert NAME not in report and report["checks"][NAME]["skipped"] == "disabled in config"


def test_its_data_key_is_validated_by_the_check(probe):
    with pytest.raises(ConfigError) as err:
        build_config({"data": {"probe_max_chars": 0}}, "audit.toml")
    assert str(err.value) == "audit.toml: [data] probe_max_chars must be a positive integer, got 0"


def test_unregistered_check_leaves_no_trace(shards, tmp_path):
    """Once removed from the registry, configs and reports are as if it had never been registered."""
    assert NAME not in REGISTRY
    with pytest.raises(ConfigError, match="unknown key 'probe_max_chars'"):
        build_config({"data": {"probe_max_chars": 10}})
    report = run_audit(shards, build_config({}), tmp_path, options=EngineOptions("local"))
    assert NAME not in report and NAME not in report["checks"]
