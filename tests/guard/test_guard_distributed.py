"""DeviceGuard across ranks on the CPU (gloo): 2 and 4 processes spawned by the test (tests/guard/dist_worker.py),
a FileStore in tmp_path, every collective under a 30 s process-group timeout, each run joined with a bound and
killed past it. One bad sample on the last rank gives the same action at the same step on every rank (skip, mask,
raise with one trace id and a snapshot part per rank); a missing DistributedSampler is rank_overlap at the first
exchange; unequal batch counts are rank_imbalance before the last step; coverage is exact on small data; without
torch.distributed (or at world size 1) the guard is what it was."""
from __future__ import annotations

import json
import multiprocessing as mp
import os
import time
from datetime import timedelta

import pytest
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader

from dataaudit.guard import DeviceGuard, GuardOptions
from tests.guard import dist_worker
from tests.guard.dist_worker import Samples

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(),
                                reason="torch.distributed with the gloo backend is not available")
LIMIT_S = 90.0   # a bound on one spawned run (the happy path takes a few seconds); past it: killed, failed


def run_ranks(world: int, scenarios: list[str], tmp_path) -> list[dict]:
    """Run `scenarios` on `world` spawned ranks; each rank's results (fails with the ranks' tracebacks)."""
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=dist_worker.main, args=(r, world, str(tmp_path / "store"), str(tmp_path), scenarios),
                         daemon=True) for r in range(world)]
    for p in procs:
        p.start()
    deadline = time.monotonic() + LIMIT_S
    for p in procs:
        p.join(max(0.1, deadline - time.monotonic()))
    hung = [r for r, p in enumerate(procs) if p.is_alive()]
    for r in hung:
        procs[r].kill()
        procs[r].join(5)
    errors = {r: (tmp_path / f"error-{r}.txt").read_text() for r in range(world)
              if (tmp_path / f"error-{r}.txt").exists()}
    if hung or errors or any(p.exitcode != 0 for p in procs):
        pytest.fail(f"ranks {hung} still running after {LIMIT_S:.0f} s (killed); exit codes "
                    f"{[p.exitcode for p in procs]}; errors: {errors}")
    return [json.loads((tmp_path / f"result-{r}.json").read_text()) for r in range(world)]


# ------------------------------------------------------------------------------------------ all ranks act together

@pytest.mark.parametrize("world", [2, 4])
def test_one_bad_sample_on_the_last_rank_same_action_same_step_everywhere(world, tmp_path):
    res = run_ranks(world, ["skip", "mask", "raise"], tmp_path)
    last = world - 1
    bad = str(dist_worker._bad_index(world))
    flagged = [{"step": 2, "ranks": [last]}]
    for r, got in enumerate(res):
        mine = r == last
        s = got["skip"]
        assert s["steps"] == [0, 1, 3] and s["error"] is None
        assert s["findings"] == ([[2, 0, bad, "skipped", last]] if mine else [])
        assert s["bad_batches"] == [[2, "skipped", [last]]]
        assert s["flagged"] == flagged
        m = got["mask"]
        assert m["steps"] == [0, 1, 2, 3] and m["error"] is None
        assert m["findings"] == ([[2, 0, bad, "masked", last]] if mine else [])
        assert m["bad_batches"] == ([[2, "masked", None]] if mine else [])
        assert m["flagged"] == flagged
        x = got["raise"]
        assert x["steps"] == [0, 1]
        e = x["error"]
        assert e["step"] == 2 and e["trace_id"] == res[0]["raise"]["error"]["trace_id"]
        assert e["snapshot"] == f"step000002-{e['trace_id'][:8]}-rank{r}.safetensors"
        assert e["snapshot_rank"] == r
        assert e["snapshot_keys"] == [str(r + 4 * world), str(r + 5 * world)]   # this rank's own batch
        assert x["findings"] == ([[2, 0, bad, "raised", last]] if mine else [])
        assert x["bad_batches"] == [[2, "raised", [last]]]
        if mine:
            assert f"on rank(s) {last} (trace" in e["message"] and f"nonfinite:x at [0=s.parquet:{bad}]" in e["message"]
        else:
            assert f"on rank(s) {last}; this rank ({r}) had none" in e["message"]
    trace = res[0]["raise"]["error"]["trace_id"]
    assert sorted(os.listdir(tmp_path / "snaps-raise")) == \
        [f"step000002-{trace[:8]}-rank{r}.safetensors" for r in range(world)]


# ------------------------------------------------------------------------------------------ what the ranks read

