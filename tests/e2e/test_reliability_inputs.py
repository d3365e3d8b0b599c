"""Every hostile input: the job completes, the damage is reported per shard and record, nothing is lost."""
from __future__ import annotations

from dataaudit.pipelines.engine import EngineOptions

import pytest

from tests.hostile_inputs import HOSTILE, audit_one
from tests.paths import REPO, needs_shared


@pytest.mark.parametrize("hostile", [pytest.param(h, marks=needs_shared if h.shared else ()) for h in HOSTILE],
                         ids=[h.name for h in HOSTILE])
def test_hostile_input(hostile, tmp_path):
    report = audit_one(hostile, tmp_path)
    shard = report["shards"][0]
    assert shard["status"] == hostile.status, shard
    assert shard["samples"] == hostile.records          # every record reached is counted: none lost
    assert report["totals"]["samples"] == shard["samples"]
    found = {k: v["flagged"] for k, v in report["checks"].items() if v["flagged"]}
    assert found == hostile.flags
    if hostile.error:
        assert shard["error"].startswith(hostile.error) and "\n" not in shard["error"]
    else:
        assert shard["error"] is None


def test_wrong_type_column_is_named_in_the_report(tmp_path):
    hostile = next(h for h in HOSTILE if "wrong type" in h.name)
    report = audit_one(hostile, tmp_path)
    assert report["shards"][0]["problems"] == [
        "column 'label' (label) is string, expected numbers: its checks are skipped"]
    assert report["checks"]["label_out_of_range"]["ran"] is False


def test_shards_with_different_schemas_in_one_job(tmp_path):
    from dataaudit.config import load_config
    from dataaudit.pipelines.audit import run_audit

    a = next(h for h in HOSTILE if "schema A" in h.name).build(tmp_path)
    b = next(h for h in HOSTILE if "schema B" in h.name).build(tmp_path)
    report = run_audit([str(a), str(b)], load_config(None), tmp_path / "out", options=EngineOptions("local"))
    assert [s["samples"] for s in report["shards"]] == [10, 3]
    assert report["shards"][0]["fields"]["text"] == ["text"]
    assert report["shards"][1]["fields"]["text"] == ["other"]   # int "text" is not text: first string column


def test_huge_member_is_skipped_with_bounded_memory(tmp_path):
    """Peak memory of auditing a tar with a 1 GiB member stays far below the member's size."""
    import subprocess
    import sys

    code = (
        "import sys; from pathlib import Path; sys.path.insert(0, '.');"
        "from tests.hostile_inputs import HOSTILE, audit_one;"
        "h = next(x for x in HOSTILE if '1 GiB' in x.name);"
        f"r = audit_one(h, Path({str(tmp_path)!r}));"
        # VmHWM is this process's own peak (ru_maxrss would carry over the pytest parent's high-water mark).
        "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1];"
        "print(r['totals']['samples'], int(hwm) // 1024)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=str(REPO))
    samples, peak_mib = map(int, out.stdout.split())
    assert samples == 2
    assert peak_mib < 900, peak_mib      # the import floor is ~350 MiB; a read member would add 1024
