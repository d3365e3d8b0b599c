"""The ranks' side of tests/guard/test_guard_distributed.py: one spawned process per rank (gloo, a FileStore in the
test's tmp_path), each running the named scenarios with DeviceGuard and writing what it saw to result-RANK.json
(an error: error-RANK.txt with the traceback)."""
from __future__ import annotations

import json
import logging
import traceback
from datetime import timedelta
from pathlib import Path

SAMPLE_FIELDS = ("x", "__key__", "__shard__")


class Samples:
    """n samples {"x": [2] float32, "__key__": "i", "__shard__": "s.parquet"}; `bad`: indexes holding a NaN."""

    def __init__(self, n: int, bad=()):
        self.n, self.bad = n, set(bad)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        import torch
        x = torch.full((2,), float(i))
        if i in self.bad:
            x[1] = float("nan")
        return {"x": x, "__key__": str(i), "__shard__": "s.parquet"}


class NoLen:
    """A loader without len() (an iterable dataset's): the ranks learn their counts only at epoch end."""

    def __init__(self, loader):
        self.loader = loader

    def __iter__(self):
        return iter(self.loader)


class Log(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def main(rank: int, world: int, store: str, out: str, scenarios: list) -> None:
    import torch.distributed as dist
    out_dir = Path(out)
    try:
        dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world,
                                timeout=timedelta(seconds=30))
        handler = Log()
        logging.getLogger("dataaudit.guard").addHandler(handler)
        results = {}
        for name in scenarios:
            handler.lines.clear()
            results[name] = SCENARIOS[name](rank, world, out_dir)
            results[name]["log"] = [x for x in handler.lines if "rank_" in x or "coverage" in x]
        (out_dir / f"result-{rank}.json").write_text(json.dumps(results))
        dist.destroy_process_group()
    except BaseException:
        (out_dir / f"error-{rank}.txt").write_text(traceback.format_exc())
        raise


def _loader(ds, rank, world, sampler=True, batch_size=2):
    from torch.utils.data import DataLoader
    from torch.utils.data.distributed import DistributedSampler
    s = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=False) if sampler else None
    return DataLoader(ds, batch_size=batch_size, sampler=s)


def _guard(loader, **kw):
    from dataaudit.guard import DeviceGuard
    kw.setdefault("profile", False)
    return DeviceGuard(loader, None, **kw)


def _bad_index(world: int, step: int = 2) -> int:
    """The sample the last rank reads first in its batch `step` (DistributedSampler, no shuffle, batches of 2)."""
    return (world - 1) + world * 2 * step


def _policy(policy):
    def run(rank, world, out_dir):
        from dataaudit.guard import BadBatchError, load_snapshot
        snaps = out_dir / f"snaps-{policy}"
        ds = Samples(world * 8, bad=[_bad_index(world)])
        g = _guard(_loader(ds, rank, world), policy=policy, snapshot_dir=snaps)
        steps, err = [], None
        try:
            for _ in g:
                steps.append(g.step)
        except BadBatchError as e:
            snap = load_snapshot(e.snapshot)
            err = {"step": e.step, "trace_id": e.trace_id, "snapshot": Path(e.snapshot).name,
                   "snapshot_rank": snap.meta["rank"], "snapshot_keys": snap.keys, "message": str(e)}
        return {"steps": steps, "error": err,
                "findings": [[f.step, f.position, f.key, f.action, f.rank] for f in g.findings],
                "bad_batches": [[b["step"], b["action"], b.get("ranks")] for b in g.bad_batches],
                "flagged": g.summary()["ranks"]["flagged"]}
    return run


def _report(g, steps=None):
    r = g.summary()["ranks"]
    return {"report": r["report"], "warnings": r["warnings"], "not_checked": r["not_checked"], "steps": steps}


def no_sampler(rank, world, out_dir):
    g = _guard(_loader(Samples(16), rank, world, sampler=False), policy="warn", rank_check_every=2)
    first = None
    for _ in g:
        if first is None and g.summary()["ranks"]["report"]["rank_overlap"]:
            first = g.step
    return {**_report(g), "first_seen_at_step": first}


def with_sampler(rank, world, out_dir):
    g = _guard(_loader(Samples(16), rank, world), policy="warn", rank_check_every=2)
    list(g)
    return _report(g)


