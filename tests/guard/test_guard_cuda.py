"""The device guard on CUDA: no host sync in the hot path for mask / warn (and late raise), verified with
torch.cuda.set_sync_debug_mode("error"); copies through pinned memory, non-blocking (the profiler's memcpy kinds);
flags read back late; every policy; OnDeviceGuard captured in a CUDA graph and compiled as one graph; the loss
guard and replay on the GPU. Skipped without CUDA (the meta-device tests in test_guard_checks.py,
test_ondevice_guard.py and test_loss_guard.py cover sync-freedom there)."""
from __future__ import annotations

import math

import pytest
import torch

from dataaudit.guard import BadBatchError, DeviceGuard, load_snapshot

from tests.paths import REPO

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
CFG = REPO / "fixtures" / "audit.toml"
N = 6


def batches():
    out = []
    for b in range(N):
        g = torch.Generator().manual_seed(b)
        x = torch.randn(8, 3, 16, 16, generator=g)
        y = torch.randint(0, 10, (8,), generator=g)
        ids = torch.randint(1, 1000, (8, 32), generator=g)
        m = torch.ones(8, 32, dtype=torch.int64)
        if b == 2:
            x[5, 0, 0, 0] = math.nan
            y[1] = 10
            ids[3, 7] = 4000
        out.append({"pixels": x, "label": y, "input_ids": ids, "attention_mask": m,
                    "__key__": [f"b{b}-{i}" for i in range(8)], "__shard__": ["s"] * 8})
    return out


@pytest.mark.parametrize("policy", ["mask", "warn", "raise"])
def test_no_host_sync_in_the_hot_path(policy, tmp_path):
    guard = DeviceGuard(batches(), CFG, device="cuda", policy=policy, checks="all", snapshot_dir=tmp_path)
    it = iter(guard)
    outs = []
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(3):  # the bad batch (2) goes out without a sync; under raise it goes out masked
            b = next(it)
            outs.append(b)
            (b["pixels"].float().mean() * 2).detach()  # the "training step": async work only
    finally:
        torch.cuda.set_sync_debug_mode(0)
    if policy == "raise":
        with pytest.raises(BadBatchError) as ei:
            for _ in it:
                pass
        assert ei.value.step == 2 and load_snapshot(ei.value.snapshot).verify()
    else:
        rest = list(it)
        assert len(outs) + len(rest) == N
    guard.flush()
    got = sorted((f.step, f.position, f.key, f.check) for f in guard.findings if f.severity == "error")
    assert got == [(2, 1, "b2-1", "label_out_of_range"), (2, 3, "b2-3", "token_id_out_of_range"),
                   (2, 5, "b2-5", "nonfinite")]
    b2 = outs[2]
    assert b2["pixels"].device.type == "cuda"
    if policy in ("mask", "raise"):
        assert b2["label"][[1, 3, 5]].tolist() == [-100, -100, -100]
        assert torch.isfinite(b2["pixels"]).all().item()
    s = guard.profiler.summary()
    assert s["gpu_steps"] >= 3 and s["gpu_copy_s"] > 0


def test_skip_on_cuda():
    guard = DeviceGuard(batches(), CFG, device="cuda", policy="skip")
    out = list(guard)
    assert len(out) == N - 1 and guard.summary()["skipped_batches"] == 1


def test_late_raise_false_reads_at_once_on_cuda(tmp_path):
    guard = DeviceGuard(batches(), CFG, device="cuda", policy="raise", late_raise=False, snapshot_dir=tmp_path)
    handed = []
    with pytest.raises(BadBatchError) as ei:
        for b in guard:
            handed.append(b)
    assert ei.value.step == 2 and len(handed) == 2   # raised before the bad batch was handed out
    assert load_snapshot(ei.value.snapshot).verify()


def _memcpy_kinds(policy, pin_memory):
    """(HtoD, DtoH) memcpy names the CUDA profiler saw while the guard ran over pageable host batches."""
    from torch.profiler import ProfilerActivity, profile
    guard = DeviceGuard(batches(), CFG, device="cuda", policy=policy, checks="all", pin_memory=pin_memory,
                        snapshot_dir=None)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in guard:
            pass
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if e.name.startswith("Memcpy")]
    return [n for n in names if "HtoD" in n], [n for n in names if "DtoH" in n], guard


@pytest.mark.parametrize("policy", ["mask", "warn"])
def test_copies_are_pinned_and_non_blocking(policy):
    # non_blocking: a blocking copy would be a host sync, which this mode turns into an error
    torch.cuda.set_sync_debug_mode("error")
    try:
        h2d, d2h, guard = _memcpy_kinds(policy, pin_memory=True)
    finally:
        torch.cuda.set_sync_debug_mode(0)
    # 4 tensors per batch in; flags, values and the token count back per batch: all through pinned memory
    assert h2d == ["Memcpy HtoD (Pinned -> Device)"] * (4 * N), sorted(set(h2d))
    assert d2h == ["Memcpy DtoH (Device -> Pinned)"] * (3 * N), sorted(set(d2h))
    assert sorted((f.step, f.position, f.check) for f in guard.findings if f.severity == "error") == [
        (2, 1, "label_out_of_range"), (2, 3, "token_id_out_of_range"), (2, 5, "nonfinite")]
    # the same loop without pinning copies from pageable memory: what the assertion above would catch
    h2d, _, _ = _memcpy_kinds(policy, pin_memory=False)
    assert set(h2d) == {"Memcpy HtoD (Pageable -> Device)"}


