"""CollateGuard: the audit's checks on the samples of a batch, inside the DataLoader workers, before collation.

    loader = DataLoader(dataset, batch_size=64, num_workers=4,
                        collate_fn=CollateGuard(my_collate, "audit.toml"))

Each sample is a dict (or a tuple, with names=...) whose entries the config's [fields] name; `__key__` and
`__shard__` (and `__row__`), when a sample has them, are its provenance (the audit's (shard, key)). The guard
takes them out, checks the samples as they are (ragged token lists and per-sample dtypes included: the same
fields the audit builds from Arrow), calls the user's collate_fn on the samples, and returns the collated batch
with the provenance and the results attached:

    dict batch   -> the same dict plus "__key__" [B], "__shard__" [B], "__row__" [B] and "__guard__" (the results)
    other batch  -> GuardedBatch(data, keys, shards, guard, rows)

The device guard (DeviceGuard) consumes those entries: it names every flagged sample by (shard, key), merges
the worker-side results with its own and applies its policy. The work here runs in the workers, in parallel
with training, and costs the training process nothing; `drop=True` removes flagged samples before collation.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import torch

from dataaudit.guard.payload import GuardedBatch, checks_to_payload
from dataaudit.guard.plan import BatchChecks, GuardPlan, empty_checks
from dataaudit.provenance import GUARD, KEY, ROW, SHARD
from dataaudit.tensors import (TrainedTokens, from_arrow, from_tensor, tokens_from_arrow, tokens_from_tensor,
                               with_shapes)

log = logging.getLogger("dataaudit.guard")


class CollateError(RuntimeError):
    """The user's collate_fn failed; the message names the batch's samples by (shard, key)."""


def _as_array(v) -> np.ndarray | None:
    if v is None:
        return None
    if isinstance(v, torch.Tensor):
        v = v.detach()
        if v.dtype == torch.bfloat16:
            v = v.float()
        return v.cpu().numpy()
    return np.asarray(v)


def _list_array(vals: list, dtypes: bool = False):
    """Ragged per-sample arrays as one Arrow large_list column (no per-element Python work), and per-sample
    dtype names when asked (so dtype_mismatch sees each sample's own storage dtype, as the audit does)."""
    import pyarrow as pa  # lazy: only ragged samples need Arrow

    present = [v for v in vals if v is not None]
    lens = np.array([0 if v is None else v.size for v in vals], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    if present:
        flat = np.concatenate([v.reshape(-1) for v in present])
    else:
        flat = np.zeros(0, dtype=np.float32)
    nulls = pa.array([v is None for v in vals]) if len(present) < len(vals) else None
    arr = pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), pa.array(flat), mask=nulls)
    names = [None if v is None else v.dtype.name for v in vals] if dtypes else None
    return arr, names


def _numeric_field(vals: list, shaped: bool = False):
    """A NumericField of the samples' values: a stacked tensor (from_tensor) when every sample has the same
    shape and dtype, else the ragged Arrow form (from_arrow) with per-sample dtypes and, `shaped` (image tensors),
    each sample's [C, H, W] (`with_shapes`)."""
    if all(v is not None for v in vals) and len({(v.shape, v.dtype) for v in vals}) == 1:
        return from_tensor(torch.from_numpy(np.stack(vals)))
    arr, names = _list_array(vals, dtypes=True)
    field = from_arrow(arr, dtypes=names)
    return with_shapes(field, [None if v is None else list(v.shape) for v in vals], 3) if shaped else field


def _token_fields(ids: list, mask: list | None):
    same = all(v is not None for v in ids) and len({v.shape for v in ids}) == 1
    if mask is not None:
        same = same and all(m is not None and m.shape == i.shape for m, i in zip(mask, ids))
    if same and ids and ids[0].ndim == 1:
        return tokens_from_tensor(torch.from_numpy(np.stack(ids)),
                                  None if mask is None else torch.from_numpy(np.stack(mask)))
    return tokens_from_arrow(_list_array(ids)[0], None if mask is None else _list_array(mask)[0])


