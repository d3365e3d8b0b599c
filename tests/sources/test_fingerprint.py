"""The audit records what each shard was (size, modification time, a hash of every byte), and `changed` says how
a file differs from that record."""
from __future__ import annotations

import json
import os

import xxhash
from click.testing import CliRunner

from dataaudit.cli import main
from dataaudit.sources.fingerprint import changed, shard_fingerprint


def test_fingerprint_and_what_changed(tmp_path):
    p = tmp_path / "a.jsonl"
    p.write_bytes(b'{"text": "hello"}\n' * 1000)
    fp = shard_fingerprint(str(p))
    assert fp == {"size": 18000, "mtime_ns": os.stat(p).st_mtime_ns,
                  "xxh3_128": xxhash.xxh3_128_hexdigest(b'{"text": "hello"}\n' * 1000)}
    assert changed(str(p), fp) is None
    os.utime(p, ns=(fp["mtime_ns"], fp["mtime_ns"] + 1))
    assert changed(str(p), fp) == "its modification time changed"
    p.write_bytes(b'{"text": "hellO"}\n' * 1000)               # same size, other bytes, same time
    os.utime(p, ns=(fp["mtime_ns"], fp["mtime_ns"]))
    assert changed(str(p), fp) == "its content changed"
    p.write_bytes(b"{}\n")
    assert changed(str(p), fp) == "its size changed (18000 -> 3 bytes)"
    p.unlink()
    assert changed(str(p), fp) == "cannot read it: No such file or directory"


def test_the_audit_records_each_shards_fingerprint(tmp_path):
    p = tmp_path / "a.jsonl"
    p.write_text('{"text": "hello world"}\n')
    res = CliRunner().invoke(main, ["audit", str(p), "--out", str(tmp_path / "out"), "--engine", "local"])
    assert res.exit_code == 0, res.output
    [shard] = json.loads((tmp_path / "out" / "report.json").read_text())["shards"]
    assert shard["fingerprint"] == shard_fingerprint(str(p))
