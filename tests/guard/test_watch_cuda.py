"""The gradient watch and the loss watch's median window on CUDA: no host sync in the hot path under warn and
raise (torch.cuda.set_sync_debug_mode("error")), the verdict read back late with the exact step and the largest
parameters named. Skipped without CUDA (tests/guard/test_grad_watch.py runs the same on the CPU)."""
from __future__ import annotations

import pytest
import torch

from dataaudit.guard import DeviceGuard
from dataaudit.guard.grads import BadGradError

from tests.guard.test_loss_guard import batches

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


@pytest.mark.parametrize("policy", ["warn", "raise"])
def test_grads_and_losses_are_watched_without_a_sync(policy, tmp_path):
    torch.manual_seed(0)
    enc = torch.nn.Linear(4, 3).cuda()
    head = torch.nn.Linear(3, 1).cuda().requires_grad_(False)
    model = torch.nn.ModuleDict({"encoder": enc, "head": head})
    guard = DeviceGuard(batches(value=1e6), None, device="cuda", policy=policy, snapshot_dir=tmp_path,
                        max_grad_norm=1e6, checks=[])
    it = iter(guard)
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(4):   # steps 0-3, the bad one included
            b = next(it)
            model.zero_grad()
            loss = head(enc(b["features"])).pow(2).mean()
            loss.backward()
            if policy == "warn":   # under raise the loss's verdict (queued first) would raise before the grads'
                guard.watch_loss(loss)
            guard.watch_grads(model)
    finally:
        torch.cuda.set_sync_debug_mode(0)
    assert guard.grad_events == []   # not read yet

    def rest():
        for b in it:
            model.zero_grad()
            head(enc(b["features"])).pow(2).mean().backward()
            guard.watch_grads(model)
        guard.flush()

    if policy == "raise":
        with pytest.raises(BadGradError) as ei:
            rest()
        assert (ei.value.step, ei.value.kind) == (3, "large")
    else:
        rest()
    (ev,) = guard.grad_events
    assert ev["step"] == 3 and [t["name"] for t in ev["top"]] == ["encoder.weight", "encoder.bias"]
    if policy == "warn":   # 1e6 inputs: far above the median (and the ceiling) of steps 0-2
        assert [e["step"] for e in guard.loss_events] == [3]
