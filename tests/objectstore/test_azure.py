"""abfs:// through the CLI against Azure's storage emulator (tests/objectstore/conftest.py: azurite-blob, reached
through AZURE_STORAGE_CONNECTION_STRING as Azure's SDKs reach it): the flags of the local copies, a blob's
fingerprint from its ETag, --out abfs:// written whole and resumed, a missing blob an unreadable shard; the
account named in the URI or taken from the settings."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from dataaudit.io import _azure_location, fingerprint
from tests.objectstore.corpus import write_corpus
from tests.objectstore.test_s3_cli import cli, flag_rows


@pytest.fixture
def corpus(tmp_path, azure_container):
    train = write_corpus(tmp_path / "local")
    azure_container.put(train, "train")
    return train


def test_audit_of_an_abfs_prefix_gives_the_flags_of_the_local_copies(tmp_path, azure_container, corpus):
    assert cli("audit", corpus, "--out", tmp_path / "local-out", "--engine", "local")[0] == 1
    code, out = cli("audit", azure_container.uri("train/"), "--out", tmp_path / "az-out", "--engine", "local")
    assert code == 1, out
    local, remote = (pq.read_table(tmp_path / d / "flags.parquet") for d in ("local-out", "az-out"))
    assert flag_rows(remote) == flag_rows(local) and len(flag_rows(local)) == 5
    report = json.loads((tmp_path / "az-out" / "report.json").read_text())
    assert [s["samples"] for s in report["shards"]] == [60, 40, 20]


def test_an_abfs_blobs_fingerprint_is_its_etag_whichever_way_the_account_is_named(azure_container, corpus):
    name = azure_container.name
    short = fingerprint(azure_container.uri("train/a.parquet"))
    full = fingerprint(f"abfs://{name}@devstoreaccount1.dfs.core.windows.net/train/a.parquet")
    assert short == full and list(short["identity"]) == ["ETag"]
    assert short["size"] == (corpus / "a.parquet").stat().st_size
    azure_container.put(corpus / "b.jsonl", "train/a.parquet")      # new bytes: a new ETag
    assert fingerprint(azure_container.uri("train/a.parquet"))["identity"] != short["identity"]


def test_out_on_abfs_is_written_whole_and_a_rerun_resumes(tmp_path, azure_container, corpus):
    out = azure_container.uri("out/")
    code, text = cli("audit", azure_container.uri("train/"), "--out", out, "--engine", "local")
    assert code == 1, text
    keys = azure_container.keys("out")
    assert {"out/report.json", "out/flags.parquet", "out/report.html"} <= set(keys)
    assert not [k for k in keys if k.endswith(".tmp")]
    first = azure_container.get("out/flags.parquet")
    code, text = cli("audit", azure_container.uri("train/"), "--out", out, "--engine", "local")
    assert code == 1 and "reused 3 finished shards" in text
    assert azure_container.get("out/flags.parquet") == first


def test_a_missing_blob_is_an_unreadable_shard(tmp_path, azure_container, corpus):
    missing = azure_container.uri("train/gone.parquet")
    code, text = cli("audit", azure_container.uri("train/a.parquet"), missing, "--out", tmp_path / "o",
                     "--engine", "local")
    assert code == 1 and "Traceback" not in text
    shards = json.loads((tmp_path / "o" / "report.json").read_text())["shards"]
    assert [(s["path"], s["status"]) for s in shards] == [(azure_container.uri("train/a.parquet"), "ok"),
                                                          (missing, "unreadable")]


@pytest.mark.parametrize("rest,account,path", [
    ("data@acct.dfs.core.windows.net/train/a.parquet", "acct", "data/train/a.parquet"),
    ("data@acct.dfs.core.windows.net", "acct", "data"),
    ("acct.blob.core.windows.net/data/train", "acct", "data/train"),
    ("data/train", "devstoreaccount1", "data/train"),
])
def test_the_account_comes_from_the_uri_or_the_settings(rest, account, path):
    assert _azure_location(rest, {"AccountName": "devstoreaccount1"}) == (account, path)


def test_no_account_anywhere_is_one_line(tmp_path, monkeypatch):
    for name in ("AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT_KEY"):
        monkeypatch.delenv(name, raising=False)
    code, text = cli("audit", "abfs://data/train/", "--out", tmp_path / "o")
    assert code == 2
    assert text.strip() == ("Error: abfs://data/train/: cannot open this location: no storage account: name it "
                            "(abfs://CONTAINER@ACCOUNT.dfs.core.windows.net/...) or set AZURE_STORAGE_ACCOUNT_NAME or "
                            "AZURE_STORAGE_CONNECTION_STRING")
