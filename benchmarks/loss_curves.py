#!/usr/bin/env python
"""The loss watch on real loss curves: false alarms and planted spikes found, new watch against the old one.

Ten small next-character models train on tinyshakespeare (../shared/data/corpora/tinyshakespeare.txt) for
--steps steps each (different models, seeds and learning rates; AdamW, gradient clipping at 1.0 as LLM training
does). The input is the one-hot context of --context characters (a float tensor, as a VLM's pixels are). Five
curves are clean; five have a planted bad batch at a known step: 8 of its 64 samples are raw bytes (0-255) where
one-hot values belong (a pipeline bug that hands undecoded or unnormalised data), so the batch's mean loss
jumps (one such sample alone does not always: its huge logits can land on the target and lower the mean).
Each curve's losses are recorded once, then fed to

    new: dataaudit.guard.loss.LossWatch() as DeviceGuard uses it by default (median of the last 100 good
         losses x 5 from the 4th loss, ceiling 1000 x the first loss, patience 4)
    old: the EMA test it replaces (5 x an exponential moving average, decay 0.98, after 20 losses)

and a flagged step is a false alarm unless it is the planted one. Exit 1 when the new watch has a false alarm
or misses a planted spike.

    .venv/bin/python benchmarks/loss_curves.py                  # 10 curves x 300 steps, about a minute on a CPU
    .venv/bin/python benchmarks/loss_curves.py --json out.json
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from dataaudit.guard.loss import LossWatch  # noqa: E402

TEXT = "corpora/tinyshakespeare.txt"
BAD = 8   # planted samples in the bad batch (one alone can land on its target and lower the mean loss)
# (name, model, seed, learning rate, planted step or None): 5 clean, 5 planted (two inside the old 20-loss warm-up)
CURVES = [
    ("mlp-s0", "mlp", 0, 3e-3, None), ("mlp-s1", "mlp", 1, 1e-3, None), ("deep-s2", "deep", 2, 1e-3, None),
    ("linear-s3", "linear", 3, 1e-2, None), ("deep-s4", "deep", 4, 3e-3, None),
    ("mlp-s5", "mlp", 5, 3e-3, 15), ("deep-s6", "deep", 6, 1e-3, 10), ("linear-s7", "linear", 7, 1e-2, 60),
    ("mlp-s8", "mlp", 8, 1e-3, 150), ("deep-s9", "deep", 9, 3e-3, 250),
]


def shared_data() -> Path:
    return Path(os.environ.get("DATAAUDIT_SHARED_DATA", REPO.parent / "shared" / "data"))


def load_text(path: Path, limit: int = 200_000) -> tuple[torch.Tensor, int]:
    """(character ids of the first `limit` characters, vocabulary size)."""
    text = path.read_text(encoding="utf-8")[:limit]
    chars = sorted(set(text))
    at = {c: i for i, c in enumerate(chars)}
    return torch.tensor([at[c] for c in text], dtype=torch.int64), len(chars)


def make_model(kind: str, context: int, vocab: int) -> torch.nn.Module:
    d = context * vocab
    if kind == "linear":
        return torch.nn.Linear(d, vocab)
    if kind == "mlp":
        return torch.nn.Sequential(torch.nn.Linear(d, 128), torch.nn.ReLU(), torch.nn.Linear(128, vocab))
    return torch.nn.Sequential(torch.nn.Linear(d, 128), torch.nn.GELU(), torch.nn.Linear(128, 128),
                               torch.nn.GELU(), torch.nn.Linear(128, vocab))


def train_curve(ids: torch.Tensor, vocab: int, kind: str, seed: int, lr: float, planted: int | None,
                steps: int, batch: int = 64, context: int = 8) -> list[float]:
    """The mean training loss of each step (the planted step's batch holds BAD samples of raw bytes)."""
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = make_model(kind, context, vocab)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    losses = []
    for step in range(steps):
        start = torch.randint(0, len(ids) - context - 1, (batch,), generator=g)
        window = ids[start[:, None] + torch.arange(context + 1)]
        x = torch.nn.functional.one_hot(window[:, :context], vocab).float().flatten(1)
        if step == planted:   # BAD samples of raw 0-255 bytes where one-hot values belong
            x[:BAD] = torch.randint(0, 256, (BAD, x.shape[1]), generator=g).float()
        loss = torch.nn.functional.cross_entropy(model(x), window[:, context])
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(float(loss.detach()))
    return losses


def watches() -> dict:
    return {"new": lambda: LossWatch(),
            "old": lambda: LossWatch(5.0, 20, 0.98, reference="ema", max_loss_factor=None, patience=None)}


def flagged(watch: LossWatch, losses: list[float]) -> list[int]:
    """The steps the watch flags (non-finite, spike, ceiling or diverged)."""
    out = []
    for i, v in enumerate(losses):
        p = watch.update(torch.tensor(v, dtype=torch.float64)).tolist()
        if p[1] or p[2] or p[4] or p[5]:
            out.append(i)
    return out


def margins(losses: list[float], planted: int | None, window: int = 100) -> dict:
    """The largest clean loss and the planted one against the median of the (up to) `window` good losses before
    each: as a ratio and in median absolute deviations (from the 4th loss on, as the new watch's test)."""
    import statistics

    clean_r = clean_z = 0.0
    out = {}
    for i in range(3, len(losses)):
        w = [v for j, v in enumerate(losses[max(0, i - window):i], max(0, i - window)) if j != planted]
        m = statistics.median_low(w)
        mad = statistics.median_low([abs(v - m) for v in w])
        r, z = losses[i] / m, (losses[i] - m) / mad if mad else float("inf")
        if i == planted:
            out = {"planted_ratio": round(r, 2), "planted_mads": round(z, 1)}
        else:
            clean_r, clean_z = max(clean_r, r), max(clean_z, z)
    return {"clean_max_ratio": round(clean_r, 3), "clean_max_mads": round(clean_z, 1), **out}


def evaluate(curves: list, ids, vocab, steps: int, log=print) -> dict:
    """Per curve and watch: flagged steps, false alarms, planted found; totals per watch."""
    rows, totals = [], {w: {"false_alarms": 0, "planted_found": 0, "planted": 0} for w in watches()}
    for name, kind, seed, lr, planted in curves:
        t0 = time.perf_counter()
        losses = train_curve(ids, vocab, kind, seed, lr, planted, steps)
        row = {"curve": name, "model": kind, "seed": seed, "lr": lr, "planted": planted,
               "first_loss": round(losses[0], 3), "last_loss": round(losses[-1], 3),
               "planted_loss": None if planted is None else round(losses[planted], 3), **margins(losses, planted)}
        for w, make in watches().items():
            f = flagged(make(), losses)
            false = [s for s in f if s != planted]
            found = planted is not None and planted in f
            row[w] = {"flagged": f, "false_alarms": len(false), "found": found}
            totals[w]["false_alarms"] += len(false)
            totals[w]["planted_found"] += int(found)
            totals[w]["planted"] += int(planted is not None)
        log(f"{name:10s} lr {lr:g} planted {str(planted):4s} loss {row['first_loss']:.2f} -> {row['last_loss']:.2f}"
            f" (planted step {row['planted_loss']}) | clean max {row['clean_max_ratio']}x {row['clean_max_mads']} MADs"
            + (f", planted {row['planted_ratio']}x {row['planted_mads']} MADs" if planted is not None else "")
            + f" | new flags {row['new']['flagged']} | old flags "
            f"{row['old']['flagged']} | {time.perf_counter() - t0:.1f} s")
        rows.append(row)
    return {"curves": rows, "totals": totals, "steps": steps}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    path = shared_data() / TEXT
    if not path.is_file():
        print(f"loss_curves: {path} not found (put ../shared/data beside the checkout or set DATAAUDIT_SHARED_DATA)",
              file=sys.stderr)
        return 2
    ids, vocab = load_text(path)
    res = evaluate(CURVES, ids, vocab, args.steps)
    for w, t in res["totals"].items():
        print(f"{w} watch: {t['false_alarms']} false alarms, {t['planted_found']} of {t['planted']} planted spikes "
              f"found")
    if args.json:
        args.json.write_text(json.dumps(res, indent=2) + "\n")
    t = res["totals"]["new"]
    return 0 if t["false_alarms"] == 0 and t["planted_found"] == t["planted"] else 1


if __name__ == "__main__":
    sys.exit(main())
