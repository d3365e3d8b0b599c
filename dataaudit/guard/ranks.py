"""The device guard across ranks: every rank acts at the same step, and what the ranks read is compared.

On when torch.distributed is initialised with world size > 1 (or `process_group=` is given; `distributed=False`
turns it off). Collectives, in the same order on every rank (each has the process group's timeout):

    epoch start   one all_gather of [len(loader), sketch size, a random id, dataset size]: unequal batch counts
                  are reported at once (rank_imbalance; every rank then stops agreeing after the shortest one's
                  count, without the "done" round below), and rank 0's id (first epoch) becomes the run id
    every step    one all-reduce (MAX) of int64 [2 * world]: slot r = rank r's batch had an acting flag, slot
                  world + r = rank r has run out of batches (its count + 1). skip and raise wait for it before the
                  batch is handed out (one collective and one read per step: the rank's own decision is not enough,
                  all ranks must drop, or stop at, the same step); mask and warn issue it async and wait for it
                  at the next step (on CUDA: when its pinned copy has arrived, no host sync), since each rank masks
                  its own samples and the batch stays on every rank anyway: they only record which ranks flagged.
    every N steps one all_gather of each rank's key sketch (rank_check_every, and at epoch end): rank_overlap,
                  coverage (dataaudit.guard.rank_keys)
    epoch end     a last all-reduce saying "done": if every rank is done the sketches are exchanged a last time;
                  if not, the batch counts differ (rank_imbalance) and the guard issues no more collectives this
                  epoch (it would wait on ranks that have stopped), each rank then deciding alone.

raise: every rank raises BadBatchError at the same step with the same trace id (the run id + the step: no
collective more), each writing its own part of the snapshot (`-rankN` in the file name, "rank" in its metadata);
the message on a rank whose own batch was clean names the rank(s) that had the bad samples.
"""
from __future__ import annotations

import logging
import os
from collections import deque
from typing import Any

import torch

from dataaudit.guard.rank_keys import KeySketch, from_row, overlap, union

log = logging.getLogger("dataaudit.guard")
LAG = 2          # CUDA: a step's agreement is waited for at the latest this many steps later
KEEP = 1000      # steps with flags kept in the record
EXAMPLES = 3


def rank_sync(options, record) -> "RankSync | None":
    """The guard's RankSync when ranks must agree (see the module doc), else None."""
    if options.distributed is False:
        return None
    import torch.distributed as dist
    if not (dist.is_available() and dist.is_initialized()):
        if options.distributed or options.process_group is not None:
            raise ValueError("distributed=True / process_group= given, but torch.distributed is not initialised "
                             "(call torch.distributed.init_process_group first)")
        return None
    if options.process_group is None and dist.get_world_size() == 1 and not options.distributed:
        return None
    return RankSync(options, record)


