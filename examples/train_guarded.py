"""A tiny model trained on the fixture shards, with one planted bad batch, under each guard policy.

    python examples/train_guarded.py                 # fixtures generated into a temp folder
    python examples/train_guarded.py --data fixtures/data --policies mask raise

The model reads the Parquet fixtures' `features` (16 floats) and `input_ids` / `attention_mask` (ragged token
lists, padded by the collate function) and predicts `label` (10 classes). Every batch is clean except batch 3,
which carries three of the fixtures' planted defects: a NaN feature (train-000.parquet key 17), label 12 (key
24) and token id 1000 = vocab_size (key 41). The same loop runs:

    none   no guard: the bad batch crashes the step (CPU: index errors; CUDA: a device-side assert) or, without
           those, turns the loss and every weight into NaN
    warn   the guard names the three samples; training then fails the same way
    mask   the three samples are neutralized (label -> ignore index, weight 0, finite inputs); training goes on
    skip   the bad batch is dropped; training goes on
    raise  training stops at the bad batch with an error naming the samples; the snapshot it saved reloads and
           reproduces the failure

The guard takes its checks and thresholds from fixtures/audit.toml, the config the audit uses.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dataaudit.guard import BadBatchError, CollateGuard, DeviceGuard, load_snapshot  # noqa: E402
from dataaudit.guard.data import PadCollate, ShardSamples  # noqa: E402

CONFIG = REPO / "fixtures" / "audit.toml"
BATCH = 16
BAD_BATCH = 3
PLANTED = {("train-000.parquet", "17"), ("train-000.parquet", "24"), ("train-000.parquet", "41")}


class TinyModel(nn.Module):
    def __init__(self, vocab: int = 1000, classes: int = 10):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, 16, mode="sum")
        self.feat = nn.Linear(16, 16)
        self.head = nn.Linear(32, classes)

    def forward(self, features, input_ids, attention_mask):
        w = attention_mask.float()
        tok = self.emb(input_ids, per_sample_weights=w) / w.sum(1, keepdim=True).clamp(min=1)
        return self.head(torch.cat([torch.relu(self.feat(features)), tok], dim=1))


def dataset(data_dir: Path) -> list[dict]:
    """Clean fixture samples (nothing the manifest lists) in batches of BATCH, with the planted batch at
    BAD_BATCH: its first three samples are the planted defects, the rest clean."""
    ds = ShardSamples([str(data_dir / "train-000.parquet"), str(data_dir / "train-001.parquet")],
                      columns=["features", "label", "input_ids", "attention_mask"])
    manifest = json.loads((data_dir / "manifest.json").read_text())
    flagged = {(d["shard"], d["key"]) for d in manifest["defects"]}
    clean = [s for s in ds.samples if (s["__shard__"], s["__key__"]) not in flagged]
    bad = [s for s in ds.samples if (s["__shard__"], s["__key__"]) in PLANTED]
    clean = clean[:8 * BATCH - len(bad)]
    at = BAD_BATCH * BATCH
    return clean[:at] + bad + clean[at:]


def train(samples: list[dict], policy: str, snapshot_dir: Path, log) -> dict:
    torch.manual_seed(0)
    model = TinyModel()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(samples, batch_size=BATCH, shuffle=False,
                        collate_fn=CollateGuard(PadCollate(pad_id=0), CONFIG, checks=()))  # provenance only
    batches = loader if policy == "none" else DeviceGuard(loader, CONFIG, policy=policy, log_every=4,
                                                          snapshot_dir=snapshot_dir)
    losses, result = [], {"policy": policy}
    try:
        for batch in batches:
            for k in ("__key__", "__shard__", "__guard__"):  # only the unguarded loop still has them
                batch.pop(k, None)
            logits = model(batch["features"], batch["input_ids"], batch["attention_mask"])
            loss = F.cross_entropy(logits, batch["label"], ignore_index=-100, reduction="none")
            if "loss_weight" in batch:  # mask: weight 0 for neutralized samples
                w = batch["loss_weight"]
                loss = (loss * w).sum() / w.sum().clamp(min=1)
            else:
                loss = loss.mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    except BadBatchError as e:
        result["stopped"] = str(e)
        snap = load_snapshot(e.snapshot)
        result["snapshot"] = {"path": str(e.snapshot), "trace_id": snap.trace_id, "step": snap.step,
                              "keys": [f["key"] for f in snap.findings() if f["severity"] == "error"],
                              "reproduces": snap.verify()}
    except (IndexError, RuntimeError) as e:
        result["crashed"] = f"{type(e).__name__}: {e}"
    result["steps_trained"] = len(losses)
    result["final_loss"] = losses[-1] if losses else None
    result["weights_finite"] = all(bool(torch.isfinite(p).all()) for p in model.parameters())
    if isinstance(batches, DeviceGuard):
        s = batches.summary()
        result["findings"] = [(f.step, f.position, f"{f.shard}:{f.key}", f.check, f.action)
                              for f in batches.findings]
        result["profile"] = {k: s[k] for k in ("steps", "samples_per_s", "tokens_per_s", "wait_share",
                                               "guard_share", "bad_batches_by_check", "skipped_batches")}
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, help="fixture folder (python -m fixtures.generate DIR); default: a temp one")
    ap.add_argument("--policies", nargs="+", default=["none", "warn", "mask", "skip", "raise"])
    ap.add_argument("--out", type=Path, help="where raise writes its snapshot (default: a temp folder)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="  %(message)s")
    tmp = Path(tempfile.mkdtemp(prefix="guard-example-"))
    data = args.data
    if data is None:
        from fixtures.generate import generate
        data = tmp / "fixtures"
        generate(data)
    samples = dataset(data)
    print(f"{len(samples)} samples in {len(samples) // BATCH} batches of {BATCH}; batch {BAD_BATCH} planted with "
          f"{', '.join(sorted(f'{s}:{k}' for s, k in PLANTED))}")
    results = []
    for policy in args.policies:
        print(f"\n=== policy {policy}")
        r = train(samples, policy, args.out or tmp / "snapshots", logging.getLogger())
        results.append(r)
        for k in ("crashed", "stopped", "snapshot", "steps_trained", "final_loss", "weights_finite", "findings",
                  "profile"):
            if k in r:
                print(f"  {k}: {r[k]}")
    ok = {r["policy"]: r for r in results}
    expect = []
    if "mask" in ok:
        expect.append(ok["mask"]["weights_finite"] and ok["mask"]["steps_trained"] == len(samples) // BATCH)
    if "skip" in ok:
        expect.append(ok["skip"]["weights_finite"] and ok["skip"]["steps_trained"] == len(samples) // BATCH - 1)
    if "raise" in ok:
        expect.append(ok["raise"].get("snapshot", {}).get("reproduces") is True)
    print("\nall policies behaved as documented" if all(expect) else "\nUNEXPECTED RESULT")
    return 0 if all(expect) else 1


if __name__ == "__main__":
    sys.exit(main())
