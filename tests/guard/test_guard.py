"""The training guard on the fixture shards: every planted numeric / label / token defect is caught with the
right positions and keys under every policy; mask neutralizes exactly the bad samples; skip drops exactly the
bad batches; raise saves a snapshot that reloads and reproduces the failure; the collate guard checks samples
with the audit's semantics and keeps provenance; the config drives it all; the profiler's figures add up."""
from __future__ import annotations

import json
import logging
import math
import time

import pytest
import torch
from torch.utils.data import DataLoader

from dataaudit.checks import REGISTRY
from dataaudit.config import ConfigError, build_config
from dataaudit.guard import (
    BadBatchError,
    CollateError,
    CollateGuard,
    DeviceGuard,
    GuardPlan,
    ThroughputProfiler,
    load_snapshot,
)
from dataaudit.guard.data import PadCollate, ShardSamples

from tests.paths import REPO

CFG = REPO / "fixtures" / "audit.toml"
NAN_ = math.nan
ALL = ("error", "warning", "info")
GUARD_CHECKS = {n for n, s in REGISTRY.items() if s.target in ("numeric", "image_tensor", "label", "tokens")}
PARQUET = ("train-000.parquet", "train-001.parquet")
COLUMNS = ["features", "label", "input_ids", "attention_mask"]
BS = 32


@pytest.fixture(scope="module")
def samples(fixture_dir):
    return ShardSamples([str(fixture_dir / s) for s in PARQUET], columns=COLUMNS)


def expected(manifest, shards=PARQUET, checks=GUARD_CHECKS):
    return {(d["shard"], d["key"], d["check"]) for d in manifest["defects"]
            if d["shard"] in shards and d["check"] in checks}


def loader(ds, collate_checks=(), batch_size=BS, **kw):
    return DataLoader(ds, batch_size=batch_size,
                      collate_fn=CollateGuard(PadCollate(0), CFG, checks=collate_checks, **kw))


def found(guard):
    return {(f.shard, f.key, f.check) for f in guard.findings}


def assert_positions(guard, ds):
    """Each finding's (step, position) is the sample its (shard, key) names."""
    for f in guard.findings:
        s = ds.samples[f.step * BS + f.position]
        assert (s["__shard__"], s["__key__"]) == (f.shard, f.key), f


# ------------------------------------------------------------------------------------------------ policies

@pytest.mark.parametrize("policy", ["warn", "mask", "skip"])
def test_every_planted_defect_caught_under_policy(policy, samples, manifest, tmp_path):
    g = DeviceGuard(loader(samples), CFG, policy=policy, checks="all", act_on=ALL, profile=False,
                    snapshot_dir=tmp_path)
    out = list(g)
    want = expected(manifest)
    assert len(want) == 46 and found(g) == want
    assert_positions(g, samples)
    action = {"warn": "warned", "mask": "masked", "skip": "skipped"}[policy]
    assert {f.action for f in g.findings} == {action}
    bad_steps = {f.step for f in g.findings}
    assert len(out) == (10 - len(bad_steps) if policy == "skip" else 10)
    f17 = next(f for f in g.findings if f.key == "17" and f.check == "nonfinite")
    assert (f17.step, f17.position, f17.value, f17.field) == (0, 17, 1.0, "features")
    assert f17.detail == "1 non-finite element(s) (NaN / Inf)"
    assert g.snapshots == []


