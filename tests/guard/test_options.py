"""GuardOptions: one declaration of the guards' settings. Defaults, normalization and validation (the messages the
guards gave before), options= or keywords but never both, OnDeviceGuard's narrower set, and a guard built either
way acting the same."""
from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from dataaudit.guard import POLICIES, DeviceGuard, GuardCallback, GuardOptions, OnDeviceGuard
from dataaudit.guard.ondevice import ONDEVICE_OPTIONS
from dataaudit.guard.options import OPTION_NAMES

from tests.paths import REPO

CFG = REPO / "fixtures" / "audit.toml"


def test_defaults_are_the_device_guards():
    o = GuardOptions()
    assert (o.policy, o.act_on, o.checks, o.names, o.fields) == ("raise", frozenset({"error"}), None, None, None)
    assert (o.ignore_index, o.pad_id, o.weight_key, o.snapshot_dir, o.late_raise) == \
        (None, None, "loss_weight", "guard_snapshots", True)
    assert (o.profile, o.log_every, o.jsonl, o.non_blocking, o.pin_memory, o.max_findings) == \
        (True, 100, None, True, True, 10_000)
    assert (o.loss_spike, o.loss_warmup, o.loss_decay, o.loss_snapshots) == (2.0, 3, 0.98, 10)
    assert (o.distributed, o.process_group, o.rank_check_every, o.rank_sketch_size, o.dataset_size) == \
        (None, None, 50, 4096, None)
    assert (o.loss_window, o.loss_reference, o.max_loss, o.max_loss_factor, o.loss_patience) == \
        (100, "median", None, 1000.0, 4)
    assert (o.max_grad_norm, o.grad_top, o.skip_list, o.loss_mad, o.compile) == (None, 5, None, 20.0, False)
    assert POLICIES == ("raise", "skip", "mask", "warn")
    assert set(ONDEVICE_OPTIONS) < OPTION_NAMES and len(OPTION_NAMES) == 35


def test_iterables_are_settled_and_the_options_frozen():
    o = GuardOptions(act_on=["error", "warning"], checks=(n for n in ["nonfinite", "constant"]),
                     names=["x", "label"], fields={"label": "y"})
    assert o.act_on == frozenset({"error", "warning"}) and o.checks == ("nonfinite", "constant")
    assert o.names == ("x", "label") and dict(o.fields) == {"label": "y"}
    with pytest.raises(TypeError):
        o.fields["label"] = "z"
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.policy = "warn"
    assert GuardOptions(checks="all").checks == "all"
    assert dataclasses.replace(o, policy="mask").act_on == o.act_on


@pytest.mark.parametrize("kwargs, message", [
    ({"policy": "drop"}, "policy must be one of ('raise', 'skip', 'mask', 'warn'), got 'drop'"),
    ({"act_on": ("error", "fatal")}, "act_on: unknown severities ['fatal'] (known: ('info', 'warning', 'error'))"),
    ({"act_on": "error"}, "act_on: unknown severities ['e', 'o', 'r']"),
    ({"loss_spike": 1.0}, "spike_factor must be > 1 (or None: no spike test), got 1.0"),
    ({"loss_decay": 1.0}, "decay must be in (0, 1), got 1.0"),
    ({"loss_window": 0}, "loss_window must be at least 1, got 0"),
    ({"loss_reference": "mean"}, "loss_reference must be one of ('median', 'ema'), got 'mean'"),
    ({"max_loss": 0.0}, "max_loss must be > 0 (or None: max_loss_factor x the first loss), got 0.0"),
    ({"max_loss_factor": 1.0}, "max_loss_factor must be > 1 (or None: no derived ceiling), got 1.0"),
    ({"loss_patience": 0}, "loss_patience must be at least 1 (or None: never), got 0"),
    ({"max_grad_norm": -1.0}, "max_grad_norm must be > 0 (or None: non-finite gradients only), got -1.0"),
    ({"grad_top": 0}, "grad_top must be at least 1, got 0"),
    ({"compile": 1}, "compile must be False, True or a torch.compile backend name, got 1"),
    ({"loss_mad": 0.0}, "loss_mad must be > 0 (or None: the factor alone), got 0.0"),
])
def test_invalid_settings_are_refused_with_the_reason(kwargs, message):
    with pytest.raises(ValueError) as ei:
        GuardOptions(**kwargs)
    assert message in str(ei.value)
    with pytest.raises(ValueError) as ei:   # the same from a guard's keywords
        DeviceGuard(None, None, profile=False, **kwargs)
    assert message in str(ei.value)


