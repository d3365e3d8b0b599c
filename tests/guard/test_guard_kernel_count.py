"""The device guard's kernel budget per step: every aten op it dispatches on a device batch (the meta device stands
in for a GPU: the same dispatch, no data), counted per policy for the benchmark's batch of four fields (image,
label, token ids + attention mask; benchmarks/guard_overhead.py). Views and host-side scalars launch no kernel and
are not counted. The counts are exact so that a change that adds kernels to the hot path shows here. This is the
eager path; compile=True fuses the same work into one compiled call (tests/guard/test_device_step.py)."""
from __future__ import annotations

from collections import Counter

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from dataaudit.config import build_config
from dataaudit.guard import DeviceGuard

NO_KERNEL = {"view", "_reshape_alias", "expand", "unsqueeze", "squeeze", "select", "slice", "as_strided", "t",
             "transpose", "permute", "alias", "detach", "scalar_tensor", "lift_fresh"}


class Kernels(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        if name not in NO_KERNEL:
            self.ops[name] += 1
        return func(*args, **(kwargs or {}))


def _batch(b=32, t=512):
    meta = torch.device("meta")
    return {"pixels": torch.empty(b, 3, 64, 64, device=meta), "label": torch.empty(b, dtype=torch.int64, device=meta),
            "input_ids": torch.empty(b, t, dtype=torch.int64, device=meta),
            "attention_mask": torch.empty(b, t, dtype=torch.int64, device=meta)}


CONFIG = {"data": {"num_classes": 10, "vocab_size": 1000, "pad_id": 0, "context_length": 512,
                   "numeric_dtype": "float32"}, "checks": {"out_of_range": {"min": -100.0, "max": 100.0}}}


@pytest.mark.parametrize("policy, kernels", [("warn", 74), ("mask", 82), ("raise", 80)])
def test_kernels_per_step_on_a_device_batch(policy, kernels):
    batch = _batch()
    g = DeviceGuard([batch, batch], build_config(CONFIG, "<test>"), device="meta", policy=policy, profile=False,
                    snapshot_dir=None)
    it = iter(g)
    next(it)                       # the first step resolves the plan
    with Kernels() as k:
        next(it)
    assert len(g.plan.calls) == 10
    assert sum(k.ops.values()) == kernels, dict(k.ops)
