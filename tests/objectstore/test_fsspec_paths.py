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
from fsspec.implementations.memory import MemoryFileSystem  # noqa: E402  (fsspec is there: skipped above if not)


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


class _HubLikeMemory(MemoryFileSystem):
    """fsspec's memory filesystem answering info() as HfFileSystem does for a file: its git blob id and its LFS
    object's sha256 (computed from the bytes here; the Hub gives them with the listing)."""

    protocol = "hubmem"

    @classmethod
    def _strip_protocol(cls, path):       # the memory store's own paths (its method knows memory:// only)
        return super()._strip_protocol("memory://" + path[len("hubmem://"):] if path.startswith("hubmem://") else path)

    def info(self, path, **kwargs):
        out = super().info(path, **kwargs)
        if out["type"] == "file":
            import hashlib

            data = self.cat_file(path)
            out["blob_id"] = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
            out["lfs"] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "pointer_size": 132}
        return out


def test_an_fsspec_file_is_fingerprinted_by_the_version_its_info_names_or_else_by_its_bytes():
    import hashlib

    import xxhash

    fsspec.register_implementation("hubmem", _HubLikeMemory, clobber=True)
    key = f"datasets/org/{uuid.uuid4().hex[:12]}/a.jsonl"
    data, other = b'{"text": "a"}\n' * 10, b'{"text": "b"}\n' * 10
    fsspec.filesystem("memory").pipe(key, data)
    try:
        assert io.fingerprint(f"memory://{key}") == {    # memory:// names no version: the bytes are hashed
            "size": 140, "mtime_ns": io.stat(f"memory://{key}").mtime_ns, "xxh3_128": xxhash.xxh3_128_hexdigest(data)}
        fp = io.fingerprint(f"hubmem://{key}")
        assert fp == {"size": 140, "identity": {"blob_id": hashlib.sha1(b"blob 140\0" + data).hexdigest(),
                                                "lfs.sha256": hashlib.sha256(data).hexdigest()}}
        assert io.changed(f"hubmem://{key}", fp) is None
        fsspec.filesystem("memory").pipe(key, other)
        assert io.changed(f"hubmem://{key}", fp) == (
            f"its object version changed (blob_id {fp['identity']['blob_id']} -> "
            f"{hashlib.sha1(b'blob 140' + bytes(1) + other).hexdigest()}; lfs.sha256 {fp['identity']['lfs.sha256']} -> "
            f"{hashlib.sha256(other).hexdigest()})")
    finally:
        fsspec.filesystem("memory").rm(key)