def _device_batches():
    return [{k: v.cuda() for k, v in b.items() if isinstance(v, torch.Tensor)} for b in batches()]


ERRORS = {"nonfinite:pixels": (1, 2, 2, [5]), "label_out_of_range:label": (1, 2, 2, [1]),
          "token_id_out_of_range:input_ids": (1, 2, 2, [3])}


def _errors(report):
    return {k: (v["samples"], v["first_step"], v["last_step"], [d["position"] for d in report["last_bad"].get(k, [])])
            for k, v in report["checks"].items() if v["severity"] == "error" and v["samples"]}


def test_on_device_guard_in_a_cuda_graph():
    """Captured once, replayed per batch: the flags never leave the device until read(); replays add up."""
    from dataaudit.guard import OnDeviceGuard
    data = _device_batches()
    static = {k: v.clone() for k, v in data[0].items()}
    guard = OnDeviceGuard(CFG, policy="mask", checks="all")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the capture stream, as torch.cuda.graph asks
        for _ in range(2):
            guard(static)
    torch.cuda.current_stream().wait_stream(side)
    # capturing is the test of graph safety: CUDA refuses a sync or a host copy while a stream captures
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = guard(static)
    guard.reset()
    labels = []
    torch.cuda.set_sync_debug_mode("error")   # the loop around the replays (no guard code runs in a replay)
    try:
        for b in data:
            for k in static:
                static[k].copy_(b[k], non_blocking=True)
            graph.replay()
            labels.append(out["label"].clone())
    finally:
        torch.cuda.set_sync_debug_mode(0)
    report = guard.read()
    assert report["steps"] == N and report["last_bad_step"] == 2 and _errors(report) == ERRORS
    assert labels[2].tolist() == [data[2]["label"][i].item() if i not in (1, 3, 5) else -100 for i in range(8)]
    assert all(torch.equal(labels[s], data[s]["label"]) for s in (0, 1, 3, 4, 5))
    assert out["loss_weight"].tolist() == [1.0] * 8  # the last replay's batch was clean


def test_on_device_guard_under_torch_compile():
    """Inside a compiled function it gives what it gives eagerly (one graph under torch 2.13's dynamo, checked on
    the meta device in test_ondevice_guard.py; older versions may break the graph, with the same results)."""
    from dataaudit.guard import OnDeviceGuard
    data = _device_batches()
    eager, compiled = (OnDeviceGuard(CFG, policy="mask", checks="all") for _ in range(2))
    compiled(data[0])  # first call eager: resolves the plan, allocates the record
    compiled.reset()
    step = torch.compile(lambda b: compiled(b)["label"], backend="aot_eager")
    got = [step(b) for b in data]
    want = [eager(b)["label"] for b in data]
    assert all(torch.equal(a, w) for a, w in zip(got, want))
    assert _errors(compiled.read()) == _errors(eager.read()) == ERRORS


@pytest.mark.parametrize("policy", ["raise", "warn"])
def test_loss_guard_on_cuda_reads_back_late_without_a_sync(policy, tmp_path):
    """A non-finite loss at step 3: watched with no host sync, read back late (raised or logged) with a snapshot
    of the exact batch and the CUDA RNG state; replay on the GPU names the culprit in 9 forward passes."""
    from dataaudit.guard.device import BadLossError
    from dataaudit.guard.replay import replay
    from tests.guard.test_loss_guard import CULPRIT, batches as loss_batches
    lin = torch.nn.Linear(4, 1, bias=False, device="cuda")
    with torch.no_grad():
        lin.weight.fill_(1.0)

    def cuda_loss(batch):
        return (lin(batch["features"]) ** 2).mean()

    guard = DeviceGuard(loss_batches(), None, device="cuda", policy=policy, snapshot_dir=tmp_path)
    it = iter(guard)
    states = []
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(4):   # steps 0-3, the bad loss included: watched without a sync
            b = next(it)
            states.append(torch.cuda.get_rng_state())
            guard.watch_loss(cuda_loss(b))
    finally:
        torch.cuda.set_sync_debug_mode(0)
    assert guard.loss_events == []   # not read yet

    def rest():   # read back with a later step (writing the snapshot reads the batch)
        for b in it:
            guard.watch_loss(cuda_loss(b))
        guard.flush()

    if policy == "raise":
        with pytest.raises(BadLossError) as ei:
            rest()
        assert (ei.value.step, ei.value.kind) == (3, "nonfinite")
    else:
        rest()
    (event,) = guard.loss_events
    assert (event["step"], event["kind"], event["action"]) == (3, "nonfinite", {"raise": "raised",
                                                                               "warn": "warned"}[policy])
    snap = load_snapshot(event["snapshot"])
    assert snap.keys[CULPRIT] == "k229" and torch.equal(snap.rng["cuda"], states[3])
    r = replay(snap, cuda_loss, device="cuda")
    assert r["forward_passes"] == 9 and r["culprits"] == [
        {"position": CULPRIT, "shard": "s.parquet", "key": "k229", "row": 229}]


