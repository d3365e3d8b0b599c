"""Which registered checks the guard runs on which entries of a batch: resolved once per batch structure.

The requested check names are validated against the registry (`requested_checks`). A batch's entries are described
as columns (`tensor_column`) and go through the field rule every command uses (dataaudit.fields.resolve), with the
config's [fields] and [data]; each requested check then runs on its target fields where the config enables it and
has its required settings, else it is listed in `skipped` with the reason, never silently passed
(`resolve_batch`). GuardPlan keeps the result per batch structure and runs it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import torch

from dataaudit.checks import REGISTRY
from dataaudit.checks.runnable import skip_reason
from dataaudit.config import AuditConfig, ConfigError
from dataaudit.fields import Column, FieldSpec, resolve

# What the guard runs by default (when `checks` is not given), each only where the config enables it and its
# required settings are there: the checks registered with a `guard_default` position, in that order. Chosen for
# what breaks or silently poisons a training step, at a cost near the memory bandwidth of one read of the batch
# (see docs/guard.md; each registration says why it is in or opt-in). The others run when named
# (checks=[...]) or with "all".
GUARD_DEFAULT_CHECKS = tuple(sorted((n for n, s in REGISTRY.items() if s.guard_default is not None),
                                    key=lambda n: REGISTRY[n].guard_default))
# The collate guard adds the checks only samples before collation need (a null or empty field).
COLLATE_DEFAULT_CHECKS = GUARD_DEFAULT_CHECKS + ("missing_value",)
GUARD_TARGETS = ("numeric", "image_tensor", "label", "tokens", "trained", "samples")   # samples: the collate guard's


@dataclass(frozen=True)
class CheckCall:
    """One check on one field of the batch."""

    check: str
    field: str          # report name of the field: the batch key (ids for token checks)
    severity: str
    params: tuple       # sorted (name, value) pairs: hashable, JSON-able

    @property
    def label(self) -> str:
        return f"{self.check}:{self.field}"


@dataclass
class FieldChecks:
    """A tensor of the batch (or ids + attention mask) and the checks run on it."""

    target: str                         # numeric | image_tensor | label | tokens | trained | samples
    key: Any                            # batch key (str for dicts, int position for tuples; None for samples)
    name: str                           # report name
    calls: tuple[CheckCall, ...]
    mask_key: Any = None                # tokens, trained: the attention mask's key
    ids_key: Any = None                 # trained: the token ids' key (`key` is the labels / train mask)
    labels: bool = True                 # trained: `key` holds labels (else a 0/1 train mask)
    fns: tuple = ()                     # (registered function, params dict) per call, looked up once

    def __post_init__(self):
        self.fns = tuple((REGISTRY[c.check].fn, dict(c.params)) for c in self.calls)


@dataclass
class ResolvedBatch:
    """What runs on one batch structure: the fields with their calls, the checks skipped (name -> reason), the
    configured batch keys of the wrong kind, and the batch keys of each role (None: the batch has none)."""

    fields: tuple[FieldChecks, ...]
    skipped: dict[str, str]
    problems: tuple[str, ...]
    label_key: Any
    ids_key: Any
    mask_key: Any
    numeric_keys: tuple
    image_key: Any
    trained_keys: tuple = ()            # (key, holds labels) of the token labels and train mask the batch has


def requested_checks(checks) -> tuple[str, ...]:
    """The check names a guard was asked for (None: GUARD_DEFAULT_CHECKS; "all": every guard check), validated."""
    if checks is None:
        return GUARD_DEFAULT_CHECKS
    if isinstance(checks, str):
        if checks != "all":
            checks = [checks]
        else:
            return tuple(n for n, s in REGISTRY.items() if s.target in GUARD_TARGETS)
    out = []
    for name in checks:
        if name not in REGISTRY:
            raise ConfigError(f"guard: unknown check {name!r} (known: {', '.join(sorted(REGISTRY))})")
        if REGISTRY[name].target not in GUARD_TARGETS:
            raise ConfigError(f"guard: {name!r} is a {REGISTRY[name].target} check; the guard runs numeric, "
                              "image tensor, label, token and trained-token checks on tensors (text checks run in "
                              "the audit)")
        out.append(name)
    return tuple(dict.fromkeys(out))


def tensor_column(name: str, value) -> Column:
    """A batch entry as the field rule sees it: a tensor's element kind; a 0-dim tensor is no per-sample field;
    anything else (lists of strings, provenance) is no tensor field. Its dims per sample and dtype name (image
    tensors) come along."""
    if not isinstance(value, torch.Tensor):
        return Column(name, "other", type(value).__name__)
    kind = ("float" if value.is_floating_point() else "bool" if value.dtype == torch.bool
            else "other" if value.is_complex() else "int")
    dtype = str(value.dtype).removeprefix("torch.")
    return Column(name, kind, f"tensor {dtype}", per_sample=value.dim() >= 1, ndim=value.dim() - 1, dtype=dtype)


def resolve_batch(named: Mapping[Any, Any], display: Callable[[Any], str], cfg: AuditConfig,
                  fields_cfg: Mapping[str, Any], requested: tuple[str, ...], before_collate: bool) -> ResolvedBatch:
    """The fields and calls for a batch (`named`: key -> value; `display`: a key's report name), from the config
    `cfg` with its [fields] as `fields_cfg`, for the `requested` checks (before_collate: the collate guard's plan,
    which also has the samples themselves)."""
    by_name = {display(k): k for k in named}
    resolved = resolve((tensor_column(name, named[k]) for name, k in by_name.items()),
                       FieldSpec.from_config(fields_cfg, cfg.data))
    label, ids, mask = (by_name.get(n) for n in (resolved.label, resolved.input_ids, resolved.attention_mask))
    numeric = [by_name[n] for n in resolved.numeric]
    image = by_name.get(resolved.image_tensor)
    # [B, T] labels beside [B, T] input_ids are token labels (a [B] `labels` stays a class label)
    trained = [(by_name[n], is_labels) for n, is_labels in ((resolved.token_labels, True),
                                                            (resolved.train_mask, False)) if n in by_name]

    has = {"numeric": bool(numeric), "label": label is not None, "tokens": ids is not None,
           "trained": ids is not None and bool(trained), "image_tensor": image is not None,
           "samples": before_collate}
    skipped: dict[str, str] = {}
    runnable: dict[str, dict[str, dict]] = {}   # check -> target kind -> params
    for name in requested:
        spec = REGISTRY[name]
        # the guard runs a check on its first target, or on each of them (guard_all_targets)
        targets = tuple(t for t in spec.targets if t.kind in GUARD_TARGETS) if spec.guard_all_targets \
            else spec.targets[:1]
        why = skip_reason(name, cfg, has, "the batch", targets=targets)
        if why is None:
            params = cfg.check(name).params
            runnable[name] = {t.kind: spec.params_for(t, params) for t in targets
                              if has[t.kind] and not spec.missing(spec.params_for(t, params), t)}
        else:
            skipped[name] = why

    def calls(target: str, fname: str) -> tuple[CheckCall, ...]:
        names = [n for n in runnable if target in runnable[n]]
        # Reduce-once ordering on one field: checks computing a row reduction the others reuse run first.
        names.sort(key=lambda n: REGISTRY[n].guard_rank)
        return tuple(CheckCall(n, fname, cfg.check(n).severity, tuple(sorted(runnable[n][target].items())))
                     for n in names)

    plans = []
    if before_collate:  # the samples as the dataset yielded them (a None sample)
        plans.append(FieldChecks("samples", None, "sample", calls("samples", "sample")))
    if image is not None:  # before numeric: on a float image its per-channel min / max give nonfinite its own
        plans.append(FieldChecks("image_tensor", image, display(image), calls("image_tensor", display(image))))
    for k in numeric:
        plans.append(FieldChecks("numeric", k, display(k), calls("numeric", display(k))))
    if label is not None:
        plans.append(FieldChecks("label", label, display(label), calls("label", display(label))))
    if ids is not None:
        plans.append(FieldChecks("tokens", ids, display(ids), calls("tokens", display(ids)), mask))
        for k, is_labels in trained:   # flags name the labels / train mask
            plans.append(FieldChecks("trained", k, display(k), calls("trained", display(k)), mask, ids, is_labels))
    return ResolvedBatch(tuple(p for p in plans if p.calls), skipped, resolved.problems, label, ids, mask,
                         tuple(numeric), image, tuple(trained))


__all__ = ["CheckCall", "FieldChecks", "ResolvedBatch", "GUARD_DEFAULT_CHECKS", "COLLATE_DEFAULT_CHECKS",
           "GUARD_TARGETS", "requested_checks", "resolve_batch", "tensor_column"]
