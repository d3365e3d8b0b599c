"""Which registered checks the guard runs on which tensors of a batch, and running them.

The plan is resolved from the audit's own config (the same TOML: [fields] names the batch keys, [data] gives
num_classes / vocab_size / pad_id / context_length, [checks.NAME] enabled / severity / params) and from the
first batch's keys (the rule: dataaudit.guard.resolve, kept here per batch structure). Running it calls the
registered check functions (`REGISTRY[name].fn`) on fields built with `from_tensor` / `tokens_from_tensor`: the
same validators as the audit, no second implementation.

Nothing here reads a device tensor back to the host: the result (`BatchChecks`) holds the per-sample flags and
values as [C, B] tensors on the batch's device, for the device guard to act on and read back late.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import torch

from dataaudit.checks import REGISTRY
from dataaudit.config import AuditConfig, load_config
from dataaudit.guard.resolve import (COLLATE_DEFAULT_CHECKS, GUARD_DEFAULT_CHECKS, CheckCall, FieldChecks,
                                     requested_checks, resolve_batch)
from dataaudit.tensors import TrainedTokens, from_tensor, tokens_from_tensor


@dataclass
class BatchChecks:
    """Per-sample results of every check call on one batch, on the batch's device.

    flagged: bool [C, B]; value: float64 [C, B] (row c = calls[c]). Built without any host read."""

    calls: tuple[CheckCall, ...]
    flagged: torch.Tensor
    value: torch.Tensor

    @property
    def num_samples(self) -> int:
        return self.flagged.shape[1]

    def rows(self, acting: Sequence[bool]) -> torch.Tensor:
        """bool [B]: samples flagged by at least one call whose entry in `acting` is True (no host read)."""
        idx = [i for i, a in enumerate(acting) if a]
        if not idx:
            return torch.zeros(self.num_samples, dtype=torch.bool, device=self.flagged.device)
        if len(idx) == len(self.calls):
            return self.flagged.any(0)
        # rows picked by integer views: indexing with the list would copy it to the device (a host sync)
        return torch.stack([self.flagged[i] for i in idx]).any(0)

    def concat(self, other: "BatchChecks") -> "BatchChecks":
        """Both results in one (e.g. the collate guard's, carried with the batch, and the device guard's)."""
        if not other.calls:
            return self
        if not self.calls:
            return other
        return BatchChecks(self.calls + other.calls,
                           torch.cat([self.flagged, other.flagged.to(self.flagged.device)]),
                           torch.cat([self.value, other.value.to(self.value.device)]))

    def to_dict(self) -> dict:
        """Host copy as plain Python: {"check:field": {"flagged": [...], "value": [...]}} (reads back: off the
        hot path only)."""
        f = self.flagged.cpu().numpy()
        v = self.value.cpu().numpy()
        return {c.label: {"flagged": f[i].tolist(), "value": v[i].tolist()} for i, c in enumerate(self.calls)}


class _NumpyBacked:
    """A HostChecks tensor attribute (`flagged`, `value`): a torch view of the numpy array `<name>_np`, built on
    first read; assigning a tensor replaces both."""

    def __set_name__(self, owner, name):
        self.np_name, self.slot = name + "_np", "_" + name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        t = obj.__dict__.get(self.slot)
        if t is None:
            t = obj.__dict__[self.slot] = torch.from_numpy(getattr(obj, self.np_name))
        return t

    def __set__(self, obj, t: torch.Tensor) -> None:
        obj.__dict__[self.slot] = t
        obj.__dict__[self.np_name] = t.cpu().numpy()


class HostChecks(BatchChecks):
    """BatchChecks of CPU results held as numpy [C, B] arrays (`flagged_np`, `value_np`): the guard's CPU path
    reads those directly; the `flagged` / `value` tensors (views of the same memory) are built on first use.
    value_row: for one call, its value tensor [B] instead of value_np (then built when first read)."""

    flagged = _NumpyBacked()
    value = _NumpyBacked()

    def __init__(self, calls: tuple[CheckCall, ...], flagged_np: np.ndarray, value_np: np.ndarray | None,
                 value_row: torch.Tensor | None = None):
        self.calls, self.flagged_np = calls, flagged_np
        if value_np is not None:
            self.value_np = value_np
        self._value_row = value_row

    def __getattr__(self, name):  # only for what __dict__ lacks: value_np of a one-call result, on first read
        if name == "value_np" and self.__dict__.get("_value_row") is not None:
            a = self.__dict__["value_np"] = self._value_row.numpy()[None]
            return a
        raise AttributeError(name)

    @property
    def num_samples(self) -> int:
        return self.flagged_np.shape[1]


def empty_checks(num_samples: int, device=None) -> BatchChecks:
    return BatchChecks((), torch.zeros((0, num_samples), dtype=torch.bool, device=device),
                       torch.zeros((0, num_samples), dtype=torch.float64, device=device))


def as_config(config) -> AuditConfig:
    """An AuditConfig from a path (the audit's TOML), None (defaults) or an AuditConfig."""
    if isinstance(config, AuditConfig):
        return config
    if config is None or isinstance(config, (str, Path)):
        return load_config(config)
    raise TypeError(f"config must be a path, None or an AuditConfig, not {type(config).__name__}")


class GuardPlan:
    """The guard's checks for one kind of batch, from the audit config.

    config: path of the audit TOML, an AuditConfig, or None (defaults).
    checks: None -> GUARD_DEFAULT_CHECKS; "all" -> every numeric/image tensor/label/token check; or a list of
        check names.
        Only checks the config enables run; a check whose required setting is missing (the label range check
        without num_classes) is listed in `skipped` with the reason, never silently passed.
    names: for tuple/list batches, the name of each position (("pixels", "label")); dict batches use their keys.
    fields: overrides of the config's [fields] (numeric, label, input_ids, attention_mask, image_tensor,
        token_labels, train_mask).
    before_collate: the plan of the collate guard, which also has the samples themselves (target "samples").
    """

    def __init__(self, config=None, *, checks: Iterable[str] | str | None = None,
                 names: Sequence[str] | None = None, fields: Mapping[str, Any] | None = None,
                 before_collate: bool = False):
        self.config = as_config(config)
        self.before_collate = before_collate
        self.fields_cfg = {**self.config.fields, **dict(fields or {})}
        if isinstance(self.fields_cfg.get("numeric"), str):
            self.fields_cfg["numeric"] = [self.fields_cfg["numeric"]]
        self.names = tuple(names) if names is not None else None
        self.requested = requested_checks(COLLATE_DEFAULT_CHECKS if checks is None and before_collate else checks)
        self.skipped: dict[str, str] = {}
        self.problems: tuple[str, ...] = ()   # configured batch keys of the wrong kind (their checks are skipped)
        self.fields: tuple[FieldChecks, ...] | None = None   # resolved from the first batch
        self._signature = None
        self._one = None
        self._without: dict = {}   # labels -> plans without them; ("calls", labels) -> their calls

    def _named(self, batch) -> dict[Any, Any]:
        """key -> value of the batch's top level (dict keys, or tuple positions named by `names`); read only."""
        if type(batch) is dict:
            return batch
        if isinstance(batch, Mapping):
            return dict(batch)
        if isinstance(batch, (tuple, list)):
            if self.names is None:
                raise ValueError("the guard needs names=(...) for tuple/list batches (the name of each position, "
                                 "as used in the config's [fields])")
            if len(self.names) != len(batch):
                raise ValueError(f"names has {len(self.names)} entries, the batch {len(batch)}")
            return dict(enumerate(batch))
        raise TypeError(f"the guard checks dict or tuple/list batches, not {type(batch).__name__}")

    def display(self, key) -> str:
        return self.names[key] if isinstance(key, int) and self.names is not None else str(key)

    def resolve(self, batch) -> tuple[FieldChecks, ...]:
        """Resolve (once per batch structure) which checks run on which batch entries."""
        named = self._named(batch)
        sig = tuple(named)  # resolved once per set of batch keys
        if self.fields is not None and sig == self._signature:
            return self.fields
        self._signature = sig
        r = resolve_batch(named, self.display, self.config, self.fields_cfg, self.requested, self.before_collate)
        self.problems = r.problems
        self.skipped = r.skipped
        self.fields = r.fields
        self._without = {}
        self._all_calls = tuple(c for p in self.fields for c in p.calls)
        one = self.fields[0] if len(self.fields) == 1 else None
        self._one = ((one.key,) + one.fns[0]) \
            if one is not None and one.target not in ("tokens", "trained", "samples") and len(one.calls) == 1 \
            else None  # run's straight-line path: (batch key, registered function, params)
        self.label_key, self.ids_key, self.mask_key = r.label_key, r.ids_key, r.mask_key
        self.numeric_keys, self.image_key, self.trained_keys = r.numeric_keys, r.image_key, r.trained_keys
        return self.fields

    @property
    def calls(self) -> tuple[CheckCall, ...]:
        return tuple(c for p in (self.fields or ()) for c in p.calls)

    def describe(self) -> dict:
        """JSON-able: what runs where (for snapshots and logs)."""
        return {"fields": [{"target": p.target, "key": p.key, "name": p.name, "mask_key": p.mask_key,
                            "checks": [c.check for c in p.calls]} for p in (self.fields or ())],
                "skipped": dict(self.skipped), "problems": list(self.problems),
                "names": list(self.names) if self.names else None}

    # ------------------------------------------------------------------------------------------ running

    def without(self, labels: frozenset) -> tuple[FieldChecks, ...]:
        """The resolved plans less the calls named in `labels` ("check:field"), cached per set of labels."""
        out = self._without.get(labels)
        if out is None:
            out = []
            for p in self.fields or ():
                keep = tuple(c for c in p.calls if c.label not in labels)
                if keep:
                    out.append(FieldChecks(p.target, p.key, p.name, keep, p.mask_key, p.ids_key, p.labels))
            out = self._without[labels] = tuple(out)
        return out

    def calls_without(self, labels: frozenset) -> tuple[CheckCall, ...]:
        """The calls `run(batch, labels)` makes, in its order (the same tuple each time: callers cache on it)."""
        if not labels:
            return self._all_calls
        key = ("calls", labels)
        out = self._without.get(key)
        if out is None:
            out = self._without[key] = tuple(c for p in self.without(labels) for c in p.calls)
        return out

    def run(self, batch, exclude: frozenset = frozenset(), tensors_only: bool = False) -> BatchChecks:
        """Every planned check on the batch: per-sample flags and values as [C, B] tensors on the batch's device.
        exclude: labels ("check:field") of calls not to run (the collate guard ran them on the samples already).
        tensors_only: a BatchChecks of tensors on the CPU too (else a HostChecks of numpy arrays there).
        No host read on a non-CPU device (tested on the meta device)."""
        named = self._named(batch)
        plans = self.resolve(named)
        if exclude:
            plans = self.without(exclude)
        one = None if exclude else self._one
        if one is not None:  # the common case of one tensor and one check (the defaults on an image batch)
            key, fn, kw = one
            out = fn(from_tensor(named[key]), **kw)
            f = out.flagged
            if f.is_cpu and not tensors_only:
                return HostChecks(self._all_calls, f.numpy()[None], None, out.value)
            return BatchChecks(self._all_calls, f.unsqueeze(0), out.value.unsqueeze(0))
        args, built = [], {}
        for p in plans:
            x = named[p.key]
            if p.target == "tokens":
                m = named.get(p.mask_key) if p.mask_key is not None else None
                args.append(tokens_from_tensor(x, m))
            elif p.target == "trained":   # the ids (and mask) with the labels / train mask
                m = named.get(p.mask_key) if p.mask_key is not None else None
                args.append(TrainedTokens(tokens_from_tensor(named[p.ids_key], m), from_tensor(x), p.labels))
            else:  # one field per tensor: an image tensor's numeric checks reuse its reductions
                if p.key not in built:
                    built[p.key] = from_tensor(x)
                args.append(built[p.key])
        return self.run_fields(plans, args, named.values(), tensors_only, full=not exclude)

    def run_fields(self, plans: Sequence[FieldChecks], args: Sequence, batch_values: Iterable = (),
                   tensors_only: bool = False, full: bool | None = None) -> BatchChecks:
        """Run the planned calls on fields already built (NumericField / TokenFields, one per plan). full: `plans`
        are all the resolved ones (None: tested here; torch.compile cannot trace `is` between tuples)."""
        flagged, values, calls = [], [], []
        b = None
        for p, arg in zip(plans, args):
            n = arg.ids.num_samples if p.target == "tokens" else len(arg) if p.target == "samples" \
                else arg.tokens.ids.num_samples if p.target == "trained" else arg.num_samples
            if b is None:
                b = n
            elif n != b:
                raise ValueError(f"guard: {p.name} has {n} samples, the batch's other fields {b}")
            for c, (fn, kw) in zip(p.calls, p.fns):
                out = fn(arg, **kw)
                flagged.append(out.flagged)
                values.append(out.value)
                calls.append(c)
        if not calls:
            batch_values = list(batch_values)
            return empty_checks(batch_size(batch_values), device_of(batch_values))
        if full is None:
            full = plans is self.fields
        calls = self._all_calls if full else tuple(calls)  # stable identity: callers cache on it
        # small host arrays: numpy rows (views for one call, else filled row by row)
        if flagged[0].is_cpu and not tensors_only:
            if len(calls) == 1:
                return HostChecks(calls, flagged[0].numpy()[None], values[0].numpy()[None])
            fl = np.empty((len(calls), b), dtype=bool)
            va = np.empty((len(calls), b), dtype=np.float64)
            for i, (f, v) in enumerate(zip(flagged, values)):
                fl[i] = f.numpy()
                va[i] = v.numpy()
            return HostChecks(calls, fl, va)
        if len(calls) == 1:
            return BatchChecks(calls, flagged[0].unsqueeze(0), values[0].unsqueeze(0))
        return BatchChecks(calls, torch.stack(flagged), torch.stack(values))


def batch_size(values: Iterable) -> int:
    for v in values:
        if isinstance(v, torch.Tensor) and v.dim() >= 1:
            return v.shape[0]
        if isinstance(v, (list, tuple)):
            return len(v)
    return 0


def device_of(values: Iterable):
    """The device of the first tensor among `values` (the CPU when there is none)."""
    for v in values:
        if isinstance(v, torch.Tensor):
            return v.device
    return torch.device("cpu")


def format_value(call: CheckCall, value: float) -> str:
    """The check's detail line for one flagged sample (its registered format string)."""
    try:
        return REGISTRY[call.check].detail.format(value=value, **dict(call.params))
    except (KeyError, ValueError, IndexError):
        return f"value {value:g}" if not math.isnan(value) else "value nan"


__all__ = ["GuardPlan", "BatchChecks", "HostChecks", "CheckCall", "FieldChecks", "GUARD_DEFAULT_CHECKS",
           "COLLATE_DEFAULT_CHECKS",
           "as_config", "empty_checks", "format_value"]
