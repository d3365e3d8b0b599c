"""`dataaudit dedup` end to end on a corpus with planted exact and near copies (fixtures/dedup_corpus.py)."""
from __future__ import annotations

import collections
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from dataaudit.cli import main
from dataaudit.dedup import DedupSpec
from fixtures.dedup_corpus import make_corpus, write_corpus
from dataaudit.pipelines.dedup import run_dedup
from dataaudit.pipelines.engine import EngineOptions

THRESHOLD = 0.5     # planted near copies (5-10% of words edited) have word-5-gram Jaccard 0.67-0.9


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("dedup_corpus")
    c = make_corpus(1500, seed=5, val_docs=150)
    manifest = write_corpus(d, c, shards=2)
    return d, c, manifest


@pytest.fixture(scope="module")
def local_run(corpus, tmp_path_factory):
    d, _, m = corpus
    out = tmp_path_factory.mktemp("dedup_local")
    report = run_dedup([str(d / f) for f in m["train"]], DedupSpec(threshold=THRESHOLD), out,
                       against=[str(d / m["val"])], options=EngineOptions("local"), partitions=1)
    return out, report


def _loc(row):
    return (os.path.basename(row["shard"]), row["row"])


def test_planted_clusters_found_and_pure(corpus, local_run):
    _, c, m = corpus
    out, report = local_run
    rows = pq.read_table(out / "clusters.parquet").to_pylist()
    cluster_of = {_loc(r): r["cluster_id"] for r in rows}
    group_of = {tuple(x): k for k, g in enumerate(m["groups"]) for x in g}
    found = total = 0
    for g in m["groups"]:
        for copy in g[1:]:
            total += 1
            found += cluster_of.get(tuple(copy), -1) == cluster_of.get(tuple(g[0]), -2)
    assert total == 75 + 120 and found / total >= 0.95
    # no cluster merges unrelated documents: every member belongs to the same planted group
    members = collections.defaultdict(set)
    for loc, cid in cluster_of.items():
        members[cid].add(group_of.get(loc, ("unrelated",) + loc))
    assert all(len(v) == 1 for v in members.values())
    # empty and one-word documents are never clustered
    kinds = dict(zip([(f, r) for f in m["train"] for r in range(pq.ParquetFile(corpus[0] / f).metadata.num_rows)],
                     m["kind"]))
    assert not any(kinds[loc] in ("empty", "one_word") for loc in cluster_of)
    assert report["empty_documents"] == 5
    # one representative per cluster, the first in corpus order
    by_cluster = collections.defaultdict(list)
    for r in rows:
        by_cluster[r["cluster_id"]].append(r)
    order = {f: i for i, f in enumerate(m["train"])}
    for members_ in by_cluster.values():
        reps = [r for r in members_ if r["is_representative"]]
        assert len(reps) == 1
        first = min(members_, key=lambda r: (order[os.path.basename(r["shard"])], r["row"]))
        assert reps[0] is first
        assert all(r["cluster_size"] == len(members_) for r in members_)


def test_exact_groups_and_counts(corpus, local_run):
    _, c, m = corpus
    _, r = local_run
    norm = {}
    for i, t in enumerate(c.texts):
        key = " ".join((t or "").lower().split())
        if key:
            norm.setdefault(key, []).append(i)
    groups = [g for g in norm.values() if len(g) > 1]
    assert r["exact"] == {"groups": len(groups), "documents": sum(map(len, groups)),
                          "duplicates": sum(map(len, groups)) - len(groups)}
    assert r["documents"] == 1500 and r["kept"] == 1500 - r["duplicates"]
    assert r["clusters"]["documents"] - r["clusters"]["count"] == r["duplicates"]
    assert sum(r["clusters"]["size_histogram"].values()) == r["clusters"]["count"]
    assert r["params"]["bands"] == 25 and r["params"]["rows"] == 5
    cl = pq.read_table(local_run[0] / "clusters.parquet")
    kinds = cl.column("kind").to_pylist()
    assert kinds.count("exact") == r["exact"]["documents"]
    eg = [g for g in cl.column("exact_group").to_pylist() if g >= 0]
    assert len(eg) == r["exact"]["documents"] and len(set(eg)) == r["exact"]["groups"]
    assert sorted(collections.Counter(eg).values()) == sorted(map(len, groups))


