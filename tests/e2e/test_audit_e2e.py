"""End to end: the audit of the generated fixtures flags exactly the manifest, through the CLI and the API."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from dataaudit.cli import main
from dataaudit.config import load_config
from dataaudit.pipelines.audit import run_audit
from dataaudit.pipelines.engine import EngineOptions
from tests.paths import REPO

CONFIG = REPO / "fixtures" / "audit.toml"


def _triples(flags_table, root: Path) -> set[tuple]:
    rows = flags_table.select(["shard", "key", "row", "check"]).to_pylist()
    return {(str(Path(r["shard"]).relative_to(root)), r["key"], r["row"], r["check"]) for r in rows}


@pytest.fixture(scope="module")
def demo_run(fixture_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("audit")
    result = CliRunner().invoke(main, ["audit", str(fixture_dir), "--config", str(CONFIG),
                                       "--out", str(out), "--engine", "local"])
    return result, out


def test_flags_equal_manifest_exactly(demo_run, fixture_dir, manifest):
    result, out = demo_run
    found = _triples(pq.read_table(out / "flags.parquet"), fixture_dir)
    expected = {(d["shard"], d["key"], d["row"], d["check"]) for d in manifest["defects"]}
    assert found - expected == set(), "false flags"
    assert expected - found == set(), "missed defects"


def test_report_totals_and_shards(demo_run, fixture_dir, manifest):
    result, out = demo_run
    assert result.exit_code == 1, result.output       # errors planted -> exit 1
    report = json.loads((out / "report.json").read_text())
    shards = {str(Path(s["path"]).relative_to(fixture_dir)): s for s in report["shards"]}
    assert set(shards) == set(manifest["shards"])
    for name, info in manifest["shards"].items():
        assert shards[name]["samples"] == info["samples"], name
    assert {n for n, s in shards.items() if s["status"] == "unreadable"} == set(manifest["unreadable_shards"])
    assert all(shards[n]["error"] for n in manifest["unreadable_shards"])
    assert report["totals"]["samples"] == sum(s["samples"] for s in report["shards"]) == 468
    assert report["totals"]["unreadable_shards"] == 2
    flagged_records = {(d["shard"], d["row"]) for d in manifest["defects"]}
    assert report["totals"]["flagged"] == len(flagged_records)
    per_check = {}
    for d in manifest["defects"]:
        per_check.setdefault(d["check"], set()).add((d["shard"], d["row"]))
    assert {c: v["flagged"] for c, v in report["checks"].items() if v["flagged"]} == \
        {c: len(v) for c, v in per_check.items()}


def test_report_contract_fields(demo_run):
    _, out = demo_run
    report = json.loads((out / "report.json").read_text())
    assert report["schema_version"] == 1
    assert set(report["totals"]) >= {"samples", "flagged", "shards", "unreadable_shards"}
    assert report["checks"]["nonfinite"]["severity"] == "error"
    for shard in report["shards"]:
        assert set(shard) >= {"path", "samples", "flagged", "status", "error"}
    text = report["lengths"]["text"]
    assert text["unit"] == "chars" and set(text["quantiles"]) == {"p50", "p90", "p99"}
    assert report["lengths"]["input_ids"]["context_length"] == 64
    assert report["lengths"]["input_ids"]["over_context"] == 3
    schema = pq.read_schema(out / "flags.parquet")
    assert schema.names == ["shard", "key", "row", "line", "field", "role", "check", "severity", "value", "detail",
                            "start", "end"]


def test_html_is_self_contained_and_escaped(demo_run):
    _, out = demo_run
    html = (out / "report.html").read_text()
    assert "<script" not in html and "http://" not in html.replace("http://www.w3.org", "")
    assert "\\x00" in html or "\\x07" in html or "\\x1b" in html   # controls shown, not emitted
    assert html.count("<svg") >= 2          # length charts drawn inline
    assert not any(ord(c) < 32 and c not in "\t\n\r" for c in html)


def test_local_and_ray_engines_agree(fixture_dir, tmp_path, ray_session):
    config = load_config(CONFIG)
    reports, flags = {}, {}
    for engine in ("local", "ray"):
        out = tmp_path / engine
        report = run_audit([str(p) for p in sorted(fixture_dir.rglob("*")) if p.is_file() and p.suffix != ".json"],
                           config, out, options=EngineOptions(engine))
        report.pop("run")
        reports[engine] = report
        flags[engine] = pq.read_table(out / "flags.parquet")
    assert reports["local"] == reports["ray"]
    assert flags["local"].equals(flags["ray"])


def test_rerun_skips_finished_shards_and_gives_same_report(fixture_dir, tmp_path):
    config = load_config(CONFIG)
    paths = [str(fixture_dir / "train-000.parquet"), str(fixture_dir / "images-000.tar")]
    first = run_audit(paths, config, tmp_path, options=EngineOptions("local"))
    second = run_audit(paths, config, tmp_path, options=EngineOptions("local"))
    assert second["run"]["resumed_shards"] == 2
    first.pop("run"), second.pop("run")
    assert first == second


def test_usage_errors_exit_2_with_one_line(tmp_path, fixture_dir):
    runner = CliRunner()
    missing = runner.invoke(main, ["audit", str(tmp_path / "nope.parquet"), "--out", str(tmp_path / "o")])
    assert missing.exit_code == 2 and "nope.parquet: path not found" in missing.output
    bad_cfg = tmp_path / "bad.toml"
    bad_cfg.write_text("[checks.no_such_check]\nenabled = true\n")
    res = runner.invoke(main, ["audit", str(fixture_dir / "train-000.parquet"), "--config", str(bad_cfg),
                               "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "bad.toml: unknown check [checks.no_such_check]" in res.output
    unsupported = tmp_path / "data.xlsx"
    unsupported.write_text("a,b\n")
    res = runner.invoke(main, ["audit", str(unsupported), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "data.xlsx" in res.output


def test_clean_shard_exits_0(tmp_path):
    import pyarrow as pa

    shard = tmp_path / "clean.parquet"
    pq.write_table(pa.table({"text": ["A perfectly ordinary sentence about the weather today."] * 3}), shard)
    res = CliRunner().invoke(main, ["audit", str(shard), "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert report["totals"] == {"samples": 3, "flagged": 0, "passed": 3, "shards": 1, "unreadable_shards": 0,
                                "field_warnings": 0}


def test_progress_counts_every_sample(fixture_dir, tmp_path):
    seen = []
    paths = [str(fixture_dir / "train-000.parquet"), str(fixture_dir / "train-001.parquet")]
    run_audit(paths, load_config(CONFIG), tmp_path, options=EngineOptions("local"),
              on_progress=lambda p: seen.append((p.done, p.records)))
    assert seen[0] == (0, 0) and seen[-1] == (2, 320)
    assert [s for s in seen if s[0] == 0][-1] == (0, 200)   # batch-level progress inside the first shard
    assert all(a <= b for a, b in zip(seen, seen[1:]))
