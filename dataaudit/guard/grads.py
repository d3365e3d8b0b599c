"""The gradient watch: after backward, the gradients' norms on their device, read back late like the loss.

    loss.backward()
    if guard.watch_grads(model):       # skip / mask: True when this optimizer step is to be skipped
        opt.zero_grad(); continue
    opt.step()

Per step, on the gradients' device and with no host read: every parameter's gradient norm at once
(torch._foreach_norm), the total norm (the norm of those norms), the norm of each parameter group (the
parameters under one top-level module: "encoder", "head", ...) and the `top` largest norms with their
positions. Bad when the total norm is not finite, or above `max_grad_norm` (None: non-finite only). The
finding names the parameters with the largest norms (names from model.named_parameters()).

The policies are the loss watch's (GradGuard shares the loss guard's batch, snapshot path and cap): raise ->
BadGradError with a snapshot of the batch (late on an accelerator); warn -> logged; skip and mask -> the
verdict is read at once (one small read per step on an accelerator) and watch_grads returns True. Without that
read, `guard.grad_ok` is the verdict as a 0-dim device tensor (True: fine) to use in the step itself, e.g.
`torch._foreach_mul_(grads, guard.grad_ok)` after `nan_to_num_` zeroes a bad step's gradients; for SGD that is a
skipped step, for Adam it is not quite one (the moments decay and the step count advances).
"""
from __future__ import annotations

import logging
import math
import uuid

import torch

from dataaudit.guard.findings import BadBatchError
from dataaudit.guard.loss import MAX_HELD, LossEntry, _action, rng_state

log = logging.getLogger("dataaudit.guard")

HEAD = 3   # packed: total norm, non-finite, above max_grad_norm; then group norms, top norms, top positions


class BadGradError(BadBatchError):
    """The gradient norm of a step was non-finite or above max_grad_norm, under policy "raise". Attributes as
    BadBatchError, plus norm (the total norm), kind ("nonfinite" or "large") and top ([(name, norm)], largest
    first); findings is empty."""

    def __init__(self, message: str, *, step: int, trace_id: str, snapshot, norm: float, kind: str, top: list):
        super().__init__(message, step=step, trace_id=trace_id, snapshot=snapshot, findings=[])
        self.norm, self.kind, self.top = norm, kind, top


def named_grads(model) -> list[tuple[str, torch.Tensor]]:
    """(name, gradient) of the parameters that have one: a module's named_parameters(), or an iterable of
    (name, parameter) pairs, or of parameters (named by position)."""
    items = model.named_parameters() if hasattr(model, "named_parameters") else model
    out = []
    for i, it in enumerate(items):
        name, p = it if isinstance(it, tuple) else (str(i), it)
        if p.grad is not None:
            out.append((name, p.grad))
    return out


class GradWatch:
    """The norms of one step's gradients, on their device (see the module doc)."""

    def __init__(self, max_grad_norm: float | None = None, top: int = 5):
        self.max_grad_norm, self.top = max_grad_norm, int(top)
        self._groups = (None, None, None)   # (names, group names, group index tensor) of the last layout

    def groups(self, names: tuple, device) -> tuple[list, torch.Tensor]:
        """Group names and each parameter's group index (cached while the parameters with gradients stay the
        same)."""
        if self._groups[0] != names or self._groups[2].device != device:
            heads = [n.split(".", 1)[0] if "." in n else "" for n in names]
            order = list(dict.fromkeys(heads))
            at = {g: i for i, g in enumerate(order)}
            gid = torch.tensor([at[h] for h in heads], dtype=torch.int64)
            if device.type == "cuda":   # a pageable copy would synchronise the stream
                gid = gid.pin_memory()
            self._groups = (names, order, gid.to(device, non_blocking=True))
        return self._groups[1], self._groups[2]

    def update(self, grads: list[tuple[str, torch.Tensor]]) -> tuple[torch.Tensor, tuple, list]:
        """(packed float64 [3 + G + 2k] on the first gradient's device, parameter names, group names)."""
        names = tuple(n for n, _ in grads)
        dev = grads[0][1].device
        norms = torch._foreach_norm([g.detach() for _, g in grads])
        norms = torch.stack([n.to(dev, torch.float64, non_blocking=True) for n in norms])
        total = torch.linalg.vector_norm(norms)
        nonfinite = ~torch.isfinite(total)
        if self.max_grad_norm is None:
            over = torch.zeros((), dtype=torch.bool, device=dev)
        else:
            over = ~nonfinite & (total > self.max_grad_norm)
        gnames, gid = self.groups(names, dev)
        gnorm = torch.zeros(len(gnames), dtype=torch.float64, device=dev).index_add_(0, gid, norms * norms).sqrt()
        k = min(self.top, len(names))
        _, pos = torch.topk(torch.nan_to_num(norms, nan=math.inf), k)   # NaN norms count as the largest
        packed = torch.cat([torch.stack([total, nonfinite.double(), over.double()]), gnorm, norms[pos],
                            pos.double()])
        return packed, names, gnames