def _pairs(world):
    return [[i, j] for i in range(world) for j in range(i + 1, world)]


@pytest.mark.parametrize("world", [2, 4])
def test_missing_sampler_is_rank_overlap_at_the_first_exchange_and_coverage_is_exact(world, tmp_path):
    res = run_ranks(world, ["no_sampler", "with_sampler", "padded", "dataset_size"], tmp_path)
    keys = {f"s.parquet:{i}" for i in range(16)}
    for r, got in enumerate(res):
        ns = got["no_sampler"]                      # every rank reads all 16 samples, 8 batches
        assert ns["first_seen_at_step"] == 1        # the first exchange (rank_check_every=2)
        ov = ns["report"]["rank_overlap"]
        assert [o["ranks"] for o in ov] == _pairs(world)
        for o in ov:
            assert (o["samples"], o["exact"], o["share"], o["first_step"], o["step"]) == (16, True, 1.0, 1, 7)
            assert len(o["examples"]) == 3 and set(o["examples"]) <= keys
        assert ns["report"]["coverage"] == {"share": 1.0, "samples": 16, "exact": True, "dataset_size": 16,
                                            "final": True}
        assert len(ns["warnings"]) == len(_pairs(world))
        assert ns["warnings"][0].startswith("rank_overlap: epoch 0: ranks 0 and 1 read the same samples (4 by step 1")
        assert ns["log"] == ["guard: " + w for w in ns["warnings"]]   # logged as they were found

        ws = got["with_sampler"]
        assert ws["report"]["rank_overlap"] == [] and ws["warnings"] == [] and ws["report"]["rank_imbalance"] is None
        assert ws["report"]["coverage"] == {"share": 1.0, "samples": 16, "exact": True, "dataset_size": 16,
                                            "final": True}

        pd = got["padded"]   # DistributedSampler pads 17 samples with the first ones: each read twice
        pairs = [[0, 1]] if world == 2 else [[0, 1], [1, 2], [2, 3]]
        per_rank = 18 // 2 if world == 2 else 20 // 4
        assert [o["ranks"] for o in pd["report"]["rank_overlap"]] == pairs
        for k, o in enumerate(pd["report"]["rank_overlap"]):
            assert (o["samples"], o["exact"], o["share"]) == (1, True, round(1 / per_rank, 4))
            assert o["examples"] == ([f"s.parquet:{k}"] if r in o["ranks"] else [])
        assert pd["report"]["coverage"]["share"] == 1.0 and pd["report"]["coverage"]["samples"] == 17

        dz = got["dataset_size"]
        assert dz["report"]["coverage"] == {"share": 0.8, "samples": 16, "exact": True, "dataset_size": 20,
                                            "final": True}
        assert dz["warnings"] == ["coverage: epoch 0: the ranks together read 16 of 20 samples (80.0%)"]
        assert dz["report"]["rank_overlap"] == []


def test_unequal_batch_counts_are_reported_before_the_last_step(tmp_path):
    res = run_ranks(2, ["unequal_len", "unequal_nolen"], tmp_path)
    for r, got in enumerate(res):
        steps = list(range(5 if r == 0 else 6))
        ul = got["unequal_len"]      # len(loader) known: reported at epoch start
        assert ul["steps"] == steps and ul["seen_at_step"] == 0
        assert ul["report"]["rank_imbalance"] == {"batches": [5, 6], "source": "len(loader) at epoch start",
                                                  "step": -1}
        assert ul["warnings"][0].startswith("rank_imbalance: epoch 0: the ranks have unequal batch counts "
                                            "(rank 0: 5, rank 1: 6; len(loader) at epoch start)")
        stopped = ("epoch 0: the ranks agreed on their first 5 steps only (unequal batch counts); overlap and "
                   "coverage at epoch end not exchanged")
        assert ul["not_checked"] == ["coverage: the ranks' dataset sizes differ (10, 12): give every rank the same "
                                     "dataset_size=", stopped]   # a Subset per rank: no coverage
        un = got["unequal_nolen"]    # no len(): learnt from the "done" flag of the short rank (skip: at once)
        assert un["steps"] == steps
        assert un["report"]["rank_imbalance"] == {"batches": [5, None], "source": "a rank ran out of batches",
                                                  "step": 5}
        assert un["seen_at_step"] == (None if r == 0 else 5)   # rank 1 knew before its last batch went out
        assert un["not_checked"] == ["coverage: the dataset's size is unknown (give dataset_size=)", stopped]


# ------------------------------------------------------------------------------------------ one process: unchanged

