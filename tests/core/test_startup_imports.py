"""A command imports only what it needs: `dataaudit --help` and an audit of text load no torch, Ray or matplotlib
(checked in a child's sys.modules); without an optional dependency the data needs, the audit names what it did not
check and the extra to install, and `--engine ray` without Ray is a one-line usage error (exit 2).

A child "uninstalls" a module by setting sys.modules[name] = None: importing it then fails, and
importlib.util.find_spec says it is not there, as for a module that is not installed."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.paths import REPO

HEAVY = ("torch", "ray", "matplotlib", "tokenizers", "PIL", "safetensors", "webdataset")

CHILD = """
import json, sys
for name in {absent!r}:
    sys.modules[name] = None
from dataaudit.cli import main
code = None
if {argv!r}:
    try:
        main({argv!r})
    except SystemExit as exc:
        code = exc.code
print(json.dumps({{"code": code, "loaded": sorted(m for m in {heavy!r} if sys.modules.get(m) is not None)}}))
"""


def _child(argv: list[str], absent: tuple[str, ...] = ()) -> tuple[dict, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", CHILD.format(argv=argv, absent=absent, heavy=HEAVY)],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=240)
    assert proc.stdout.strip(), proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stdout + proc.stderr


def _jsonl(path, records) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


def test_import_cli_loads_nothing_heavy():
    result, _ = _child([])
    assert result == {"code": None, "loaded": []}


def test_text_audit_loads_no_torch_ray_or_matplotlib(tmp_path):
    shard = _jsonl(tmp_path / "one.jsonl", [{"text": "A short, clean sentence about nothing in particular."}])
    result, out = _child(["audit", shard, "--out", str(tmp_path / "out")])
    assert result == {"code": 0, "loaded": []}, out
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert html.count("<svg") == 1   # the length histogram, drawn without a plotting library


def test_numeric_fields_without_torch_are_named_unchecked(tmp_path):
    shard = _jsonl(tmp_path / "num.jsonl", [{"text": "fine text here", "emb": [1.0, float("nan")]},
                                            {"text": "more fine text", "emb": [0.5, 0.25]}])
    result, out = _child(["audit", shard, "--out", str(tmp_path / "out")], absent=("torch",))
    assert result == {"code": 0, "loaded": []}, out
    report = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    hint = "torch, which is not installed: pip install 'dataaudit[guard]'"
    problem = "emb: not checked: the numeric, label, token and image-tensor checks need " + hint
    assert report["checks"]["nonfinite"]["ran"] is False
    assert report["checks"]["nonfinite"]["skipped"] == "its field in the shard needs " + hint
    assert report["shards"][0]["problems"] == [problem]
    assert f"{shard}: {problem}" in report["notes"]
    assert report["totals"]["field_warnings"] == 1
    assert f"note: {shard}: {problem}" in out   # the summary prints the notes as they are (the extra included)


def test_engine_ray_without_ray_is_one_line_exit_2(tmp_path):
    shard = _jsonl(tmp_path / "one.jsonl", [{"text": "hello there"}])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    code = ("import sys; sys.modules['ray'] = None; from dataaudit.cli import main; "
            f"main(['audit', {shard!r}, '--out', {str(tmp_path / 'out')!r}, '--engine', 'ray'])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=240)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "Error: --engine ray needs ray, which is not installed: pip install 'dataaudit[ray]'"]


def test_a_command_collects_garbage_less_often_and_an_import_leaves_the_collector_alone():
    """The CLI raises the collector's first threshold for its own process (700 -> 5,000: ~0.1 s less per command);
    importing dataaudit (as a training script does for the guard) changes nothing."""
    code = ("import gc, sys\nbefore = gc.get_threshold()\nimport dataaudit, dataaudit.cli, dataaudit.guard\n"
            "imported = gc.get_threshold()\nfrom dataaudit.cli import main\n"
            "try:\n    main(['audit', 'no-such-shard.parquet', '--out', 'no-such-out'])\n"
            "except SystemExit as exc:\n    code = exc.code\nprint(before, imported, gc.get_threshold(), code)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO,
                          timeout=240)
    assert proc.stdout.strip().splitlines()[-1] == "(700, 10, 10) (700, 10, 10) (5000, 10, 10) 2", proc.stderr


WARMED = """
import json, sys
import dataaudit.pipelines.audit                  # what a lanes worker imports to unpickle the audit's stage
from dataaudit.audit.warm import warm_up
from dataaudit.audit.shard import audit_shard
from dataaudit.config import load_config
warm_up()
before = set(sys.modules)
audit_shard({shard!r}, load_config(None))
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def test_an_early_workers_warm_up_leaves_its_first_text_shard_nothing_to_import(tmp_path):
    """`early_lanes` workers run `warm_up` while the command starts: the imports their first shard would make.
    The shard has what sends texts to each lazy path: Parquet row groups, emails and a card number (pii), an AWS
    key and a password (secrets), repeated lines (repetition's kernels)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    texts = ["Write to jane.doe@gmail.com or call +44 20 7946 0958.", "card 4111 1111 1111 1111 was charged",
             "aws_access_key_id = AKIAIOSFODNN7EXAMPLE", 'password = "hunter2hunter2"',
             "the same line\nthe same line\nthe same line\nthe same line", "A plain sentence."] * 500
    shard = tmp_path / "text.parquet"
    pq.write_table(pa.table({"text": texts}), shard, row_group_size=1000)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", WARMED.format(shard=str(shard))], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=240)
    assert proc.returncode == 0, proc.stderr
    new = json.loads(proc.stdout.strip().splitlines()[-1])
    # What warm_up is for. (numba's JIT kernels, the suite's default, import numba's own registries on a first
    # call: the compiled kernels of `dataaudit build-kernels` import nothing, as tested by hand.)
    lazy = ("dataaudit", "pyarrow", "pandas", "detect_secrets", "requests", "_dataaudit_kernels")
    assert [m for m in new if m.startswith(lazy)] == [], new
