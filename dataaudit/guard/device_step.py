"""One batch's work on an accelerator: the planned checks (GuardPlan.run), the rows the policy acts on, the mask and
the loss weights, in one function, run eagerly or through torch.compile (`compile=True`: dataaudit.guard.compiled),
so the registered checks themselves (no second implementation) are fused into a few kernels called once per step.

There is one compiled function per set of excluded checks (those the collate guard ran) and per kind of output.
The CPU fast paths (numpy, host reads) stand aside while torch.compile traces (`dataaudit.tensors.host_path`), so
the traced function is the device path on any device.
"""
from __future__ import annotations

from typing import Any

import torch

from dataaudit.guard.compiled import CompiledCall, backend_of
from dataaudit.guard.masking import loss_weight, mask_batch
from dataaudit.guard.plan import GuardPlan

class DeviceStep:
    """The device guard's per-batch tensor work.

    plan: the guard's GuardPlan. act_on: the severities the policy acts on. ignore_index, pad_id: what the mask
    writes. compile: False (eager), True (torch.compile's default backend) or a backend (name or callable)."""

    def __init__(self, plan: GuardPlan, act_on, ignore_index: int, pad_id: int, compile: Any = False):
        self.plan, self.act_on = plan, act_on
        self.ignore_index, self.pad_id = ignore_index, pad_id
        self.backend = backend_of(compile)
        self.calls: dict[tuple, CompiledCall] = {}

    @property
    def compiled_steps(self) -> int:
        return sum(c.compiled_calls for c in self.calls.values())

    def summary(self) -> Any:
        """False (eager by choice), True (compiled), or why compiling was given up."""
        failures = [c.failure for c in self.calls.values() if c.failure]
        return False if self.backend is None else (failures[0] if failures else True)

    def run(self, data, exclude: frozenset, output: str, extra_act: torch.Tensor | None = None):
        """(flagged [C, B], value [C, B], act [B] or None, the batch as handed out, loss weights or None).

        output: "flags" (warn: no act), "act" (skip, an early raise: act is read on the host), "mask" (a late
        raise: the masked batch goes out) or "weigh" (mask: the masked batch and the loss weights).
        extra_act: bool [B] rows the collate guard's checks act on, or None."""
        key = (exclude, output)
        call = self.calls.get(key)
        if call is None:
            call = self.calls[key] = CompiledCall(
                lambda d, x, _e=exclude, _o=output: self._step(d, _e, _o, x), self.backend, "the checks")
        return call(data, extra_act)

    def _step(self, data, exclude: frozenset, output: str, extra_act):
        plan = self.plan
        res = plan.run(data, exclude, tensors_only=True)
        if output == "flags":
            return res.flagged, res.value, None, data, None
        act = res.rows([c.severity in self.act_on for c in res.calls])
        if extra_act is not None:
            act = act | extra_act
        if output == "act":
            return res.flagged, res.value, act, data, None
        out = mask_batch(plan, data, act, self.ignore_index, self.pad_id)
        return res.flagged, res.value, act, out, loss_weight(act) if output == "weigh" else None


__all__ = ["DeviceStep"]
