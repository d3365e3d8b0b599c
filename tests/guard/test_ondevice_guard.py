"""OnDeviceGuard: the same checks and mask as DeviceGuard as tensor work alone, folded into a record that stays on
the device until read(); one graph under torch.compile (traced here on the meta device, where any host read or
data-dependent op fails). Its CUDA graph capture is in test_guard_cuda.py."""
from __future__ import annotations

import math

import pytest
import torch

from dataaudit.guard import BadBatchError, DeviceGuard, OnDeviceGuard

from tests.paths import REPO

CFG = REPO / "fixtures" / "audit.toml"
N = 6


def batches(n=N, size=8):
    out = []
    for b in range(n):
        g = torch.Generator().manual_seed(b)
        x = torch.randn(size, 3, 16, 16, generator=g)
        y = torch.randint(0, 10, (size,), generator=g)
        ids = torch.randint(1, 1000, (size, 32), generator=g)
        if b == 2:
            x[5, 0, 0, 0] = math.nan
            y[1] = 10
            ids[3, 7] = 4000
        if b == 4:
            y[0] = -3
        out.append({"pixels": x, "label": y, "input_ids": ids,
                    "attention_mask": torch.ones(size, 32, dtype=torch.int64)})
    return out


def errors(report):
    return {k: (v["samples"], v["first_step"], v["last_step"]) for k, v in report["checks"].items()
            if v["severity"] == "error" and v["samples"]}


def test_record_matches_the_device_guards_findings():
    guard = OnDeviceGuard(CFG, policy="mask", checks="all")
    outs = [guard(b) for b in batches()]
    report = guard.read()
    assert report["steps"] == N and report["last_bad_step"] == 4
    assert errors(report) == {"nonfinite:pixels": (1, 2, 2), "label_out_of_range:label": (2, 2, 4),
                              "token_id_out_of_range:input_ids": (1, 2, 2)}
    assert report["last_bad"] == {   # each check's flagged samples at its own last step
        "nonfinite:pixels": [{"position": 5, "value": 1.0, "detail": "1 non-finite element(s) (NaN / Inf)"}],
        "label_out_of_range:label": [{"position": 0, "value": -3.0, "detail": "label -3 outside [0, 10)"}],
        "token_id_out_of_range:input_ids": [
            {"position": 3, "value": 4000.0, "detail": "token id 4000 outside [0, 1000)"}]}
    ref = DeviceGuard(batches(), CFG, policy="warn", checks="all", profile=False)
    list(ref)
    assert sorted((f.step, f.check) for f in ref.findings if f.severity == "error") == [
        (2, "label_out_of_range"), (2, "nonfinite"), (2, "token_id_out_of_range"), (4, "label_out_of_range")]
    # mask: the flagged rows neutralized, weight 0 for them
    assert outs[2]["label"].tolist() == [batches()[2]["label"][i].item() if i not in (1, 3, 5) else -100
                                         for i in range(8)]
    assert outs[2]["loss_weight"].tolist() == [1, 0, 1, 0, 1, 0, 1, 1]
    assert torch.isfinite(outs[2]["pixels"]).all() and outs[2]["input_ids"][3].eq(0).all()
    assert outs[2]["attention_mask"][3].eq(1).all()
    assert outs[0]["loss_weight"].tolist() == [1.0] * 8


def test_warn_hands_the_batch_out_unchanged_and_raise_raises_on_read():
    b = batches()
    warn = OnDeviceGuard(CFG, policy="warn")
    assert all(warn(x) is x for x in b)
    assert errors(warn.read())["label_out_of_range:label"] == (2, 2, 4)
    rais = OnDeviceGuard(CFG, policy="raise")
    out = [rais(x) for x in b]
    assert out[4]["label"][0].item() == -100 and "loss_weight" not in out[4]
    with pytest.raises(BadBatchError) as ei:
        rais.read()
    assert ei.value.step == 4
    assert "label_out_of_range:label (2 samples, steps 2..4)" in str(ei.value)


