"""One batch's work on an accelerator, eager or compiled: the planned checks (GuardPlan.run), the rows the policy
acts on, the mask and the loss weights, in one function.

Eagerly each check is a few small kernels (about 80 launches for a batch of an image tensor, labels and token ids
with their mask: tests/guard/test_guard_kernel_count.py), which costs more than the checks' bandwidth on a GPU.
`compile=True` (or a torch.compile backend name) traces that same function with torch.compile, so the registered
checks themselves (no second implementation) are fused into a few kernels and called once per step.

- The first step runs eagerly: it resolves the plan and refuses fill values a tensor cannot hold, with their own
  errors. Later steps call the compiled function, one per set of excluded checks and per kind of output.
- A step whose compiled call fails (no Triton, a compiler error, a graph break) is run eagerly, and so is every
  later step: the reason is logged once and given by `summary()["compiled"]`. A real error of the data or the
  settings is then raised by the eager run, as it would have been without compile.
- The CPU fast paths (numpy, host reads) stand aside while torch.compile traces (`dataaudit.tensors.host_path`),
  so the traced function is the device path on any device.
"""
from __future__ import annotations

import logging
from typing import Any, Callable

import torch

from dataaudit.guard.masking import loss_weight, mask_batch
from dataaudit.guard.plan import GuardPlan

log = logging.getLogger("dataaudit.guard")

# what a step computes besides the flags: the acting rows, then the masked batch, then the loss weights
OUTPUTS = ("flags", "act", "mask", "weigh")


class DeviceStep:
    """The device guard's per-batch tensor work.

    plan: the guard's GuardPlan. act_on: the severities the policy acts on. ignore_index, pad_id: what the mask
    writes. compile: False (eager), True (torch.compile's default backend) or a backend (name or callable)."""

    def __init__(self, plan: GuardPlan, act_on, ignore_index: int, pad_id: int, compile: Any = False):
        self.plan, self.act_on = plan, act_on
        self.ignore_index, self.pad_id = ignore_index, pad_id
        self.backend = None if compile is False else ("inductor" if compile is True else compile)
        self.compiled: dict[tuple, Callable] = {}
        self.failure: str | None = None     # why compiling was given up
        self.steps = self.compiled_steps = 0

    def summary(self) -> Any:
        """False (eager by choice), True (compiled), or why compiling was given up."""
        if self.backend is None:
            return False
        return self.failure or True

    def run(self, data, exclude: frozenset, output: str, extra_act: torch.Tensor | None = None):
        """(flagged [C, B], value [C, B], act [B] or None, the batch as handed out, loss weights or None).

        output: "flags" (warn: no act), "act" (skip, an early raise: act is read on the host), "mask" (a late
        raise: the masked batch goes out) or "weigh" (mask: the masked batch and the loss weights).
        extra_act: bool [B] rows the collate guard's checks act on, or None."""
        first = self.steps == 0
        self.steps += 1
        if self.backend is None or first or self.failure is not None:
            return self._step(data, exclude, output, extra_act)
        key = (exclude, output)
        fn = self.compiled.get(key)
        if fn is None:
            fn = self.compiled[key] = torch.compile(
                lambda d, x, _e=exclude, _o=output: self._step(d, _e, _o, x), backend=self.backend, fullgraph=True)
        try:
            out = fn(data, extra_act)
        except Exception as e:  # noqa: BLE001 (any failure to compile: the eager run gives the real error, if any)
            self.failure = _reason(e)
            log.warning("guard: torch.compile of the checks failed (%s); the guard runs eagerly", self.failure)
            return self._step(data, exclude, output, extra_act)
        self.compiled_steps += 1
        return out

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


def _reason(e: BaseException) -> str:
    """One line: the innermost error's type and first line (torch wraps a backend's error in its own)."""
    while getattr(e, "inner_exception", None) is not None or e.__cause__ is not None:
        e = getattr(e, "inner_exception", None) or e.__cause__
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0][:200]}" if lines else type(e).__name__


__all__ = ["DeviceStep", "OUTPUTS"]
