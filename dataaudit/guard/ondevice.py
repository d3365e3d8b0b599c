"""OnDeviceGuard: the guard as tensor work alone, for CUDA graphs and torch.compile; the flags stay on the device
until `read()`.

    guard = OnDeviceGuard("audit.toml", policy="mask")
    out = guard(static_batch)              # eager first call: resolves the plan and allocates the record
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = guard(static_batch)          # captured: every replay checks, masks and adds to the record
    guard.reset()                          # forget the warm-up calls (in place: the graph keeps its buffers)
    for batch in loader:
        for k in static_batch: static_batch[k].copy_(batch[k], non_blocking=True)
        graph.replay()
        ...                                # train on `out`
    print(guard.read())                    # the one host read

A call runs the same registered checks as DeviceGuard (GuardPlan.run) and the mask policy's rule
(dataaudit.guard.masking) with no host read, no data-dependent shape and no branch on data, and folds the flags
into a record held in fixed device buffers that it updates in place, so that a captured graph's replays keep adding
to it: per check call, the samples flagged, the first and the last step that had one, and its flags and values at
that last step. Policies:
    mask   the bad samples neutralized as DeviceGuard's mask does, batch[weight_key] = 0.0 for them (1.0 else;
           also `guard.sample_weight`, for tuple batches);
    warn   the batch goes out unchanged;
    raise  the batch goes out masked, and read() raises BadBatchError (its `report`: what read() would return)
           when a check whose severity is in act_on has flagged since the last reset.
skip needs the flag on the host before the step; use DeviceGuard for it. Shapes are fixed per record: a batch
larger than the first one needs a new OnDeviceGuard (a smaller one, such as a last partial batch, is fine; an
empty one is handed back as it is). There are no trace ids here (a graph's batch holds tensors only): the record
names steps and positions.
"""
from __future__ import annotations

import torch

from dataaudit.guard.findings import BadBatchError
from dataaudit.guard.masking import fill_values, loss_weight, mask_batch
from dataaudit.guard.options import GuardOptions
from dataaudit.guard.plan import CheckCall, GuardPlan, format_value

ONDEVICE_POLICIES = ("mask", "warn", "raise")
# the GuardOptions it reads: no snapshot, profiler or loss watch here
ONDEVICE_OPTIONS = ("policy", "act_on", "checks", "names", "fields", "ignore_index", "pad_id", "weight_key")