class CollateGuard:
    """Wrap a collate_fn: check the samples (audit semantics) in the worker, keep their provenance.

    collate_fn: the user's (default: torch's default_collate).
    config, checks, names, fields: as GuardPlan (the audit's TOML; None -> the guard's default checks).
    drop: remove samples flagged by a check whose severity is in `act_on` before collation (they are listed
        in the batch's "__guard__"["dropped"] and logged); the default keeps them for the device guard.
    skip_list: a skip-list.parquet (dataaudit.guard.skip_list): the samples it names by (shard, key) are removed
        before they are checked (listed in "dropped" with checks ["skip_list"]; the device guard counts them
        as skipped_listed). Read once per worker, when the first batch comes.
    """

    def __init__(self, collate_fn: Callable | None = None, config=None, *, checks=None,
                 names: Sequence[str] | None = None, fields: Mapping[str, Any] | None = None,
                 drop: bool = False, act_on: Iterable[str] = ("error",), skip_list=None):
        if collate_fn is None:
            from torch.utils.data import default_collate
            collate_fn = default_collate
        self.collate_fn = collate_fn
        self.plan = GuardPlan(config, checks=checks, names=names, fields=fields, before_collate=True)
        self.names = tuple(names) if names is not None else None
        self.drop = drop
        self.act_on = frozenset(act_on)
        self.skip_list = skip_list   # a path until the first batch (a worker reads it for itself)

    # Picklable for DataLoader workers started with spawn: the plan is rebuilt lazily per worker.

    def _sample_dict(self, s) -> dict:
        if isinstance(s, Mapping):
            return dict(s)
        if isinstance(s, (tuple, list)) and self.names is not None:
            return dict(zip(self.names, s))
        raise TypeError("CollateGuard needs dict samples (or tuples with names=...), got "
                        f"{type(s).__name__}")

    def check(self, samples: Sequence) -> tuple[BatchChecks, list, list, list]:
        """(results, keys, shards, rows) for a list of samples; no collation. A None sample is checked as a
        sample without fields: only null_sample names it (as the audit reports only an undecodable record's
        reader error)."""
        dicts = [{} if s is None else self._sample_dict(s) for s in samples]
        keys = [d.get(KEY) for d in dicts]
        shards = [d.get(SHARD) for d in dicts]
        rows = [d.get(ROW) for d in dicts]
        n = len(dicts)
        if n == 0:
            return empty_checks(0), keys, shards, rows
        proto = {}
        for k, v in next((d for d in dicts if d), {}).items():
            if k in (KEY, SHARD, ROW):
                continue
            a = _as_array(v)
            if a is not None and a.dtype.kind in "biuf":  # a one-sample stand-in: resolves keys and dtypes
                proto[k] = torch.from_numpy(np.array(a, copy=True).reshape((1,) + a.shape))
        plans = self.plan.resolve(proto)
        args, built = [], {}
        for p in plans:
            if p.target == "samples":
                args.append(samples)
                continue
            if p.target in ("numeric", "image_tensor") and p.key in built:  # one field per entry (see GuardPlan.run)
                args.append(built[p.key])
                continue
            vals = [_as_array(d.get(p.key)) for d in dicts]
            if p.target in ("tokens", "trained"):
                masks = None
                if p.mask_key is not None:
                    masks = [_as_array(d.get(p.mask_key)) for d in dicts]
                if p.target == "tokens":
                    args.append(_token_fields(vals, masks))
                else:   # the sample's ids (and mask) with its labels / train mask, ragged or stacked alike
                    ids = [_as_array(d.get(p.ids_key)) for d in dicts]
                    args.append(TrainedTokens(_token_fields(ids, masks), _numeric_field(vals), p.labels))
            elif p.target == "label" and all(v is not None and v.ndim == 0 for v in vals):
                args.append(from_tensor(torch.from_numpy(np.stack(vals))))
            else:
                args.append(built.setdefault(p.key, _numeric_field(vals, p.target == "image_tensor")))
        res = self.plan.run_fields(plans, args, [torch.zeros(n)])
        null = [i for i, s in enumerate(samples) if s is None]
        if null and plans and plans[0].target == "samples":  # its fields are missing because it is: one finding
            start = len(plans[0].calls)
            res.flagged[start:, null] = False
        return res, keys, shards, rows

    def _unlisted(self, samples: list) -> tuple[list, list, list]:
        """(the samples the skip list does not name, a "dropped" record for each one it names, []); when it
        names every sample: (the samples, [], their positions), for the device guard to drop the whole batch
        (an empty batch cannot be collated)."""
        from dataaudit.guard.skip_list import as_skip_list

        self.skip_list = as_skip_list(self.skip_list)
        dicts = [s if isinstance(s, Mapping) else {} for s in samples]
        keys, shards = [d.get(KEY) for d in dicts], [d.get(SHARD) for d in dicts]
        listed = self.skip_list.mask(shards, keys)
        if listed is None or not listed.any():
            return samples, [], []
        if listed.all():
            return samples, [], list(range(len(samples)))
        out = [{"key": keys[i], "shard": shards[i], "row": dicts[i].get(ROW), "checks": ["skip_list"]}
               for i in np.flatnonzero(listed).tolist()]
        return [s for s, b in zip(samples, listed.tolist()) if not b], out, []

    def __call__(self, samples: Sequence):
        dropped, listed = [], []
        if self.skip_list is not None:
            samples, dropped, listed = self._unlisted(list(samples))
        res, keys, shards, rows = self.check(samples)
        samples = _stand_ins(list(samples))
        if self.drop and res.calls:
            acting = [c.severity in self.act_on for c in res.calls]
            bad = res.rows(acting).numpy()
            if bad.any():
                fl = res.flagged.numpy()
                for i in np.flatnonzero(bad).tolist():
                    dropped.append({"key": keys[i], "shard": shards[i], "row": rows[i],
                                    "checks": [c.label for j, c in enumerate(res.calls) if fl[j, i]]})
                keep = np.flatnonzero(~bad)
                log.warning("collate guard: dropped %d of %d samples: %s", len(dropped), len(samples),
                            ", ".join(f"{d['shard']}:{d['key']} ({'/'.join(d['checks'])})" for d in dropped[:5]))
                samples = [samples[i] for i in keep.tolist()]
                keys, shards, rows = [keys[i] for i in keep], [shards[i] for i in keep], [rows[i] for i in keep]
                res = BatchChecks(res.calls, res.flagged[:, torch.from_numpy(keep)],
                                  res.value[:, torch.from_numpy(keep)])
        clean = [_strip(s) for s in samples]
        try:
            data = self.collate_fn(clean)
        except Exception as exc:
            named = ", ".join(f"{s}:{k}" for s, k in zip(shards, keys))
            raise CollateError(f"collate_fn failed on samples [{named}]: {exc}") from exc
        payload = checks_to_payload(res, dropped)
        if listed:
            payload["listed"] = listed   # every sample is on the skip list: the device guard drops the batch
        if isinstance(data, dict):
            data[KEY], data[SHARD], data[ROW], data[GUARD] = keys, shards, rows, payload
            return data
        return GuardedBatch(data, keys, shards, payload, rows)


