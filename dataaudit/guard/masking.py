"""The mask policy's one rule: neutralize the flagged samples of a batch with tensor ops only (no host read).

Label and token labels -> the ignore index, a train mask -> 0, token ids -> the pad id, the float inputs (numeric
fields, the image tensor) -> 0 and the attention mask -> 1 (finite activations); a per-sample loss weight of 0.0
for them, 1.0 for the others.
Shared by DeviceGuard and OnDeviceGuard.
"""
from __future__ import annotations

from typing import Mapping

import torch


def fill_values(plan, ignore_index: int | None, pad_id: int | None) -> tuple[int, int]:
    """(ignore index, pad id) the mask writes: as given, else the label check's configured ignore_index (-100)
    and [data] pad_id (0)."""
    configured = [s.params["ignore_index"] for s in plan.config.checks.values()
                  if s.params.get("ignore_index") is not None]
    if ignore_index is None:
        ignore_index = configured[0] if configured else -100
    return ignore_index, (pad_id if pad_id is not None else plan.config.data.get("pad_id", 0))


def _fill(x: torch.Tensor, value, what: str, key):
    """value as x's elements hold it; a value an integer tensor cannot hold exactly is refused (it would wrap
    around or be truncated into a real class or token id)."""
    if x.is_floating_point() or x.dtype == torch.bool:
        return value
    info = torch.iinfo(x.dtype)
    if not float(value).is_integer() or not info.min <= int(value) <= info.max:
        raise ValueError(f"guard mask: {what} {value!r} does not fit {key!r} ({str(x.dtype).removeprefix('torch.')}"
                         f", {info.min}..{info.max}): give the guard an ignore_index / pad_id the tensor can hold")
    return int(value)


def mask_batch(plan, data, act: torch.Tensor, ignore_index: int, pad_id: int):
    """`data` (dict or tuple batch, resolved by `plan`) with the samples marked in act (bool [B]) neutralized;
    untouched entries are the same tensors."""
    named = dict(data) if isinstance(data, Mapping) else dict(enumerate(data))

    def rows_of(x):
        return act.view((-1,) + (1,) * (x.dim() - 1))

    for k in dict.fromkeys((*plan.numeric_keys, *(() if plan.image_key is None else (plan.image_key,)))):
        x = named[k]
        named[k] = x.masked_fill(rows_of(x), 0)
    if plan.label_key is not None:
        y = named[plan.label_key]
        named[plan.label_key] = y.masked_fill(rows_of(y), _fill(y, ignore_index, "ignore_index", plan.label_key))
    if plan.ids_key is not None:
        x = named[plan.ids_key]
        named[plan.ids_key] = x.masked_fill(rows_of(x), _fill(x, pad_id, "pad_id", plan.ids_key))
    for k, labels in getattr(plan, "trained_keys", ()):   # token labels -> ignore index, a train mask -> 0
        y = named[k]
        named[k] = y.masked_fill(rows_of(y), _fill(y, ignore_index, "ignore_index", k) if labels else 0)
    if plan.mask_key is not None and plan.mask_key in named:
        m = named[plan.mask_key]
        named[plan.mask_key] = m.masked_fill(rows_of(m), 1)
    if isinstance(data, Mapping):
        return named
    items = [named[i] for i in range(len(data))]
    return type(data)(*items) if hasattr(data, "_fields") else type(data)(items)


def loss_weight(act: torch.Tensor) -> torch.Tensor:
    """float32 [B]: 0.0 for the masked samples, 1.0 for the others."""
    return (~act).to(torch.float32)


__all__ = ["fill_values", "loss_weight", "mask_batch"]