def test_keep_list(corpus, local_run):
    out, r = local_run
    keep = pq.read_table(out / "keep.parquet")
    assert keep.schema.names == ["shard", "key", "row", "line"]
    kept = set(zip([os.path.basename(s) for s in keep.column("shard").to_pylist()], keep.column("row").to_pylist()))
    dropped = {_loc(x) for x in pq.read_table(out / "clusters.parquet").to_pylist() if not x["is_representative"]}
    assert len(kept) == keep.num_rows == r["kept"] == 1500 - len(dropped)
    assert not kept & dropped


def test_validation_overlap_finds_every_planted_sample(corpus, local_run):
    _, _, m = corpus
    out, r = local_run
    ov = pq.read_table(out / "overlap.parquet").to_pylist()
    assert len(ov) == 150
    expected = {"exact": "exact", "near": "near", "new": "none"}
    for row, (_, kind, loc) in zip(ov, m["val_matches"]):
        assert row["match"] == expected[kind]
        if loc is not None:
            assert tuple(loc) in {_loc(t) for t in row["train"]}      # the train copy it was made from
    assert r["against"] == {"validation_samples": 150, "exact": 15, "near": 15, "overlapping": 30,
                            "overlap_rate": 0.2, "max_matches_listed": 20}


def test_html_escapes_and_shows_clusters(local_run):
    out, r = local_run
    html = (out / "dedup.html").read_text()
    assert "Example clusters" in html and "<mark>" in html and "Validation overlap" in html
    assert len(r["examples"]["clusters"]) == 8


def test_ray_engine_and_partitions_agree_with_local(corpus, local_run, ray_session, tmp_path):
    d, _, m = corpus
    out_local, rep_local = local_run
    rep = run_dedup([str(d / f) for f in m["train"]], DedupSpec(threshold=THRESHOLD), tmp_path,
                    against=[str(d / m["val"])], options=EngineOptions("ray"), partitions=3)
    assert rep["run"]["engine"] == "ray" and rep["params"]["partitions"] == 3
    for name in ("clusters.parquet", "keep.parquet", "overlap.parquet"):
        assert pq.read_table(tmp_path / name).equals(pq.read_table(out_local / name)), name
    strip = ("run", "params", "shards", "validation_shards")
    assert {k: v for k, v in rep.items() if k not in strip} == {k: v for k, v in rep_local.items() if k not in strip}


def test_resume_and_verify(corpus, local_run, tmp_path):
    d, _, m = corpus
    paths = [str(d / f) for f in m["train"]]
    first = run_dedup(paths, DedupSpec(threshold=THRESHOLD, verify=True), tmp_path, options=EngineOptions("local"))
    again = run_dedup(paths, DedupSpec(threshold=THRESHOLD), tmp_path, options=EngineOptions("local"))
    assert again["run"]["resumed_shards"] == 2          # signatures reused (verification wrote a superset)
    assert again["duplicates"] == local_run[1]["duplicates"]
    v = first["near"]["verification"]
    assert v["confirmed_pairs"] + v["rejected_pairs"] == v["candidate_pairs"]
    assert first["duplicates"] >= again["duplicates"] - 2    # planted copies all have Jaccard >= 0.67
    other = run_dedup(paths, DedupSpec(threshold=0.8), tmp_path, options=EngineOptions("local"))
    assert other["run"]["resumed_shards"] == 2 and other["params"]["bands"] == 9
    assert other["exact"] == again["exact"] and other["near"]["duplicates"] < again["near"]["duplicates"]


