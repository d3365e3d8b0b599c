"""A small PyTorch Lightning callback: the device guard's checks, policy and profiler in a Lightning run.

Lightning is optional: the callback subclasses `lightning.pytorch.Callback` (or `pytorch_lightning.Callback`)
when one of them imports, and is a plain class otherwise (its hooks are ordinary methods, testable with a stub
trainer).

    from dataaudit.guard import GuardCallback
    guard = GuardCallback("audit.toml", policy="mask")
    trainer = L.Trainer(callbacks=[guard])

Lightning has already moved the batch to the device when `on_train_batch_start` runs; the callback checks it
there and applies the policy to the batch in place (dict batches):
    raise  BadBatchError (stops fit) after saving the snapshot; late on an accelerator (see DeviceGuard)
    mask   bad samples neutralized in place, batch["loss_weight"] added
    skip   Lightning cannot drop a batch from a callback: `callback.skip_requested` is True for a bad batch;
           have training_step `return None` then (automatic optimization then skips the step)
    warn   record and log
The loss guard: `on_before_backward` hands the step's loss to `guard.watch_loss` (non-finite or spiking loss ->
a snapshot of the batch, then the policy: raise -> BadLossError; skip / mask -> `callback.loss_skip_requested`
and the gradients are dropped in `on_before_optimizer_step`, so the optimizer leaves the weights alone).
The gradient watch (`grads=True`): `on_before_optimizer_step` hands the module to `guard.watch_grads` (after
Lightning has unscaled the gradients); a bad step's gradients are dropped the same way. Under fp16 loss scaling
(a GradScaler) it is off and says so in the summary: an overflow there is the scaler's to skip, not bad data.
Across ranks (DDP): each epoch starts and ends with the guard's rank exchange (batch counts, then overlap and
coverage over the whole epoch), as DeviceGuard's own loop does.
Profiler figures: "wait" is the time between the end of one training batch and the start of the next (data
loading plus Lightning's own transfer), "copy" is 0 (Lightning's transfer is in "wait"). Every `log_every`
steps the figures go to trainer.logger.log_metrics (TensorBoard, wandb, CSV...) under "guard/...".
"""
from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

from dataaudit.guard.device import DeviceGuard
from dataaudit.guard.options import GuardOptions
from dataaudit.guard.ranks import rank_sync

try:  # the optional dependency
    from lightning.pytorch.callbacks import Callback as _Base
except ImportError:  # pragma: no cover - depends on the environment
    try:
        from pytorch_lightning.callbacks import Callback as _Base
    except ImportError:
        _Base = object

LIGHTNING_AVAILABLE = _Base is not object


