"""Guard defects: a finding is made once (by the stage that ran its check), a None sample is a null_sample finding
under every policy, and empty or null fields and labels are missing_value findings, in the guard and the audit."""
from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
import torch

from dataaudit.checks import REGISTRY
from dataaudit.guard import BadBatchError, CollateError, CollateGuard, DeviceGuard, GuardPlan
from dataaudit.guard.data import PadCollate
from dataaudit.tensors import from_arrow, tokens_from_arrow

from tests.paths import REPO

CFG = REPO / "fixtures" / "audit.toml"


def sample(i, **kw):
    s = {"features": np.full(4, 0.5, np.float32), "label": 1, "input_ids": np.array([3, 4, 5]),
         "attention_mask": np.array([1, 1, 1]), "__key__": f"k{i}", "__shard__": "s.parquet", "__row__": i}
    s.update(kw)
    return s


def collated(samples):
    return CollateGuard(PadCollate(0), CFG)(samples)


def seen(g):
    return [(f.step, f.position, f.key, f.check, f.field, f.value, f.action, f.source) for f in g.findings]


def test_each_finding_once_when_both_stages_check():
    bad = [sample(0, features=np.array([0.5, math.nan, 0.5, 0.5], np.float32)), sample(1, label=12)]
    g = DeviceGuard([collated(bad)], CFG, policy="warn", profile=False)   # both stages: the default checks
    list(g)
    assert seen(g) == [(0, 0, "k0", "nonfinite", "features", 1.0, "warned", "collate"),
                       (0, 1, "k1", "label_out_of_range", "label", 12.0, "warned", "collate")]
    # the collate guard ran the 11 default calls on the samples; the device ran none of them again
    assert len(g.last_checks.calls) == len({c.label for c in g.last_checks.calls}) == 11


@pytest.mark.parametrize("policy", ["raise", "skip", "mask", "warn"])
def test_a_none_sample_is_a_null_sample_finding_under_the_policy(policy, tmp_path):
    batch = collated([sample(0), None, sample(2)])
    assert batch["__key__"] == ["k0", None, "k2"] and batch["__row__"] == [0, None, 2]
    assert batch["features"][1].tolist() == [0.0] * 4 and batch["label"].tolist() == [1, 0, 1]  # its stand-in
    g = DeviceGuard([batch], CFG, policy=policy, profile=False, snapshot_dir=tmp_path)
    if policy == "raise":
        with pytest.raises(BadBatchError, match=r"null_sample:sample at \[1\] \(the dataset yielded None"):
            list(g)
        assert g.snapshots[0].exists()
        return
    out = list(g)
    action = {"skip": "skipped", "mask": "masked", "warn": "warned"}[policy]
    assert seen(g) == [(0, 1, None, "null_sample", "sample", 0.0, action, "collate")]  # its fields: no finding
    if policy == "skip":
        assert out == []
    elif policy == "mask":
        assert out[0]["loss_weight"].tolist() == [1.0, 0.0, 1.0] and out[0]["label"].tolist() == [1, -100, 1]


def test_a_batch_of_none_only_cannot_be_collated():
    with pytest.raises(CollateError, match="every sample of the batch is None"):
        collated([None, None])


def test_empty_and_null_fields_and_labels_are_flagged():
    res, *_ = CollateGuard(PadCollate(0), CFG).check(
        [sample(0), sample(1, label=None), sample(2, features=np.zeros(0, np.float32)),
         sample(3, input_ids=None, attention_mask=None), sample(4, features=None)])
    got = {c.label: (res.flagged[i].tolist(), res.value[i].tolist()) for i, c in enumerate(res.calls)
           if c.check == "missing_value"}
    assert got == {"missing_value:features": ([False, False, True, False, True], [4.0, 4.0, 0.0, 4.0, -1.0]),
                   "missing_value:label": ([False, True, False, False, False], [1.0, -1.0, 1.0, 1.0, 1.0]),
                   "missing_value:input_ids": ([False, False, False, True, False], [3.0, 3.0, 3.0, -1.0, 3.0])}
    # a batch tensor with no element per sample (the device guard)
    res = GuardPlan(CFG, checks=["missing_value"]).run({"features": torch.zeros(2, 0), "label": torch.tensor([1, 2])})
    assert {c.label: res.flagged[i].tolist() for i, c in enumerate(res.calls) if c.check == "missing_value"} == {
        "missing_value:features": [True, True], "missing_value:label": [False, False]}


def test_the_audit_runs_the_same_check():
    fn = REGISTRY["missing_value"].fn
    out = fn(from_arrow(pa.array([1, None, 3], pa.int64())))
    assert out.flagged.tolist() == [False, True, False] and out.value.tolist() == [1.0, -1.0, 1.0]
    out = fn(from_arrow(pa.array([[1.0], [], None], pa.list_(pa.float32()))))
    assert out.flagged.tolist() == [False, True, True] and out.value.tolist() == [1.0, 0.0, -1.0]
    out = fn(tokens_from_arrow(pa.array([[5, 6], [], None], pa.list_(pa.int64()))))
    assert out.flagged.tolist() == [False, False, True] and out.value.tolist() == [2.0, 0.0, -1.0]  # []: all_padding
    assert [t.kind for t in REGISTRY["missing_value"].targets] == ["numeric", "label", "tokens"]
