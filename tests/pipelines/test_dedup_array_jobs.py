"""Dedup as an array job: `dedup --shard-index I --num-shards N` slices sign their shards into one --out, and
`merge` bands, clusters and writes what one dedup job on the same input writes, duplicates across slices
included; a merge refuses a missing slice, slices of other settings, and audit-only options."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from dataaudit.cli import main

import numpy as np

RNG_DOCS = np.random.default_rng(11).integers(0, 5000, size=(400, 60))


def _doc(i: int, changed: bool = False) -> str:
    words = [f"w{x}" for x in RNG_DOCS[i]]
    if changed:
        words[30] = "changed"          # one word of 60: Jaccard of the 5-word shingles 51/61 = 0.84
    return " ".join(words)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """Five train shards of unequal size of random documents; in each but the first, an exact copy and a near copy
    (one word changed) of two documents of the first; a validation shard holding a copy of a train document."""
    folder = tmp_path_factory.mktemp("dedup-array")
    start = 0
    for s, n in enumerate([120, 60, 90, 30, 45]):
        texts = [_doc(start + i) for i in range(n)]
        if s > 0:
            texts[0] = _doc(s * 3)
            texts[1] = _doc(s * 5 + 50, changed=True)
        pq.write_table(pa.table({"text": texts}), folder / f"train-{s}.parquet")
        start += n
    pq.write_table(pa.table({"text": [_doc(7), _doc(399), ""]}), folder / "val.parquet")
    return folder


def _dedup(corpus: Path, out: Path, *extra) -> object:
    train = sorted(str(p) for p in corpus.glob("train-*.parquet"))
    return CliRunner().invoke(main, ["dedup", *train, "--against", str(corpus / "val.parquet"), "--out", str(out),
                                     "--threshold", "0.7", "--engine", "local", *map(str, extra)])


def _merge(out: Path, *extra) -> object:
    return CliRunner().invoke(main, ["merge", str(out), *extra])


def _without_run(path: Path) -> str:
    return re.sub(r'<p class="muted">schema .*? s ·', "", path.read_text(encoding="utf-8"), count=1)


@pytest.fixture(scope="module")
def single(corpus, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dedup-single")
    res = _dedup(corpus, out)
    assert res.exit_code == 1, res.output      # the validation copy is a leak
    return out


def test_three_slices_and_merge_write_what_one_dedup_writes(corpus, single, tmp_path):
    out = tmp_path / "sliced"
    signed = []
    for i in range(3):
        res = _dedup(corpus, out, "--shard-index", i, "--num-shards", 3)
        assert res.exit_code == 0, res.output
        assert f"slice {i} of 3" in res.output and "dataaudit merge" in res.output
        assert not (out / "dedup.json").exists()
        signed.append(json.loads((out / "parts" / "slices" / f"{i:05d}-of-00003.json").read_text())["shards"])
    assert sorted(signed) == [2, 2, 2]          # six shards (five train, one validation), whole, balanced
    res = _merge(out)
    assert res.exit_code == 1, res.output       # dedup's exit rule: the leak
    assert "validation samples with a copy in train: 1 / 3" in res.output
    one, two = (json.loads((d / "dedup.json").read_text()) for d in (single, out))
    assert two["run"]["engine"] == "merge" and two["run"]["slices"] == 3 and two["run"]["merged_shards"] == 6
    assert (one["exact"]["groups"], one["exact"]["duplicates"]) == (4, 4)     # each across two shards
    assert (one["near"]["clusters"], one["near"]["duplicates"]) == (4, 4)
    assert one["kept"] == 345 - 8 and one["against"]["exact"] == 1
    one.pop("run"), two.pop("run")
    assert two == one
    for name in ("clusters.parquet", "keep.parquet", "overlap.parquet"):
        assert (out / name).read_bytes() == (single / name).read_bytes(), name
    assert _without_run(out / "dedup.html") == _without_run(single / "dedup.html")


def test_a_dedup_merge_with_a_missing_slice_names_its_shards(corpus, tmp_path):
    out = tmp_path / "o"
    for i in (0, 2):
        assert _dedup(corpus, out, "--shard-index", i, "--num-shards", 3).exit_code == 0
    res = _merge(out)
    assert res.exit_code == 2
    assert "slice(s) 1 of 3 not finished: 2 shard(s) missing:" in res.output and "Traceback" not in res.output


def test_dedup_slices_with_another_threshold_are_refused(corpus, tmp_path):
    out = tmp_path / "o"
    assert _dedup(corpus, out, "--shard-index", 0, "--num-shards", 2).exit_code == 0
    res = _dedup(corpus, out, "--shard-index", 1, "--num-shards", 2, "--threshold", "0.9")
    assert res.exit_code == 0, res.output        # a slice cannot see the others' settings; the merge does
    res = _merge(out)
    assert res.exit_code == 2
    assert "00001-of-00002.json was run with other settings than 00000-of-00002.json" in res.output


def test_audit_options_on_a_dedup_merge_are_one_line(corpus, tmp_path):
    out = tmp_path / "o"
    for i in range(2):
        assert _dedup(corpus, out, "--shard-index", i, "--num-shards", 2).exit_code == 0
    res = _merge(out, "--fail-on", "error>0")
    assert res.exit_code == 2
    assert res.output.strip().endswith("the slices are a dedup's: --strict and --fail-on apply to an audit's")


def test_a_signature_part_lost_after_its_slice_finished_is_one_line(corpus, tmp_path):
    out = tmp_path / "o"
    for i in range(2):
        assert _dedup(corpus, out, "--shard-index", i, "--num-shards", 2).exit_code == 0
    lost = sorted((out / "parts").glob("train-00002-*.sig.parquet"))
    assert len(lost) == 1
    lost[0].unlink()
    res = _merge(out)
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "1 part(s) missing although their slice finished:" in res.output
    assert res.output.strip().endswith("train-2.parquet: rerun its slice")
