"""gs:// through the CLI against a GCS emulator (tests/objectstore/conftest.py: gcp-storage-emulator, reached through
STORAGE_EMULATOR_HOST as Google's clients reach one): the flags of the local copies, a shard's fingerprint from its
generation and hashes (no byte read twice), --out gs:// written whole and resumed, a missing object an unreadable shard."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from dataaudit.io import fingerprint
from tests.objectstore.corpus import write_corpus
from tests.objectstore.test_s3_cli import cli, flag_rows


@pytest.fixture
def corpus(tmp_path, gcs_bucket):
    train = write_corpus(tmp_path / "local")
    gcs_bucket.put(train, "train")
    return train


def test_audit_of_a_gs_prefix_gives_the_flags_of_the_local_copies(tmp_path, gcs_bucket, corpus):
    assert cli("audit", corpus, "--out", tmp_path / "local-out", "--engine", "local")[0] == 1
    code, out = cli("audit", gcs_bucket.uri("train/"), "--out", tmp_path / "gs-out", "--engine", "local")
    assert code == 1, out
    local, remote = (pq.read_table(tmp_path / d / "flags.parquet") for d in ("local-out", "gs-out"))
    assert flag_rows(remote) == flag_rows(local)
    assert [r[:3] for r in flag_rows(remote)] == [
        ("a.parquet", 5, "empty_text"), ("a.parquet", 11, "nonfinite"), ("b.jsonl", 3, "empty_text"),
        ("b.jsonl", 7, "unreadable_record"), ("sub/c.tar", 4, "empty_text")]
    report = json.loads((tmp_path / "gs-out" / "report.json").read_text())
    assert [s["path"] for s in report["shards"]] == [gcs_bucket.uri(f"train/{s}") for s in
                                                     ("a.parquet", "b.jsonl", "sub/c.tar")]
    assert [s["samples"] for s in report["shards"]] == [60, 40, 20]


def test_a_gs_objects_fingerprint_is_its_generation_and_hashes(gcs_bucket, corpus):
    fp = fingerprint(gcs_bucket.uri("train/a.parquet"))
    assert fp["size"] == (corpus / "a.parquet").stat().st_size
    assert sorted(fp["identity"]) == ["crc32c", "generation", "md5Hash"]
    gcs_bucket.put(corpus / "b.jsonl", "train/a.parquet")      # new bytes: a new generation
    assert fingerprint(gcs_bucket.uri("train/a.parquet"))["identity"]["generation"] != fp["identity"]["generation"]


def test_out_on_gs_is_written_whole_and_a_rerun_resumes(tmp_path, gcs_bucket, corpus):
    out = gcs_bucket.uri("out/")
    code, text = cli("audit", gcs_bucket.uri("train/"), "--out", out, "--engine", "local")
    assert code == 1, text
    keys = gcs_bucket.keys("out")
    assert {"out/report.json", "out/flags.parquet", "out/report.html"} <= set(keys)
    assert not [k for k in keys if k.endswith(".tmp")]
    first = gcs_bucket.get("out/flags.parquet")
    code, text = cli("audit", gcs_bucket.uri("train/"), "--out", out, "--engine", "local")
    assert code == 1 and "reused 3 finished shards" in text
    assert gcs_bucket.get("out/flags.parquet") == first
    assert json.loads(gcs_bucket.get("out/report.json"))["totals"]["flagged"] == 5


def test_a_missing_gs_object_is_an_unreadable_shard_the_others_are_read(tmp_path, gcs_bucket, corpus):
    missing = gcs_bucket.uri("train/gone.parquet")
    code, text = cli("audit", gcs_bucket.uri("train/a.parquet"), missing, "--out", tmp_path / "o", "--engine", "local")
    assert code == 1 and "Traceback" not in text
    shards = json.loads((tmp_path / "o" / "report.json").read_text())["shards"]
    assert [(s["path"], s["status"]) for s in shards] == [(gcs_bucket.uri("train/a.parquet"), "ok"),
                                                          (missing, "unreadable")]
    assert "NOT_FOUND" in shards[1]["error"] and "No such file or directory" in shards[1]["error"]