def test_reset_and_a_smaller_last_batch():
    guard = OnDeviceGuard(CFG, policy="mask")
    for x in batches():
        guard(x)
    guard.reset()
    assert guard.read() == {**guard.read(), "steps": 0, "last_bad_step": None, "last_bad": {}}
    assert not errors(guard.read())
    small = {k: v[:4] for k, v in batches()[2].items()}   # rows 1 and 3 bad (label 10, token 4000)
    out = guard(small)
    assert out["loss_weight"].tolist() == [1, 0, 1, 0]
    r = guard.read()
    assert [d["position"] for d in r["last_bad"]["label_out_of_range:label"]] == [1]
    with pytest.raises(ValueError, match="a batch of 16 samples after one of 8"):
        guard(batches(1, size=16)[0])


def test_skip_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="skip needs a host read per batch: use DeviceGuard"):
        OnDeviceGuard(CFG, policy="skip")


def test_one_graph_under_torch_compile_with_no_host_read():
    """torch.compile traces a call as a single graph (fullgraph), on the meta device: no host read, no
    data-dependent op, no graph break."""
    meta = [{k: v.to("meta") for k, v in b.items()} for b in batches(2)]
    guard = OnDeviceGuard(CFG, policy="mask", checks="all")
    guard(meta[0])  # eager: resolves the plan, allocates the record
    import torch._dynamo
    explained = torch._dynamo.explain(lambda b: guard(b)["label"])(meta[1])
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    assert guard._record["samples"].device.type == "meta"


def test_raise_names_the_last_acting_step_not_a_later_warning():
    b = batches()
    b[4]["label"][0] = 3                          # only the step-2 errors remain
    b[5]["attention_mask"][2] = 0                 # a warning at step 5: all_padding
    b[5]["input_ids"][2] = 0
    guard = OnDeviceGuard(CFG, policy="raise")
    for x in b:
        guard(x)
    with pytest.raises(BadBatchError) as ei:
        guard.read()
    err = ei.value
    assert err.step == 2 and err.report["last_bad_step"] == 5
    assert err.report["checks"]["all_padding:input_ids"] == {"severity": "warning", "samples": 1, "first_step": 5,
                                                            "last_step": 5}
    assert [d["position"] for d in err.report["last_bad"]["label_out_of_range:label"]] == [1]


def test_empty_batch_changed_keys_and_fill_values_that_do_not_fit():
    guard = OnDeviceGuard(CFG, policy="mask")
    empty = {k: v[:0] for k, v in batches(1)[0].items()}
    assert guard(empty) is empty and guard.read()["steps"] == 0   # nothing checked, nothing allocated
    guard(batches(1)[0])
    with pytest.raises(ValueError, match="differ from the first batch's"):
        guard({k: v for k, v in batches(1)[0].items() if k != "input_ids"})
    for labels, ignore, why in ((torch.uint8, None, "ignore_index -100 does not fit 'label' \\(uint8, 0..255\\)"),
                                (torch.int64, 1.5, "ignore_index 1.5 does not fit 'label'")):
        x = batches()[2]
        x["label"] = x["label"].clamp(0, 200).to(labels)
        g = OnDeviceGuard(CFG, policy="mask", ignore_index=ignore)
        with pytest.raises(ValueError, match=why):
            g(x)


def test_named_tuple_batches_are_masked_as_named_tuples():
    from collections import namedtuple
    Batch = namedtuple("Batch", "pixels label input_ids attention_mask")
    names = Batch._fields
    for make in (lambda: OnDeviceGuard(CFG, policy="mask", names=names),
                 lambda: DeviceGuard(None, CFG, policy="mask", names=names, profile=False)):
        guard = make()
        x = Batch(**batches()[2])
        out = guard(x) if isinstance(guard, OnDeviceGuard) else guard.process(x)[0]
        assert type(out) is Batch and out.label.tolist()[1] == -100 and out.input_ids[3].eq(0).all()
        assert guard.sample_weight.tolist() == [1, 0, 1, 0, 1, 0, 1, 1]
