"""The device guard on CUDA: no host sync in the hot path for mask / warn (and late raise), verified with
torch.cuda.set_sync_debug_mode("error"); flags read back late; skip and late raise. Skipped without CUDA (the
meta-device test in test_guard_checks.py covers sync-freedom there)."""
from __future__ import annotations

import math

import pytest
import torch

from dataaudit.guard import BadBatchError, DeviceGuard, load_snapshot

from tests.paths import REPO

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
CFG = REPO / "fixtures" / "audit.toml"
N = 6


def batches():
    out = []
    for b in range(N):
        g = torch.Generator().manual_seed(b)
        x = torch.randn(8, 3, 16, 16, generator=g)
        y = torch.randint(0, 10, (8,), generator=g)
        ids = torch.randint(1, 1000, (8, 32), generator=g)
        m = torch.ones(8, 32, dtype=torch.int64)
        if b == 2:
            x[5, 0, 0, 0] = math.nan
            y[1] = 10
            ids[3, 7] = 4000
        out.append({"pixels": x, "label": y, "input_ids": ids, "attention_mask": m,
                    "__key__": [f"b{b}-{i}" for i in range(8)], "__shard__": ["s"] * 8})
    return out


@pytest.mark.parametrize("policy", ["mask", "warn", "raise"])
def test_no_host_sync_in_the_hot_path(policy, tmp_path):
    guard = DeviceGuard(batches(), CFG, device="cuda", policy=policy, checks="all", snapshot_dir=tmp_path)
    it = iter(guard)
    outs = []
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(3):  # the bad batch (2) goes out without a sync; under raise it goes out masked
            b = next(it)
            outs.append(b)
            (b["pixels"].float().mean() * 2).detach()  # the "training step": async work only
    finally:
        torch.cuda.set_sync_debug_mode(0)
    if policy == "raise":
        with pytest.raises(BadBatchError) as ei:
            for _ in it:
                pass
        assert ei.value.step == 2 and load_snapshot(ei.value.snapshot).verify()
    else:
        rest = list(it)
        assert len(outs) + len(rest) == N
    guard.flush()
    got = sorted((f.step, f.position, f.key, f.check) for f in guard.findings if f.severity == "error")
    assert got == [(2, 1, "b2-1", "label_out_of_range"), (2, 3, "b2-3", "token_id_out_of_range"),
                   (2, 5, "b2-5", "nonfinite")]
    b2 = outs[2]
    assert b2["pixels"].device.type == "cuda"
    if policy in ("mask", "raise"):
        assert b2["label"][[1, 3, 5]].tolist() == [-100, -100, -100]
        assert torch.isfinite(b2["pixels"]).all().item()
    s = guard.profiler.summary()
    assert s["gpu_steps"] >= 3 and s["gpu_copy_s"] > 0


def test_skip_on_cuda():
    guard = DeviceGuard(batches(), CFG, device="cuda", policy="skip")
    out = list(guard)
    assert len(out) == N - 1 and guard.summary()["skipped_batches"] == 1
