"""Small helpers to feed audited shards to a training loop: a map-style dataset of samples with provenance, and
a collate function that pads ragged token lists.

    ds = ShardSamples(["data/train-000.parquet"], columns=["features", "label", "input_ids", "attention_mask"])
    loader = DataLoader(ds, batch_size=32, collate_fn=CollateGuard(PadCollate(pad_id=0), "audit.toml"))

Each sample is a dict of numpy arrays / Python scalars plus "__key__" and "__shard__" (the shard's file name,
as the audit's reports name it) and "__row__". Reading uses the audit's own readers (`iter_shard`: Parquet,
WebDataset tar, JSONL; nothing is unpickled); WebDataset `.npy` members come back with their stored shape and
dtype. Fine for fixtures and small data; large corpora want a streaming IterableDataset.
"""
from __future__ import annotations

import os
from typing import Sequence

import numpy as np
import torch


class ShardSamples(torch.utils.data.Dataset):
    def __init__(self, paths: Sequence[str], columns: Sequence[str] | None = None, *, name_root: str | None = None):
        from dataaudit.formats import iter_shard  # lazy: pyarrow

        self.samples: list[dict] = []
        for path in paths:
            shard = os.path.relpath(path, name_root) if name_root else os.path.basename(path)
            for batch in iter_shard(str(path)):
                self.samples.extend(_rows(batch, columns, shard))

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, i: int) -> dict:
        return dict(self.samples[i])


def _column_values(col, n: int) -> list:
    """Per-row Python scalars or numpy arrays of one Arrow column (lists: views into one flat array)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    t = col.type
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        valid = col.is_valid().to_numpy(zero_copy_only=False)
        flat = pc.list_flatten(col).to_numpy(zero_copy_only=False)
        lens = pc.fill_null(pc.list_value_length(col), 0).to_numpy(zero_copy_only=False)
        parts = np.split(flat, np.cumsum(lens)[:-1]) if n else []
        return [p if ok else None for p, ok in zip(parts, valid)]
    return col.to_pylist()


def _rows(batch, columns, shard: str) -> list[dict]:
    n = batch.num_rows
    names = [c for c in batch.schema.names if not c.startswith("__")]
    if columns is not None:
        names = [c for c in columns if c in batch.schema.names]
    cols = {c: _column_values(batch.column(c), n) for c in names}
    shapes = {c: _column_values(batch.column(c + ".shape"), n) for c in names if c + ".shape" in batch.schema.names}
    dtypes = {c: batch.column(c + ".dtype").to_pylist() for c in names if c + ".dtype" in batch.schema.names}
    keys = batch.column("__key__").to_pylist()
    rows = batch.column("__row__").to_pylist()
    out = []
    for i in range(n):
        s = {"__key__": keys[i], "__shard__": shard, "__row__": rows[i]}
        for c in names:
            v = cols[c][i]
            if isinstance(v, np.ndarray):
                if c in shapes and shapes[c][i] is not None:
                    v = v.reshape(tuple(int(d) for d in shapes[c][i]))
                if c in dtypes and dtypes[c][i] is not None:
                    v = v.astype(dtypes[c][i])
            s[c] = v
        out.append(s)
    return out


class PadCollate:
    """Collate dict samples: arrays of one shape are stacked, 1-D arrays of different lengths are right-padded
    (with `pad_id`; keys in `mask_keys` with 0), scalars become a tensor. Keys starting with "__" are kept as
    lists. Picklable (for DataLoader workers)."""

    def __init__(self, pad_id: int = 0, mask_keys: Sequence[str] = ("attention_mask",), width: int | None = None):
        self.pad_id, self.mask_keys, self.width = pad_id, tuple(mask_keys), width

    def __call__(self, samples: list[dict]) -> dict:
        out = {}
        for k in samples[0]:
            vals = [s[k] for s in samples]
            if k.startswith("__") or any(v is None for v in vals) or isinstance(vals[0], str):
                out[k] = list(vals)
                continue
            arrs = [np.asarray(v) for v in vals]
            if all(a.shape == arrs[0].shape for a in arrs) and self.width is None:
                out[k] = torch.from_numpy(np.stack(arrs))
                continue
            if any(a.ndim != 1 for a in arrs):
                raise ValueError(f"PadCollate: {k!r} has samples of different shapes that are not 1-D")
            width = self.width or max(a.size for a in arrs)
            fill = 0 if k in self.mask_keys else self.pad_id
            dtype = np.result_type(*arrs)
            x = np.full((len(arrs), width), fill, dtype=dtype)
            for i, a in enumerate(arrs):  # one copy per sample, as any collate does
                x[i, :min(a.size, width)] = a[:width]
            out[k] = torch.from_numpy(x)
        return out


__all__ = ["ShardSamples", "PadCollate"]