def test_raise_names_checks_positions_keys_and_snapshot_reproduces(samples, manifest, tmp_path):
    g = DeviceGuard(loader(samples), CFG, policy="raise", checks="all", profile=False, snapshot_dir=tmp_path)
    seen = []
    with pytest.raises(BadBatchError) as ei:
        for b in g:
            seen.append(b)
    err = ei.value
    assert seen == [] and err.step == 0 and len(err.trace_id) == 32
    # batch 0 = train-000 rows 0..31; error-severity plants there: NaN feature at 17, label 12 at 24
    msg = str(err)
    assert "nonfinite:features at [17=train-000.parquet:17]" in msg
    assert "label_out_of_range:label at [24=train-000.parquet:24] (label 12 outside [0, 10))" in msg
    assert err.trace_id in msg and str(err.snapshot) in msg
    batch0 = {(s, k, c) for s, k, c in expected(manifest) if s == "train-000.parquet" and int(k) < BS}
    assert {(f.shard, f.key, f.check) for f in err.findings} == batch0  # warnings there are named too
    assert {f.action for f in err.findings if f.severity == "error"} == {"raised"}

    snap = load_snapshot(err.snapshot)
    assert (snap.step, snap.trace_id, snap.policy) == (0, err.trace_id, "raise")
    assert snap.keys == [str(i) for i in range(BS)] and snap.shards == ["train-000.parquet"] * BS
    raw = next(iter(loader(samples)))
    for k in COLUMNS:  # the batch as the guard saw it, bit for bit (NaN included)
        assert torch.equal(torch.nan_to_num(snap.batch[k]), torch.nan_to_num(raw[k])) and snap.batch[k].dtype == raw[k].dtype
    assert {(f["shard"], f["key"], f["check"]) for f in snap.findings()} == batch0
    assert snap.verify()
    again = snap.reproduce()
    assert torch.equal(again.flagged, snap.checks.flagged) and [c.label for c in again.calls] == \
        [c.label for c in snap.checks.calls]
    # the comparison can fail: fix the NaN in the stored batch and it no longer reproduces
    snap.batch["features"] = torch.nan_to_num(snap.batch["features"])
    assert not snap.verify()


def test_verify_is_exact_on_the_snapshots_device_and_to_rounding_elsewhere(samples, tmp_path):
    g = DeviceGuard(loader(samples), CFG, policy="raise", checks="all", profile=False, snapshot_dir=tmp_path)
    with pytest.raises(BadBatchError) as ei:
        list(g)
    snap = load_snapshot(ei.value.snapshot)
    assert snap.device == "cpu" and snap.verify()
    c = int(snap.checks.flagged.any(1).nonzero()[0])   # a check that flagged: its values are not all 0
    i = int(snap.checks.flagged[c].nonzero()[0])
    snap.checks.value[c, i] *= 1 + 1e-7   # what a GPU's float reduction order can change
    assert not snap.verify()              # rerun on the CPU, where it was taken: exact
    snap.meta["device"] = "cuda"          # taken on a GPU, verified on this machine's CPU: to rounding
    assert snap.verify(device="cpu")
    snap.checks.value[c, i] *= 1 + 1e-3
    assert not snap.verify(device="cpu")


