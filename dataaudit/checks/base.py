"""The check registry: every validator is defined once here and run by the audit (Arrow, CPU) and the guard
(torch, any device).

A check is a pure function over a whole batch of samples. It returns one flag and one measured value per
sample; it never loops over samples in Python and never reads a tensor back to the host.

Targets (what the function receives, always as its first argument):
  "text"    pa.Array of strings (nulls allowed)            -> numpy arrays
  "numeric" NumericField (any numeric field)               -> torch tensors on the field's device
  "label"   NumericField of class labels                   -> torch tensors
  "tokens"  TokenFields (token ids + optional attention mask) -> torch tensors
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

SEVERITIES = ("info", "warning", "error")


@dataclass
class CheckOutput:
    """Per-sample result of one check over one batch.

    flagged: bool, shape [num_samples]; value: float64, shape [num_samples] (the measured quantity shown in
    reports). detail: optional per-sample strings (only read for flagged samples); when None the report uses
    the check's `detail` format string with `value` and the check's params.
    """

    flagged: Any
    value: Any
    detail: Any = None


@dataclass(frozen=True)
class CheckSpec:
    name: str
    target: str
    severity: str
    params: dict[str, Any]
    fn: Callable[..., CheckOutput]
    detail: str
    description: str
    # Params that must be set (by the config) before the check can run, e.g. vocab_size.
    required: tuple[str, ...] = field(default_factory=tuple)


REGISTRY: dict[str, CheckSpec] = {}


def register(name: str, *, target: str, severity: str, detail: str, description: str,
             params: dict[str, Any] | None = None, required: tuple[str, ...] = ()):
    """Decorator: add a check function to the registry under a stable name."""
    assert severity in SEVERITIES, severity

    def wrap(fn):
        if name in REGISTRY:
            raise ValueError(f"check {name!r} registered twice")
        REGISTRY[name] = CheckSpec(name, target, severity, dict(params or {}), fn, detail, description,
                                   tuple(required))
        return fn

    return wrap
