"""gs:// and abfs:// through the CLI against their emulators (tests/objectstore/conftest.py: gcp-storage-emulator
through STORAGE_EMULATOR_HOST, Azurite through AZURE_STORAGE_CONNECTION_STRING, as the providers' own clients reach
them): the flags of the local copies, an object's fingerprint from its version (GCS: generation and hashes; Azure:
ETag; no byte read twice), --out written whole and resumed, a missing object an unreadable shard; Azure's account
named in the URI or taken from the settings."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from dataaudit.io import _azure_location, fingerprint
from tests.objectstore.corpus import write_corpus
from tests.objectstore.test_s3_cli import cli, flag_rows

STORES = {"gs": ("gcs_bucket", ["crc32c", "generation", "md5Hash"]), "abfs": ("azure_container", ["ETag"])}


@pytest.fixture(params=sorted(STORES))
def store(request, tmp_path):
    """A fresh bucket (GCS) or container (Azure) holding tests/objectstore/corpus.py's shards under train/; the
    local copies beside (`store.local`)."""
    bucket = request.getfixturevalue(STORES[request.param][0])
    bucket.local = write_corpus(tmp_path / "local")
    bucket.put(bucket.local, "train")
    return bucket


def test_audit_of_a_prefix_gives_the_flags_of_the_local_copies(tmp_path, store):
    assert cli("audit", store.local, "--out", tmp_path / "local-out", "--engine", "local")[0] == 1
    code, out = cli("audit", store.uri("train/"), "--out", tmp_path / "remote-out", "--engine", "local")
    assert code == 1, out
    local, remote = (pq.read_table(tmp_path / d / "flags.parquet") for d in ("local-out", "remote-out"))
    assert flag_rows(remote) == flag_rows(local)
    assert [r[:3] for r in flag_rows(remote)] == [
        ("a.parquet", 5, "empty_text"), ("a.parquet", 11, "nonfinite"), ("b.jsonl", 3, "empty_text"),
        ("b.jsonl", 7, "unreadable_record"), ("sub/c.tar", 4, "empty_text")]
    report = json.loads((tmp_path / "remote-out" / "report.json").read_text())
    assert [s["path"] for s in report["shards"]] == [store.uri(f"train/{s}") for s in
                                                     ("a.parquet", "b.jsonl", "sub/c.tar")]
    assert [s["samples"] for s in report["shards"]] == [60, 40, 20]


def test_an_objects_fingerprint_is_its_version_at_the_store(store):
    fp = fingerprint(store.uri("train/a.parquet"))
    assert fp["size"] == (store.local / "a.parquet").stat().st_size
    assert sorted(fp["identity"]) == STORES[store.scheme][1]
    store.put(store.local / "b.jsonl", "train/a.parquet")      # new bytes: a new version
    assert fingerprint(store.uri("train/a.parquet"))["identity"] != fp["identity"]


def test_out_on_the_store_is_written_whole_and_a_rerun_resumes(store):
    out = store.uri("out/")
    code, text = cli("audit", store.uri("train/"), "--out", out, "--engine", "local")
    assert code == 1, text
    keys = store.keys("out")
    assert {"out/report.json", "out/flags.parquet", "out/report.html"} <= set(keys)
    assert not [k for k in keys if k.endswith(".tmp")]
    first = store.get("out/flags.parquet")
    code, text = cli("audit", store.uri("train/"), "--out", out, "--engine", "local")
    assert code == 1 and "reused 3 finished shards" in text
    assert store.get("out/flags.parquet") == first
    assert json.loads(store.get("out/report.json"))["totals"]["flagged"] == 5


def test_a_missing_object_is_an_unreadable_shard_the_others_are_read(tmp_path, store):
    missing = store.uri("train/gone.parquet")
    code, text = cli("audit", store.uri("train/a.parquet"), missing, "--out", tmp_path / "o", "--engine", "local")
    assert code == 1 and "Traceback" not in text
    shards = json.loads((tmp_path / "o" / "report.json").read_text())["shards"]
    assert [(s["path"], s["status"]) for s in shards] == [(store.uri("train/a.parquet"), "ok"), (missing, "unreadable")]


def test_azures_account_named_in_the_uri_or_taken_from_the_settings_is_one_blob(tmp_path, azure_container):
    azure_container.put(write_corpus(tmp_path) / "a.parquet", "train/a.parquet")
    named = f"abfs://{azure_container.name}@devstoreaccount1.dfs.core.windows.net/train/a.parquet"
    assert fingerprint(named) == fingerprint(azure_container.uri("train/a.parquet"))


@pytest.mark.parametrize("rest,account,path", [
    ("data@acct.dfs.core.windows.net/train/a.parquet", "acct", "data/train/a.parquet"),
    ("data@acct.dfs.core.windows.net", "acct", "data"),
    ("acct.blob.core.windows.net/data/train", "acct", "data/train"),
    ("data/train", "devstoreaccount1", "data/train"),
])
def test_azures_account_comes_from_the_uri_or_the_settings(rest, account, path):
    assert _azure_location(rest, {"AccountName": "devstoreaccount1"}) == (account, path)


def test_no_azure_account_anywhere_is_one_line(tmp_path, monkeypatch):
    for name in ("AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT_KEY"):
        monkeypatch.delenv(name, raising=False)
    code, text = cli("audit", "abfs://data/train/", "--out", tmp_path / "o")
    assert code == 2
    assert text.strip() == ("Error: abfs://data/train/: cannot open this location: no storage account: name it "
                            "(abfs://CONTAINER@ACCOUNT.dfs.core.windows.net/...) or set AZURE_STORAGE_ACCOUNT_NAME or "
                            "AZURE_STORAGE_CONNECTION_STRING")