def test_device_paths_give_the_cpu_results():
    """Every default check (and dtype_mismatch's one-dtype verdict, made without per-sample codes on a device) gives
    on CUDA the flags and values it gives on the CPU, on a batch with NaN, Inf, out-of-range and blank samples."""
    from dataaudit.config import build_config
    from dataaudit.guard import GuardPlan

    cfg = build_config({"data": {"num_classes": 10, "vocab_size": 1000, "pad_id": 0, "context_length": 24,
                                 "numeric_dtype": "float32"},
                        "checks": {"out_of_range": {"min": -5.0, "max": 5.0}}}, "<test>")
    b = batches()[2]
    b = {k: v for k, v in b.items() if not k.startswith("__")}
    b["pixels"][0] = 0.5                      # a blank image
    b["pixels"][4, 1, 2, 3] = math.inf
    b["pixels"][6, 2, 0, 0] = 7.0             # out of range
    b["label"][2] = -100                      # ignored
    b["attention_mask"][7, 20:] = 0           # 20 real tokens: not too long (the others have 32 > 24)
    for dtype in (torch.float32, torch.float64):
        batch = {**b, "pixels": b["pixels"].to(dtype)}
        cpu = GuardPlan(cfg).run(batch, tensors_only=True)
        gpu = GuardPlan(cfg).run({k: v.cuda() for k, v in batch.items()})
        assert [c.label for c in cpu.calls] == [c.label for c in gpu.calls]
        assert torch.equal(gpu.flagged.cpu(), cpu.flagged)
        assert torch.allclose(gpu.value.cpu(), cpu.value, equal_nan=True)
        dm = [i for i, c in enumerate(cpu.calls) if c.check == "dtype_mismatch"]
        assert dm and cpu.flagged[dm[0]].all().item() == (dtype == torch.float64)


def _cuda_kernels(prof) -> list[str]:
    """Kernel launches the CUDA profiler saw (copies and memsets are not kernels)."""
    return [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
            and not e.name.startswith(("Memcpy", "Memset"))]


@pytest.mark.parametrize("policy", ["mask", "warn", "raise"])
def test_compiled_guard_finds_the_same_with_no_sync_and_at_most_20_kernels_a_step(policy, tmp_path):
    """compile=True: step 0 eager, step 1 compiles; the bad batch (2) goes out with no host sync and the findings
    are the eager guard's. On clean batches a compiled step launches at most 20 kernels (checks, mask, weights)."""
    from torch.profiler import ProfilerActivity, profile
    guard = DeviceGuard(batches(), CFG, device="cuda", policy=policy, checks="all", snapshot_dir=tmp_path,
                        compile=True)
    it = iter(guard)
    outs = [next(it), next(it)]
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        outs.append(next(it))
    finally:
        torch.cuda.set_sync_debug_mode(0)
    try:
        for _ in it:
            pass
    except BadBatchError as e:
        assert policy == "raise" and e.step == 2
    guard.flush()
    assert guard.device_step.summary() is True and guard.device_step.compiled_steps >= 2
    got = sorted((f.step, f.position, f.check) for f in guard.findings if f.severity == "error")
    assert got == [(2, 1, "label_out_of_range"), (2, 3, "token_id_out_of_range"), (2, 5, "nonfinite")]
    if policy != "warn":
        assert outs[2]["label"][[1, 3, 5]].tolist() == [-100, -100, -100]

    clean = DeviceGuard([b for i, b in enumerate(batches()) if i != 2], CFG, device="cuda", policy=policy,
                        checks="all", snapshot_dir=tmp_path, compile=True)
    it = iter(clean)
    next(it), next(it)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        next(it)
        torch.cuda.synchronize()
    kernels = _cuda_kernels(prof)
    assert 0 < len(kernels) <= 20, kernels


def test_compiled_loss_watch_gives_the_eager_verdicts_with_fewer_kernels():
    """LossWatch(compile=True) on the GPU: the same figures per loss as eagerly, and fewer than half the kernels."""
    from torch.profiler import ProfilerActivity, profile

    from dataaudit.guard.loss import LossWatch
    losses = [round(1.78 - 0.01 * i, 2) for i in range(15)] + [1.3e36, math.nan, 1.6]
    eager, compiled = LossWatch(window=8), LossWatch(window=8, compile=True)
    for v in losses:
        loss = torch.tensor(v, dtype=torch.float32, device="cuda")
        assert eager.update(loss).tolist() == pytest.approx(compiled.update(loss).tolist(), nan_ok=True, rel=1e-12)
    counts = []
    for watch in (eager, compiled):
        loss = torch.tensor(1.55, device="cuda")
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            watch.update(loss)
            torch.cuda.synchronize()
        counts.append(len(_cuda_kernels(prof)))
    assert compiled.judge.summary() is True and 0 < counts[1] < counts[0] / 2, counts