class RankSync:
    """One rank's side of the agreement and of the key sketches (see the module doc)."""

    def __init__(self, options, record):
        import torch.distributed as dist
        self.dist, self.group = dist, options.process_group
        self.rank, self.world = dist.get_rank(self.group), dist.get_world_size(self.group)
        self.cuda = dist.get_backend(self.group) == "nccl"   # NCCL reduces CUDA tensors only
        self.comm = torch.device("cuda", torch.cuda.current_device()) if self.cuda else torch.device("cpu")
        self.record = record
        record.rank = self.rank
        self.every, self.k = int(options.rank_check_every), int(options.rank_sketch_size)
        self.dataset_size_option = options.dataset_size
        self.sketch = KeySketch(self.k)
        self.run_id: str | None = None
        self.epoch = -1
        self.active = False            # collectives on for this epoch
        self.drawn = 0                 # batches drawn this epoch
        self.stop_after = None         # unequal len(loader): the shortest, after which the ranks stop agreeing
        self.pending: deque = deque()  # async step reductions: (work, tensor, host copy, event, step)
        self.flagged: deque = deque(maxlen=KEEP)   # {"step", "ranks"}: steps where some rank had an acting flag
        self.flagged_steps = 0
        self.warnings: list[str] = []
        self.not_checked: list[str] = []
        self._new_epoch_report()

    def _new_epoch_report(self, dataset_size=None, lengths=None) -> None:
        self.report: dict[str, Any] = {"epoch": self.epoch, "batches": lengths, "dataset_size": dataset_size,
                                       "rank_overlap": {}, "rank_imbalance": None, "coverage": None,
                                       "checked_at_step": None}

    # ------------------------------------------------------------------------------------------ epochs

    def start_epoch(self, loader) -> None:
        """A new pass over the loader (all ranks): exchange the batch counts, agree on the run id once."""
        self.finish_pending()
        self.epoch += 1
        self.sketch.reset()
        self.drawn = 0
        self.active = True
        n = _length(loader)
        ds = self.dataset_size_option or _length(getattr(loader, "dataset", None))
        rnd = int.from_bytes(os.urandom(8), "little") >> 2
        mine = torch.tensor([n if n is not None else -1, self.k, rnd >> 31, rnd & ((1 << 31) - 1),
                             ds if ds is not None else -1], dtype=torch.int64, device=self.comm)
        rows = [torch.empty_like(mine) for _ in range(self.world)]
        self.dist.all_gather(rows, mine, group=self.group)
        got = torch.stack(rows).cpu().tolist()
        ks = sorted({r[1] for r in got})
        if len(ks) > 1:
            raise ValueError(f"guard: rank_sketch_size differs between ranks ({ks}): give every rank the same")
        if self.run_id is None:
            self.run_id = f"{(got[0][2] << 31) | got[0][3]:016x}{self.epoch:08x}"[:24]
        lengths = [r[0] for r in got]
        sizes = sorted({r[4] for r in got})
        if len(sizes) > 1:   # e.g. a dataset sharded per rank: whose size would coverage be of?
            shown = ", ".join(str(x) if x >= 0 else "unknown" for x in sizes)
            self._note(f"coverage: the ranks' dataset sizes differ ({shown}): give every rank the same dataset_size=")
            ds = None
        elif ds is None:
            self._note("coverage: the dataset's size is unknown (give dataset_size=)")
        self._new_epoch_report(ds, lengths if min(lengths) >= 0 else None)
        self.stop_after = None
        if min(lengths) >= 0 and len(set(lengths)) > 1:
            self._imbalance(lengths, "len(loader) at epoch start", step=-1)
            self.stop_after = min(lengths)   # known in advance: every rank stops agreeing after the shortest

    def trace_id(self, step: int) -> str:
        """The trace id every rank gives the snapshot of `step` (the run id + the step: no collective)."""
        return f"{self.run_id or '0' * 24}{step & 0xFFFFFFFF:08x}"

    def end_epoch(self) -> None:
        """The loader ran out (all ranks should): the last agreement, then the sketches a last time."""
        self.finish_pending()
        if not self.active:
            return
        if self.stop_after is not None:   # unequal lengths known at the start: no "done" round (see step)
            self._stop(self.stop_after)
            return
        v = self._vector(0)
        v[self.world + self.rank] = self.drawn + 1
        self.dist.all_reduce(v, op=self.dist.ReduceOp.MAX, group=self.group)
        self._landed(v.cpu().tolist(), self.drawn)
        if self.active:   # every rank was done at the same count
            self._exchange(final=True, step=self.drawn - 1)
        self.active = False

    # ------------------------------------------------------------------------------------------ steps

    def _vector(self, flag) -> torch.Tensor:
        v = torch.zeros(2 * self.world, dtype=torch.int64, device=self.comm)
        if isinstance(flag, torch.Tensor):
            v[self.rank:self.rank + 1].copy_(flag.reshape(1))   # a device flag: no host read
        elif flag:
            v[self.rank] = 1
        return v

    def step(self, entry, flag, wait: bool):
        """This rank's batch `entry` had an acting flag (`flag`: a bool, or a 0-dim device tensor). Returns the
        ranks whose batch had one (a tuple, this rank included) when `wait` (skip, raise), else None (async);
        None too when the ranks no longer agree this epoch (the caller decides alone)."""
        if self.epoch < 0:   # a loop that calls process() itself (Lightning): one epoch, its length unknown
            self.start_epoch(None)
        if not self.active:
            return None
        if self.stop_after is not None and self.drawn >= self.stop_after:   # the shortest rank has stopped
            self._stop(self.stop_after)
            return None
        self.drawn += 1
        self.sketch.add(entry.keys, entry.shards)
        v = self._vector(flag)
        exchange = self.every > 0 and self.drawn % self.every == 0
        work = self.dist.all_reduce(v, op=self.dist.ReduceOp.MAX, group=self.group, async_op=True)
        if wait or exchange:
            work.wait()
            ranks = self._landed(v.cpu().tolist(), entry.step)
            if exchange and self.active:
                self._exchange(final=False, step=entry.step)
            return ranks if wait and ranks is not None else None
        if self.cuda:   # no host sync: the copy waits for the reduction on the stream, read when it has arrived
            from dataaudit.guard.readback import pinned_copy
            work.wait()
            host = pinned_copy(v)
            ev = torch.cuda.Event()
            ev.record()
            self.pending.append((None, v, host, ev, entry.step))
        else:
            self.pending.append((work, v, None, None, entry.step))
        return None

    def agree_skip(self, skip: bool) -> bool:
        """The loss or gradient watch's "skip this optimizer step" (skip / mask), agreed by every rank with one
        all-reduce (MAX): the gradients were averaged over the ranks, so one rank stepping while another skips
        would leave them different weights. A rank's own verdict when the ranks no longer agree this epoch."""
        if not self.active:
            return skip
        v = torch.tensor([int(bool(skip))], dtype=torch.int64, device=self.comm)
        self.dist.all_reduce(v, op=self.dist.ReduceOp.MAX, group=self.group)
        agreed = bool(v.item())
        if agreed and not skip:
            log.warning("guard: another rank's loss or gradients were bad: rank %d skips this optimizer step too",
                        self.rank)
        return agreed

    def before_step(self, step: int) -> None:
        """At the start of a step: the earlier steps' async reductions (CPU: waited now, so every rank learns at
        the same step that another has run out of batches; CUDA: those that arrived, and any LAG steps old)."""
        while self.pending:
            work, v, host, ev, s = self.pending[0]
            if host is not None:
                if not ev.query():
                    if s > step - LAG:
                        return
                    ev.synchronize()
                vals = host.tolist()
            else:
                work.wait()
                vals = v.tolist()
            self.pending.popleft()
            self._landed(vals, s)

    def finish_pending(self) -> None:
        self.before_step(1 << 62)

    def _landed(self, vals: list, step: int):
        """A step's reduction is on the host: the ranks that flagged; a rank out of batches ends the agreement."""
        w = self.world
        ranks = tuple(r for r in range(w) if vals[r])
        if ranks:
            self.flagged.append({"step": step, "ranks": list(ranks)})
            self.flagged_steps += 1
            if self.rank not in ranks:
                log.warning("guard: step %d: bad samples on rank(s) %s (rank %d's batch is clean)", step,
                            ", ".join(map(str, ranks)), self.rank)
        done = {r: vals[w + r] - 1 for r in range(w) if vals[w + r]}
        if done and len(done) < w and self.active:
            counts = [done.get(r) for r in range(w)]
            self._imbalance(counts, "a rank ran out of batches", step)
            self._stop(min(done.values()))
        return ranks

    def _stop(self, steps: int) -> None:
        """No more collectives this epoch: a rank has no batches left (each rank decides alone from here)."""
        self.active = False
        self._note(f"epoch {self.epoch}: the ranks agreed on their first {steps} steps only (unequal batch counts); "
                   f"overlap and coverage at epoch end not exchanged")

    # ------------------------------------------------------------------------------------------ reports

    def _note(self, text: str) -> None:
        if text not in self.not_checked:
            self.not_checked.append(text)

    def _warn(self, text: str) -> None:
        self.warnings.append(text)
        log.warning("guard: %s", text)

    def _imbalance(self, counts: list, source: str, step: int) -> None:
        if self.report["rank_imbalance"] is not None:
            return
        self.report["rank_imbalance"] = {"batches": counts, "source": source, "step": step}
        shown = ", ".join(f"rank {r}: {c if c is not None else f'more than {step + 1}'}"
                          for r, c in enumerate(counts))
        self._warn(f"rank_imbalance: epoch {self.epoch}: the ranks have unequal batch counts ({shown}; {source}): "
                   f"the ranks with more wait in their next collective (the end-of-epoch hang); use a "
                   f"DistributedSampler (drop_last=True) or equal shards per rank")

    def _exchange(self, final: bool, step: int) -> None:
        """One all_gather of every rank's sketch: rank_overlap and coverage."""
        row = torch.from_numpy(self.sketch.row([self.epoch, self.drawn])).to(self.comm)
        rows = [torch.empty_like(row) for _ in range(self.world)]
        self.dist.all_gather(rows, row, group=self.group)
        got = torch.stack(rows).cpu().numpy()
        sk = [from_row(r) for r in got]
        rep = self.report
        rep["checked_at_step"] = step
        if any(int(r[7]) for r in got) and not any(h.size for h, _ in sk):
            self._note("rank overlap: the batches carry no trace keys (use CollateGuard for provenance)")
            return
        for i in range(self.world):
            for j in range(i + 1, self.world):
                n, exact, shared = overlap(sk[i][0], sk[i][1], sk[j][0], sk[j][1], self.k)
                if n <= 0:
                    continue
                seen = int(got[i][7]) or 1
                ex = [self.sketch.examples[h] for h in shared[:64].tolist() if h in self.sketch.examples]
                pair = f"{i}-{j}"
                first = pair not in rep["rank_overlap"]
                rep["rank_overlap"][pair] = {"ranks": [i, j], "samples": round(n, 1) if not exact else int(n),
                                             "exact": exact, "share": round(n / seen, 4), "step": step,
                                             "first_step": rep["rank_overlap"][pair]["first_step"] if not first
                                             else step, "examples": ex[:EXAMPLES]}
                if first:
                    self._warn(f"rank_overlap: epoch {self.epoch}: ranks {i} and {j} read the same samples "
                               f"({'' if exact else '~'}{n:.0f} by step {step}"
                               + (f", e.g. {', '.join(ex[:EXAMPLES])}" if ex else "")
                               + "): a missing DistributedSampler (or equal seeds / shards per rank)?")
        ds = rep["dataset_size"]
        if ds:
            n, exact = union(sk, self.k)
            rep["coverage"] = {"share": n / ds, "samples": int(n) if exact else round(n, 1), "exact": exact,
                               "dataset_size": ds, "final": final}
            if final and n < ds:
                self._warn(f"coverage: epoch {self.epoch}: the ranks together read {rep['coverage']['samples']} "
                           f"of {ds} samples ({100 * n / ds:.1f}%)")

    def summary(self) -> dict:
        return {"rank": self.rank, "world_size": self.world, "run_id": self.run_id, "epoch": self.epoch,
                "steps_agreed": self.drawn, "steps_with_flags": self.flagged_steps,
                "flagged": list(self.flagged)[-20:], "report": _plain(self.report),
                "warnings": list(self.warnings), "not_checked": list(self.not_checked)}


def _length(obj):
    if obj is None:
        return None
    try:
        return int(len(obj))
    except TypeError:   # an iterable without len()
        return None


def _plain(rep: dict) -> dict:
    out = dict(rep)
    out["rank_overlap"] = list(rep["rank_overlap"].values())
    return out


__all__ = ["RankSync", "rank_sync", "LAG"]
