"""`--sample N` / `--sample-fraction F`: a seeded sample spread over every shard, the flags of exactly the records
a full audit flags among them; Parquet reads only the row groups holding a sampled record. `--fail-on CHECK>RATE`:
the exit code from rates."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from dataaudit.audit.sample import ALL, Z95, chosen, draws, parquet_row_groups, plan_sample, wilson
from dataaudit.audit.sample_clusters import ratio_interval
from dataaudit.audit.gates import GateError, parse_gate
from dataaudit.cli import main
from dataaudit.sources.parquet import iter_parquet_row_groups
from dataaudit.sources.base import ROW

ROWS = 2000


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """Three Parquet shards of 2,000 records (row groups of 100) and a JSONL one of 500; every 10th Parquet record
    has a control character, every 25th record is empty (both warnings by default)."""
    folder = tmp_path_factory.mktemp("sample-corpus")
    for s in range(3):
        text = [f"Shard {s} record {i} tells of hills, rivers and roads number {i * 7 + s}." for i in range(ROWS)]
        for i in range(0, ROWS, 10):
            text[i] = f"bad \x00 control {s} {i}"
        for i in range(7, ROWS, 25):
            text[i] = ""
        pq.write_table(pa.table({"text": text}), folder / f"s{s}.parquet", row_group_size=100)
    lines = [json.dumps({"text": "" if i % 25 == 7 else f"json record {i} about lakes and ponds"}) for i in range(500)]
    (folder / "t.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def _audit(*args):
    return CliRunner().invoke(main, ["audit", *map(str, args), "--engine", "local"])


def _flags(out: Path) -> set[tuple]:
    t = pq.read_table(out / "flags.parquet", columns=["shard", "row", "check"])
    return set(zip(t["shard"].to_pylist(), t["row"].to_pylist(), t["check"].to_pylist()))


@pytest.fixture(scope="module")
def full(corpus, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("full")
    assert _audit(corpus, "--out", out).exit_code == 0
    return out


def test_draws_are_fixed_for_a_seed_shard_and_record():
    d = draws(0, "a.parquet", np.arange(3))
    assert d.dtype == np.uint64
    assert d.tolist() == draws(0, "a.parquet", np.array([0, 1, 2])).tolist()
    assert d.tolist() != draws(1, "a.parquet", np.arange(3)).tolist()
    assert d.tolist() != draws(0, "b.parquet", np.arange(3)).tolist()
    assert len(set(draws(0, "a.parquet", np.arange(100_000)).tolist())) == 100_000


def test_sample_of_n_takes_exactly_n_spread_over_every_shard(corpus, full, tmp_path):
    out = tmp_path / "o"
    res = _audit(corpus, "--out", out, "--sample", 300)
    assert res.exit_code == 0, res.output
    report = json.loads((out / "report.json").read_text())
    assert report["totals"]["samples"] == 300
    assert report["sample"]["population"] == 3 * ROWS + 500
    assert report["sample"]["records"] == 300 and report["sample"]["seed"] == 0 and report["sample"]["size"] == 300
    assert all(s["samples"] > 0 for s in report["shards"])
    # 16 cluster draws, a step of 6500 / 16 records: the JSONL shard's block of 500 is hit twice (one cluster)
    assert report["notes"][0].startswith("sample: 300 of 6500 records (300 records, seed 0, in 15 clusters (row "
                                         "groups or blocks of records) spread over the shards)")
    assert report["sample"]["design"] == "clusters" and report["sample"]["interval"] == "wilson-deff"
    assert report["sample"]["clusters"] == 15
    assert {Path(p).name: len(v) for p, v in report["config"]["sample"]["clusters"].items()} == \
        {"s0.parquet": 4, "s1.parquet": 5, "s2.parquet": 5, "t.jsonl": 1}
    assert "sample: 300 of 6500 records" in res.output
    # the sample's flags are exactly the full audit's flags on the sampled records
    sample = report["config"]["sample"]
    wanted = {f for f in _flags(full) if chosen(sample, f[0], np.array([f[1]]))[0]}
    assert _flags(out) == wanted and wanted
    # each check's interval: the ratio estimator over the clusters, counted here from the full audit's flags
    rates = report["sample"]["rates"]
    for name in ("control_chars", "empty_text"):
        k = report["checks"][name]["flagged"]
        n_j, k_j = [], []
        for path, spans in sample["clusters"].items():
            for lo, hi, _ in spans:
                rows = np.arange(lo, hi)
                n_j.append(int(chosen(sample, path, rows).sum()))
                k_j.append(len({r for s, r, c in wanted if s == path and c == name and lo <= r < hi}))
        assert sum(n_j) == 300 and sum(k_j) == k
        p, ci, deff = ratio_interval(np.array(k_j), np.array(n_j), Z95)
        assert rates[name] == {"flagged": k, "rate": round(k / 300, 6), "ci95": ci, "deff": deff}
    assert "Sample:" in (out / "report.html").read_text(encoding="utf-8")


def test_the_sample_is_the_same_on_every_run_and_engine_and_moves_with_the_seed(corpus, tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    assert _audit(corpus, "--out", a, "--sample", 200).exit_code == 0
    assert _audit(corpus, "--out", b, "--sample", 200, "--workers", 2).exit_code == 0
    assert _audit(corpus, "--out", c, "--sample", 200, "--seed", 7).exit_code == 0
    assert (a / "flags.parquet").read_bytes() == (b / "flags.parquet").read_bytes()
    rows = lambda o: {(s, r) for s, r, _ in _flags(o)}   # noqa: E731
    assert rows(a) != rows(c)


def test_sample_fraction_takes_the_records_whose_draw_is_under_it(corpus, full, tmp_path):
    out = tmp_path / "o"
    assert _audit(corpus, "--out", out, "--sample-fraction", 0.1, "--seed", 3).exit_code == 0
    report = json.loads((out / "report.json").read_text())
    sample = report["config"]["sample"]
    assert sample == {"seed": 3, "size": None, "fraction": 0.1, "threshold": int(0.1 * ALL), "population": None,
                      "design": "records"}
    assert report["sample"]["design"] == "records" and report["sample"]["interval"] == "wilson"
    expected = {s["path"]: int(chosen(sample, s["path"], np.arange(ROWS if s["path"].endswith(".parquet")
                                                                     else 500)).sum()) for s in report["shards"]}
    assert {s["path"]: s["samples"] for s in report["shards"]} == expected
    assert _flags(out) == {f for f in _flags(full) if chosen(sample, f[0], np.array([f[1]]))[0]}


def test_a_parquet_sample_reads_only_the_row_groups_holding_a_sampled_record(corpus):
    path = str(corpus / "s0.parquet")
    sample = plan_sample([path], seed=0, size=5)
    rows = np.flatnonzero(chosen(sample, path, np.arange(ROWS)))
    assert rows.size == 5
    groups = parquet_row_groups(sample, path, [100] * 20)
    assert groups == sorted(set((rows // 100).tolist()))
    read = np.concatenate([b.column(ROW).to_numpy() for b in iter_parquet_row_groups(path, groups, ["text"])])
    assert read.tolist() == [r for g in groups for r in range(g * 100, g * 100 + 100)]


def test_wilson_interval():
    assert wilson(5, 100) == [0.021544, 0.11175]     # (0.0215, 0.1118) in Newcombe (1998), table I
    assert wilson(0, 100) == [0.0, 0.036993]         # z² / (n + z²) = 0.0369935
    assert wilson(100, 100) == [0.963007, 1.0]
    assert wilson(0, 0) is None


def test_fail_on_sets_the_exit_code_from_rates(corpus, tmp_path):
    out = tmp_path / "o"
    # 600 control characters (9.23%) and 260 empty texts (240 + the JSONL's 20: 4%) in 6,500 records; 860 warned
    res = _audit(corpus, "--out", out, "--fail-on", "control_chars>10%", "--fail-on", "empty_text>0.1%",
                 "--fail-on", "warning>20%")
    assert res.exit_code == 1, res.output
    gates = json.loads((out / "report.json").read_text())["gates"]
    assert gates == [
        {"rule": "control_chars>10%", "name": "control_chars", "limit": 0.1, "flagged": 600, "samples": 6500,
         "rate": 0.092308, "exceeded": False, "ran": True},
        {"rule": "empty_text>0.1%", "name": "empty_text", "limit": 0.001, "flagged": 260, "samples": 6500,
         "rate": 0.04, "exceeded": True, "ran": True},
        {"rule": "warning>20%", "name": "warning", "limit": 0.2, "flagged": 860, "samples": 6500, "rate": 0.132308,
         "exceeded": False, "ran": True}]
    assert "fail-on empty_text>0.1%: 260 / 6500 = 4.0000% (EXCEEDED)" in res.output
    assert "fail-on control_chars>10%: 600 / 6500 = 9.2308% (ok)" in res.output
    assert "--fail-on exceeded: empty_text&gt;0.1%" in (out / "report.html").read_text(encoding="utf-8")


def test_fail_on_replaces_the_error_rule(corpus, tmp_path):
    config = tmp_path / "audit.toml"
    config.write_text('[checks.control_chars]\nseverity = "error"\n', encoding="utf-8")
    assert _audit(corpus, "--out", tmp_path / "plain", "--config", config).exit_code == 1
    ok = _audit(corpus, "--out", tmp_path / "ok", "--config", config, "--fail-on", "error>10%")
    assert ok.exit_code == 0, ok.output
    assert "fail-on error>10%: 600 / 6500 = 9.2308% (ok)" in ok.output
    assert "no --fail-on rule exceeded" in (tmp_path / "ok" / "report.html").read_text(encoding="utf-8")
    sampled = _audit(corpus, "--out", tmp_path / "s", "--config", config, "--fail-on", "error>0", "--sample", 500)
    assert sampled.exit_code == 1
    (gate,) = json.loads((tmp_path / "s" / "report.json").read_text())["gates"]
    severity = json.loads((tmp_path / "s" / "report.json").read_text())["sample"]["severities"]["error"]
    assert gate["samples"] == 500 and gate["exceeded"] and gate["ci95"] == severity["ci95"]
    assert severity["flagged"] == gate["flagged"] and severity["deff"] >= 1


@pytest.mark.parametrize("rule, message", [
    ("empty_text", "--fail-on 'empty_text': expected CHECK>RATE, e.g. empty_reply>0.1%, error>0, warning>5%"),
    ("empty_text>x%", "--fail-on 'empty_text>x%': expected CHECK>RATE, e.g. empty_reply>0.1%, error>0, warning>5%"),
    ("empty_text>150%", "--fail-on 'empty_text>150%': the rate must be between 0 and 100%"),
    ("no_such_check>0", "--fail-on 'no_such_check>0': 'no_such_check' is neither a check (`dataaudit` docs: checks) "
                        "nor a severity (info, warning, error)"),
])
def test_a_bad_rule_is_one_line_and_exit_2(corpus, tmp_path, rule, message):
    with pytest.raises(GateError) as err:
        parse_gate(rule)
    assert str(err.value) == message
    res = _audit(corpus, "--out", tmp_path / "o", "--fail-on", rule)
    assert res.exit_code == 2 and res.output.strip() == f"Error: {message}"


def test_rules_parse_percent_fraction_and_severity():
    assert parse_gate("empty_reply>0.1%").limit == pytest.approx(0.001)
    assert parse_gate(" error > 0 ").name == "error"
    assert parse_gate("warning>0.05").limit == 0.05


def test_sample_and_fraction_together_is_a_usage_error(corpus, tmp_path):
    res = _audit(corpus, "--out", tmp_path / "o", "--sample", 10, "--sample-fraction", 0.5)
    assert res.exit_code == 2 and "--sample and --sample-fraction: give one of them" in res.output


def test_clean_refuses_a_sampled_audit(corpus, tmp_path):
    audit_dir = tmp_path / "a"
    assert _audit(corpus, "--out", audit_dir, "--sample", 50).exit_code == 0
    res = CliRunner().invoke(main, ["clean", str(corpus), "--audit", str(audit_dir), "--out", str(tmp_path / "c")])
    assert res.exit_code == 2
    assert "the audit is a sample (--sample, --sample-fraction): clean needs the findings of every record" \
        in res.output
    assert not (tmp_path / "c").exists()
