"""GuardOptions: the settings of DeviceGuard and OnDeviceGuard, declared, validated and documented once.

    opts = GuardOptions(policy="mask", act_on=("error", "warning"), snapshot_dir=None)
    guard = DeviceGuard(loader, "audit.toml", device="cuda", options=opts)
    same = DeviceGuard(loader, "audit.toml", device="cuda", policy="mask", act_on=("error", "warning"),
                       snapshot_dir=None)        # the keywords build the same GuardOptions

A guard takes `options=` or the keywords, not both. What the batches are (the loader, the config) and where they go
(`device`) stay the guards' own arguments. OnDeviceGuard reads the policy, act_on, the plan's and the mask's
settings only: it writes no snapshot, has no profiler and no loss watch.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from types import MappingProxyType
from typing import Any, Iterable, Mapping, Sequence

from dataaudit.checks import SEVERITIES
from dataaudit.guard.loss import check_loss_settings

POLICIES = ("raise", "skip", "mask", "warn")


def check_policy(policy: str, allowed: Sequence[str] = POLICIES) -> None:
    """ValueError unless policy is one of `allowed` (OnDeviceGuard allows fewer than POLICIES)."""
    if policy not in allowed:
        hint = " (skip needs a host read per batch: use DeviceGuard)" if policy == "skip" else ""
        raise ValueError(f"policy must be one of {tuple(allowed)}, got {policy!r}{hint}")


@dataclasses.dataclass(frozen=True)
class GuardOptions:
    """How a guard acts (see the DeviceGuard and OnDeviceGuard module docs for the policies).

    policy: raise | skip | mask | warn (OnDeviceGuard: mask | warn | raise). act_on: the severities the policy acts
        on; flagged checks at other severities are recorded and logged, as warn.
    checks, names, fields: as GuardPlan (None: the guard's default checks; names: of a tuple batch's positions;
        fields: overrides of the config's [fields]).
    ignore_index, pad_id: what mask writes (None: the config's label_out_of_range ignore_index, -100, and [data]
        pad_id, else 0). weight_key: the per-sample loss weight added to dict batches under mask (None: none).
    DeviceGuard only:
    snapshot_dir: where raise and the loss guard write snapshots (None: no snapshot). late_raise: on an
        accelerator, raise when the flags come back (no sync) rather than before the batch goes out.
    profile: True (a ThroughputProfiler with log_every / jsonl), a ThroughputProfiler, or False.
    non_blocking, pin_memory: how batches are copied to the device. max_findings: at most this many are kept.
    loss_spike, loss_warmup, loss_decay: the loss guard's spike test (dataaudit.guard.loss; loss_spike=None:
        non-finite losses only); loss_snapshots: at most this many loss (and gradient) snapshots are written.
    loss_window, loss_reference ("median" | "ema"), max_loss (None: max_loss_factor x the first loss),
        loss_patience, loss_mad: the rest of the loss watch (dataaudit.guard.loss).
    max_grad_norm (None: non-finite only), grad_top: the gradient watch (dataaudit.guard.grads).
    skip_list: a skip-list.parquet (dataaudit.guard.skip_list): its (shard, key) samples are dropped.
    compile: on an accelerator, run each batch's checks, mask and weights as one torch.compile'd function (True:
        the default backend; a backend name or callable; False: eagerly). See dataaudit.guard.device_step.
    distributed: None (on when torch.distributed is initialised with world size > 1, or process_group is given),
        False (off: each rank decides alone), True (required: an error unless it is initialised).
    process_group: the group the ranks agree in (None: the default group). rank_check_every: every this many
        steps (and at epoch end) the ranks exchange their key sketches (rank_overlap, coverage; 0: at epoch end
        only). rank_sketch_size: hashes kept per rank and epoch (bottom-k). dataset_size: the dataset's sample
        count for coverage (None: len(loader.dataset) when it has one). See dataaudit.guard.ranks.
    """

    policy: str = "raise"
    act_on: frozenset = frozenset({"error"})
    checks: Iterable[str] | str | None = None
    names: Sequence[str] | None = None
    fields: Mapping[str, Any] | None = None
    ignore_index: int | None = None
    pad_id: int | None = None
    weight_key: str | None = "loss_weight"
    snapshot_dir: str | Path | None = "guard_snapshots"
    late_raise: bool = True
    profile: Any = True
    log_every: int = 100
    jsonl: str | Path | None = None
    non_blocking: bool = True
    pin_memory: bool = True
    max_findings: int = 10_000
    loss_spike: float | None = 2.0
    loss_warmup: int = 3
    loss_decay: float = 0.98
    loss_snapshots: int = 10
    # across ranks (dataaudit.guard.ranks); kept last so that merges of other new options stay simple
    distributed: bool | None = None
    process_group: Any = None
    rank_check_every: int = 50
    rank_sketch_size: int = 4096
    dataset_size: int | None = None
    # loss / gradient / skip-list watch
    loss_window: int = 100
    loss_reference: str = "median"
    max_loss: float | None = None
    max_loss_factor: float | None = 1000.0
    loss_patience: int | None = 4
    max_grad_norm: float | None = None
    grad_top: int = 5
    skip_list: str | Path | None = None
    loss_mad: float | None = 20.0
    compile: Any = False

    def __post_init__(self):
        check_policy(self.policy)
        # frozen: settle the iterables once (a generator of check names would be spent by the first guard)
        act_on = frozenset(self.act_on)
        unknown = sorted(act_on - set(SEVERITIES))
        if unknown:
            raise ValueError(f"act_on: unknown severities {unknown} (known: {SEVERITIES})")
        object.__setattr__(self, "act_on", act_on)
        if self.checks is not None and not isinstance(self.checks, str):
            object.__setattr__(self, "checks", tuple(self.checks))
        if self.names is not None:
            object.__setattr__(self, "names", tuple(self.names))
        if self.fields is not None:
            object.__setattr__(self, "fields", MappingProxyType(dict(self.fields)))
        if self.distributed is not None and not isinstance(self.distributed, bool):
            raise ValueError(f"distributed must be None, True or False, got {self.distributed!r}")
        if int(self.rank_check_every) != self.rank_check_every or self.rank_check_every < 0:
            raise ValueError(f"rank_check_every must be an int >= 0, got {self.rank_check_every!r}")
        if int(self.rank_sketch_size) != self.rank_sketch_size or self.rank_sketch_size < 16:
            raise ValueError(f"rank_sketch_size must be an int >= 16, got {self.rank_sketch_size!r}")
        if self.dataset_size is not None and (int(self.dataset_size) != self.dataset_size or self.dataset_size < 1):
            raise ValueError(f"dataset_size must be an int >= 1 or None, got {self.dataset_size!r}")
        check_loss_settings(self.loss_spike, self.loss_decay, self.loss_window, self.loss_reference, self.max_loss,
                            self.max_loss_factor, self.loss_patience, self.loss_mad)
        if self.max_grad_norm is not None and not self.max_grad_norm > 0:
            raise ValueError(f"max_grad_norm must be > 0 (or None: non-finite gradients only), "
                             f"got {self.max_grad_norm!r}")
        if not (isinstance(self.compile, (bool, str)) or callable(self.compile)):
            raise ValueError(f"compile must be False, True or a torch.compile backend name, got {self.compile!r}")
        if self.grad_top < 1:
            raise ValueError(f"grad_top must be at least 1, got {self.grad_top!r}")

    @classmethod
    def from_arguments(cls, owner: str, options: GuardOptions | None, keywords: Mapping[str, Any], *,
           accepted: Iterable[str] | None = None, policies: Sequence[str] = POLICIES,
           **defaults) -> GuardOptions:
        """The options a guard's constructor was given: `options`, or its keywords (`accepted`: the names it takes,
        `defaults`: its own defaults); both at once is a TypeError, as is an unknown keyword."""
        if options is not None:
            if keywords:
                raise TypeError(f"{owner}: give options=GuardOptions(...) or keyword options, not both "
                                f"(got {', '.join(sorted(keywords))})")
            if not isinstance(options, GuardOptions):
                raise TypeError(f"{owner}: options must be a GuardOptions, not {type(options).__name__}")
            check_policy(options.policy, policies)
            return options
        names = OPTION_NAMES if accepted is None else frozenset(accepted)
        for k in keywords:
            if k not in names:
                raise TypeError(f"{owner}() got an unexpected keyword argument {k!r}")
        given = {**defaults, **keywords}
        check_policy(given.get("policy", "raise"), policies)
        return cls(**given)


OPTION_NAMES = frozenset(f.name for f in dataclasses.fields(GuardOptions))

__all__ = ["GuardOptions", "POLICIES", "OPTION_NAMES", "check_policy"]
