"""Every command writes its --out to a bucket as it writes a local folder: dedup (with verification, validation
shards and an array job's slices), contamination, dedup-images and tokenizer-drift, each run once into a local
folder and once into s3://, the same files (but the report's `run`), nothing half-written left."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.builders import make_tar
from tests.images.test_dedup_images import picture
from tests.objectstore.test_s3_cli import cli


def _same(bucket, remote: str, local: Path, record: str, tables: list[str]) -> None:
    """The report (but its `run`) and every table of a local run equal the bucket's; no temporary object left."""
    keys = bucket.keys(remote)
    assert not [k for k in keys if k.endswith(".tmp") or "/.tmp" in k], keys
    one, two = json.loads((local / record).read_text()), json.loads(bucket.get(f"{remote}/{record}"))
    one.pop("run"), two.pop("run")
    assert two == json.loads(json.dumps(one).replace(str(local), bucket.uri(remote).rstrip("/")))
    for name in tables:
        assert bucket.get(f"{remote}/{name}") == (local / name).read_bytes(), name


def test_dedup_with_verification_and_validation_shards_into_a_bucket(tmp_path, bucket, corpus):
    args = [corpus / "a.parquet", corpus / "sub" / "c.tar", "--against", corpus / "b.jsonl", "--verify",
            "--threshold", "0.5", "--engine", "local"]
    code, text = cli("dedup", *args, "--out", tmp_path / "d")
    code2, text2 = cli("dedup", *args, "--out", bucket.uri("d/"))
    assert code == code2 == 1, text2          # b.jsonl's records copy train's
    assert f"wrote {bucket.uri('d/dedup.json')}" in " ".join(text2.split())
    _same(bucket, "d", tmp_path / "d", "dedup.json", ["clusters.parquet", "keep.parquet", "overlap.parquet"])
    # all 38 readable, non-empty validation records (of 40: one blank, one broken line) have a near copy in train
    assert json.loads(bucket.get("d/dedup.json"))["against"]["overlapping"] == 38


def test_dedup_array_job_slices_and_merge_in_a_bucket(tmp_path, bucket, corpus):
    code, _ = cli("dedup", corpus, "--out", tmp_path / "single", "--engine", "local")
    assert code == 0
    for i in range(2):
        code, text = cli("dedup", corpus, "--out", bucket.uri("sliced/"), "--engine", "local", "--shard-index", i,
                         "--num-shards", 2)
        assert code == 0, text
    code, text = cli("merge", bucket.uri("sliced/"))
    assert code == 0, text
    _same(bucket, "sliced", tmp_path / "single", "dedup.json", ["clusters.parquet", "keep.parquet"])


def test_contamination_into_a_bucket(tmp_path, bucket, corpus):
    bench = tmp_path / "bench.jsonl"
    bench.write_text("".join(json.dumps({"q": q}) + "\n" for q in (
        "river stone cloud garden lantern harbor meadow violin copper thunder orchard pebble number 0",
        "a question nobody trained on, about something else entirely")))
    args = ["--train", corpus / "a.parquet", "--benchmark", f"b={bench}:q", "--engine", "local"]
    code, text = cli("contamination", *args, "--out", tmp_path / "c")
    code2, text2 = cli("contamination", *args, "--out", bucket.uri("c/"))
    assert code == code2 == 1, text2
    report = json.loads(bucket.get("c/contamination.json"))
    assert report["totals"]["contaminated"] == 1
    one = json.loads((tmp_path / "c" / "contamination.json").read_text())
    one.pop("run"), report.pop("run")
    assert report == one
    local_files = sorted(p.name for p in (tmp_path / "c").iterdir() if p.is_file() and not p.name.startswith("."))
    remote_files = sorted(k.split("/", 1)[1] for k in bucket.keys("c") if k.count("/") == 1)
    assert remote_files == local_files


def test_dedup_images_into_a_bucket(tmp_path, bucket):
    a = picture(160, 120, seed=1)
    shard = make_tar(tmp_path / "s.tar", [("a.jpg", a), ("a.txt", b"one"), ("b.jpg", a), ("b.txt", b"copy"),
                                          ("c.jpg", picture(160, 120, seed=2)), ("c.txt", b"other")])
    code, text = cli("dedup-images", shard, "--out", tmp_path / "i", "--engine", "local")
    code2, text2 = cli("dedup-images", shard, "--out", bucket.uri("i/"), "--engine", "local")
    assert code == code2 == 0, text2
    _same(bucket, "i", tmp_path / "i", "dedup.json", ["clusters.parquet", "keep.parquet"])
    assert json.loads(bucket.get("i/dedup.json"))["exact"]["duplicates"] == 1


def test_tokenizer_drift_into_a_bucket(tmp_path, bucket, corpus, shared_data):
    tok = shared_data / "tokenizers" / "gpt-neo-test-tokenizer.json"
    if not tok.exists():
        pytest.skip(f"{tok} is missing (the shared real-data folder)")
    args = [tok, tok, "--sample", corpus / "a.parquet"]
    code, text = cli("tokenizer-drift", *args, "--out", tmp_path / "t")
    code2, text2 = cli("tokenizer-drift", *args, "--out", bucket.uri("t/"))
    assert code == code2 == 0, text2
    local_files = sorted(p.name for p in (tmp_path / "t").iterdir() if p.is_file() and not p.name.startswith("."))
    remote_files = sorted(k.split("/", 1)[1] for k in bucket.keys("t") if k.count("/") == 1)
    assert remote_files == local_files and local_files