def test_empty_and_one_word_documents(tmp_path):
    texts = [None, "", "  ", "\n", "word", "word", "Word", "other", "", None]
    pq.write_table(pa.table({"text": pa.array(texts, pa.string())}), tmp_path / "a.parquet")
    r = run_dedup([str(tmp_path / "a.parquet")], DedupSpec(), tmp_path / "out", options=EngineOptions("local"))
    assert r["empty_documents"] == 6
    assert r["exact"] == {"groups": 1, "documents": 3, "duplicates": 2}   # "word" x3 (lowercased)
    rows = pq.read_table(tmp_path / "out" / "clusters.parquet").to_pylist()
    assert [(x["row"], x["is_representative"], x["kind"]) for x in rows] == [(4, True, "exact"), (5, False, "exact"),
                                                                            (6, False, "exact")]
    assert r["kept"] == 8


def _cli(args):
    return CliRunner().invoke(main, args, catch_exceptions=False)


def test_cli_exit_codes_and_output(corpus, tmp_path):
    d, _, m = corpus
    train = [str(d / f) for f in m["train"]]
    res = _cli(["dedup", *train, "--out", str(tmp_path / "a"), "--threshold", "0.5"])
    assert res.exit_code == 0, res.output
    assert "exact duplicates" in res.output and "duplicate rate" in res.output
    for f in ("dedup.json", "clusters.parquet", "keep.parquet", "dedup.html"):
        assert (tmp_path / "a" / f).exists()
    # --against takes several values; a leak is error severity: exit 1
    res = _cli(["dedup", train[0], "--against", str(d / m["val"]), train[1], "--out", str(tmp_path / "b"),
                "--threshold", "0.5"])
    assert res.exit_code == 1
    r = json.loads((tmp_path / "b" / "dedup.json").read_text())
    assert len(r["shards"]) == 1 and len(r["validation_shards"]) == 2
    assert r["against"]["overlapping"] > 0


@pytest.mark.parametrize("args,needle", [
    (["missing.parquet"], "missing.parquet: path not found"),
    (["{train}", "--threshold", "1.5"], "--threshold"),
    (["{train}", "--against", "nope.jsonl"], "nope.jsonl: path not found"),
    (["{train}", "--partitions", "zero"], "--partitions"),
    (["{train}", "--against", "{train}"], "given both as a training shard and in --against"),
])
def test_cli_usage_errors_exit_2(corpus, tmp_path, args, needle):
    d, _, m = corpus
    args = [a.format(train=str(d / m["train"][0])) for a in args]
    res = _cli(["dedup", *args, "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and needle in res.output


def test_unreadable_shard_reported_exit_1(corpus, tmp_path):
    d, _, m = corpus
    bad = tmp_path / "broken.parquet"
    bad.write_bytes(b"PAR1 this is not parquet")
    res = _cli(["dedup", str(d / m["train"][0]), str(bad), "--out", str(tmp_path / "o")])
    assert res.exit_code == 1 and "unreadable" in res.output
    r = json.loads((tmp_path / "o" / "dedup.json").read_text())
    assert [s["status"] for s in r["shards"]] == ["ok", "unreadable"] and r["unreadable_shards"] == 1
    assert r["documents"] == pq.ParquetFile(d / m["train"][0]).metadata.num_rows


def test_jsonl_content_field_and_html_escaping(tmp_path):
    evil = "<script>alert(1)</script> " + " ".join(f"w{i}" for i in range(30))
    lines = [{"content": evil, "id": 1}, {"content": evil.replace("w3 ", "w3x "), "id": 2},
             {"content": "something else entirely here", "id": 3}]
    p = tmp_path / "x.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in lines) + "\nnot json\n")
    r = run_dedup([str(p)], DedupSpec(threshold=0.5), tmp_path / "o", options=EngineOptions("local"))
    assert r["shards"][0]["text_field"] == "content" and r["unreadable_records"] == 1
    assert r["clusters"]["count"] == 1 and r["near"]["documents"] == 2
    html = (tmp_path / "o" / "dedup.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert" not in html
