"""The text kernels compiled ahead of time (dataaudit/textops/compiled.py): one build per session into a temporary
cache folder (~30 s), then the same audit as numba's JIT kernels give, without importing numba; arguments other
than the exported types go to numba's kernel; a build for other sources is never loaded."""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.checks.repetition_cases import DEGENERATE, STRUCTURED
from tests.paths import REPO

pytest.importorskip("numba")
from dataaudit.textops import compiled  # noqa: E402

STALE = "0123"                # builds for other sources ("000...", "111...", ...), there before the session's build
REPETITION = "dataaudit.textops._repetition_kernels"


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("cache")
    # builds for other keys (4 days old: the oldest goes), a killed build and one going on
    for name, age in ((s * 24, (4 - i) * 86400) for i, s in enumerate(STALE)):
        (folder / "kernels" / name).mkdir(parents=True)
        os.utime(folder / "kernels" / name, (time.time() - age, time.time() - age))
    for name, age in ((".build-killed", 2 * 86400), (".build-running", 60)):
        (folder / "kernels" / name).mkdir()
        os.utime(folder / "kernels" / name, (time.time() - age, time.time() - age))
    proc = subprocess.run([sys.executable, "-m", "dataaudit.cli", "build-kernels"], capture_output=True, text=True,
                          env=_env(folder), cwd=REPO, timeout=600)
    if proc.returncode == 2 and "compil" in proc.stderr:
        pytest.skip(f"no ahead-of-time build on this machine: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("compiled the text kernels into "), proc.stdout
    return folder


@pytest.fixture
def aot(cache_dir, monkeypatch):
    """compiled_kernels in this process, from the session's build."""
    monkeypatch.setenv("DATAAUDIT_CACHE_DIR", str(cache_dir))
    monkeypatch.delenv(compiled.NO_AOT_ENV, raising=False)
    monkeypatch.setattr(compiled, "_LOADED", {})
    return compiled


def _env(cache: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in (compiled.NO_AOT_ENV, "DATAAUDIT_NO_NUMBA")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    return {**env, "DATAAUDIT_CACHE_DIR": str(cache), **extra}


def _texts() -> list[str]:
    """Every kind of line the text checks tell apart, and a defect for each check."""
    prose = ("The committee met on Tuesday to review the budget. Several members asked why the figures differ "
             "from last year's report, and the chair promised an answer by Friday.")
    chinese = "训练数据的质量决定了模型的上限。我们需要检查每一条样本！这是否合理？"
    texts = list(STRUCTURED.values()) + list(DEGENERATE.values()) + [
        prose, chinese * 3, prose + "\n" + chinese, "", "   ", "tab\there\x07bell\x00nul",
        "CafÃ© au lait, naÃ¯ve rÃ©sumÃ© \ufffd", "<|im_start|>user\nhi<|im_end|> [INST] x [/INST]",
        "x" * 3000, "aGVsbG8gd29ybGQ=" * 200, "- item one\n- item two\n- item one\n1) first\n(iv) roman",
        "ROMEO:\nBut soft!\nJULIET:\nAy me.\n# Heading\nkey: value\n| a | b |\n{\"k\": 1}", "\u00a0\u3000 wide space",
        "$$$ ^^^ ~~~ +++ === <<< >>> " * 20 + "\U0001F600" * 40,
    ]
    return texts * 20


@pytest.fixture(scope="session")
def shard(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("text") / "text.parquet"
    pq.write_table(pa.table({"text": _texts()}), path, row_group_size=300)
    return path


def _audit(shard: Path, out: Path, cache: Path, extra: tuple = (), **env) -> dict:
    """Audit `shard` in a child process (`extra`: more arguments); what it imported of numba, its report (without
    `run`) and flags."""
    child = ("import sys\nfrom dataaudit.cli import main\n"
             "try:\n    main(sys.argv[1:])\nexcept SystemExit as exc:\n    code = exc.code\n"
             "print('NUMBA', 'numba' in sys.modules, code)\n")
    proc = subprocess.run([sys.executable, "-c", child, "audit", str(shard), "--out", str(out), "--engine", "local",
                           *extra],
                          capture_output=True, text=True, env=_env(cache, **env), cwd=REPO, timeout=600)
    last = proc.stdout.strip().splitlines()[-1].split()
    assert last[0] == "NUMBA" and last[2] in ("0", "1"), proc.stdout + proc.stderr
    report = json.loads((out / "report.json").read_text())
    report.pop("run")
    return {"numba": last[1] == "True", "report": report, "flags": pq.read_table(out / "flags.parquet")}


def test_an_audit_with_the_compiled_kernels_imports_no_numba_and_equals_numbas(cache_dir, shard, tmp_path):
    fast = _audit(shard, tmp_path / "compiled", cache_dir)
    jit = _audit(shard, tmp_path / "jit", cache_dir, DATAAUDIT_NO_AOT="1")
    assert fast["numba"] is False
    assert jit["numba"] is True
    assert fast["report"] == jit["report"]
    assert fast["flags"].equals(jit["flags"])
    checks = fast["report"]["checks"]
    for name in ("control_chars", "mojibake", "long_unbroken_run", "repetition", "non_text_ratio", "special_tokens",
                 "empty_text"):
        assert checks[name]["flagged"] > 0, name                       # every kernel path met a defect


def test_the_quality_rules_with_the_compiled_kernels_import_no_numba_and_equal_numbas(cache_dir, shard, tmp_path):
    pretrain = ("--profile", "pretrain")
    fast = _audit(shard, tmp_path / "compiled", cache_dir, pretrain)
    jit = _audit(shard, tmp_path / "jit", cache_dir, pretrain, DATAAUDIT_NO_AOT="1")
    assert fast["numba"] is False
    assert fast["report"] == jit["report"]
    assert fast["flags"].equals(jit["flags"])
    checks = fast["report"]["checks"]
    for name in ("gopher_quality", "c4_quality", "fineweb_quality"):
        assert checks[name]["flagged"] > 0, name


def test_each_kernel_runs_compiled_only_for_the_exported_argument_types(aot, monkeypatch):
    k = aot.compiled_kernels("dataaudit.textops._codepoint_kernels")
    assert k is not None
    import dataaudit.textops._codepoint_kernels as jit

    data = np.frombuffer("abc Ã© x\ufffd y".encode(), np.uint8).copy()
    off = np.array([0, 4, 9, data.size], np.int64)
    expected = np.zeros(3, bool)
    jit.holds_c3_or_fffd(off, data, expected)
    assert expected.tolist() == [False, True, True]
    calls = []
    real = jit.holds_c3_or_fffd
    monkeypatch.setattr(jit, "holds_c3_or_fffd", lambda *a: calls.append(1) or real(*a))
    for fits, args in ((True, (off, data)),
                       (False, (off.astype(np.int32), data)),                          # another dtype
                       (False, (np.repeat(off, 2)[::2], data)),                        # not contiguous
                       (False, (off, np.frombuffer(data.tobytes(), np.uint8)))):      # read-only
        out = np.zeros(3, bool)
        k.holds_c3_or_fffd(*args, out)
        assert out.tolist() == expected.tolist()
        assert len(calls) == (0 if fits else 1)
        calls.clear()
    int64, float64, uint64 = compiled._parse("i8 f8 u8")
    assert compiled._fits(int64, 3) and compiled._fits(int64, np.int64(3)) and not compiled._fits(int64, True)
    assert compiled._fits(float64, 0.5) and not compiled._fits(float64, 1)
    assert compiled._fits(uint64, np.uint64(3)) and not compiled._fits(uint64, 3) \
        and not compiled._fits(uint64, np.int64(3))


def test_a_build_for_other_sources_is_never_loaded_and_a_new_build_keeps_the_newest_others(aot, cache_dir, monkeypatch):
    kept = sorted(p.name for p in (cache_dir / "kernels").iterdir())
    assert kept == sorted([".build-running", aot.key(), "1" * 24, "2" * 24, "3" * 24])    # the newest 3 others
    assert aot.compiled_kernels("dataaudit.contamination._kernels") is None          # not exported
    monkeypatch.setattr(compiled, "key", lambda: "3" * 24)
    assert aot.compiled_kernels(REPETITION) is None                                   # no build for these sources


def test_dataaudit_no_aot_switches_them_off(aot, monkeypatch):
    monkeypatch.setenv(compiled.NO_AOT_ENV, "1")
    assert aot.compiled_kernels(REPETITION) is None
    monkeypatch.delenv(compiled.NO_AOT_ENV)
    assert aot.compiled_kernels(REPETITION) is not None


def test_the_key_covers_every_module_the_kernels_import():
    """The key hashes textops and the exported modules elsewhere: what those import of dataaudit is in textops."""
    textops = [m for m in compiled.EXPORTS if m.startswith("dataaudit.textops.")]
    code = ("import json, sys\nimport " + ", ".join(textops) + "\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('dataaudit.'))))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=240,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    imported = json.loads(proc.stdout)
    assert set(textops) <= set(imported)
    outside = [m for m in imported if m.split(".")[1] != "textops" and m != "dataaudit.pipelines"]   # (the root's)
    assert outside == []
    for module in sorted(set(compiled.EXPORTS) - set(textops)):      # dedup's: their own imports, read from source
        tree = ast.parse((REPO / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8"))
        names = [a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names]
        names += [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
        assert [n for n in names if n.startswith("dataaudit.") and not n.startswith("dataaudit.textops.")] == [], module
        assert not any(node.level for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)), module


def test_every_exported_kernel_is_nogil():
    """Their compiled twins run without the GIL (dedup signs batches on a thread per core)."""
    import importlib

    for module, kernels in compiled.EXPORTS.items():
        mod = importlib.import_module(module)
        for name in kernels:
            assert getattr(mod, name).targetoptions.get("nogil") is True, f"{module}.{name}"


def test_a_dedup_with_the_compiled_kernels_imports_no_numba_and_equals_numbas(cache_dir, tmp_path):
    rows = ["the quick brown fox jumps over the lazy dog near the river bank today",
            "The  quick brown fox jumps over the lazy dog near the river bank today",
            "the quick brown fox jumps over the lazy dog near the river bank tonight",
            "something else entirely, with  more words than five in it", "", "short"] * 30
    shard = tmp_path / "train.parquet"
    pq.write_table(pa.table({"text": rows}), shard)
    child = ("import sys\nfrom dataaudit.cli import main\n"
             "try:\n    main(sys.argv[1:])\nexcept SystemExit as exc:\n    code = exc.code\n"
             "print('NUMBA', 'numba' in sys.modules, code)\n")
    found = {}
    for name, extra in (("compiled", {}), ("jit", {compiled.NO_AOT_ENV: "1", "DATAAUDIT_NUMBA_MIN_WORK": "0"})):
        out = tmp_path / name
        proc = subprocess.run([sys.executable, "-c", child, "dedup", str(shard), "--out", str(out), "--engine",
                               "local", "--verify"], capture_output=True, text=True, env=_env(cache_dir, **extra),
                              cwd=REPO, timeout=600)
        assert proc.stdout.strip().splitlines()[-1] == f"NUMBA {name == 'jit'} 0", proc.stdout + proc.stderr
        report = json.loads((out / "dedup.json").read_text())
        report.pop("run")
        found[name] = (report, pq.read_table(out / "clusters.parquet"), pq.read_table(out / "keep.parquet"))
    assert found["compiled"][0] == found["jit"][0]
    assert found["compiled"][1].equals(found["jit"][1]) and found["compiled"][2].equals(found["jit"][2])
    # exact groups: rows 0 and 1 (equal once normalized), 2, 3 and "short", 30 copies each; rows 0 and 2 are near
    # (word 5-gram Jaccard 9/11, verified): one cluster of 90, two of 30
    assert (found["compiled"][0]["exact"]["duplicates"], found["compiled"][0]["near"]["duplicates"]) == (146, 1)
    assert found["compiled"][0]["duplicates"] == 89 + 29 + 29


def test_build_kernels_says_when_it_is_up_to_date_and_fails_in_one_line(cache_dir, tmp_path):
    again = subprocess.run([sys.executable, "-m", "dataaudit.cli", "build-kernels"], capture_output=True, text=True,
                           env=_env(cache_dir), cwd=REPO, timeout=240)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == f"the text kernels are compiled already: {cache_dir / 'kernels' / compiled.key()}"
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    proc = subprocess.run([sys.executable, "-m", "dataaudit.cli", "build-kernels"], capture_output=True, text=True,
                          env=_env(blocked), cwd=REPO, timeout=240)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith(f"Error: kernels not compiled (cannot write {blocked / 'kernels'}: ")
    assert proc.stderr.strip().endswith("the commands use numba's JIT kernels")
    assert len(proc.stderr.strip().splitlines()) == 1


def test_the_language_pre_pass_compiled_equals_numbas_and_its_twin(aot, monkeypatch):
    from dataaudit.checks import language_id
    import dataaudit.textops._codepoint_kernels as jit
    from tests.checks.test_language_prepass import CASES, _random_texts

    arr = pa.array(list(CASES) + _random_texts(300, 5))
    rows = np.arange(0, len(arr), 2)
    calls = []
    for name in ("prose_counts", "prose_text"):
        monkeypatch.setattr(jit, name, lambda *a, real=getattr(jit, name): calls.append(1) or real(*a))
    fast = language_id.counts(arr)
    text = language_id.model_input(arr, rows, 9)
    assert calls == []                                   # the compiled kernels ran, not numba's
    monkeypatch.setenv(compiled.NO_AOT_ENV, "1")
    np.testing.assert_array_equal(language_id.counts(arr), fast)
    assert language_id.model_input(arr, rows, 9) == text
    assert calls == [1, 1]
    np.testing.assert_array_equal(language_id.regex_counts(arr), fast)
    assert [(t or "").encode() for t in language_id.regex_model_input(arr, rows, 9)] == text


def test_threads_that_load_the_build_at_once_all_get_it(aot, monkeypatch):
    """dedup's first kernel calls come from a thread per core at once: none may see the build half loaded (it then
    took numba's JIT kernels, importing numba, for the rest of the run)."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    real = compiled._extensions

    def slow():   # the real loader marks the build as loading before it loads it
        if "" not in compiled._LOADED:
            compiled._LOADED[""] = None
            time.sleep(0.2)
            del compiled._LOADED[""]
        return real()

    monkeypatch.setattr(compiled, "_extensions", slow)
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda _: compiled.compiled_kernels("dataaudit.dedup._kernels"), range(8)))
    assert all(g is not None for g in got) and len({id(g) for g in got}) == 1


def test_a_copy_of_the_compiled_kernels_is_the_same_kernels_and_never_recurses():
    """Special names (what copy and pickle look up) and "_module" on an instance made without __init__ are no
    kernels: AttributeError, never a lookup of self._module that recursed without end."""
    import copy

    module = "dataaudit.dedup._kernels"
    kernels = compiled.CompiledKernels(module, {name: (lambda *a, n=name: n) for name in compiled.EXPORTS[module]})
    twin = copy.copy(kernels)
    assert twin.band_kernel is kernels.band_kernel and twin._module == module
    bare = compiled.CompiledKernels.__new__(compiled.CompiledKernels)
    with pytest.raises(AttributeError, match="_module"):
        bare._module
    with pytest.raises(AttributeError, match="__setstate__"):
        bare.__setstate__
