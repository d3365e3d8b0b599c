"""Small inputs run the numpy twins without importing numba (`numba_kernels(work=...)`); a large input after them
still gets numba; DATAAUDIT_NUMBA_MIN_WORK moves the threshold, and a bad value is a one-line usage error."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from dataaudit.textops import hashing
from tests.paths import REPO

HAVE_NUMBA = importlib.util.find_spec("numba") is not None

CHILD = """
import json, sys
from dataaudit.cli import main
codes = []
for argv in {argvs!r}:
    try:
        main(argv)
    except SystemExit as exc:
        codes.append(exc.code)
after_small = "numba" in sys.modules
import pyarrow as pa
from dataaudit.textops import word_tokens
words = len(word_tokens(pa.array(["word " * 300_000])).hash)          # 1.5 MB: over the 1 MiB default
print(json.dumps({{"codes": codes, "after_small": after_small, "after_big": "numba" in sys.modules, "words": words}}))
"""


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DATAAUDIT_NUMBA_MIN_WORK", "DATAAUDIT_NO_NUMBA")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    return {**env, **extra}


def test_small_dedup_and_contamination_import_no_numba_a_big_input_does(tmp_path):
    one = tmp_path / "one.jsonl"
    one.write_text(json.dumps({"text": "A short and perfectly ordinary sentence."}) + "\n", encoding="utf-8")
    bench = tmp_path / "bench.jsonl"
    bench.write_text(json.dumps({"question": "What is two plus two?"}) + "\n", encoding="utf-8")
    argvs = [["dedup", str(one), "--out", str(tmp_path / "dedup")],
             ["contamination", "--train", str(one), "--benchmark", f"b={bench}:question",
              "--out", str(tmp_path / "contamination")]]
    proc = subprocess.run([sys.executable, "-c", CHILD.format(argvs=argvs)], capture_output=True, text=True,
                          env=_env(), cwd=REPO, timeout=240)
    assert proc.stdout.strip(), proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result == {"codes": [0, 0], "after_small": False, "after_big": HAVE_NUMBA, "words": 300_000}, proc.stderr


def test_threshold_rule(monkeypatch):
    module = "dataaudit.textops._kernels"
    monkeypatch.delenv("DATAAUDIT_NO_NUMBA", raising=False)
    monkeypatch.delenv("DATAAUDIT_NUMBA_MIN_WORK", raising=False)
    assert hashing.numba_min_work() == hashing.NUMBA_MIN_WORK == 1 << 20
    monkeypatch.setenv("DATAAUDIT_NUMBA_MIN_WORK", "4096")
    assert hashing.numba_min_work() == 4096
    monkeypatch.setattr(hashing, "_LOADED", {})                  # not loaded: the size decides
    monkeypatch.delitem(sys.modules, module, raising=False)
    assert hashing.numba_kernels(module, work=4095) is None
    loaded = hashing.numba_kernels(module, work=4096)
    assert (loaded is not None) == HAVE_NUMBA
    if HAVE_NUMBA:                                    # once loaded, the kernels serve any size
        assert hashing.numba_kernels(module, work=1) is loaded
    monkeypatch.setenv("DATAAUDIT_NO_NUMBA", "1")
    assert hashing.numba_kernels(module, work=1 << 40) is None


@pytest.mark.parametrize("value", ["abc", "-1", "1.5"])
def test_bad_min_work_names_the_variable(monkeypatch, value):
    monkeypatch.setenv("DATAAUDIT_NUMBA_MIN_WORK", value)
    with pytest.raises(ValueError) as exc:
        hashing.numba_min_work()
    assert str(exc.value) == f"DATAAUDIT_NUMBA_MIN_WORK must be a whole number >= 0 (bytes), got '{value}'"


def test_bad_min_work_exits_2_before_any_work(tmp_path):
    one = tmp_path / "one.jsonl"
    one.write_text(json.dumps({"text": "hello"}) + "\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "dataaudit.cli", "dedup", str(one), "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, env=_env(DATAAUDIT_NUMBA_MIN_WORK="lots"), cwd=REPO,
                          timeout=240)
    assert proc.returncode == 2
    assert proc.stderr == "Error: DATAAUDIT_NUMBA_MIN_WORK must be a whole number >= 0 (bytes), got 'lots'\n"
    assert not (tmp_path / "o").exists()
