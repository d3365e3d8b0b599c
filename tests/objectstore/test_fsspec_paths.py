"""Protocols pyarrow.fs does not know go through fsspec (hf://, az://, memory://, ...): tested on fsspec's memory
filesystem with the hf:// layout (datasets/<org>/<name>/<file>), as there is no network."""
from __future__ import annotations

import json
import uuid

import pyarrow.parquet as pq
import pytest

from dataaudit import io
from tests.objectstore.corpus import write_corpus
from tests.objectstore.test_s3_cli import cli, flag_rows

fsspec = pytest.importorskip("fsspec", reason="fsspec is not installed (pip install 'dataaudit[hf]')")


@pytest.fixture
def memory_repo(tmp_path):
    """memory://datasets/<org>/<unique name>: the shards of tests/objectstore/corpus.py under train/."""
    train = write_corpus(tmp_path / "local")
    root = f"memory://datasets/org/{uuid.uuid4().hex[:12]}"
    fs = fsspec.filesystem("memory")
    for p in sorted(train.rglob("*")):
        if p.is_file():
            fs.pipe(f"{root}/train/{p.relative_to(train).as_posix()}", p.read_bytes())
    yield train, root
    fs.rm(root, recursive=True)


def test_a_folder_walk_a_glob_and_an_audit_read_fsspec_paths_as_local_ones(tmp_path, memory_repo):
    train, root = memory_repo
    assert [(top, dirs, files) for top, dirs, files in io.walk(f"{root}/train/")] == [
        (f"{root}/train", ["sub"], ["a.parquet", "b.jsonl"]), (f"{root}/train/sub", [], ["c.tar"])]
    assert io.glob(f"{root}/train/**/*.tar") == [f"{root}/train/sub/c.tar"]
    assert cli("audit", train, "--out", tmp_path / "local", "--engine", "local")[0] == 1
    code, text = cli("audit", f"{root}/train/", "--out", f"{root}/out", "--engine", "local")
    assert code == 1, text
    with io.open_input(f"{root}/out/flags.parquet") as f:
        remote = pq.read_table(f)
    assert flag_rows(remote) == flag_rows(pq.read_table(tmp_path / "local" / "flags.parquet"))
    report = json.loads(io.read_text(f"{root}/out/report.json"))
    assert [s["path"] for s in report["shards"]] == [f"{root}/train/{s}" for s in ("a.parquet", "b.jsonl",
                                                                                     "sub/c.tar")]
    assert not [p for _, _, files in io.walk(f"{root}/out") for p in files if p.endswith(io.TEMP_SUFFIX)]


def test_an_unknown_protocol_is_one_line(tmp_path):
    code, text = cli("audit", "nosuchproto://x/a.parquet", "--out", tmp_path / "o")
    assert code == 2 and text.startswith("Error: nosuchproto://x/a.parquet: cannot open this location: ")
    assert len(text.strip().splitlines()) == 1
