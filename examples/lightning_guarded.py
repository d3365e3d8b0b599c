"""The training guard in a PyTorch Lightning run (needs `pip install lightning`; the rest of dataaudit does not).

    python examples/lightning_guarded.py --policy mask

Same data and model as train_guarded.py (the fixture shards with one planted bad batch). The GuardCallback checks
each batch on the device Lightning moved it to, applies the policy in place, and sends its throughput figures
to the trainer's logger under "guard/...". With policy skip, training_step returns None for a flagged batch
(Lightning then skips the optimizer step).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "examples"))

try:
    import lightning as L
except ImportError:
    print("this example needs PyTorch Lightning: pip install lightning")
    sys.exit(0)

from train_guarded import BATCH, CONFIG, TinyModel, dataset  # noqa: E402

from dataaudit.guard import CollateGuard, GuardCallback  # noqa: E402
from dataaudit.guard.data import PadCollate  # noqa: E402


class Module(L.LightningModule):
    def __init__(self, guard: GuardCallback):
        super().__init__()
        self.model = TinyModel()
        self.guard = guard

    def training_step(self, batch, batch_idx):
        if self.guard.skip_requested:  # policy skip: the callback flagged this batch
            return None
        logits = self.model(batch["features"], batch["input_ids"], batch["attention_mask"])
        loss = F.cross_entropy(logits, batch["label"], ignore_index=-100, reduction="none")
        w = batch.get("loss_weight")
        loss = (loss * w).sum() / w.sum().clamp(min=1) if w is not None else loss.mean()
        self.log("loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--policy", default="mask", choices=["raise", "skip", "mask", "warn"])
    args = ap.parse_args()
    from fixtures.generate import generate
    tmp = Path(tempfile.mkdtemp(prefix="guard-lightning-"))
    generate(tmp / "fixtures")
    loader = DataLoader(dataset(tmp / "fixtures"), batch_size=BATCH,
                        collate_fn=CollateGuard(PadCollate(pad_id=0), CONFIG, checks=()))
    guard = GuardCallback(CONFIG, policy=args.policy, snapshot_dir=tmp / "snapshots", log_every=4)
    trainer = L.Trainer(max_epochs=1, callbacks=[guard], accelerator="auto", devices=1,
                        enable_checkpointing=False, default_root_dir=tmp)
    trainer.fit(Module(guard), loader)
    print(guard.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