def test_ondevice_policies_keep_their_messages():
    with pytest.raises(ValueError) as ei:
        OnDeviceGuard(CFG, policy="skip")
    assert str(ei.value) == ("policy must be one of ('mask', 'warn', 'raise'), got 'skip' (skip needs a host read "
                             "per batch: use DeviceGuard)")
    with pytest.raises(ValueError) as ei:
        OnDeviceGuard(CFG, policy="drop")
    assert str(ei.value) == "policy must be one of ('mask', 'warn', 'raise'), got 'drop'"
    with pytest.raises(ValueError) as ei:   # a valid GuardOptions that OnDeviceGuard cannot act on
        OnDeviceGuard(CFG, options=GuardOptions(policy="skip"))
    assert str(ei.value).startswith("policy must be one of ('mask', 'warn', 'raise'), got 'skip'")


def test_options_and_keywords_together_are_a_type_error():
    o = GuardOptions(policy="warn")
    with pytest.raises(TypeError) as ei:
        DeviceGuard(None, CFG, options=o, policy="mask", profile=False)
    assert str(ei.value) == ("DeviceGuard: give options=GuardOptions(...) or keyword options, not both "
                             "(got policy, profile)")
    with pytest.raises(TypeError, match="OnDeviceGuard: give options=GuardOptions"):
        OnDeviceGuard(CFG, options=o, act_on=("error",))
    with pytest.raises(TypeError, match="GuardCallback: give options=GuardOptions"):
        GuardCallback(CFG, options=o, snapshot_dir=None)
    with pytest.raises(TypeError) as ei:
        DeviceGuard(None, CFG, options={"policy": "warn"})
    assert str(ei.value) == "DeviceGuard: options must be a GuardOptions, not dict"


def test_unknown_keywords_are_a_type_error_and_ondevice_takes_its_own_set():
    with pytest.raises(TypeError) as ei:
        DeviceGuard(None, CFG, polcy="mask")
    assert str(ei.value) == "DeviceGuard() got an unexpected keyword argument 'polcy'"
    with pytest.raises(TypeError) as ei:   # a DeviceGuard setting OnDeviceGuard has no use for
        OnDeviceGuard(CFG, snapshot_dir="snaps")
    assert str(ei.value) == "OnDeviceGuard() got an unexpected keyword argument 'snapshot_dir'"
    # through options= it reads what it uses and leaves the rest
    g = OnDeviceGuard(CFG, options=GuardOptions(policy="warn", snapshot_dir="snaps", act_on=("warning",)))
    assert (g.policy, g.act_on) == ("warn", frozenset({"warning"}))


def test_each_guard_keeps_its_own_default_policy():
    assert OnDeviceGuard(CFG).options == GuardOptions(policy="mask")
    assert DeviceGuard(None, CFG, profile=False).options == GuardOptions(profile=False)
    assert OnDeviceGuard(CFG, options=GuardOptions()).policy == "raise"   # an explicit GuardOptions is taken as is


def test_options_or_keywords_give_the_same_guard(tmp_path):
    def batches():
        out = []
        for s in range(3):
            x = torch.zeros(4, 2)
            if s == 1:
                x[2, 0] = math.nan
            out.append({"x": x, "label": torch.tensor([0, 1, 2, 3])})
        return out

    kw = dict(policy="mask", act_on=("error",), fields={"numeric": ["x"]}, profile=False, snapshot_dir=tmp_path)
    by_keywords = DeviceGuard(batches(), CFG, **kw)
    by_options = DeviceGuard(batches(), CFG, options=GuardOptions(**kw))
    assert by_keywords.options == by_options.options
    outs = [[b["loss_weight"].tolist() for b in g] for g in (by_keywords, by_options)]
    assert outs[0] == outs[1] == [[1.0] * 4, [1.0, 1.0, 0.0, 1.0], [1.0] * 4]
    assert [(f.step, f.position, f.check, f.action) for f in by_options.findings] == \
        [(f.step, f.position, f.check, f.action) for f in by_keywords.findings] == [(1, 2, "nonfinite", "masked")]
    # the guard's settings are its options' (read-only: one place to change them)
    assert (by_options.policy, by_options.act_on, by_options.snapshot_dir) == ("mask", frozenset({"error"}),
                                                                               tmp_path)
    with pytest.raises(AttributeError):
        by_options.policy = "warn"


def test_the_lightning_callback_takes_options_and_keeps_its_own_log_every():
    cb = GuardCallback(CFG, options=GuardOptions(policy="skip", log_every=7), log_every=3)
    assert (cb.guard.options.policy, cb.guard.options.log_every, cb.log_every) == ("skip", 0, 3)
    cb = GuardCallback(CFG, policy="warn", device="cuda")   # the device is Lightning's
    assert (cb.guard.policy, cb.guard.device, cb.guard.options.log_every) == ("warn", None, 0)
