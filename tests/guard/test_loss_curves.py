"""The loss watch on real loss curves (a small version of benchmarks/loss_curves.py): two next-character models
trained on tinyshakespeare, one clean and one with a planted bad batch at step 15; the watch raises no false
alarm and flags exactly the planted step, which the older EMA test (20-loss warm-up) misses."""
from __future__ import annotations

import importlib.util

import torch

from tests.paths import REPO, shared_file


def bench():
    spec = importlib.util.spec_from_file_location("loss_curves", REPO / "benchmarks" / "loss_curves.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_no_false_alarm_and_the_planted_step_found_exactly():
    lc = bench()
    ids, vocab = lc.load_text(shared_file(lc.TEXT), limit=50_000)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)   # tiny matrices: more threads only contend
    try:
        res = lc.evaluate([("mlp-clean", "mlp", 0, 3e-3, None), ("mlp-planted", "mlp", 5, 3e-3, 15)], ids, vocab,
                          steps=80, log=lambda *_: None)
    finally:
        torch.set_num_threads(threads)
    clean, planted = res["curves"]
    assert clean["new"] == {"flagged": [], "false_alarms": 0, "found": False}
    assert planted["new"] == {"flagged": [15], "false_alarms": 0, "found": True}
    assert planted["old"] == {"flagged": [], "false_alarms": 0, "found": False}
    assert res["totals"]["new"] == {"false_alarms": 0, "planted_found": 1, "planted": 1}
