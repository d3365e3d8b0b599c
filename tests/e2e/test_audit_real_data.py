"""The audit on real data from ../shared/data: real corpora are not flagged as garbage, corrupt shards are
reported and the job goes on. Without that folder every test here is skipped (the `shared_data` fixture says why)."""
from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from dataaudit.cli import main
from dataaudit.config import load_config
from dataaudit.pipelines.audit import run_audit
from dataaudit.pipelines.engine import EngineOptions

GARBAGE_CHECKS = ("control_chars", "mojibake", "long_unbroken_run", "non_text_ratio")
MAX_FALSE_POSITIVE_RATE = 0.005


@pytest.fixture(scope="module")
def shakespeare_shard(shared_data, tmp_path_factory):
    """tinyshakespeare as a Parquet shard of paragraphs (blank-line separated), 2 row groups per 4k rows."""
    text = (shared_data / "corpora" / "tinyshakespeare.txt").read_text(encoding="utf-8")
    paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
    path = tmp_path_factory.mktemp("shakespeare") / "tinyshakespeare.parquet"
    pq.write_table(pa.table({"text": paragraphs}), path, row_group_size=2048)
    return path, len(paragraphs)


@pytest.mark.parametrize("which", ["webdataset", "shakespeare"])
def test_real_corpora_false_positive_rate(which, shared_data, shakespeare_shard, tmp_path):
    if which == "webdataset":
        shard, expected = shared_data / "webdataset" / "testgz.tar", 1000
    else:
        shard, expected = shakespeare_shard
    report = run_audit([str(shard)], load_config(None), tmp_path, options=EngineOptions("local"))
    assert report["totals"]["samples"] == expected
    assert report["shards"][0]["status"] == "ok"
    for check in GARBAGE_CHECKS:
        rate = report["checks"][check]["flagged"] / expected
        assert rate < MAX_FALSE_POSITIVE_RATE, (check, rate)
    assert report["checks"]["empty_text"]["flagged"] == 0
    assert report["lengths"]["txt" if which == "webdataset" else "text"]["count"] == expected


def test_real_corpus_with_tokenizer_lengths(shared_data, shakespeare_shard, tmp_path):
    shard, n = shakespeare_shard
    cfg = tmp_path / "audit.toml"
    tok = shared_data / "tokenizers" / "llama-test-tokenizer.json"
    cfg.write_text(f'[data]\ntokenizer = "{tok}"\ncontext_length = 1024\n')
    report = run_audit([str(shard)], load_config(cfg), tmp_path / "out", options=EngineOptions("local"))
    tokens = report["lengths"]["text.tokens"]
    assert tokens["unit"] == "tokens" and tokens["count"] == n and tokens["context_length"] == 1024

    from tokenizers import Tokenizer

    texts = pq.read_table(shard)["text"].to_pylist()
    exact = np.array([len(e) for e in Tokenizer.from_file(str(tok)).encode_batch(texts, add_special_tokens=False)])
    assert (tokens["min"], tokens["max"], tokens["over_context"]) == (exact.min(), exact.max(), (exact > 1024).sum())
    assert tokens["mean"] == pytest.approx(exact.mean())
    for q in (50, 90, 99):
        true = np.quantile(exact, q / 100, method="lower")
        assert true <= tokens["quantiles"][f"p{q}"] <= true * 1.02 + 1, q
    # Paragraphs of a play are short: the report must say most of a 256-token context would be padding.
    assert any("under a quarter of the context" in note for note in report["notes"])


def test_corrupt_parquet_files_are_unreadable_and_job_goes_on(shared_data, tmp_path):
    folder = shared_data / "parquet-testing"
    shards = sorted(str(p) for p in folder.glob("*.parquet"))
    res = CliRunner().invoke(main, ["audit", *shards, "--out", str(tmp_path), "--engine", "local"])
    assert res.exit_code == 1, res.output
    import json

    report = json.loads((tmp_path / "report.json").read_text())
    status = {p["path"].rsplit("/", 1)[-1]: p for p in report["shards"]}
    assert status["alltypes_plain.parquet"]["status"] == "ok"
    assert status["alltypes_plain.parquet"]["samples"] == 8
    for bad in ("PARQUET-1481.parquet", "ARROW-GH-41321.parquet", "ARROW-GH-45185.parquet"):
        assert status[bad]["status"] == "unreadable" and status[bad]["error"].startswith("parquet: "), bad
    assert report["totals"]["unreadable_shards"] == 3
    assert report["totals"]["samples"] == sum(s["samples"] for s in report["shards"])


def test_inputs_are_not_modified(fixture_dir, tmp_path):
    import hashlib

    files = sorted(p for p in fixture_dir.rglob("*") if p.is_file())
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in files}
    run_audit([str(p) for p in files if p.suffix != ".json"], load_config(None), tmp_path,
              options=EngineOptions("local"))
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in files} == before