class GradGuard:
    """The device guard's gradient watch: `check` the gradients of the batch its loss guard handed out last."""

    def __init__(self, options, loss_guard):
        self.options, self.loss_guard = options, loss_guard
        self.watch = GradWatch(options.max_grad_norm, options.grad_top)
        self.events: list[dict] = []
        self.skip_step = False
        self.ok: torch.Tensor | None = None   # the last verdict on the device: True when the gradients are fine
        self.held = 0

    def check(self, model, step: int = -1) -> bool:
        """Test the gradients now on `model`'s parameters (a module, or (name, parameter) pairs). True when the
        optimizer step should be skipped (skip / mask, bad gradients); also `skip_step`."""
        lg = self.loss_guard
        grads = named_grads(model)
        self.skip_step = False
        if not grads:
            raise RuntimeError("watch_grads: no parameter has a gradient (call it after backward)")
        entry, batch, rng = lg.handed if lg.handed is not None else (None, None, None)
        packed, names, gnames = self.watch.update(grads)
        self.ok = packed[1:3].sum() == 0
        le = LossEntry(entry, batch, rng or rng_state(lg.device), packed,
                       entry.step if entry is not None else step)
        item = (le, names, gnames)
        dev = packed.device.type
        if dev == "cpu" or (self.options.policy in ("skip", "mask") and dev != "meta"):
            self.verdict(item, packed.cpu().tolist())   # skip / mask: the one host read they need
            return self.skip_step
        if dev == "cuda":
            self.held += 1
            lg.readback.later((packed,), item, self._landed)
            while self.held > MAX_HELD:
                lg.readback.drain(block=True, limit=1)
        return False

    def _landed(self, item, staged: tuple) -> None:
        self.held -= 1
        self.verdict(item, staged[0].tolist())

    def verdict(self, item, packed: list) -> None:
        """The norms are on the host: bad gradients are snapshotted, named and acted on."""
        le, names, gnames = item
        total, nonfinite, over = packed[:HEAD]
        if not (nonfinite or over):
            return
        g, k = len(gnames), min(self.watch.top, len(names))
        groups = dict(zip(gnames, packed[HEAD:HEAD + g]))
        tops = packed[HEAD + g:HEAD + g + k]
        pos = [int(p) for p in packed[HEAD + g + k:HEAD + g + 2 * k]]
        top = [(names[p], v) for p, v in zip(pos, tops)]
        kind = "nonfinite" if nonfinite else "large"
        o, step = self.options, le.step
        trace_id = uuid.uuid4().hex
        info = {"kind": kind, "total_norm": total, "max_grad_norm": o.max_grad_norm,
                "top": [{"name": n, "norm": v} for n, v in top], "groups": groups}
        path = self.loss_guard.snapshot(le, trace_id, "grads", loss={"grads": info})
        action = _action(o.policy)
        self.events.append({"step": step, "trace_id": trace_id, **info, "snapshot": path, "action": action})
        record = self.loss_guard.record
        if record.profiler is not None:
            record.profiler.record_bad([f"grads:{kind}"], action)
        msg = (f"guard: {'non-finite' if nonfinite else 'large'} gradient norm {total:g} at step {step} "
               f"(trace {trace_id})" + (f" > max_grad_norm {o.max_grad_norm:g}" if kind == "large" else "")
               + "; largest: " + ", ".join(f"{n} {v:g}" for n, v in top)
               + (f"; snapshot: {path}" if path else ""))
        if action == "raised":
            raise BadGradError(msg, step=step, trace_id=trace_id, snapshot=path, norm=total, kind=kind, top=top)
        log.warning("%s -> %s", msg, action)
        if o.policy in ("skip", "mask"):
            self.skip_step = True


__all__ = ["GradWatch", "GradGuard", "BadGradError", "named_grads"]