def test_mask_neutralizes_exactly_the_bad_samples(samples, manifest):
    plain = list(loader(samples))
    index = {(s["__shard__"], s["__key__"]): i for i, s in enumerate(samples.samples)}
    for act_on, n_bad in ((ALL, 37), (("error",), 16)):
        g = DeviceGuard(loader(samples), CFG, policy="mask", checks="all", act_on=act_on, profile=False)
        out = list(g)
        assert len(out) == len(plain) == 10
        # the bad samples, from the manifest (not from the guard): planted checks at an acting severity
        bad = {}
        for shard, key, check in expected(manifest):
            if REGISTRY[check].severity in act_on:
                i = index[(shard, key)]
                bad.setdefault(i // BS, set()).add(i % BS)
        assert sum(len(v) for v in bad.values()) == n_bad
        for step, (o, p) in enumerate(zip(out, plain)):
            rows = sorted(bad.get(step, ()))
            w = torch.ones(len(p["label"]))
            w[rows] = 0.0
            assert torch.equal(o["loss_weight"], w)
            keep = torch.ones(len(p["label"]), dtype=torch.bool)
            keep[rows] = False
            for k in COLUMNS:  # untouched rows identical, bit for bit
                assert torch.equal(torch.nan_to_num(o[k][keep]), torch.nan_to_num(p[k][keep])), (step, k)
            if rows:
                assert (o["label"][rows] == -100).all() and (o["features"][rows] == 0).all()
                assert (o["input_ids"][rows] == 0).all() and (o["attention_mask"][rows] == 1).all()
                assert torch.isfinite(o["features"]).all() and (o["input_ids"] < 1000).all()
                assert ((o["label"] == -100) | ((o["label"] >= 0) & (o["label"] < 10))).all()


def test_default_act_on_error_only(samples):
    g = DeviceGuard(loader(samples, batch_size=4), CFG, policy="skip", profile=False)  # default checks, errors
    out = list(g)
    assert [c.label for c in g.plan.calls] == [
        "out_of_range:features", "nonfinite:features", "dtype_mismatch:features", "label_out_of_range:label",
        "token_id_out_of_range:input_ids", "all_padding:input_ids", "too_long:input_ids"]
    assert g.plan.skipped == {"null_sample": "runs in the collate guard only",   # the collate guard's
                              **dict.fromkeys(("image_constant", "image_value_range", "image_channels"),
                                              "no image_tensor field in the batch"),
                              **dict.fromkeys(("no_trainable_tokens", "labels_misaligned", "label_id_out_of_range"),
                                              "no trained field in the batch")}
    error_steps = {f.step for f in g.findings if f.severity == "error"}
    assert {f.action for f in g.findings if f.step in error_steps and f.severity == "error"} == {"skipped"}
    assert len(out) == 80 - len(error_steps) and len(error_steps) == 16
    # a batch with only warnings goes through and its findings say "warned"
    warned_only = {f.step for f in g.findings} - error_steps
    assert warned_only and all(f.action == "warned" for f in g.findings if f.step in warned_only)


# ------------------------------------------------------------------------------------------------ collate guard

def test_collate_guard_audit_semantics_and_provenance(fixture_dir, manifest):
    shards = PARQUET + ("images-000.tar",)
    ds = ShardSamples([str(fixture_dir / s) for s in shards], columns=COLUMNS + ["pixels"])
    # checks only in the workers (sample level, ragged as in the audit); the device guard merges them
    g = DeviceGuard(loader(ds, collate_checks="all"), CFG, policy="warn", checks=(), act_on=ALL, profile=False)
    list(g)
    # img/000038 does not decode: the audit reports only that (unreadable_record); the dataset yields it with
    # every field null, which the guard names
    assert found(g) == expected(manifest, shards) | {("images-000.tar", "img/000038", "missing_value")}
    assert {f.source for f in g.findings} == {"collate"}
    # ragged semantics: the mask shorter than its ids is a length mismatch (-1), per-sample dtypes are judged
    f47 = next(f for f in g.findings if f.key == "47" and f.shard == "train-000.parquet")
    assert (f47.check, f47.value) == ("mask_mismatch", -1.0)
    dtypes = {f.key for f in g.findings if f.check == "dtype_mismatch"}
    assert dtypes == {"img/000042", "img/000061"}


def test_collate_guard_drop_and_collate_error(samples):
    cg = CollateGuard(PadCollate(0), CFG, checks="all", drop=True)
    batch = cg([samples[i] for i in range(BS)])
    assert batch["__guard__"]["dropped"] == [
        {"key": "17", "shard": "train-000.parquet", "row": 17, "checks": ["nonfinite:features"]},
        {"key": "24", "shard": "train-000.parquet", "row": 24, "checks": ["label_out_of_range:label"]}]
    assert len(batch["__key__"]) == BS - 2 and "17" not in batch["__key__"] and len(batch["label"]) == BS - 2
    assert torch.isfinite(batch["features"]).all()

    def broken(samples):
        raise ValueError("stack expects each tensor to be equal size")

    with pytest.raises(CollateError, match=r"train-000\.parquet:0, train-000\.parquet:1.*equal size"):
        CollateGuard(broken, CFG)([samples[0], samples[1]])


# ------------------------------------------------------------------------------------------------ config

def test_same_config_file_drives_the_guard():
    x = {"features": torch.tensor([[1.0, NAN_], [150.0, 0.0]]), "label": torch.tensor([3, 12]),
         "input_ids": torch.tensor([[5, 0], [1000, 2]]), "attention_mask": torch.tensor([[1, 0], [1, 1]])}
    p = GuardPlan(CFG)
    res = p.run(x)
    assert {c.label: r for c, r in zip(res.calls, res.flagged.tolist())} == {
        "out_of_range:features": [False, True], "nonfinite:features": [True, False],
        "dtype_mismatch:features": [False, False], "label_out_of_range:label": [False, True],
        "token_id_out_of_range:input_ids": [False, True], "all_padding:input_ids": [False, False],
        "too_long:input_ids": [False, False]}
    cfg = build_config({"fields": {"numeric": ["features"], "label": "label"},
                        "data": {"vocab_size": 1000},
                        "checks": {"nonfinite": {"enabled": False}, "out_of_range": {"max": 100.0,
                                                                                     "severity": "error"}}})
    p = GuardPlan(cfg)
    res = p.run(x)
    assert [c.label for c in res.calls] == ["out_of_range:features", "token_id_out_of_range:input_ids",
                                           "all_padding:input_ids"]
    assert p.skipped == {"nonfinite": "disabled in config", "dtype_mismatch": "not configured: expected",
                         "null_sample": "runs in the collate guard only",
                         "label_out_of_range": "not configured: num_classes",
                         "too_long": "not configured: context_length",
                         **dict.fromkeys(("image_constant", "image_value_range", "image_channels"),
                                         "no image_tensor field in the batch"),
                         **dict.fromkeys(("no_trainable_tokens", "labels_misaligned", "label_id_out_of_range"),
                                         "no trained field in the batch")}
    assert res.calls[0].severity == "error" and dict(res.calls[0].params) == {"min": None, "max": 100.0}
    g = DeviceGuard([x], cfg, policy="mask", profile=False)
    (out,) = list(g)
    assert out["loss_weight"].tolist() == [1.0, 0.0] and out["features"][1].tolist() == [0.0, 0.0]
    with pytest.raises(ConfigError, match="unknown check"):
        GuardPlan(CFG, checks=["nonfinit"])
    with pytest.raises(ConfigError, match="text check"):
        GuardPlan(CFG, checks=["mojibake"])


def test_tuple_batches_with_names():
    ids = torch.tensor([[3, 4], [2000, 1]])
    y = torch.tensor([1, 2])
    g = DeviceGuard([(ids, y)], CFG, policy="mask", names=("input_ids", "label"), profile=False)
    (out,) = list(g)
    assert isinstance(out, tuple) and out[0].tolist() == [[3, 4], [0, 0]] and out[1].tolist() == [1, -100]
    assert g.sample_weight.tolist() == [1.0, 0.0]
    assert [(f.position, f.check, f.key) for f in g.findings] == [(1, "token_id_out_of_range", None)]
    with pytest.raises(ValueError, match="names"):
        list(DeviceGuard([(ids, y)], CFG, profile=False))
    # a collate function that returns a tuple: provenance travels in a GuardedBatch
    cg = CollateGuard(lambda ss: (torch.stack([torch.as_tensor(x["input_ids"]) for x in ss]),
                                  torch.tensor([x["label"] for x in ss])), CFG, checks=())
    raw = cg([{"input_ids": [3, 4], "label": 1, "__key__": "a", "__shard__": "s"},
              {"input_ids": [2000, 1], "label": 2, "__key__": "b", "__shard__": "s"}])
    assert type(raw).__name__ == "GuardedBatch" and raw.keys == ["a", "b"]
    g = DeviceGuard([raw], CFG, policy="warn", names=("input_ids", "label"), profile=False)
    (out,) = list(g)
    assert isinstance(out, tuple) and [(f.position, f.key, f.shard) for f in g.findings] == [(1, "b", "s")]


# ------------------------------------------------------------------------------------------------ profiler

class SlowLoader:
    """Batches of 8 samples x 10 tokens (mask sums 7 per sample) after `delay` seconds each."""

    def __init__(self, n, delay):
        self.n, self.delay = n, delay

    def __iter__(self):
        for i in range(self.n):
            time.sleep(self.delay)
            m = torch.ones(8, 10, dtype=torch.int64)
            m[:, 7:] = 0
            yield {"input_ids": torch.randint(1, 50, (8, 10)) * m, "attention_mask": m,
                   "features": torch.randn(8, 16)}


def test_profiler_figures_add_up(tmp_path, caplog):
    n, wait, compute = 12, 0.004, 0.006
    jsonl = tmp_path / "prof.jsonl"
    g = DeviceGuard(SlowLoader(n, wait), CFG, policy="warn", log_every=5, jsonl=jsonl)
    caplog.set_level(logging.INFO, logger="dataaudit.guard")
    slept = 0.0       # the loop's own compute, as long as the sleeps really took (a loaded box overshoots them)
    t0 = time.perf_counter()
    for _ in g:
        t = time.perf_counter()
        time.sleep(compute)
        slept += time.perf_counter() - t
    wall = time.perf_counter() - t0
    g.close()
    s = g.summary()
    parts = s["wait_s"] + s["copy_s"] + s["guard_s"] + s["compute_s"]
    # stated tolerance: the four parts add up to the loop's wall time within 5% (+2 ms of setup)
    assert abs(parts - wall) <= 0.05 * wall + 0.002, (parts, wall)
    assert abs(s["wall_s"] - parts) < 1e-9
    # each part holds at least its own time: the loader's sleeps are waiting, the loop's are compute (no bound above:
    # with the sum exact, time put in the wrong part would leave its own part short)
    assert s["wait_s"] >= n * wait and s["compute_s"] >= slept >= n * compute
    assert s["steps"] == n and s["samples"] == 8 * n and s["tokens"] == 7 * 8 * n
    assert s["samples_per_s"] == pytest.approx(8 * n / s["wall_s"])
    assert s["wait_share"] == pytest.approx(s["wait_s"] / s["wall_s"]) and 0 < s["wait_share"] < 1
    lines = [json.loads(x) for x in jsonl.read_text().splitlines()]
    assert len(lines) == n + 1 and lines[-1]["summary"]["steps"] == n
    assert [r["step"] for r in lines[:-1]] == list(range(n))
    assert sum(r["wait_s"] for r in lines[:-1]) == pytest.approx(s["wait_s"])
    logs = [r.getMessage() for r in caplog.records if "samples/s" in r.getMessage()]
    assert len(logs) == 2 and logs[0].startswith("guard: steps 1-5 |") and "tokens/s" in logs[0]


def test_profiler_counts_bad_batches_by_check(samples, manifest):
    prof = ThroughputProfiler(log_every=0)
    g = DeviceGuard(loader(samples, batch_size=4), CFG, policy="skip", profile=prof)
    list(g)
    s = g.summary()
    index = {(x["__shard__"], x["__key__"]): i for i, x in enumerate(samples.samples)}
    batches = lambda check: {index[(sh, k)] // 4 for sh, k, c in expected(manifest) if c == check}  # noqa: E731
    by = s["bad_batches_by_check"]
    assert by["nonfinite:features"] == len(batches("nonfinite")) == 6
    assert by["out_of_range:features"] == len(batches("out_of_range")) == 9
    assert by["too_long:input_ids"] == len(batches("too_long")) == 3 and "mask_mismatch:input_ids" not in by
    assert s["skipped_batches"] == s["actions"]["skipped"] == 16
    assert s["bad_batches"] == len({f.step for f in g.findings})
    assert s["steps"] + s["skipped_batches"] == 80 and s["samples"] == 320 - 4 * 16