def _one_process_run(tmp_path, **kw):
    ds = Samples(8, bad=[5])
    g = DeviceGuard(DataLoader(ds, batch_size=2), None, policy="skip", profile=False, snapshot_dir=tmp_path, **kw)
    steps = [g.step for _ in g]
    return g, steps


def test_not_initialised_or_world_size_1_is_unchanged(tmp_path):
    g, steps = _one_process_run(tmp_path)
    assert g.ranks is None and "ranks" not in g.summary() and steps == [0, 1, 3]
    assert [(f.step, f.position, f.key, f.action, f.rank) for f in g.findings] == [(2, 1, "5", "skipped", None)]
    for kw in ({"distributed": True}, {"process_group": object()}):
        with pytest.raises(ValueError, match="torch.distributed is not initialised"):
            _one_process_run(tmp_path, **kw)
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1,
                            timeout=timedelta(seconds=30))
    try:
        g1, steps1 = _one_process_run(tmp_path)
        assert g1.ranks is None and steps1 == steps and g1.findings == g.findings
        assert g1.bad_batches == g.bad_batches
        g2, steps2 = _one_process_run(tmp_path, distributed=True)   # asked for: one rank agreeing with itself
        assert steps2 == steps and [f.rank for f in g2.findings] == [0]
        assert g2.bad_batches == [{**g.bad_batches[0], "ranks": [0]}]
        assert g2.summary()["ranks"]["report"]["coverage"]["share"] == 1.0
    finally:
        dist.destroy_process_group()
    assert torch.distributed.is_initialized() is False


@pytest.mark.parametrize("bad", [{"distributed": 1}, {"rank_check_every": -1}, {"rank_check_every": 1.5},
                                 {"rank_sketch_size": 8}, {"dataset_size": 0}])
def test_rank_options_are_validated(bad):
    with pytest.raises(ValueError):
        GuardOptions(**bad)


def test_skip_list_and_bad_losses_keep_the_ranks_in_step(tmp_path):
    """One rank cannot drop a step alone: a batch all on the skip list is skipped by every rank under skip, goes out
    masked under mask; a NaN loss on one rank skips the optimizer step on every rank; the Lightning callback drops
    a step's gradients on every rank when one rank's are NaN, and exchanges overlap and coverage at epoch end (one
    spawn for the four)."""
    from dataaudit.guard.skip_list import append_skip_list

    append_skip_list(tmp_path / "skip-list.parquet", [{"shard": "s.parquet", "key": k, "reason": "replay"}
                                                       for k in ("5", "7")])
    r0, r1 = run_ranks(2, ["listed_skip", "listed_mask", "loss_skip", "lightning"], tmp_path)
    assert r0["listed_skip"]["steps"] == r1["listed_skip"]["steps"] == [0, 2, 3]
    assert r0["listed_skip"]["flagged"] == r1["listed_skip"]["flagged"] == [{"step": 1, "ranks": [1]}]
    assert (r0["listed_skip"]["listed"], r1["listed_skip"]["listed"]) == (0, 2)
    assert r0["listed_mask"]["steps"] == r1["listed_mask"]["steps"] == [0, 1, 2, 3]
    assert r1["listed_mask"]["x"][1] == [0.0, 0.0] and r0["listed_mask"]["x"][1] == [4.0, 6.0]
    assert r1["listed_mask"]["flagged"] == [] and r1["listed_mask"]["listed"] == 2
    assert {k: r0["loss_skip"][k] for k in ("skipped", "events")} == {"skipped": [2], "events": []}
    assert {k: r1["loss_skip"][k] for k in ("skipped", "events")} == {"skipped": [2], "events": [2]}
    for r, got in enumerate((r0["lightning"], r1["lightning"])):
        assert got["dropped"] == [2] and got["grad_events"] == ([2] if r == 1 else [])
        assert got["grad_watch"] == "on" and got["finite"]
        rep = got["report"]
        assert rep["batches"] == [4, 4] and rep["checked_at_step"] == 3 and rep["rank_imbalance"] is None
        assert [(o["ranks"], o["samples"], o["exact"], o["share"], o["first_step"]) for o in rep["rank_overlap"]] == [
            ([0, 1], 8, True, 1.0, 3)]
        assert rep["coverage"] == {"share": 1.0, "samples": 8, "exact": True, "dataset_size": 8, "final": True}
        assert got["warnings"][0].startswith("rank_overlap: epoch 0: ranks 0 and 1 read the same samples (8 by step 3")
