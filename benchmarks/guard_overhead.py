#!/usr/bin/env python
"""Training guard overhead, in one run:

1. bandwidth: the guard's own time on one batch (DeviceGuard.process: from_tensor fields, the registered checks,
   the policy, reading the flags back) against the bytes of the batch, next to `numpy.isfinite(x).all()` on
   the same buffer (the peer). Ratio = guard bandwidth / peer bandwidth (target >= 0.7 on the CPU). Reported for
   several batch sizes, for the guard's default checks with the default config (nonfinite on float tensors)
   and with fixtures/audit.toml (adds out_of_range bounds and dtype_mismatch), and for a mixed batch (pixels,
   labels, token ids + attention mask) where the peer runs numpy.isfinite over every tensor of the batch.
2. step overhead: a training loop over pre-built pinned in-memory batches, plain and wrapped in DeviceGuard
   (policies warn, mask, raise = the default, raise + watch_loss, skip; on CUDA also with compile=True, the checks
   fused by torch.compile) or calling OnDeviceGuard; ratio = median
   guarded step time / median plain step time (GPU target <= 1.01 at the default policy). On CUDA the model is
   a small vision-language transformer in bf16 autocast (token ids + mask, an image batch, labels), every
   step is timed by CUDA events on the GPU's timeline, and the host syncs of each loop are counted by torch's
   sync debug mode; on the CPU it is an MLP timed by the host clock.

Timings: best of --reps rounds of --inner calls (bandwidth), median over every step of --reps rounds (loops);
the variants rotate within each round. One process; torch uses --threads intra-op threads (default: torch's).

    .venv/bin/python benchmarks/guard_overhead.py                       # CPU, a few seconds
    .venv/bin/python benchmarks/guard_overhead.py --device cuda --steps 200 --reps 3
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


class TinyVLM(torch.nn.Module):
    """A small vision-language transformer: image patches + token embeddings through a pre-norm encoder; a
    next-token head and a class head (the shape of a VLM training step, at a size one GPU runs in milliseconds)."""

    def __init__(self, vocab: int, d: int, layers: int, heads: int, patch: int = 16, classes: int = 10):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, d)
        self.patch = torch.nn.Conv2d(3, d, patch, stride=patch)
        layer = torch.nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, batch_first=True, norm_first=True)
        self.enc = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.lm = torch.nn.Linear(d, vocab)
        self.cls = torch.nn.Linear(d, classes)

    def forward(self, ids, pixels):
        p = self.patch(pixels).flatten(2).transpose(1, 2)
        h = self.enc(torch.cat([p, self.tok(ids)], 1))
        return self.lm(h[:, p.shape[1]:]), self.cls(h[:, :p.shape[1]].mean(1))


def workload(args, dev):
    """(host batches, train_step(batch on the device) -> loss, description) for --model."""
    torch.manual_seed(0)
    n = 16
    if args.model == "mlp":
        host = [{"pixels": torch.randn(args.batch, args.features), "label": torch.randint(0, 10, (args.batch,))}
                for _ in range(n)]
        model = MLP(args.features, args.hidden).to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)

        def step(b):
            loss = torch.nn.functional.cross_entropy(model(b["pixels"]), b["label"], ignore_index=-100)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            return loss

        return host, step, f"MLP {args.features}->{args.hidden}->10, batch {args.batch}"
    t, b = args.seq, args.batch
    host = []
    for _ in range(n):
        m = torch.ones(b, t, dtype=torch.int64)
        m[:, t * 3 // 4:] = 0
        host.append({"pixels": torch.randn(b, 3, args.image, args.image), "label": torch.randint(0, 10, (b,)),
                     "input_ids": torch.randint(1, 1000, (b, t)) * m, "attention_mask": m})
    model = TinyVLM(1000, args.d_model, args.layers, args.heads).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=dev.type == "cuda")
    amp = torch.autocast(dev.type, dtype=torch.bfloat16)

    def step(b):
        ids, m = b["input_ids"], b["attention_mask"]
        target = ids[:, 1:].masked_fill(m[:, 1:] == 0, -100)
        with amp:
            lm, cls = model(ids, b["pixels"])
            loss = (torch.nn.functional.cross_entropy(lm[:, :-1].flatten(0, 1).float(), target.flatten(),
                                                      ignore_index=-100)
                    + torch.nn.functional.cross_entropy(cls.float(), b["label"], ignore_index=-100))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    params = sum(p.numel() for p in model.parameters())
    return host, step, (f"transformer d={args.d_model} x{args.layers} layers ({params / 1e6:.0f}M params), bf16 "
                        f"autocast, AdamW; batch {b} x ({t} token ids + mask, 3x{args.image}x{args.image} image, label)")


def step_overhead(args, log) -> list[dict]:
    from dataaudit.guard import DeviceGuard, OnDeviceGuard

    dev = torch.device(args.device)
    cuda = dev.type == "cuda"
    host, train_step, what = workload(args, dev)
    if cuda:
        host = [{k: v.pin_memory() for k, v in b.items()} for b in host]
    cfg = bench_config(args.seq if args.model == "transformer" else args.mixed_tokens)

    def batches(steps):
        for i in range(steps):
            yield host[i % len(host)]

    def to_dev(b):
        return {k: v.to(dev, non_blocking=True) for k, v in b.items()}

    def plain(steps):
        for b in batches(steps):
            yield to_dev(b), None

    def guarded(policy, watch=False):
        def loop(steps):
            g = DeviceGuard(batches(steps), cfg, device=dev if not dev.type == "cpu" else None, policy=policy,
                            log_every=0, snapshot_dir=None)
            for b in g:
                yield b, (g if watch else None)
            loop.last = g
        return loop

    class Steps:
        """A loader of `steps` batches, iterated again by each loop: one compiled guard serves every round."""
        steps = 0

        def __iter__(self):
            return batches(self.steps)

    def guarded_compiled(policy, watch=False):
        src = Steps()
        g = DeviceGuard(src, cfg, device=dev, policy=policy, log_every=0, snapshot_dir=None, compile=True)

        def loop(steps):
            src.steps = steps
            for b in g:
                yield b, (g if watch else None)
            loop.last = g
        return loop

    on_device = OnDeviceGuard(cfg, policy="mask")

    def ondevice(steps):
        for b in batches(steps):
            yield on_device(to_dev(b)), None

    graph = {}

    def ondevice_graph(steps):
        """OnDeviceGuard captured once in a CUDA graph; each step copies the batch into its inputs and replays."""
        if not graph:
            g = OnDeviceGuard(cfg, policy="mask")
            static = to_dev(host[0])
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                g(static)
            torch.cuda.current_stream().wait_stream(side)
            graph["g"], graph["in"] = torch.cuda.CUDAGraph(), static
            with torch.cuda.graph(graph["g"]):
                graph["out"] = g(static)
        for b in batches(steps):
            for k, v in b.items():
                graph["in"][k].copy_(v, non_blocking=True)
            graph["g"].replay()
            yield graph["out"], None

    compiled = {}

    def ondevice_compiled(steps):
        """OnDeviceGuard through torch.compile (inductor): its ~100 small kernels fused into a few."""
        if not compiled:
            g = OnDeviceGuard(cfg, policy="mask")
            g(to_dev(host[0]))   # eager first call: resolves the plan, allocates the record
            compiled["f"] = torch.compile(g.__call__)
        for b in batches(steps):
            yield compiled["f"](to_dev(b)), None

    variants = {"plain": plain, "guard warn": guarded("warn"), "guard mask": guarded("mask"),
                "guard raise (default)": guarded("raise"), "guard raise + watch_loss": guarded("raise", True),
                "guard skip": guarded("skip"), "OnDeviceGuard mask": ondevice}
    if cuda:  # on the CPU the checks take numpy paths: nothing for a graph or a compiler to fuse
        variants["OnDeviceGuard mask (CUDA graph)"] = ondevice_graph
        variants["OnDeviceGuard mask (torch.compile)"] = ondevice_compiled
        for name, policy, watch in (("warn", "warn", False), ("mask", "mask", False), ("raise", "raise", False),
                                    ("raise + watch_loss", "raise", True)):
            variants[f"guard {name} (compile=True)"] = guarded_compiled(policy, watch)
    if args.variants:
        wanted = [v.strip() for v in args.variants.split(",")]
        unknown = [v for v in wanted if v not in variants]
        if unknown:
            raise SystemExit(f"--variants: unknown {unknown}; known: {list(variants)}")
        variants = {k: variants[k] for k in ["plain"] + [w for w in wanted if w != "plain"]}

    def train(loop, steps):
        """(wall s per step, per-step times in s: CUDA events on the GPU's timeline, else the host clock)."""
        marks = []
        t0 = time.perf_counter()
        for b, watcher in loop(steps):
            marks.append(torch.cuda.Event(enable_timing=True) if cuda else time.perf_counter())
            if cuda:
                marks[-1].record()
            loss = train_step(b)
            if watcher is not None:
                watcher.watch_loss(loss)
        if cuda:
            end = torch.cuda.Event(enable_timing=True)
            end.record()
            torch.cuda.synchronize()
            marks.append(end)
            per = [a.elapsed_time(b) / 1e3 for a, b in zip(marks, marks[1:])]
        else:
            marks.append(time.perf_counter())
            per = [b - a for a, b in zip(marks, marks[1:])]
        return (time.perf_counter() - t0) / steps, per

    for loop in variants.values():  # warm up every path
        train(loop, 20)
    syncs = {}
    if cuda:  # host syncs per step, counted by torch's sync debug mode (one pass of 20 steps each)
        import warnings
        for name, loop in variants.items():
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                torch.cuda.set_sync_debug_mode("warn")
                try:
                    train(loop, 20)
                finally:
                    torch.cuda.set_sync_debug_mode(0)
            syncs[name] = sum("synchronizing CUDA operation" in str(w.message) for w in caught)
    walls: dict[str, list[float]] = {k: [] for k in variants}
    steps_s: dict[str, list[float]] = {k: [] for k in variants}
    shares: dict[str, list[float]] = {k: [] for k in variants}
    order = list(variants.items())
    for r in range(args.reps):
        for name, loop in order[r % len(order):] + order[:r % len(order)]:  # rotate: no variant always first
            wall, per = train(loop, args.steps)
            walls[name].append(wall)
            steps_s[name].extend(per)
            if hasattr(loop, "last"):
                shares[name].append(loop.last.summary()["guard_share"])
    base = statistics.median(steps_s["plain"])
    base_wall = statistics.median(walls["plain"])
    rows = []
    for name in variants:
        med = statistics.median(steps_s[name])
        rows.append({"loop": name, "step_s": med, "ratio": med / base, "wall_s": statistics.median(walls[name]),
                     "wall_ratio": statistics.median(walls[name]) / base_wall, "syncs": syncs.get(name),
                     "guard_share": statistics.median(shares[name]) if shares[name] else 0.0})
    log(_common.fmt_table(
        ["loop", "median step", "vs plain", "wall per step", "vs plain (wall)", "host syncs / 20 steps",
         "guard share (profiler)"],
        [[r["loop"], f"{r['step_s'] * 1e3:.3f} ms", f"{r['ratio']:.4f}x", f"{r['wall_s'] * 1e3:.3f} ms",
          f"{r['wall_ratio']:.4f}x", "-" if r["syncs"] is None else str(r["syncs"]),
          f"{100 * r['guard_share']:.2f}%"] for r in rows],
        title=f"step overhead on {_device_name(dev)}: {what}; median of {args.reps} x {args.steps} steps "
              f"({'CUDA events per step' if cuda else 'host clock per step'}; GPU target <= {TARGET_STEP}x)"))
    return rows


def _device_name(dev) -> str:
    return torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"


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
    ap.add_argument("--model", choices=("mlp", "transformer"), default=None,
                    help="step loop model (default: transformer on cuda, mlp on cpu)")
    ap.add_argument("--batch", type=int, default=None, help="step loop: batch size (default 64 mlp, 32 transformer)")
    ap.add_argument("--seq", type=int, default=512, help="transformer: token ids per sample")
    ap.add_argument("--image", type=int, default=64, help="transformer: image side (3 x N x N, 16-pixel patches)")
    ap.add_argument("--d-model", type=int, default=768, help="transformer width")
    ap.add_argument("--layers", type=int, default=6, help="transformer layers")
    ap.add_argument("--heads", type=int, default=12, help="transformer heads")
    ap.add_argument("--variants", default="", help="comma-separated loops to time besides plain (default: all)")
    ap.add_argument("--features", type=int, default=4096, help="step loop: input width")
    ap.add_argument("--hidden", type=int, default=64, help="step loop: hidden width")
    ap.add_argument("--steps", type=int, default=200, help="step loop: steps per round")
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    ap.add_argument("--device", default="cpu", help="cpu or cuda (cuda: step loop only)")
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args(argv)
    args.model = args.model or ("transformer" if args.device.startswith("cuda") else "mlp")
    args.batch = args.batch or (32 if args.model == "transformer" else 64)
    return _common.run_guarded("guard_overhead", run, args)


if __name__ == "__main__":
    sys.exit(main())
