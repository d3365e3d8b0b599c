"""The loss guard's test of one training loss, on the loss's device: non-finite, or a spike above `spike_factor`
times an exponential moving average of the recent finite losses. No host read: the verdict stays a device tensor
until the device guard reads it back late, with the data checks' flags.

    bad when  not isfinite(loss)
          or  loss > spike_factor * ema   (after `warmup` finite losses, and only while ema > 0)
    ema <- decay * ema + (1 - decay) * loss   for the losses that are not bad (the first one seeds it)
"""
from __future__ import annotations

import torch

KINDS = ("nonfinite", "spike")


def check_loss_settings(spike_factor: float | None, decay: float) -> None:
    """ValueError for a spike factor that is not > 1 (None: no spike test) or a decay outside (0, 1)."""
    if spike_factor is not None and spike_factor <= 1:
        raise ValueError(f"spike_factor must be > 1 (or None: no spike test), got {spike_factor!r}")
    if not 0 < decay < 1:
        raise ValueError(f"decay must be in (0, 1), got {decay!r}")


class LossWatch:
    """Running state of the loss test (two 0-dim tensors on the loss's device)."""

    def __init__(self, spike_factor: float | None = 5.0, warmup: int = 20, decay: float = 0.98):
        check_loss_settings(spike_factor, decay)
        self.spike_factor, self.warmup, self.decay = spike_factor, int(warmup), float(decay)
        self.ema: torch.Tensor | None = None
        self.count: torch.Tensor | None = None

    def update(self, loss: torch.Tensor) -> torch.Tensor:
        """float64 [4] on the loss's device: (loss, non-finite, spike, ema before this loss). A loss with several
        elements (per-sample losses) is judged by its mean."""
        x = loss.detach()
        x = (x.double().mean() if x.numel() != 1 else x.double().reshape(()))
        if self.ema is None or self.ema.device != x.device:
            self.ema = torch.zeros((), dtype=torch.float64, device=x.device)
            self.count = torch.zeros((), dtype=torch.int64, device=x.device)
        finite = torch.isfinite(x)
        if self.spike_factor is None:
            spike = torch.zeros((), dtype=torch.bool, device=x.device)
        else:
            spike = finite & (self.count >= self.warmup) & (self.ema > 0) & (x > self.spike_factor * self.ema)
        ok = finite & ~spike
        before = self.ema
        seeded = torch.where(self.count == 0, x, self.decay * before + (1 - self.decay) * x)
        self.ema = torch.where(ok, seeded, before)
        self.count = self.count + ok.to(torch.int64)
        return torch.stack([x, (~finite).double(), spike.double(), before])


__all__ = ["LossWatch", "KINDS", "check_loss_settings"]
