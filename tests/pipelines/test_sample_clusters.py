"""`--sample N` as a cluster sample (dataaudit.audit.sample_clusters): which clusters and records, and the interval
of a rate with the clusters' design effect, on small cases worked by hand."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from dataaudit.audit.sample import Z95, chosen, draws, plan_sample, read_share, sample_section, wilson
from dataaudit.audit.sample_clusters import flagged_per_cluster, plan_clusters, ratio_interval, t975


def test_the_interval_of_clusters_that_differ_is_wilson_at_the_effective_size():
    # k = (0, 0, 0, 0, 5) of n = 10 each: p = 0.1; between-cluster variance 5/4 * (4 * 1² + 4²) / 50² = 0.01 against
    # the binomial 0.1 * 0.9 / 50 = 0.0018: a design effect of 5.5556, an effective size of 9, and Student's
    # t(4) = 2.7764 for the normal's 1.96: centre (0.1 + t²/18) / (1 + t²/9) = 0.284539,
    # half t sqrt(0.09/9 + t²/324) / (1 + t²/9) = 0.274910
    assert ratio_interval(np.array([0, 0, 0, 0, 5]), np.array([10] * 5), Z95) == (0.1, [0.009628, 0.559451], 5.5556)
    assert wilson(0.9, 9, 2.7764) == [0.009628, 0.559451]
    # k = (1, 3) of (10, 10): p = 0.2, variance 2 * (1 + 1) / 400 = 0.01 over 0.16 / 20 = 0.008: deff 1.25, n 16,
    # and t(1) = 12.7062: two clusters say little
    assert ratio_interval(np.array([1, 3]), np.array([10, 10]), Z95) == (0.2, wilson(3.2, 16, 12.7062), 1.25)
    assert t975(4) == 2.7764 and abs(t975(60) - 2.0003) < 1e-4     # 2.000298 (scipy.special.stdtrit(60, 0.975))


def test_clusters_alike_or_too_few_give_the_plain_wilson_interval():
    # the same rate in every cluster: no between-cluster variance; the design effect is floored at 1
    assert ratio_interval(np.array([2, 2, 2]), np.array([10, 10, 10]), Z95) == (0.2, wilson(6, 30), 1.0)
    assert ratio_interval(np.array([3]), np.array([10]), Z95) == (0.3, wilson(3, 10), 1.0)   # one cluster
    assert ratio_interval(np.array([0, 4]), np.array([0, 10]), Z95) == (0.4, wilson(4, 10), 1.0)   # one with records
    assert ratio_interval(np.array([]), np.array([]), Z95) == (None, None, None)


def test_the_clusters_are_drawn_systematically_and_take_n_records_in_all():
    # 3 shards of 100 records, 9 records in at least 3 clusters (one per shard): a step of 100 records, so every
    # shard is hit once; each cluster gives its 3 records with the smallest draws
    plan = plan_clusters(["a", "b", "c"], [[100, 100], [100], [100]], 0, 9, clusters=2)
    assert {p: [s[:2] for s in spans] for p, spans in plan.items()} == {"a": [[100, 200]], "b": [[0, 100]],
                                                                        "c": [[0, 100]]}
    sample = {"seed": 0, "design": "clusters", "clusters": plan}
    for path, [[lo, hi, limit]] in plan.items():
        d = draws(0, path, np.arange(lo, hi))
        assert limit == int(np.sort(d)[2])
        assert np.flatnonzero(chosen(sample, path, np.arange(0, 300))).tolist() == \
            (lo + np.sort(np.argsort(d)[:3])).tolist()
    assert plan == plan_clusters(["a", "b", "c"], [[100, 100], [100], [100]], 0, 9, clusters=2)   # deterministic
    assert plan != plan_clusters(["a", "b", "c"], [[100, 100], [100], [100]], 1, 9, clusters=2)


def test_a_sample_of_parquet_shards_is_a_cluster_sample_of_row_groups_over_every_shard(tmp_path):
    paths = []
    for s in range(4):
        paths.append(str(tmp_path / f"s{s}.parquet"))
        pq.write_table(pa.table({"text": [f"{s} {i}" for i in range(1000)]}), paths[-1], row_group_size=100)
    sample = plan_sample(paths, seed=5, size=64, clusters=8)
    assert sample["design"] == "clusters" and sample["population"] == 4000 and sample["threshold"] is None
    # 8 clusters, a step of 500 records: two row groups of every shard, 8 records of each
    assert sorted(sample["clusters"]) == paths and all(len(v) == 2 for v in sample["clusters"].values())
    assert all(hi - lo == 100 for v in sample["clusters"].values() for lo, hi, _ in v)
    assert [int(chosen(sample, p, np.arange(1000)).sum()) for p in paths] == [16, 16, 16, 16]
    assert plan_sample(paths, seed=5, size=64, clusters=8) == sample
    assert read_share(sample) == 800 / 4000       # 8 row groups of 100 records read, of 4,000


def test_the_report_names_the_design_and_its_intervals():
    sample = {"seed": 0, "size": 40, "fraction": None, "population": 400, "design": "clusters",
              "clusters": {"a": [[0, 100, 1], [100, 200, 1]], "b": [[0, 100, 1]]}}
    # the flags of shard a: rows 3 and 150 by empty_text (warning), row 3 also by control_chars (warning)
    flags = pa.table({"row": [3, 150, 3], "check": ["empty_text", "empty_text", "control_chars"],
                      "severity": ["warning", "warning", "warning"]})
    counts_a = flagged_per_cluster(sample["clusters"]["a"], flags)
    assert counts_a == {"control_chars": [1, 0], "empty_text": [1, 1], "warning": [1, 1]}
    summaries = [{"path": "a", "severities": {"warning": 2},
                  "sample_clusters": {"records": [10, 20], "flagged": counts_a}},
                 {"path": "b", "severities": {}, "sample_clusters": {"records": [10], "flagged": {}}}]
    report = {"totals": {"samples": 40}, "checks": {"empty_text": {"flagged": 2, "ran": True},
                                                    "control_chars": {"flagged": 1, "ran": True}}}
    section = sample_section(report, sample, summaries)
    assert section["design"] == "clusters" and section["interval"] == "wilson-deff" and section["clusters"] == 3
    # empty_text: k = (1, 1, 0) of n = (10, 20, 10): p = 0.05; 3/2 * (0.5² + 0² + 0.5²) / 40² = 0.000234375
    # against 0.05 * 0.95 / 40 = 0.0011875: floored at 1
    assert section["rates"]["empty_text"] == {"flagged": 2, "rate": 0.05, "ci95": wilson(2, 40), "deff": 1.0}
    assert section["severities"]["warning"]["ci95"] == wilson(2, 40)
    assert section["note"].startswith("sample: 40 of 400 records (40 records, seed 0, in 3 clusters (row groups "
                                      "or blocks of records) spread over the shards)")


def test_without_a_parquet_shard_a_sample_of_n_is_a_sample_of_records(tmp_path):
    # nothing to skip in a JSONL shard (it is read through): the N records with the smallest draws
    path = tmp_path / "t.jsonl"
    path.write_text("".join(f'{{"text": "line {i}"}}\n' for i in range(200)), encoding="utf-8")
    sample = plan_sample([str(path)], seed=2, size=7)
    assert sample["design"] == "records" and sample["population"] == 200 and "clusters" not in sample
    assert read_share(sample) == 1.0              # every record is read, for its draw
    d = draws(2, str(path), np.arange(200))
    assert sample["threshold"] == int(np.sort(d)[6]) + 1
    assert np.flatnonzero(chosen(sample, str(path), np.arange(200))).tolist() == np.sort(np.argsort(d)[:7]).tolist()


def test_a_sample_decodes_only_the_checked_columns_unless_asked(tmp_path):
    # a column no check reads (`meta`, a struct) is not decoded by a sample, and a note says so; --read all-columns
    # decodes it
    import json

    from click.testing import CliRunner

    from dataaudit.cli import main

    data = tmp_path / "data"
    data.mkdir()
    pq.write_table(pa.table({"text": [f"record {i} of a shard" for i in range(300)],
                             "meta": [{"url": f"https://example.com/{i}"} for i in range(300)]}),
                   data / "a.parquet", row_group_size=100)
    for extra, not_decoded in (([], ["meta"]), (["--read", "all-columns"], [])):
        out = tmp_path / f"o{len(extra)}"
        res = CliRunner().invoke(main, ["audit", str(data), "--out", str(out), "--engine", "local", "--sample", "30",
                                        *extra])
        assert res.exit_code == 0, res.output
        report = json.loads((out / "report.json").read_text())
        assert report["config"]["read"] == ("checked-columns" if not extra else "all-columns")
        assert report["shards"][0]["not_decoded"] == not_decoded
        noted = any("1 column(s) not decoded (--read checked-columns)" in n for n in report["notes"])
        assert noted == (extra == [])
        assert report["sample"]["design"] == "clusters" and report["totals"]["samples"] == 30


def test_a_sample_does_not_hash_its_shards_and_a_rerun_redoes_them(tmp_path):
    # hashing a shard reads every byte of it, which a sample is there not to do; without a hash a part is never
    # taken for the same shard's, so a rerun audits again (never a stale part)
    import json

    from click.testing import CliRunner

    from dataaudit.cli import main

    data = tmp_path / "data"
    data.mkdir()
    pq.write_table(pa.table({"text": [f"record {i}" for i in range(300)]}), data / "a.parquet", row_group_size=100)
    out = tmp_path / "o"
    for _ in range(2):
        res = CliRunner().invoke(main, ["audit", str(data), "--out", str(out), "--engine", "local", "--sample", "30"])
        assert res.exit_code == 0, res.output
        report = json.loads((out / "report.json").read_text())
        assert report["shards"][0]["fingerprint"]["xxh3_128"] is None
        assert report["shards"][0]["fingerprint"]["size"] == (data / "a.parquet").stat().st_size
        assert report["run"]["resumed_shards"] == 0