class GuardCallback(_Base):
    """The guard as a Lightning callback. Arguments as DeviceGuard (config, options or its keywords: policy,
    act_on, checks, names, fields, ignore_index, pad_id, weight_key, snapshot_dir, late_raise, jsonl, ...); the
    device is Lightning's, and log_every is how often the figures go to trainer.logger."""

    def __init__(self, config=None, *, log_every: int = 50, metrics_prefix: str = "guard/", grads: bool = True,
                 options: GuardOptions | None = None, **guard_kwargs: Any):
        super().__init__()
        opts = GuardOptions.from_arguments("GuardCallback", options,
                                           {k: v for k, v in guard_kwargs.items() if k != "device"})
        # the figures go to the logger (log_every above): no log line of the profiler's own
        self.guard = DeviceGuard(None, config, device=None, options=dataclasses.replace(opts, log_every=0))
        self.log_every = log_every
        self.metrics_prefix = metrics_prefix
        self.grads = grads
        self.grads_off: str | None = None   # why the gradient watch did not run (said in the summary)
        self.skip_requested = False
        self.loss_skip_requested = False
        self._entry = None
        self._t_end: float | None = None
        self._t_ready = 0.0

    # ------------------------------------------------------------------------------------------ hooks

    def setup(self, trainer, pl_module, stage=None) -> None:
        self._join_ranks()

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self._join_ranks()
        if self.guard.ranks is not None:   # every rank: the batch counts, the run id (as DeviceGuard's loop)
            self.guard.ranks.start_epoch(_EpochBatches(trainer))

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        t0 = time.perf_counter()
        wait = t0 - self._t_end if self._t_end is not None else 0.0
        g = self.guard
        if g.ranks is not None:   # the earlier steps' async agreements
            g.ranks.before_step(g.step + 1)
        g.poll()  # earlier steps' flags (may raise late)
        out, entry = g.process(batch)
        self.skip_requested = out is None
        if out is not None and out is not batch:
            _update_in_place(batch, out)
        t1 = time.perf_counter()
        entry.wait_s, entry.copy_s, entry.guard_s = wait, 0.0, t1 - t0
        self._entry = None if out is None else entry
        self._t_ready = t1

    def on_before_backward(self, trainer, pl_module, loss) -> None:
        # |=: with gradient accumulation several micro-batches feed one optimizer step; one bad loss skips it
        if self.guard.loss_guard.handed is not None and self.guard.watch_loss(loss):
            self.loss_skip_requested = True

    def on_before_optimizer_step(self, trainer, pl_module, optimizer) -> None:
        if self.grads and not self.skip_requested and self._grads_watched(trainer, pl_module):
            # |=: the loss watch may have asked already; watch_grads agrees its verdict across ranks itself
            self.loss_skip_requested |= self.guard.watch_grads(pl_module)
        if self.loss_skip_requested:  # a parameter without a gradient is left alone by the optimizer
            for group in optimizer.param_groups:
                for p in group["params"]:
                    p.grad = None
            self.loss_skip_requested = False

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        t = time.perf_counter()
        e, g = self._entry, self.guard
        if e is not None:
            e.compute_s = t - self._t_ready
            e.wall_s = e.wait_s + e.copy_s + e.guard_s + e.compute_s
            g.record_step(e)
            self._entry = None
        self._t_end = t
        prof = g.profiler
        if prof is not None and self.log_every and prof.steps and prof.steps % self.log_every == 0:
            self._log(trainer, prof.summary())

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        if self.guard.ranks is not None:   # the last agreement, then overlap and coverage of the whole epoch
            self.guard.ranks.end_epoch()
        self.guard.flush()
        if self.guard.profiler is not None:
            self._log(trainer, self.guard.profiler.summary())

    def on_train_end(self, trainer, pl_module) -> None:
        self.guard.close()

    # ------------------------------------------------------------------------------------------ helpers

    def _join_ranks(self) -> None:
        """The callback is built before Lightning starts torch.distributed (in trainer.fit): the ranks' agreement
        is set up once it has started."""
        g = self.guard
        if g.ranks is None:   # None until torch.distributed has started (or when it never does)
            g.ranks = rank_sync(g.options, g.record)

    def _grads_watched(self, trainer, pl_module) -> bool:
        if getattr(getattr(trainer, "precision_plugin", None), "scaler", None) is not None:
            self.grads_off = "off: fp16 loss scaling (the GradScaler skips the steps whose gradients overflow)"
            return False
        params = getattr(pl_module, "parameters", None)   # a stub trainer's loop may pass no module
        return params is not None and any(p.grad is not None for p in params())

    def _log(self, trainer, summary: dict) -> None:
        logger = getattr(trainer, "logger", None)
        if logger is None:
            return
        metrics = {self.metrics_prefix + k: float(v) for k, v in summary.items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool)}
        for check, n in summary.get("bad_batches_by_check", {}).items():
            metrics[f"{self.metrics_prefix}bad_batches/{check}"] = float(n)
        logger.log_metrics(metrics, step=getattr(trainer, "global_step", None))

    def summary(self) -> dict:
        s = self.guard.summary()
        s["grad_watch"] = self.grads_off or ("on" if self.grads else "off: grads=False")
        return s

    @property
    def findings(self):
        return self.guard.findings


class _EpochBatches:
    """What RankSync.start_epoch reads of a loader: the batches this rank draws this epoch (Lightning's count,
    after limit_train_batches; no len() when unknown) and the dataset, for coverage."""

    def __init__(self, trainer):
        n = getattr(trainer, "num_training_batches", None)
        self.batches = int(n) if isinstance(n, (int, float)) and math.isfinite(n) else None
        self.dataset = getattr(getattr(trainer, "train_dataloader", None), "dataset", None)

    def __len__(self) -> int:
        if self.batches is None:
            raise TypeError("the number of batches is unknown")
        return self.batches


def _update_in_place(batch, out) -> None:
    """Lightning hands the same batch object to training_step: change it in place."""
    if isinstance(batch, dict):
        for k in [k for k in batch if k not in out]:
            del batch[k]
        batch.update(out)
    elif isinstance(batch, list):
        batch[:] = list(out)
    else:
        raise TypeError("GuardCallback can only change dict or list batches in place (policy mask); "
                        f"got {type(batch).__name__}")


__all__ = ["GuardCallback", "LIGHTNING_AVAILABLE"]
