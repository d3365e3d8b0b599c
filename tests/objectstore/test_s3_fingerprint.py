"""A URI shard's fingerprint is its object's size and version (the ETag moto gives, the VersionId on a versioned
bucket) from one HEAD, so a job reads the shard once; `changed` compares them without reading a byte, names the
ETag that changed, and still checks an older record (xxh3-128 of every byte) as before. What reaches the store is
counted on the wire (tests/objectstore/proxy.py)."""
from __future__ import annotations

import hashlib
import json

import xxhash

from dataaudit import io
from dataaudit.sources.fingerprint import changed, shard_fingerprint
from tests.objectstore.corpus import write_corpus
from tests.objectstore.test_s3_cli import cli

DATA = b'{"text": "river stone cloud"}\n' * 200      # 6,000 bytes
OTHER = DATA.replace(b"river", b"rivEr")             # the same size, other bytes


def _client(server):
    import boto3

    return boto3.client("s3", endpoint_url=server.url, region_name="us-east-1", aws_access_key_id=server.key,
                        aws_secret_access_key=server.secret)


def _put(bucket, tmp_path, key: str, data: bytes) -> str:
    local = tmp_path / "upload"
    local.write_bytes(data)
    return bucket.put(local, key)


def _multipart_etag(data: bytes) -> str:
    """The ETag S3 gives an object uploaded in one part of a multipart upload (pyarrow's writer uploads so)."""
    return f'"{hashlib.md5(hashlib.md5(data).digest()).hexdigest()}-1"'


def test_the_fingerprint_of_an_s3_object_is_its_size_and_etag_from_one_head(tmp_path, bucket, proxy, moto_server):
    uri = _put(bucket, tmp_path, "a.jsonl", DATA)
    etag = _client(moto_server).head_object(Bucket=bucket.name, Key="a.jsonl")["ETag"]
    assert etag == _multipart_etag(DATA)
    proxy.reset()
    assert shard_fingerprint(uri) == {"size": 6000, "identity": {"ETag": etag}}
    assert dict(proxy.requests) == {"HEAD": 1} and proxy.get_bytes == 0      # no byte of the object read


def test_an_overwritten_object_is_changed_naming_its_etag_an_unchanged_one_is_read_no_byte(tmp_path, bucket, proxy):
    uri = _put(bucket, tmp_path, "a.jsonl", DATA)
    fp = shard_fingerprint(uri)
    proxy.reset()
    assert changed(uri, fp) is None
    assert dict(proxy.requests) == {"HEAD": 1} and proxy.get_bytes == 0
    _put(bucket, tmp_path, "a.jsonl", OTHER)
    proxy.reset()
    assert changed(uri, fp) == \
        f"its object version changed (ETag {_multipart_etag(DATA)} -> {_multipart_etag(OTHER)})"
    assert dict(proxy.requests) == {"HEAD": 1} and proxy.get_bytes == 0
    _put(bucket, tmp_path, "a.jsonl", DATA + b"\n")
    assert changed(uri, fp) == "its size changed (6000 -> 6001 bytes)"
    bucket.fs.delete_file(f"{bucket.name}/a.jsonl")
    assert changed(uri, fp).startswith(f"cannot read it: Path does not exist '{bucket.name}/a.jsonl'")


def test_a_versioned_bucket_records_the_version_id_and_a_new_version_of_the_same_bytes_is_a_change(
        tmp_path, bucket, moto_server):
    s3 = _client(moto_server)
    s3.put_bucket_versioning(Bucket=bucket.name, VersioningConfiguration={"Status": "Enabled"})
    uri = _put(bucket, tmp_path, "a.jsonl", DATA)
    first = s3.head_object(Bucket=bucket.name, Key="a.jsonl")["VersionId"]
    fp = shard_fingerprint(uri)
    assert fp == {"size": 6000, "identity": {"ETag": _multipart_etag(DATA), "VersionId": first}}
    _put(bucket, tmp_path, "a.jsonl", DATA)       # the same bytes again: another version (refused, never trusted)
    second = s3.head_object(Bucket=bucket.name, Key="a.jsonl")["VersionId"]
    assert second != first
    assert changed(uri, fp) == f"its object version changed (VersionId {first} -> {second})"


def test_a_record_of_an_older_version_holding_only_the_hash_is_checked_as_before(tmp_path, bucket, proxy):
    uri = _put(bucket, tmp_path, "a.jsonl", DATA)
    st = io.stat(uri)
    old = {"size": 6000, "mtime_ns": st.mtime_ns, "xxh3_128": xxhash.xxh3_128_hexdigest(DATA)}
    path = f"/{bucket.name}/a.jsonl"
    proxy.reset()
    assert changed(uri, old) is None
    assert proxy.object_bytes[("GET", path)] == 6000          # the hash reads every byte, as it did
    assert changed(uri, {**old, "xxh3_128": xxhash.xxh3_128_hexdigest(OTHER)}) == "its content changed"
    assert changed(uri, {**old, "mtime_ns": st.mtime_ns + 1}) == "its modification time changed"


