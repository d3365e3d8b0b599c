"""Tensor trees (dicts, lists, tuples, named tuples of tensors): pinned, or moved to a device, as one.

Shared by the device guard (it moves each batch) and GuardedBatch (the DataLoader pins and moves it).
"""
from __future__ import annotations

import torch


def pin_tree(x):
    """Pin every CPU tensor of a dict / list / tuple tree (the DataLoader's pin_memory does the same)."""
    if isinstance(x, torch.Tensor):
        return x.pin_memory() if x.device.type == "cpu" and not x.is_pinned() else x
    if isinstance(x, dict):
        return {k: pin_tree(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(pin_tree(v) for v in x) if not hasattr(x, "_fields") else type(x)(*[pin_tree(v) for v in x])
    return x


def move_tree(x, device, non_blocking: bool = True, pin: bool = False):
    """Every tensor of a dict / list / tuple tree on `device` (non_blocking; pinned first when `pin`)."""
    if isinstance(x, torch.Tensor):
        if x.device == device:
            return x
        if pin and x.device.type == "cpu" and not x.is_pinned():
            x = x.pin_memory()
        return x.to(device, non_blocking=non_blocking)
    if isinstance(x, dict):
        return {k: move_tree(v, device, non_blocking, pin) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        items = [move_tree(v, device, non_blocking, pin) for v in x]
        return type(x)(*items) if hasattr(x, "_fields") else type(x)(items)
    return x