def padded(rank, world, out_dir):
    """17 samples: DistributedSampler pads to a multiple of the world size with the first samples again."""
    g = _guard(_loader(Samples(17), rank, world, batch_size=1), policy="mask", rank_check_every=3)
    list(g)
    return _report(g)


def dataset_size(rank, world, out_dir):
    g = _guard(_loader(Samples(16), rank, world), policy="skip", dataset_size=20)
    list(g)
    return _report(g)


def _unequal(no_len: bool, policy: str):
    def run(rank, world, out_dir):
        from torch.utils.data import DataLoader, Subset
        n = 10 if rank == 0 else 12        # 5 and 6 batches of 2
        loader = DataLoader(Subset(Samples(12), range(n)), batch_size=2)
        g = _guard(NoLen(loader) if no_len else loader, policy=policy)
        seen_at = None
        steps = []
        for _ in g:
            steps.append(g.step)
            if seen_at is None and g.summary()["ranks"]["report"]["rank_imbalance"] is not None:
                seen_at = g.step
        return {**_report(g, steps), "seen_at_step": seen_at}
    return run


def _listed(policy):
    """Rank 1's batch of step 1 (samples 5 and 7 of 16 on 2 ranks) is all on the skip list."""
    def run(rank, world, out_dir):
        g = _guard(_loader(Samples(16), rank, world), policy=policy, skip_list=out_dir / "skip-list.parquet")
        steps, xs = [], []
        for b in g:
            steps.append(g.step)
            xs.append(b["x"][:, 0].tolist())
        return {"steps": steps, "x": xs, "weights": b["loss_weight"].tolist() if policy == "mask" else None,
                "listed": g.skipped_listed, "flagged": g.summary()["ranks"]["flagged"]}
    return run


def loss_skip(rank, world, out_dir):
    """Rank 1's loss at step 2 is NaN: every rank skips that optimizer step (watch_loss agrees), none other."""
    import torch
    g = _guard(_loader(Samples(16), rank, world), policy="skip")
    skipped = []
    for b in g:
        loss = b["x"].mean() + (float("nan") if (rank, g.step) == (1, 2) else 0.0)
        if g.watch_loss(loss + torch.zeros(())):
            skipped.append(g.step)
    return {"skipped": skipped, "events": [e["step"] for e in g.loss_events]}


def lightning(rank, world, out_dir):
    """The Lightning callback's hooks on each rank (a stub trainer; no sampler: every rank reads the same 8
    samples, 4 batches). Rank 1's gradients hold a NaN at step 2: every rank drops that step's gradients. Overlap
    and coverage come from the exchange at epoch end only (rank_check_every=0)."""
    from types import SimpleNamespace

    import torch
    from dataaudit.guard import GuardCallback
    loader = _loader(Samples(8), rank, world, sampler=False)
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    trainer = SimpleNamespace(logger=None, global_step=0, num_training_batches=len(loader), train_dataloader=loader)
    cb = GuardCallback(None, policy="skip", profile=False, rank_check_every=0)
    cb.guard.ranks = None   # as when built before trainer.fit starts torch.distributed: setup() joins the ranks
    dropped = []
    cb.setup(trainer, model, "fit")
    cb.on_train_epoch_start(trainer, model)
    for i, batch in enumerate(loader):
        cb.on_train_batch_start(trainer, model, batch, i)
        loss = model(batch["x"]).sum()
        cb.on_before_backward(trainer, model, loss)
        loss.backward()
        if (rank, i) == (1, 2):
            model.weight.grad[0, 0] = float("nan")
        cb.on_before_optimizer_step(trainer, model, opt)
        if model.weight.grad is None:
            dropped.append(i)
        opt.step()
        opt.zero_grad()
        cb.on_train_batch_end(trainer, model, None, batch, i)
    cb.on_train_epoch_end(trainer, model)
    return {**_report(cb.guard), "dropped": dropped, "grad_events": [e["step"] for e in cb.guard.grad_events],
            "grad_watch": cb.summary()["grad_watch"], "finite": bool(torch.isfinite(model.weight).all())}


SCENARIOS = {"skip": _policy("skip"), "mask": _policy("mask"), "raise": _policy("raise"),
             "no_sampler": no_sampler, "with_sampler": with_sampler, "padded": padded,
             "dataset_size": dataset_size, "unequal_len": _unequal(False, "warn"),
             "unequal_nolen": _unequal(True, "skip"),
             "listed_skip": _listed("skip"), "loss_skip": loss_skip, "listed_mask": _listed("mask"),
             "lightning": lightning}
