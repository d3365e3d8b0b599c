#!/usr/bin/env python
"""The guard's cost across ranks: the extra time per step of its per-step all-reduce (and the key sketches), on
the CPU with gloo.

--ranks processes (spawned; gloo through a FileStore in a temporary folder) train an MLP wrapped in
DistributedDataParallel on in-memory batches that carry trace keys (__key__, __shard__). Loops, rotated within
each round, every rank running the same loop at the same time:

    plain                  no guard
    guard POLICY local     DeviceGuard(distributed=False): the guard's own work, each rank alone
    guard POLICY ranks     DeviceGuard (distributed on): + one all-reduce per step (skip / raise: waited before
                           the batch goes out; mask / warn: async, waited at the next step) + every
                           rank_check_every steps one all_gather of the key sketches

extra per step = median step time (ranks) - median step time (local), per policy; each step timed by the host
clock on every rank, the figure is rank 0's (the ranks run in lockstep through DDP's gradient all-reduce).

    .venv/bin/python benchmarks/guard_ranks.py --ranks 2 --steps 200 --reps 3
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

import argparse  # noqa: E402
import json  # noqa: E402
import multiprocessing as mp  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from datetime import timedelta  # noqa: E402

REPO = _common.REPO
sys.path.insert(0, str(REPO))
POLICIES = ("warn", "mask", "raise", "skip")


def rank_main(rank: int, args, store: str, out: str) -> None:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    from dataaudit.guard import DeviceGuard

    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=args.ranks,
                            timeout=timedelta(seconds=60))
    torch.manual_seed(rank)
    host = [{"x": torch.randn(args.batch, args.features), "y": torch.randint(0, 10, (args.batch,)),
             "__key__": [f"{rank}-{i}-{j}" for j in range(args.batch)],
             "__shard__": [f"shard-{rank}.parquet"] * args.batch} for i in range(args.batches)]
    model = DDP(torch.nn.Sequential(torch.nn.Linear(args.features, args.hidden), torch.nn.ReLU(),
                                    torch.nn.Linear(args.hidden, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step(b):
        loss = torch.nn.functional.cross_entropy(model(b["x"]), b["y"])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    def plain(steps):
        for i in range(steps):
            b = dict(host[i % len(host)])
            b.pop("__key__"), b.pop("__shard__")
            yield b

    def guarded(policy, ranks):
        def loop(steps):
            yield from DeviceGuard([host[i % len(host)] for i in range(steps)], None, policy=policy,
                                   profile=False, snapshot_dir=None, distributed=None if ranks else False)
        return loop

    loops = {"plain": plain}
    for p in args.policies.split(","):
        loops[f"guard {p} local"] = guarded(p, False)
        loops[f"guard {p} ranks"] = guarded(p, True)

    def train(loop, steps):
        marks = [time.perf_counter()]
        for b in loop(steps):
            step(b)
            marks.append(time.perf_counter())
        return [b - a for a, b in zip(marks[1:], marks[2:])]   # from the second step: the first includes setup

    v = torch.zeros(2 * args.ranks, dtype=torch.int64)   # the agreement's tensor, reduced alone
    bare = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        dist.all_reduce(v, op=dist.ReduceOp.MAX)
        bare.append(time.perf_counter() - t0)
    from dataaudit.guard.rank_keys import KeySketch
    sk, keys = KeySketch(4096), [h["__key__"] for h in host]
    t0 = time.perf_counter()
    for i in range(args.steps):
        sk.add(keys[i % len(keys)], host[0]["__shard__"])
    sketch_s = (time.perf_counter() - t0) / args.steps
    for loop in loops.values():
        train(loop, 10)
    per = {k: [] for k in loops}
    order = list(loops.items())
    for r in range(args.reps):
        for name, loop in order[r % len(order):] + order[:r % len(order)]:
            per[name].extend(train(loop, args.steps))
    Path(out, f"rank{rank}.json").write_text(json.dumps({**{k: statistics.median(v) for k, v in per.items()},
                                                         "bare all_reduce": statistics.median(bare),
                                                         "sketch add": sketch_s}))
    dist.destroy_process_group()


def run(args) -> int:
    log = print
    log(_common.machine_line())
    with tempfile.TemporaryDirectory() as tmp:
        ctx = mp.get_context("spawn")
        procs = [ctx.Process(target=rank_main, args=(r, args, str(Path(tmp, "store")), tmp))
                 for r in range(args.ranks)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(args.timeout)
        if any(p.is_alive() or p.exitcode for p in procs):
            for p in procs:
                if p.is_alive():
                    p.kill()
            raise SystemExit(f"ranks failed or ran past {args.timeout} s: exit codes {[p.exitcode for p in procs]}")
        med = [json.loads(Path(tmp, f"rank{r}.json").read_text()) for r in range(args.ranks)]
    m = med[0]
    rows = []
    for p in args.policies.split(","):
        loc, rk = m[f"guard {p} local"], m[f"guard {p} ranks"]
        rows.append([p, f"{m['plain'] * 1e3:.3f} ms", f"{loc * 1e3:.3f} ms", f"{rk * 1e3:.3f} ms",
                     f"{(rk - loc) * 1e6:+.0f} us", f"{rk / m['plain']:.3f}x"])
    log(_common.fmt_table(["policy", "plain step", "guard, local", "guard, ranks agree", "extra per step",
                           "ranks vs plain"], rows,
                          title=f"{args.ranks} ranks, gloo on the CPU, DDP MLP {args.features}->{args.hidden}->10, "
                                f"batch {args.batch}, {args.threads} thread(s) per rank; median of {args.reps} x "
                                f"{args.steps} steps (rank 0's host clock)"))
    log(f"alone: one all_reduce (MAX) of int64[{2 * args.ranks}] {m['bare all_reduce'] * 1e6:.0f} us (median of "
        f"{args.steps}); hashing a batch's {args.batch} keys into the sketch {m['sketch add'] * 1e6:.0f} us")
    if args.json:
        Path(args.json).write_text(json.dumps({"ranks": args.ranks, "per_rank_medians_s": med}, indent=2))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--steps", type=int, default=200, help="steps per loop and round")
    ap.add_argument("--reps", type=int, default=3, help="rounds (loops rotate within each)")
    ap.add_argument("--batches", type=int, default=16, help="distinct in-memory batches per rank")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--features", type=int, default=1024)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads per rank")
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds before the ranks are killed")
    ap.add_argument("--json", help="also write the figures here")
    return _common.run_guarded("guard_ranks", run, ap.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
