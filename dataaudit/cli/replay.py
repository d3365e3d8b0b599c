"""`dataaudit replay`: run a guard snapshot's batch through the user's loss and name the samples that make it bad.

Exit codes (as the other commands: 1 = bad data found): 0 the loss is fine on replay (nothing to blame: the
model differs from the one in training, or the cause is not in the batch); 1 culprit samples named (alone, or
a group that fails only together); 2 usage or I/O error (an unreadable snapshot, a module or factory that does
not import, a loss function that fails, a --compare-device this machine lacks), one line.

--compare-device cpu|cuda:N reruns the whole batch there in float32: "data" (the bad loss comes back) or
"device/transient" (it does not). --skip-list PATH appends the culprits seen failing alone to that
skip-list.parquet (dataaudit.guard.skip_list), unless the comparison said "device/transient"; a guard given
skip_list=PATH drops them when the run resumes.
"""
from __future__ import annotations

import importlib
import json
import math
import os
import sys
from pathlib import Path

import click

from dataaudit.cli.common import InputError, plural


def _json_safe(obj):
    """Non-finite floats as the strings "nan", "inf", "-inf": a bad loss is what a snapshot holds, and strict JSON
    readers refuse NaN/Infinity."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return repr(obj)
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    return obj


def _factory(spec: str):
    module, _, name = spec.partition(":")
    if not module or not name:
        raise InputError(f"--model {spec!r}: expected MODULE:FACTORY (e.g. mytrain.replay:make_loss)")
    if os.getcwd() not in sys.path:  # the user's code is usually beside where they run the command
        sys.path.insert(0, os.getcwd())
    try:
        mod = importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001 - any import failure of user code is a usage error, one line
        raise InputError(f"--model {spec!r}: cannot import {module!r}: {type(exc).__name__}: {exc}") from None
    fn = getattr(mod, name, None)
    if not callable(fn):
        raise InputError(f"--model {spec!r}: {module!r} has no callable {name!r}")
    try:
        loss_fn = fn()
    except Exception as exc:  # noqa: BLE001
        raise InputError(f"--model {spec!r}: the factory failed: {type(exc).__name__}: {exc}") from None
    if not callable(loss_fn):
        raise InputError(f"--model {spec!r}: the factory returned {type(loss_fn).__name__}, not a loss function")
    return loss_fn


def _name(t: dict) -> str:
    # "position": the sample's index in the batch; "row": the record's index in its shard (as everywhere else)
    return f"position {t['position']}: shard {t['shard']}, key {t['key']}, row {t['row']}"


def _check_device(spec: str) -> None:
    """cpu, cuda or cuda:N that this machine has; else a usage error."""
    import torch

    try:
        dev = torch.device(spec)
    except (RuntimeError, ValueError):
        raise InputError(f"--compare-device {spec!r}: expected cpu or cuda:N") from None
    if dev.type not in ("cpu", "cuda"):
        raise InputError(f"--compare-device {spec!r}: expected cpu or cuda:N")
    if dev.type == "cuda" and (not torch.cuda.is_available() or (dev.index or 0) >= torch.cuda.device_count()):
        raise InputError(f"--compare-device {spec}: no such CUDA device on this machine")


def _append(path: Path, snapshot: Path, snap, culprits: list, threshold) -> dict:
    """Append the named culprits to the skip list: {"added", "already", "unnamed"} counts."""
    from dataaudit.guard.skip_list import append_skip_list

    why = f"loss above {threshold:g}" if threshold is not None else "non-finite loss"
    rows = [{"shard": str(t["shard"]), "key": str(t["key"]),
             "reason": f"replay: {why} alone (snapshot {snapshot.name}, step {snap.step}, trace {snap.trace_id})"}
            for t in culprits if t["shard"] is not None and t["key"] is not None]
    try:
        added = append_skip_list(path, rows)
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: cannot update the skip list: {exc}") from None
    return {"added": added, "already": len(rows) - added, "unnamed": len(culprits) - len(rows)}


@click.command("replay")
@click.argument("snapshot", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--model", "model", required=True,
              help="MODULE:FACTORY; FACTORY() returns loss_fn(batch) -> loss (scalar or per sample).")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True)
@click.option("--per-sample", "mode", flag_value="per-sample", help="Run every sample alone (1 + B passes).")
@click.option("--bisect", "mode", flag_value="bisect", default=True, help="Bisect the batch (default).")
@click.option("--threshold", type=float, default=None,
              help="A loss above this is bad too (default: a spike or ceiling snapshot's own bar, else none).")
@click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where the JSON result goes (default: SNAPSHOT with .replay.json).")
@click.option("--compare-device", "compare", default=None, metavar="cpu|cuda:N",
              help="Rerun the batch there in float32: 'data' (reproduces) or 'device/transient' (does not).")
@click.option("--skip-list", "skip_list", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Append the culprits (shard, key, reason) to this skip-list.parquet.")
def replay(snapshot, model, device, mode, threshold, out, compare, skip_list):
    """Find the samples of SNAPSHOT whose loss is non-finite (or above --threshold)."""
    from dataaudit.guard.replay import default_threshold, replay as run_replay
    from dataaudit.guard.snapshot import load_snapshot

    try:
        snap = load_snapshot(snapshot)  # safetensors and a JSON header: nothing is unpickled
    except Exception as exc:  # noqa: BLE001 - missing, truncated, foreign file: one line
        raise InputError(f"{snapshot}: not a readable guard snapshot: {type(exc).__name__}: {exc}") from None
    if device == "cuda":
        import torch
        if not torch.cuda.is_available():
            raise InputError("--device cuda: no CUDA device is available")
    if compare is not None:
        _check_device(compare)
    loss_fn = _factory(model)
    if threshold is None:
        threshold = default_threshold(snap)
    try:
        result = run_replay(snap, loss_fn, mode, device, threshold)
        if compare is not None:
            from dataaudit.guard.replay import compare_device
            result["compare"] = compare_device(snap, loss_fn, compare, threshold)
    except Exception as exc:  # noqa: BLE001
        raise InputError(f"{snapshot}: the loss function failed: {type(exc).__name__}: {exc}") from None
    listed = None
    if skip_list is not None and result.get("compare", {}).get("verdict") != "device/transient":
        listed = _append(skip_list, snapshot, snap, result["culprits"], threshold)
        result["skip_list"] = {"path": str(skip_list), **listed}
    out = out or snapshot.with_suffix(".replay.json")
    try:
        out.write_text(json.dumps(_json_safe(result), indent=2, allow_nan=False) + "\n")
    except OSError as exc:
        raise InputError(f"{out}: cannot write: {exc.strerror}") from None
    what = f"loss above {threshold:g}" if threshold is not None else "non-finite loss"
    click.echo(f"replay {snapshot} (step {snap.step}, {plural(result['batch_rows'], 'sample')}, {mode}): "
               f"{plural(result['forward_passes'], 'forward pass', 'forward passes')}")
    if result["culprits"]:
        click.echo(f"{plural(len(result['culprits']), 'culprit')} ({what} alone):")
        for t in result["culprits"]:
            click.echo("  " + _name(t))
    if result["together"]:
        click.echo(f"{plural(len(result['together']), 'sample')} give a {what} only together:")
        for t in result["together"]:
            click.echo("  " + _name(t))
    if not result["reproduced"]:
        click.echo(f"the batch's loss is fine on replay: not reproduced (does the factory load the weights of "
                   f"step {snap.step}?)")
    if "compare" in result:
        c = result["compare"]
        click.echo(f"on {c['device']} in float32 the loss is {c['loss']}: {c['verdict']}"
                   + (" (not reproduced there: the device or a transient fault, not the data)"
                      if c["verdict"] != "data" else ""))
    if listed is not None:
        click.echo(f"skip list {skip_list}: {plural(listed['added'], 'sample')} added"
                   + (f", {listed['already']} already listed" if listed["already"] else "")
                   + (f", {listed['unnamed']} without a shard or key not listed" if listed["unnamed"] else ""))
    elif skip_list is not None:
        click.echo(f"skip list {skip_list}: nothing added (device/transient)")
    click.echo(f"wrote {out}")
    raise SystemExit(1 if result["culprits"] or result["together"] else 0)
