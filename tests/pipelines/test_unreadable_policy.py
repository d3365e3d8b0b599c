"""One error policy for "this shard could not be read": audit, dedup and contamination report an OSError raised
while reading a shard the same way (status `unreadable`, the OSError's one-line message, the records read
before the break counted), and `dataaudit.handlers.reraise` stops each job instead."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dataaudit.formats as formats
from dataaudit.audit.shard import audit_shard
from dataaudit.config import load_config
from dataaudit.contamination import ContaminationConfig, load_benchmark
from dataaudit.dedup import DedupSpec
from dataaudit.handlers import reraise
from dataaudit.pipelines.audit import run_audit
from dataaudit.pipelines.contamination import run_contamination
from dataaudit.pipelines.dedup import run_dedup
from dataaudit.pipelines.engine import EngineOptions
from tests.paths import REPO

BROKEN_AFTER = 3                      # records the failing shard yields before its disk fails
IO_ERROR = "[Errno 5] Input/output error"


@pytest.fixture
def shards(tmp_path, monkeypatch) -> list[str]:
    """A good Parquet shard and a JSONL shard whose reads fail with EIO after its first batch."""
    good = tmp_path / "good.parquet"
    pq.write_table(pa.table({"text": [f"a plain sentence number {i} about rivers and stones" for i in range(20)]}),
                   good)
    failing = tmp_path / "failing.jsonl"
    failing.write_text("".join(json.dumps({"text": f"record {i} of the failing shard, long enough"}) + "\n"
                               for i in range(BROKEN_AFTER)))
    real = formats.iter_jsonl

    def iter_jsonl(path, *args, **kwargs):
        yield from real(path, *args, **kwargs)
        if str(path) == str(failing):
            raise OSError(5, "Input/output error")

    monkeypatch.setattr(formats, "iter_jsonl", iter_jsonl)
    return [str(good), str(failing)]


def _audit(paths, out, options=EngineOptions("local")):
    report = run_audit(paths, load_config(REPO / "fixtures" / "audit.toml"), out, options)
    return [(s["status"], s["error"], s["samples"]) for s in report["shards"]]


def _dedup(paths, out, options=EngineOptions("local")):
    report = run_dedup(paths, DedupSpec(threshold=0.5), out, options=options)
    return [(s["status"], s["error"], s["samples"]) for s in report["shards"]]


def _contamination(paths, out, options=EngineOptions("local")):
    bench = out.parent / "bench.jsonl"
    bench.write_text(json.dumps({"text": "an item that occurs nowhere in the training shards at all"}) + "\n")
    report = run_contamination(paths, [load_benchmark("b", str(bench))], ContaminationConfig(), out, options)
    return [(s["status"], s["error"], s["records"]) for s in report["train"]["shards"]]


JOBS = [_audit, _dedup, _contamination]


@pytest.mark.parametrize("job", JOBS)
def test_oserror_mid_shard_is_reported_unreadable_the_same_way(job, shards, tmp_path):
    assert job(shards, tmp_path / "out") == [("ok", None, 20), ("unreadable", IO_ERROR, BROKEN_AFTER)]


@pytest.mark.parametrize("job", JOBS)
def test_reraise_handler_stops_the_job(job, shards, tmp_path):
    with pytest.raises(OSError, match="Input/output error"):
        job(shards, tmp_path / "out", EngineOptions("local", handler=reraise))
