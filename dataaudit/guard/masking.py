"""The mask policy's one rule: neutralize the flagged samples of a batch with tensor ops only (no host read).

Label -> the ignore index, token ids -> the pad id, the float inputs (numeric fields, the image tensor) -> 0 and
the attention mask -> 1 (finite activations). Shared by DeviceGuard and OnDeviceGuard.
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
        named[plan.label_key] = y.masked_fill(rows_of(y), ignore_index)
    if plan.ids_key is not None:
        x = named[plan.ids_key]
        named[plan.ids_key] = x.masked_fill(rows_of(x), pad_id)
    if plan.mask_key is not None and plan.mask_key in named:
        m = named[plan.mask_key]
        named[plan.mask_key] = m.masked_fill(rows_of(m), 1)
    if isinstance(data, Mapping):
        return named
    return type(data)(named[i] for i in range(len(data)))


__all__ = ["fill_values", "mask_batch"]