def test_an_audit_reads_a_jsonl_and_a_tar_shard_once_and_records_their_etags(tmp_path, bucket, proxy):
    train = write_corpus(tmp_path / "local")
    bucket.put(train, "train")
    for name in ("b.jsonl", "sub/c.tar"):
        proxy.reset()
        out = tmp_path / name.replace("/", "-")
        code, text = cli("audit", bucket.uri(f"train/{name}"), "--out", out, "--engine", "local")
        assert code in (0, 1), text
        data = (train / name).read_bytes()
        path = f"/{bucket.name}/train/{name}"
        assert (proxy.object_requests[("GET", path)], proxy.object_bytes[("GET", path)]) == (1, len(data)), name
        [shard] = json.loads((out / "report.json").read_text())["shards"]
        assert shard["fingerprint"] == {"size": len(data), "identity": {"ETag": _multipart_etag(data)}}


def test_clean_refuses_a_shard_overwritten_since_the_audit_naming_its_etag_and_a_rerun_redoes_only_it(
        tmp_path, bucket):
    train = write_corpus(tmp_path / "local")
    bucket.put(train, "train")
    out = bucket.uri("audit")
    assert cli("audit", bucket.uri("train/"), "--out", out, "--engine", "local")[0] == 1
    data = (train / "b.jsonl").read_bytes()
    edited = data.replace(b"river", b"rivEr", 1)
    assert len(edited) == len(data) and edited != data
    uri = _put(bucket, tmp_path, "train/b.jsonl", edited)
    code, text = cli("clean", bucket.uri("train/"), "--audit", out, "--out", tmp_path / "clean", "--engine", "local")
    assert code == 2
    assert " ".join(text.split()) == (
        f"Error: refused: {uri}: changed since the audit (its object version changed (ETag "
        f"{_multipart_etag(data)} -> {_multipart_etag(edited)})): audit it again before cleaning")
    code, text = cli("audit", bucket.uri("train/"), "--out", out, "--engine", "local")
    assert code == 1 and "reused 2 finished shards" in text
    code, text = cli("clean", bucket.uri("train/"), "--audit", out, "--out", tmp_path / "clean", "--engine", "local")
    assert code == 0, text


def test_deciding_to_cut_a_parquet_object_into_pieces_reads_its_first_rows_not_its_first_row_group(
        tmp_path, bucket, proxy):
    """The decision reads the footer and a few rows; pre-buffering the first row group made it a GET of half the
    object (a 31 MB shard: 15.6 MB)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dataaudit.audit.pieces import split_parquet
    from dataaudit.config import load_config
    from dataaudit.sources.parquet import PEEK_BUFFER_BYTES

    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .", np.uint8)
    rows = np.random.default_rng(7).choice(letters, (12_000, 1000))     # random letters: snappy keeps their size
    local = tmp_path / "big.parquet"
    pq.write_table(pa.table({"text": [r.tobytes().decode() for r in rows]}), local, row_group_size=6000)
    uri = bucket.put(local, "big.parquet")
    groups = [pq.ParquetFile(local).metadata.row_group(i).column(0).total_compressed_size for i in range(2)]
    proxy.reset()
    assert split_parquet(uri, load_config(None), sum(groups) // 2) == [(0,), (1,)]
    read = proxy.object_bytes[("GET", f"/{bucket.name}/big.parquet")]
    # the footer's reads, and the buffers the first data page spans (1 MB by default: it may straddle two)
    assert 0 < read <= 2 * PEEK_BUFFER_BYTES + 2 * 65536 < min(groups) / 2


def test_an_audit_looks_for_the_dataset_info_beside_a_parquet_object_once(tmp_path, bucket, proxy):
    """The registry beside a shard (LLaMA-Factory's dataset_info.json) is a HEAD and a listing on a store: the
    audit of one shard asks once, not once for its columns and again for its first batch."""
    train = write_corpus(tmp_path / "local")
    bucket.put(train, "train")
    proxy.reset()
    code, text = cli("audit", bucket.uri("train/a.parquet"), "--out", tmp_path / "out", "--engine", "local")
    assert code in (0, 1), text
    assert proxy.object_requests[("HEAD", f"/{bucket.name}/train/dataset_info.json")] == 1