class OnDeviceGuard:
    """Checks + mask as pure tensor work; a record on the device, read by `read()`.

    config: as GuardPlan (the audit TOML path, an AuditConfig or None).
    options: a GuardOptions, or as keywords policy (mask | warn | raise, see the module doc; default mask), act_on,
        checks, names, fields, ignore_index, pad_id, weight_key (see GuardOptions), not both."""

    def __init__(self, config=None, *, options: GuardOptions | None = None, **keywords):
        o = self.options = GuardOptions.from_arguments("OnDeviceGuard", options, keywords, accepted=ONDEVICE_OPTIONS,
                                                       policies=ONDEVICE_POLICIES, policy="mask")
        self.plan = GuardPlan(config, checks=o.checks, names=o.names, fields=o.fields)
        self.policy = o.policy
        self.act_on = o.act_on
        self.ignore_index, self.pad_id = fill_values(self.plan, o.ignore_index, o.pad_id)
        self.weight_key = o.weight_key
        self.calls: tuple[CheckCall, ...] | None = None
        self.sample_weight: torch.Tensor | None = None   # mask: the last batch's loss weights
        self._acting: torch.Tensor | None = None   # bool [C]: the calls the policy acts on
        self._record: dict[str, torch.Tensor] | None = None

    # ------------------------------------------------------------------------------------------ the step

    def __call__(self, batch):
        """The batch as the policy hands it out (masked under mask / raise); the record updated on the device."""
        res = self.plan.run(batch, tensors_only=True)
        fl, va = res.flagged, res.value
        if fl.shape[1] == 0:   # nothing to check or to mask
            return batch
        if self._record is None:
            self._allocate(res.calls, fl)
        else:
            self._same_shape(res.calls, fl)
        self._fold(fl, va)
        if self.policy == "warn":
            return batch
        act = (fl & self._acting.unsqueeze(1)).any(0)
        out = mask_batch(self.plan, batch, act, self.ignore_index, self.pad_id)
        if self.policy == "mask" and self.weight_key is not None:
            self.sample_weight = loss_weight(act)
            if isinstance(out, dict):
                out[self.weight_key] = self.sample_weight
        return out

    def _same_shape(self, calls, fl: torch.Tensor) -> None:
        """The record's buffers are fixed: the same check calls, and no more samples than the first batch."""
        if calls != self.calls:   # equal tuples of the same call objects: a cheap identity walk
            raise ValueError(f"OnDeviceGuard: this batch's checks ({', '.join(c.label for c in calls)}) differ from "
                             f"the first batch's ({', '.join(c.label for c in self.calls)}): the batch keys "
                             "changed; use one guard per kind of batch")
        width = self._record["last_flags"].shape[1]
        if fl.shape[1] > width:
            raise ValueError(f"OnDeviceGuard: a batch of {fl.shape[1]} samples after one of {width} (the "
                             "record's buffers are fixed)")

    def _allocate(self, calls, fl: torch.Tensor) -> None:
        c, b, dev = fl.shape[0], fl.shape[1], fl.device
        self.calls = calls
        self._acting = torch.tensor([k.severity in self.act_on for k in calls], dtype=torch.bool).to(dev)
        self._record = {
            "step": torch.zeros((), dtype=torch.int64, device=dev),        # calls so far
            "samples": torch.zeros(c, dtype=torch.int64, device=dev),      # samples flagged, per call
            "first": torch.full((c,), -1, dtype=torch.int64, device=dev),  # first step with a flag, per call
            "last": torch.full((c,), -1, dtype=torch.int64, device=dev),   # last step with a flag, per call
            "last_size": torch.zeros(c, dtype=torch.int64, device=dev),    # per call: batch size at its last step
            "last_flags": torch.zeros((c, b), dtype=torch.bool, device=dev),      # per call, at its last step
            "last_values": torch.zeros((c, b), dtype=torch.float64, device=dev),
        }

    def _fold(self, fl: torch.Tensor, va: torch.Tensor) -> None:
        """Add one step's flags to the record, in place (tensor ops only: graph-safe)."""
        r = self._record
        step = r["step"]
        bad = fl.any(1)                       # [C]
        r["samples"].add_(fl.sum(1))
        r["first"].copy_(torch.where(bad & (r["first"] < 0), step, r["first"]))
        r["last"].copy_(torch.where(bad, step, r["last"]))
        b = fl.shape[1]
        r["last_size"].copy_(torch.where(bad, b, r["last_size"]))
        width = r["last_flags"].shape[1]
        if b < width:  # a smaller (last) batch: pad its rows
            fl = torch.nn.functional.pad(fl, (0, width - b))
            va = torch.nn.functional.pad(va, (0, width - b))
        rows = bad.unsqueeze(1)   # each call keeps its own last flagged step's rows
        r["last_flags"].copy_(torch.where(rows, fl, r["last_flags"]))
        r["last_values"].copy_(torch.where(rows, va, r["last_values"]))
        step.add_(1)

    # ------------------------------------------------------------------------------------------ off the hot path

    def reset(self) -> None:
        """Zero the record in place (a captured graph keeps writing to the same buffers)."""
        if self._record is None:
            return
        for name, t in self._record.items():
            t.fill_(-1 if name in ("first", "last") else 0)

    def read(self) -> dict:
        """The record on the host (this is where the device syncs): {"steps", "checks": {"check:field": {
        "severity", "samples", "first_step", "last_step"}}, "last_bad_step" (any check), "last_bad":
        {"check:field": [{"position", "value", "detail"}]} (each check's flagged samples at its own last_step)}.
        Under raise, BadBatchError (step: the last step an acting check flagged; `report`: this dict) when an
        acting check flagged."""
        if self._record is None:
            return {"steps": 0, "checks": {}, "last_bad_step": None, "last_bad": {}}
        r = {k: v.cpu() for k, v in self._record.items()}
        checks, last_bad = {}, {}
        for c, call in enumerate(self.calls):
            first, last = int(r["first"][c]), int(r["last"][c])
            checks[call.label] = {"severity": call.severity, "samples": int(r["samples"][c]),
                                  "first_step": first if first >= 0 else None,
                                  "last_step": last if last >= 0 else None}
            rows = r["last_flags"][c, :int(r["last_size"][c])].nonzero().flatten().tolist()
            if rows:
                last_bad[call.label] = [{"position": i, "value": float(r["last_values"][c, i]),
                                         "detail": format_value(call, float(r["last_values"][c, i]))}
                                        for i in rows]
        last = int(r["last"].max()) if len(self.calls) else -1   # the last step any check flagged
        out = {"steps": int(r["step"]), "checks": checks, "last_bad_step": last if last >= 0 else None,
               "last_bad": last_bad}
        if self.policy == "raise":
            acting = {k: v for k, v in checks.items() if v["samples"] and v["severity"] in self.act_on}
            if acting:
                err = BadBatchError("guard: bad samples (masked on the device): " + "; ".join(
                    f"{k} ({v['samples']} samples, steps {v['first_step']}..{v['last_step']})"
                    for k, v in acting.items()), step=max(v["last_step"] for v in acting.values()), trace_id="",
                    snapshot=None, findings=[])
                err.report = out
                raise err
        return out


__all__ = ["OnDeviceGuard", "ONDEVICE_POLICIES", "ONDEVICE_OPTIONS"]
