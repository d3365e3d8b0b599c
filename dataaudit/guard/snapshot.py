"""Snapshots of a failing batch: safetensors only (tensors + a JSON header), never pickle or torch.load.

A snapshot holds the batch's tensors as the guard saw them (before any masking), the samples' provenance
(shard, key, row), every check result (flags and values, [C, B]), the check calls with their parameters, the
resolved config, a trace id and the step. `load_snapshot(path).reproduce()` re-runs the same registered checks
on the stored tensors and `verify()` says whether they give the stored results again.

A loss snapshot (the loss guard's, reason "loss") holds the batch handed to the training step whose loss was
non-finite or spiked, the loss (`snap.loss`: value, kind, reference, threshold, ceiling) and the RNG state the step
started from (`snap.rng`: "cpu", and "cuda" on a GPU). `dataaudit replay SNAPSHOT --model module:factory` runs
the loss on parts of it to name the culprit samples (dataaudit.guard.replay).

    snap = load_snapshot("guard_snapshots/step000041-1f0c9a.safetensors")
    print(snap.trace_id, snap.step, snap.findings()[:3])
    assert snap.verify()
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dataaudit.guard.plan import BatchChecks, CheckCall, GuardPlan, empty_checks, format_value
from dataaudit.guard.tree import move_tree
from dataaudit.io import atomic_path

FORMAT = "dataaudit-guard-snapshot/1"
_META_KEY = "dataaudit"


def _jsonable(v):
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (np.integer, np.floating)):
        return v.item()
    return str(v)


def _host(t: torch.Tensor) -> torch.Tensor:
    # own, contiguous CPU copy: safetensors refuses shared or strided storage
    return t.detach().to("cpu").contiguous().clone()


def _config_from_fingerprint(fp: dict):
    from dataaudit.config import AuditConfig, CheckSettings
    checks = {n: CheckSettings(c["enabled"], c["severity"], dict(c["params"])) for n, c in fp["checks"].items()}
    return AuditConfig(fields=dict(fp["fields"]), data=dict(fp["data"]), checks=checks, source="<snapshot>")


def save_snapshot(directory, *, named: dict, is_dict: bool, checks: BatchChecks | None, device_calls: int,
                  keys, shards, rows, step: int, trace_id: str, policy: str, plan: GuardPlan,
                  reason: str = "", loss: dict | None = None, rng: dict | None = None,
                  rank: int | None = None) -> Path:
    """Write one snapshot file into `directory`; returns its path.

    named: the batch's top-level entries (dict keys, or tuple positions); tensors are stored, JSON-able lists
    (e.g. strings) go to the header, anything else is named in the header as not stored.
    device_calls: how many of checks.calls (the first ones) the device guard ran (the rest came from the
    collate guard). loss: the loss guard's verdict (JSON-able); rng: name -> RNG state tensor. rank: the process's
    rank under torch.distributed (each rank writes its own part of a step's snapshot: `-rankN` in the name)."""
    from safetensors.torch import save_file

    if checks is None:
        checks = empty_checks(len(keys) if keys is not None else 0)

    part = "" if rank is None else f"-rank{rank}"
    path = Path(directory) / f"step{step:06d}-{trace_id[:8]}{part}.safetensors"
    tensors: dict[str, torch.Tensor] = {}
    entries, extra, not_stored = [], {}, []
    for k, v in named.items():
        name = str(k)
        entries.append([k if isinstance(k, int) else name, isinstance(v, torch.Tensor)])
        if isinstance(v, torch.Tensor):
            tensors["batch/" + name] = _host(v)
        elif isinstance(v, (list, tuple, str, int, float, bool)) or v is None:
            extra[name] = _jsonable(v)
        else:
            not_stored.append(name)
    for name, state in (rng or {}).items():
        tensors["rng/" + name] = _host(state)
    tensors["checks/flagged"] = _host(checks.flagged)
    tensors["checks/value"] = _host(checks.value)
    meta = {
        "format": FORMAT, "trace_id": trace_id, "step": step, "policy": policy, "reason": reason, "rank": rank,
        "loss": _jsonable(loss),
        "batch": {"kind": "dict" if is_dict else "tuple", "entries": entries, "extra": extra,
                  "not_stored": not_stored},
        "keys": _jsonable(keys), "shards": _jsonable(shards), "rows": _jsonable(rows),
        "calls": [[c.check, c.field, c.severity, _jsonable(c.params)] for c in checks.calls],
        "device_calls": device_calls,
        "plan": {"requested": list(plan.requested), "names": list(plan.names) if plan.names else None,
                 "fields": _jsonable(plan.fields_cfg), "resolved": _jsonable(plan.describe())},
        "config": _jsonable(plan.config.fingerprint()),
        "torch": torch.__version__,
        "device": checks.flagged.device.type,   # where the checks ran: verify() reruns them there when it can
    }
    with atomic_path(path) as tmp:   # the folder is made, and a reader never sees half a snapshot
        save_file(tensors, str(tmp), metadata={_META_KEY: json.dumps(meta)})
    return path


@dataclass
class Snapshot:
    path: Path
    batch: Any                      # dict or tuple, as the guard saw it (tensors on the CPU)
    keys: list | None
    shards: list | None
    rows: list | None
    checks: BatchChecks             # stored results (all calls: device guard's first, then collate guard's)
    device_calls: int
    step: int
    trace_id: str
    policy: str
    meta: dict = field(default_factory=dict)
    loss: dict | None = None        # loss snapshots: value, kind, reference, threshold, ceiling
    rng: dict = field(default_factory=dict)   # loss snapshots: "cpu" (and "cuda") RNG state tensors

    def plan(self) -> GuardPlan:
        """The device guard's plan, rebuilt from the stored config and call list."""
        p = self.meta["plan"]
        ran = {c.check for c in self.checks.calls[:self.device_calls]}
        checks = [c for c in p["requested"] if c in ran]  # the order asked for: the order the calls ran in
        return GuardPlan(_config_from_fingerprint(self.meta["config"]), checks=checks,
                         names=p["names"], fields=p["fields"])

    @property
    def device(self) -> str:
        """The device type the checks ran on when the snapshot was taken ("cpu", "cuda", ...)."""
        return self.meta.get("device", "cpu")

    def _rerun_device(self, device) -> torch.device:
        if device is not None:
            return torch.device(device)
        if self.device == "cuda" and torch.cuda.is_available():
            return torch.device("cuda")
        return torch.device("cpu")

    def reproduce(self, device=None) -> BatchChecks:
        """Run the device guard's checks again on the stored tensors, on `device` (default: the snapshot's own
        device type where this machine has it, else the CPU)."""
        dev = self._rerun_device(device)
        batch = self.batch if dev.type == "cpu" else move_tree(self.batch, dev)
        return self.plan().run(batch)

    def verify(self, device=None) -> bool:
        """True when re-running the checks gives the stored device-guard results: the same flags, and values
        exactly equal when rerun on the device type that took the snapshot, else equal to float rounding
        (relative 1e-5, absolute 1e-9: a GPU's float reductions add in another order than the CPU's, and a
        spread that is 0 in exact arithmetic comes out as a different tiny number)."""
        dev = self._rerun_device(device)
        again = self.reproduce(dev)
        n = self.device_calls
        stored = BatchChecks(self.checks.calls[:n], self.checks.flagged[:n], self.checks.value[:n])
        if [c.label for c in again.calls] != [c.label for c in stored.calls]:
            return False
        if not torch.equal(again.flagged.cpu(), stored.flagged):
            return False
        a, b = again.value.cpu().numpy(), stored.value.numpy()
        if dev.type == self.device:
            return bool(np.array_equal(a, b, equal_nan=True))
        return bool(np.allclose(a, b, rtol=1e-5, atol=1e-9, equal_nan=True))

    def findings(self) -> list[dict]:
        """Every flagged (sample, check): position, key, shard, check, field, severity, value, detail."""
        f, v = self.checks.flagged.numpy(), self.checks.value.numpy()
        out = []
        for c, call in enumerate(self.checks.calls):
            for i in np.flatnonzero(f[c]).tolist():
                val = float(v[c, i])
                out.append({"position": i, "key": _at(self.keys, i), "shard": _at(self.shards, i),
                            "check": call.check, "field": call.field, "severity": call.severity,
                            "value": val if not math.isnan(val) else None, "detail": format_value(call, val)})
        return out


def _at(seq, i):
    return None if seq is None or i >= len(seq) else seq[i]


def _read_safetensors(path: Path) -> tuple[dict, dict[str, torch.Tensor]]:
    """(metadata, tensors) of a safetensors file, from its bytes read once through dataaudit.io: only a regular
    file is opened (safetensors' own open by name would block on a FIFO and map a device)."""
    from safetensors.torch import load

    from dataaudit.io import read_bytes

    data = read_bytes(path)
    if len(data) < 8:
        raise ValueError(f"{path}: {len(data)} bytes, shorter than a safetensors header")
    size = int.from_bytes(data[:8], "little")
    if size > len(data) - 8:
        raise ValueError(f"{path}: header of {size} bytes in a file of {len(data)}")
    header = json.loads(data[8:8 + size])
    return (header.get("__metadata__") or {}) if isinstance(header, dict) else {}, load(data)


def load_snapshot(path) -> Snapshot:
    """Read a snapshot written by the guard (safetensors header + tensors; no code is executed)."""
    path = Path(path)
    metadata, tensors = _read_safetensors(path)
    meta = json.loads(metadata[_META_KEY])
    if meta.get("format") != FORMAT:
        raise ValueError(f"{path}: not a dataaudit guard snapshot (format {meta.get('format')!r})")
    b = meta["batch"]
    values = {}
    for k, is_tensor in b["entries"]:
        name = str(k)
        if is_tensor:
            values[k] = tensors["batch/" + name]
        elif name in b["extra"]:
            values[k] = b["extra"][name]
    if b["kind"] == "dict":
        batch = {str(k): v for k, v in values.items()}
    else:
        batch = tuple(values[k] for k, _ in b["entries"] if k in values)
    calls = tuple(CheckCall(c[0], c[1], c[2], tuple((p[0], _tuplify(p[1])) for p in c[3])) for c in meta["calls"])
    checks = BatchChecks(calls, tensors["checks/flagged"], tensors["checks/value"])
    rng = {k[len("rng/"):]: v for k, v in tensors.items() if k.startswith("rng/")}
    return Snapshot(path, batch, meta["keys"], meta["shards"], meta["rows"], checks, meta["device_calls"],
                    meta["step"], meta["trace_id"], meta["policy"], meta, meta.get("loss"), rng)


def _tuplify(v):
    return tuple(_tuplify(x) for x in v) if isinstance(v, list) else v


__all__ = ["Snapshot", "load_snapshot", "save_snapshot"]
