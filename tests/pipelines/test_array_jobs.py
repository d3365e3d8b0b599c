"""Array jobs: `audit --shard-index I --num-shards N` slices + `merge` give the outputs of one job on the same
input; slices are whole shards balanced by size; a merge refuses a missing slice or slices of other settings."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from dataaudit.cli import main
from dataaudit.pipelines.slices import ShardSlice, SliceError, assign, slice_from


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """Six Parquet shards of different sizes and a JSONL one, with records at error and warning severity."""
    folder = tmp_path_factory.mktemp("array-corpus")
    rng = np.random.default_rng(5)
    for s, n in enumerate([900, 300, 1200, 150, 600, 450]):
        text = [f"Shard {s} row {i}: rivers carry {int(rng.integers(1_000_000))} stones to the sea." for i in range(n)]
        for i in rng.choice(n, 3, replace=False):
            text[i] = "bad \x00 control"
        text[int(rng.integers(n))] = ""
        pq.write_table(pa.table({"text": text}), folder / f"part-{s}.parquet", row_group_size=200)
    lines = [json.dumps({"text": f"json row {i} about lakes"}) for i in range(80)] + [json.dumps({"text": ""})]
    (folder / "extra.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def _audit(*args) -> object:
    return CliRunner().invoke(main, ["audit", *map(str, args), "--engine", "local"])


def _html_without_run(path: Path) -> str:
    # the page's one line of the run (engine, seconds) is the only part that differs between two runs
    return re.sub(r'<p class="muted">schema .*? s</p>', "", path.read_text(encoding="utf-8"), count=1)


@pytest.fixture(scope="module")
def single(corpus, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("single")
    assert _audit(corpus, "--out", out).exit_code == 0     # control characters, empty texts: warnings
    return out


def test_four_slices_and_merge_write_what_one_job_writes(corpus, single, tmp_path):
    out = tmp_path / "sliced"
    shards = []
    for i in range(4):
        res = _audit(corpus, "--out", out, "--shard-index", i, "--num-shards", 4)
        assert res.exit_code == 0, res.output
        assert f"slice {i} of 4" in res.output and "dataaudit merge" in res.output
        assert not (out / "report.json").exists()
        shards.append(json.loads((out / "parts" / "slices" / f"{i:05d}-of-00004.json").read_text())["shards"])
    assert sum(shards) == 7 and min(shards) >= 1      # every shard in one slice, no slice empty
    merged = CliRunner().invoke(main, ["merge", str(out)])
    assert merged.exit_code == 0, merged.output
    one, two = (json.loads((d / "report.json").read_text()) for d in (single, out))
    assert two["run"]["engine"] == "merge" and two["run"]["slices"] == 4 and two["run"]["merged_shards"] == 7
    one.pop("run"), two.pop("run")
    assert two == one
    assert (out / "flags.parquet").read_bytes() == (single / "flags.parquet").read_bytes()
    assert _html_without_run(out / "report.html") == _html_without_run(single / "report.html")


def test_slices_are_whole_shards_balanced_by_size(tmp_path):
    paths = []
    for name, size in [("a", 100), ("b", 90), ("c", 50), ("d", 40), ("e", 30)]:
        (tmp_path / f"{name}.jsonl").write_bytes(b"x" * size)
        paths.append(str(tmp_path / f"{name}.jsonl"))
    # largest first, each to the lightest slice: a->0 (100), b->1 (90), c->1 (140), d->0 (140), e->0 (tie: lower)
    assert assign(paths, 2) == [0, 1, 1, 0, 0]
    assert assign(paths, 3) == [0, 1, 2, 2, 1]
    assert assign(paths, 1) == [0, 0, 0, 0, 0]
    assert assign(paths, 7) == [0, 1, 2, 3, 4]


def test_merge_with_a_missing_slice_names_its_shards(corpus, tmp_path):
    out = tmp_path / "o"
    for i in (0, 1, 3):
        assert _audit(corpus, "--out", out, "--shard-index", i, "--num-shards", 4).exit_code == 0
    mine = json.loads((out / "parts" / "slices" / "00000-of-00004.json").read_text())
    missing = [p for p, s in zip(mine["paths"], mine["slices"]) if s == 2]
    res = CliRunner().invoke(main, ["merge", str(out)])
    assert res.exit_code == 2
    line = res.output.strip()
    assert "\n" not in line and "slice(s) 2 of 4 not finished" in line
    assert f"{len(missing)} shard(s) missing: {', '.join(missing)}" in line
    assert not (out / "report.json").exists()


def test_merge_of_slices_with_other_settings_is_refused(corpus, tmp_path):
    out = tmp_path / "o"
    assert _audit(corpus, "--out", out, "--shard-index", 0, "--num-shards", 2).exit_code == 0
    assert _audit(corpus, "--out", out, "--shard-index", 1, "--num-shards", 2,
                  "--profile", "pretrain").exit_code == 0
    res = CliRunner().invoke(main, ["merge", str(out)])
    assert res.exit_code == 2
    assert "00001-of-00002.json was run with other settings than 00000-of-00002.json" in res.output


def test_merge_without_slices_is_a_usage_error(tmp_path):
    res = CliRunner().invoke(main, ["merge", str(tmp_path)])
    assert res.exit_code == 2 and "no slice manifest" in res.output
    res = CliRunner().invoke(main, ["merge", str(tmp_path / "typo")])
    assert res.exit_code == 2 and res.output.strip() == f"Error: {tmp_path / 'typo'}: no such folder"
    assert not (tmp_path / "typo").exists()         # a merge creates nothing where there was nothing


def test_the_slice_comes_from_slurm_or_kubernetes():
    assert slice_from(None, None, {}) is None
    assert slice_from(2, 5, {"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "9"}) == ShardSlice(2, 5)
    slurm = slice_from(None, None, {"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "4"})
    assert (slurm.index, slurm.count) == (3, 4)
    # `sbatch --array=1-4`: tasks 1..4 are slices 0..3
    one_based = slice_from(None, None, {"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_MIN": "1",
                                        "SLURM_ARRAY_TASK_COUNT": "4"})
    assert (one_based.index, one_based.count) == (3, 4)
    k8s = slice_from(None, 8, {"JOB_COMPLETION_INDEX": "7"})
    assert (k8s.index, k8s.count) == (7, 8)
    assert slice_from(None, None, {"JOB_COMPLETION_INDEX": "7"}) is None   # no count: the whole job


@pytest.mark.parametrize("args, env, message", [
    ((4, 4), {}, "--shard-index/--num-shards: slice index 4 is not in 0..3"),
    ((1, None), {}, "--shard-index needs --num-shards"),
    ((None, 4), {}, "--num-shards needs --shard-index (or SLURM_ARRAY_TASK_ID, or a Kubernetes indexed job's "
                    "JOB_COMPLETION_INDEX)"),
    ((None, 3), {"JOB_COMPLETION_INDEX": "3"}, "JOB_COMPLETION_INDEX/--num-shards: slice index 3 is not in 0..2"),
    ((None, None), {"SLURM_ARRAY_TASK_ID": "x", "SLURM_ARRAY_TASK_COUNT": "2"},
     "SLURM_ARRAY_TASK_ID='x' is not an integer"),
    ((None, 3), {"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "2"},
     "--num-shards 3 disagrees with SLURM_ARRAY_TASK_COUNT=2"),
])
def test_a_bad_slice_is_one_line(args, env, message):
    with pytest.raises(SliceError) as err:
        slice_from(*args, env)
    assert str(err.value) == message


def test_a_bad_slice_on_the_command_line_exits_2(corpus, tmp_path):
    res = _audit(corpus, "--out", tmp_path / "o", "--shard-index", 5, "--num-shards", 2)
    assert res.exit_code == 2
    assert res.output.strip() == "Error: --shard-index/--num-shards: slice index 5 is not in 0..1"


def test_sampled_slices_merge_into_the_sampled_job(corpus, tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    assert _audit(corpus, "--out", one, "--sample", 500, "--seed", 4).exit_code == 0
    for i in range(2):
        assert _audit(corpus, "--out", two, "--sample", 500, "--seed", 4, "--shard-index", i,
                      "--num-shards", 2).exit_code == 0
    assert CliRunner().invoke(main, ["merge", str(two)]).exit_code == 0
    a, b = (json.loads((d / "report.json").read_text()) for d in (one, two))
    a.pop("run"), b.pop("run")
    assert a == b and a["totals"]["samples"] == 500
    assert (one / "flags.parquet").read_bytes() == (two / "flags.parquet").read_bytes()
