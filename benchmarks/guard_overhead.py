#!/usr/bin/env python
"""Training guard overhead, in one run:

1. bandwidth: the guard's own time on one batch (DeviceGuard.process: from_tensor fields, the registered checks,
   the policy, reading the flags back) against the bytes of the batch, next to `numpy.isfinite(x).all()` on
   the same buffer (the peer). Ratio = guard bandwidth / peer bandwidth (target >= 0.7 on the CPU). Reported for
   several batch sizes, for the guard's default checks with the default config (nonfinite on float tensors)
   and with fixtures/audit.toml (adds out_of_range bounds and dtype_mismatch), and for a mixed batch (pixels,
   labels, token ids + attention mask) where the peer runs numpy.isfinite over every tensor of the batch.
2. step overhead: a small training loop (MLP, SGD) over pre-built in-memory batches, plain and wrapped in
   DeviceGuard (policies warn, mask, raise); ratio = guarded step time / plain step time (GPU target <= 1.01).

Timings: best of --reps rounds of --inner calls (bandwidth), median of --reps rounds (loops); the peers
alternate within each round. One process; torch uses --threads intra-op threads (default: torch's default).

    .venv/bin/python benchmarks/guard_overhead.py                       # CPU, a few seconds
    .venv/bin/python benchmarks/guard_overhead.py --device cuda --steps 500
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

REPO = _common.REPO
sys.path.insert(0, str(REPO))
TARGET_BANDWIDTH = 0.7
TARGET_STEP = 1.01


def best_time(fn, inner: int, rounds: int) -> float:
    fn()
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        best = min(best, (time.perf_counter() - t0) / inner)
    return best


def bench_config(context_length: int):
    """What an audit.toml for this data would say (clean data: nothing is flagged, as in a healthy run)."""
    from dataaudit.config import build_config
    return build_config({"data": {"num_classes": 10, "vocab_size": 1000, "pad_id": 0,
                                  "context_length": context_length, "numeric_dtype": "float32"},
                         "checks": {"out_of_range": {"min": -100.0, "max": 100.0}}}, "<benchmark audit.toml>")


def compare(peer_fn, guard_fn, inner: int, reps: int) -> tuple[float, float, float]:
    """(best peer time, best guard time, median of the per-round ratios): the two alternate every round."""
    peers, guards = [], []
    for _ in range(reps):
        peers.append(best_time(peer_fn, inner, 3))
        guards.append(best_time(guard_fn, inner, 3))
    return min(peers), min(guards), statistics.median(p / g for p, g in zip(peers, guards))


def sizes_arg(s: str) -> list[tuple[int, ...]]:
    return [tuple(int(d) for d in part.split("x")) for part in s.split(",") if part]


def bandwidth(args, log) -> list[dict]:
    from dataaudit.guard import DeviceGuard

    rows = []
    configs = [("defaults", None), ("bounds+dtype", bench_config(args.mixed_tokens))]
    for shape in sizes_arg(args.sizes):
        x = torch.randn(*shape)
        xn = x.numpy()
        nbytes = x.numel() * x.element_size()
        inner = max(2, min(args.inner, int(1e8 // max(nbytes, 1))))
        for cname, cfg in configs:
            g = DeviceGuard(None, cfg, policy="warn", profile=False)
            batch = {"pixels": x}
            peer, guard, med = compare(lambda: np.isfinite(xn).all(), lambda: g.process(batch), inner, args.reps)
            rows.append({"batch": "x".join(map(str, shape)) + " float32", "config": cname,
                         "checks": ",".join(c.check for c in g.plan.calls), "bytes": nbytes,
                         "peer_s": peer, "guard_s": guard, "peer_gbs": nbytes / peer / 1e9,
                         "guard_gbs": nbytes / guard / 1e9, "ratio": peer / guard, "ratio_median": med})
    # a mixed batch: image + labels + tokens (the default checks on each)
    b, t = args.mixed_batch, args.mixed_tokens
    batch = {"pixels": torch.randn(b, 3, 64, 64), "label": torch.randint(0, 10, (b,)),
             "input_ids": torch.randint(1, 1000, (b, t)), "attention_mask": torch.ones(b, t, dtype=torch.int64)}
    batch["attention_mask"][:, t * 3 // 4:] = 0
    batch["input_ids"] *= batch["attention_mask"]
    arrays = [v.numpy() for v in batch.values()]
    nbytes = sum(a.nbytes for a in arrays)
    g = DeviceGuard(None, bench_config(t), policy="warn", profile=False)
    peer, guard, med = compare(lambda: [np.isfinite(a).all() for a in arrays], lambda: g.process(batch),
                               args.inner, args.reps)
    rows.append({"batch": f"mixed {b}x3x64x64 f32 + labels + {b}x{t} ids/mask int64", "config": "bounds+dtype",
                 "checks": ",".join(c.check for c in g.plan.calls), "bytes": nbytes, "peer_s": peer,
                 "guard_s": guard, "peer_gbs": nbytes / peer / 1e9, "guard_gbs": nbytes / guard / 1e9,
                 "ratio": peer / guard, "ratio_median": med})
    log(_common.fmt_table(
        ["batch", "config", "MiB", "np.isfinite.all", "guard", "peer GB/s", "guard GB/s", "ratio (best)",
         "ratio (median)"],
        [[r["batch"], r["config"], f"{r['bytes'] / 2**20:.2f}", f"{r['peer_s'] * 1e6:.1f} us",
          f"{r['guard_s'] * 1e6:.1f} us", f"{r['peer_gbs']:.1f}", f"{r['guard_gbs']:.1f}",
          f"{r['ratio']:.2f}x" + ("" if r["ratio"] >= TARGET_BANDWIDTH else " (<0.7)"),
          f"{r['ratio_median']:.2f}x"] for r in rows],
        title="guard bandwidth vs numpy.isfinite(x).all() on the same buffer (best of rounds; target >= 0.7x)"))
    for r in rows:
        log(f"  {r['batch']} / {r['config']}: checks {r['checks']}")
    return rows


class MLP(torch.nn.Module):
    def __init__(self, d_in: int, hidden: int, classes: int = 10):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(d_in, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, classes))

    def forward(self, x):
        return self.net(x)


def step_overhead(args, log) -> list[dict]:
    from dataaudit.guard import DeviceGuard

    dev = torch.device(args.device)
    torch.manual_seed(0)
    n_batches = 16
    host = [{"pixels": torch.randn(args.batch, args.features), "label": torch.randint(0, 10, (args.batch,))}
            for _ in range(n_batches)]
    if dev.type == "cuda":
        host = [{k: v.pin_memory() for k, v in b.items()} for b in host]
    model = MLP(args.features, args.hidden).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def batches():
        for i in range(args.steps):
            yield host[i % n_batches]

    def train(loader):
        for b in loader:
            x = b["pixels"].to(dev, non_blocking=True)
            y = b["label"].to(dev, non_blocking=True)
            loss = torch.nn.functional.cross_entropy(model(x), y, ignore_index=-100)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        if dev.type == "cuda":
            torch.cuda.synchronize()

    cfg = bench_config(args.mixed_tokens)
    variants = {"plain": lambda: batches()}
    for policy in ("warn", "mask", "raise"):
        variants[f"guard {policy}"] = (lambda p: lambda: DeviceGuard(
            batches(), cfg, device=dev if dev.type != "cpu" else None, policy=p, log_every=0,
            snapshot_dir=None))(policy)
    for make in variants.values():  # warm up every path
        train(make())
    times: dict[str, list[float]] = {k: [] for k in variants}
    shares: dict[str, list[float]] = {k: [] for k in variants}
    order = list(variants.items())
    for r in range(args.reps):
        for name, make in order[r % len(order):] + order[:r % len(order)]:  # rotate: no variant always first
            loader = make()
            t0 = time.perf_counter()
            train(loader)
            times[name].append((time.perf_counter() - t0) / args.steps)
            if name != "plain":
                shares[name].append(loader.summary()["guard_share"])
    base = statistics.median(times["plain"])
    rows = []
    for name in variants:
        med = statistics.median(times[name])
        rows.append({"loop": name, "step_s": med, "ratio": med / base,
                     "guard_share": statistics.median(shares[name]) if shares[name] else 0.0})
    log(_common.fmt_table(
        ["loop", "step time", "vs plain", "guard share (profiler)"],
        [[r["loop"], f"{r['step_s'] * 1e3:.3f} ms", f"{r['ratio']:.3f}x", f"{100 * r['guard_share']:.2f}%"]
         for r in rows],
        title=f"step overhead on {dev.type}: MLP {args.features}->{args.hidden}->10, batch {args.batch}, "
              f"{args.steps} steps, median of {args.reps} rounds (GPU target <= {TARGET_STEP}x)"))
    return rows


def run(args) -> int:
    if args.threads:
        torch.set_num_threads(args.threads)
    log = print
    log(_common.machine_line())
    log(f"torch {torch.__version__}, {torch.get_num_threads()} intra-op threads, numpy {np.__version__}, "
        f"device {args.device}")
    out = {"threads": torch.get_num_threads(), "device": args.device}
    if args.device == "cpu":
        out["bandwidth"] = bandwidth(args, log)
    out["step"] = step_overhead(args, log)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="64x4096,64x3x64x64,64x3x224x224",
                    help="float32 batch shapes for the bandwidth table (comma-separated, e.g. 64x4096)")
    ap.add_argument("--inner", type=int, default=50, help="calls per timing round (bandwidth)")
    ap.add_argument("--reps", type=int, default=8, help="rounds")
    ap.add_argument("--mixed-batch", type=int, default=64)
    ap.add_argument("--mixed-tokens", type=int, default=512)
    ap.add_argument("--batch", type=int, default=64, help="step loop: batch size")
    ap.add_argument("--features", type=int, default=4096, help="step loop: input width")
    ap.add_argument("--hidden", type=int, default=64, help="step loop: hidden width")
    ap.add_argument("--steps", type=int, default=200, help="step loop: steps per round")
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    ap.add_argument("--device", default="cpu", help="cpu or cuda (cuda: step loop only)")
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args(argv)
    return _common.run_guarded("guard_overhead", run, args)


if __name__ == "__main__":
    sys.exit(main())
