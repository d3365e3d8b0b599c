"""Every example of docs/audit-at-scale.md runs as written, from a folder holding only what a clone ships: its
`dataaudit ...` lines in order, the Slurm script's line once per array task (SLURM_ARRAY_TASK_ID 0..3 of 4, as its
`--array=0-3` says) and the Kubernetes job's command once per completion index, each then merged. Exit 0 or 1 (data
findings), never 2 or a traceback; a merge's report equals one job's on the same input."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys

from tests.paths import REPO

PAGE = REPO / "docs" / "audit-at-scale.md"


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)


def _run(folder, args: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k not in ("DATAAUDIT_NUMBA_MIN_WORK", "DATAAUDIT_NO_AOT")
               and not k.startswith("SLURM_") and k != "JOB_COMPLETION_INDEX"}
    proc = subprocess.run([sys.executable, "-m", "dataaudit.cli", *args], cwd=folder, env={**environ, **(env or {})},
                          capture_output=True, text=True, timeout=240)
    out = proc.stdout + proc.stderr
    assert proc.returncode in (0, 1) and "Traceback" not in out, f"{' '.join(args)}: exit {proc.returncode}\n{out}"
    return proc


def _dataaudit_lines(block: str) -> list[list[str]]:
    return [shlex.split(line)[1:] for line in block.splitlines() if line.startswith("dataaudit ")]


def _same_report(folder, merged: str, single: str, name: str = "report.json") -> None:
    one, two = (json.loads((folder / d / name).read_text()) for d in (merged, single))
    assert two.pop("run")["engine"] != "merge" and one.pop("run")["engine"] == "merge"
    assert one == two


def test_the_pages_examples_run(tmp_path):
    (tmp_path / "fixtures").symlink_to(REPO / "fixtures", target_is_directory=True)
    bash = _blocks("bash")
    slurm = [b for b in bash if "#SBATCH" in b]
    assert len(slurm) == 1
    array = re.search(r"#SBATCH --array=(\d+)-(\d+)", slurm[0]).groups()
    first, last = int(array[0]), int(array[1])
    ran = set()
    for block in bash:
        if block is slurm[0]:
            (task,) = _dataaudit_lines(block)
            for i in range(first, last + 1):
                proc = _run(tmp_path, task, {"SLURM_ARRAY_TASK_ID": str(i), "SLURM_ARRAY_TASK_MIN": str(first),
                                              "SLURM_ARRAY_TASK_COUNT": str(last - first + 1)})
                assert f"slice {i - first} of {last - first + 1}" in proc.stdout
            continue
        for args in _dataaudit_lines(block):
            if args[0] == "merge" and args[1] == "out/array-k8s":
                _kubernetes_job(tmp_path)
            _run(tmp_path, args)
            ran.add(args[0])
    assert ran == {"audit", "dedup", "merge"}
    _run(tmp_path, ["audit", "fixtures/chat/jsonl", "--out", "single"])
    for merged in ("out/array", "out/array-slurm", "out/array-k8s"):
        _same_report(tmp_path, merged, "single")
    _run(tmp_path, ["dedup", "fixtures/chat/jsonl", "--out", "single-dedup"])
    _same_report(tmp_path, "out/dedup-array", "single-dedup", "dedup.json")
    assert json.loads((tmp_path / "out/first-look/report.json").read_text())["sample"]["records"] == 20
    assert len(json.loads((tmp_path / "out/ci/report.json").read_text())["gates"]) == 3


def _kubernetes_job(folder) -> None:
    """The indexed job of the page: its container's command once per completion index."""
    import yaml

    (doc,) = _blocks("yaml")
    job = yaml.safe_load(doc)
    assert job["spec"]["completionMode"] == "Indexed"
    command = job["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[0] == "dataaudit"
    for i in range(job["spec"]["completions"]):
        _run(folder, command[1:], {"JOB_COMPLETION_INDEX": str(i)})
