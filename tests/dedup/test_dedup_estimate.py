"""--estimate: candidate pairs kept by their signatures' estimated Jaccard, LSH bands chosen for recall."""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from dataaudit.cli import main
from dataaudit.dedup import DedupSpec
from dataaudit.dedup.clusters import estimate_pairs
from dataaudit.dedup.corpus import Corpus
from dataaudit.dedup.signature_columns import signature_array
from fixtures.dedup_corpus import make_corpus
from dataaudit.pipelines.dedup import run_dedup
from dataaudit.pipelines.engine import EngineOptions


def test_bands_and_fingerprint():
    assert DedupSpec(threshold=0.8).bands() == (9, 13)
    assert DedupSpec(threshold=0.8, estimate=True).bands() == (16, 8)
    assert DedupSpec(threshold=0.5, estimate=True).bands() == (26, 3)
    # the signatures do not depend on it: parts are reused when it changes
    assert DedupSpec(estimate=True).signature_fingerprint() == DedupSpec().signature_fingerprint()


def test_estimate_pairs_counts_equal_values(tmp_path):
    sig = np.arange(4 * 10, dtype=np.uint32).reshape(4, 10)
    sig[1, :8] = sig[0, :8]          # doc 1 agrees with doc 0 on 8 of 10 values
    sig[2, :7] = sig[0, :7]          # doc 2: 7 of 10
    sig[3, :] = sig[1, :]            # doc 3 == doc 1
    part = tmp_path / "part.parquet"
    pq.write_table(pa.table({"sig": signature_array(sig)}), part)
    corpus = Corpus(["shard"], [str(part)], [{"records": 4}], 0)
    src, dst, j = estimate_pairs(np.array([0, 0, 1, 3]), np.array([1, 2, 3, 2]), [corpus], 0.8)
    assert j.tolist() == [0.8, 0.7, 1.0, 0.7]
    assert src.tolist() == [0, 1] and dst.tolist() == [1, 3]


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    d = tmp_path_factory.mktemp("estimate")
    c = make_corpus(800, seed=9, edit=(0.01, 0.05))
    pq.write_table(pa.table({"text": pa.array(c.texts, pa.string())}), d / "train.parquet")
    return d, c


def test_run_with_estimate(shards, tmp_path):
    d, c = shards
    plain = run_dedup([str(d / "train.parquet")], DedupSpec(threshold=0.8), tmp_path / "plain",
                      options=EngineOptions("local"))
    est = run_dedup([str(d / "train.parquet")], DedupSpec(threshold=0.8, estimate=True), tmp_path / "est",
                    options=EngineOptions("local"))
    assert (est["params"]["bands"], est["params"]["rows"], est["params"]["estimate"]) == (16, 8, True)
    v = est["near"]["verification"]
    assert v["by"] == "estimated Jaccard"
    assert (v["candidate_pairs"], v["confirmed_pairs"], v["rejected_pairs"]) == (137, 88, 49)
    assert est["exact"] == plain["exact"]
    assert (plain["duplicates"], est["duplicates"]) == (78, 86)
    planted = int((c.origin >= 0).sum())
    assert planted == 104
    # every document estimate drops is a planted copy or an original of one (no unrelated document)
    got = pq.read_table(tmp_path / "est" / "clusters.parquet").column("row").to_pylist()
    related = set(np.flatnonzero(c.origin >= 0).tolist()) | set(c.origin[c.origin >= 0].tolist())
    assert set(got) <= related


def test_cli_flag(shards, tmp_path):
    d, _ = shards
    res = CliRunner().invoke(main, ["dedup", str(d / "train.parquet"), "--out", str(tmp_path / "o"), "--estimate",
                                    "--engine", "local"])
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "o" / "dedup.json").read_text())
    assert report["params"]["estimate"] is True and report["duplicates"] == 86
    assert "estimated Jaccard" in (tmp_path / "o" / "dedup.html").read_text()


def test_verified_run_keeps_shingle_sets_beside_the_parts_and_reuses_them(shards, tmp_path):
    """--verify: each part's shingle sets go to an Arrow IPC file beside it (the Parquet part has no list column);
    a rerun reuses the parts with their sets, a part whose sets are missing is signed again, and a part signed
    without sets is not reused for verification."""
    d, _ = shards
    shard = [str(d / "train.parquet")]
    spec = DedupSpec(threshold=0.8, estimate=True, verify=True)
    first = run_dedup(shard, spec, tmp_path / "o", options=EngineOptions("local"))
    (part,) = (tmp_path / "o" / "parts").glob("*.sig.parquet")
    sets = part.with_name(part.name.replace(".sig.parquet", ".shingles.arrow"))
    assert "shingles" not in pq.read_schema(part).names
    with pa.memory_map(str(sets)) as source:
        table = pa.ipc.open_file(source).read_all()
        assert table.column_names == ["shingles"] and table.num_rows == 800
    v = first["near"]["verification"]
    assert v["by"] == "exact Jaccard" and v["candidate_pairs"] == v["confirmed_pairs"] + v["rejected_pairs"] > 0
    again = run_dedup(shard, spec, tmp_path / "o", options=EngineOptions("local"))
    assert again["run"]["resumed_shards"] == 1 and again["near"] == first["near"]
    sets.unlink()
    signed = run_dedup(shard, spec, tmp_path / "o", options=EngineOptions("local"))
    assert signed["run"]["resumed_shards"] == 0 and signed["near"] == first["near"] and sets.exists()
    plain = run_dedup(shard, DedupSpec(threshold=0.8, estimate=True), tmp_path / "p", options=EngineOptions("local"))
    assert plain["run"]["resumed_shards"] == 0 and not list((tmp_path / "p" / "parts").glob("*.arrow"))
    verified = run_dedup(shard, spec, tmp_path / "p", options=EngineOptions("local"))
    assert verified["run"]["resumed_shards"] == 0 and verified["near"] == first["near"]