def _stand_ins(samples: list) -> list:
    """A None sample collated as zeros shaped like the batch's first sample (no provenance), so the batch keeps
    its size and positions and the device guard's policy acts on it (null_sample flags it)."""
    if all(s is not None for s in samples):
        return samples
    proto = next((s for s in samples if s is not None), None)
    if proto is None:
        raise CollateError(f"every sample of the batch is None ({len(samples)} samples): nothing to collate")
    zero = _zeros_like(proto)
    return [zero if s is None else s for s in samples]


def _zeros_like(v):
    if isinstance(v, Mapping):
        return {k: (None if k in (KEY, SHARD, ROW) else _zeros_like(x)) for k, x in v.items()}
    if isinstance(v, torch.Tensor):
        return torch.zeros_like(v)
    if isinstance(v, np.ndarray):
        return np.zeros_like(v)
    if isinstance(v, (tuple, list)):
        return type(v)(_zeros_like(x) for x in v)
    if isinstance(v, (bool, int, float)):
        return type(v)(0)
    return type(v)() if isinstance(v, (str, bytes)) else None


def _strip(s):
    if isinstance(s, Mapping) and (KEY in s or SHARD in s or ROW in s):
        return {k: v for k, v in s.items() if k not in (KEY, SHARD, ROW)}
    return s


__all__ = ["CollateGuard", "CollateError"]
