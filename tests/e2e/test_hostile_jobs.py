"""Issue 38, the jobs half: hostile input may cost a record or a shard, never the job. Each test names the defect it
pins (F17-F25, SIGINT, the auto engine) and asserts exact outcomes: statuses, errors, counts, exit codes.

A failure is injected in-process by monkeypatching; in the command's own processes (worker processes included) by
a `sitecustomize` put first on PYTHONPATH, which every Python process of the run imports at start.
"""
from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner

from dataaudit.cli import main
from tests.hostile_run import run_cli
from tests.paths import REPO

# Imported by every Python process started with it first on PYTHONPATH (the command and its workers): the shard
# whose name holds "boom" breaks as HOSTILE_BOOM says, after its first batch ("read": a reader bug) or in the
# audit's checks ("check").
HOOK = '''
import os
_MODE = os.environ.get("HOSTILE_BOOM")
if _MODE:
    import dataaudit.stage as _stage
    _iter = _stage.iter_shard

    def _boom_iter(path, *a, **kw):
        for batch in _iter(path, *a, **kw):
            yield batch
            if "boom" in str(path) and _MODE == "read":
                raise RuntimeError("injected reader bug")
    _stage.iter_shard = _boom_iter
    if _MODE == "check":
        import dataaudit.audit.shard as _shard
        _batch = _shard.audit_batch

        def _boom_batch(batch, plan, cfg, path, *a, **kw):
            if "boom" in str(path):
                raise ValueError("injected check failure")
            return _batch(batch, plan, cfg, path, *a, **kw)
        _shard.audit_batch = _boom_batch
# Ctrl-C while generated source runs (dataclasses and namedtuple exec theirs as modules are imported).
if os.environ.get("HOSTILE_INTERRUPT_IN_EXEC"):
    import sys
    import dataaudit.cli.audit  # noqa: F401  (dataaudit.cli.audit, the attribute, is the command)

    def _interrupted(*a, **kw):
        exec("raise KeyboardInterrupt", {})
    sys.modules["dataaudit.cli.audit"].expand_shards = _interrupted
# A worker process that starts a shard leaves its pid in HOSTILE_HOLD and stays on the shard: a test then knows
# which process to kill while it is on one.
_HOLD = os.environ.get("HOSTILE_HOLD")
if _HOLD:
    import multiprocessing
    import time
    import dataaudit.stage as _stage
    _call = _stage.ShardStage.__call__

    def _held(self, path, *a, **kw):
        if multiprocessing.parent_process() is not None:
            open(os.path.join(_HOLD, str(os.getpid())), "w").close()
            time.sleep(120)
        return _call(self, path, *a, **kw)
    _stage.ShardStage.__call__ = _held
'''


def _jsonl(path: Path, n: int, text=lambda i: f"plain words of record {i} in a shard", **extra) -> str:
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"{path.stem}-{i}", "text": text(i), **extra}) + "\n")
    return str(path)


@pytest.fixture
def three(tmp_path) -> list[str]:
    """a (40 records), boom (30), b (20)."""
    d = tmp_path / "data"
    d.mkdir()
    return [_jsonl(d / "a.jsonl", 40), _jsonl(d / "boom.jsonl", 30), _jsonl(d / "b.jsonl", 20)]


def _statuses(shards: list[dict], count: str) -> list[tuple]:
    return [(Path(s["path"]).name, s["status"], s[count], s.get("error")) for s in shards]


def _invoke(*args) -> tuple[int, str]:
    res = CliRunner().invoke(main, [str(a) for a in args])
    assert "Traceback" not in res.output
    return res.exit_code, res.output


@contextmanager
def _breaking_reader(monkeypatch, error: BaseException):
    """In this process: the shard named *boom* raises `error` after its first batch, in every job's shard loop."""
    import dataaudit.stage as stage

    real = stage.iter_shard

    def broken(path, *a, **kw):
        for batch in real(path, *a, **kw):
            yield batch
            if "boom" in str(path):
                raise error
    monkeypatch.setattr(stage, "iter_shard", broken)
    yield


# ------------------------------------------------------------------------------------------------------------ F20

@pytest.mark.parametrize("mode, workers, error", [("read", 2, "RuntimeError: injected reader bug"),
                                                  ("check", 1, "ValueError: injected check failure")])
def test_f20_a_broken_shard_is_unreadable_and_the_job_goes_on(three, tmp_path, mode, workers, error):
    (tmp_path / "hook").mkdir()
    (tmp_path / "hook" / "sitecustomize.py").write_text(HOOK)
    out = tmp_path / "out"
    r = run_cli("audit", *three, "--out", out, "--engine", "local", "--workers", workers,
                env={"HOSTILE_BOOM": mode, "PYTHONPATH": f"{tmp_path / 'hook'}{os.pathsep}{REPO}"})
    r.assert_bounded()
    assert r.rc == 1, r.stderr
    report = r.report(out)
    # the reader bug breaks after the first batch: its 30 records stay counted; a check failing on every record is
    # taken for the shard's after 16 records that failed alone (each counted, an unreadable_record)
    assert _statuses(report["shards"], "samples") == [
        ("a.jsonl", "ok", 40, None), ("boom.jsonl", "unreadable", 30 if mode == "read" else 16, error),
        ("b.jsonl", "ok", 20, None)]
    assert report["totals"]["unreadable_shards"] == 1
    assert report["checks"]["unreadable_record"]["flagged"] == (0 if mode == "read" else 16)


def test_f20_a_check_that_fails_on_one_record_costs_that_record_only(three, tmp_path, monkeypatch):
    """The batch is checked again in halves, down to the records that fail alone: each is an unreadable_record
    naming the error, every other record is checked as usual (its flags and the stateful checks' sections too)."""
    import pyarrow.parquet as pq

    import dataaudit.audit.shard as shard
    from dataaudit.config import load_config
    from dataaudit.pipelines.audit import run_audit
    from dataaudit.pipelines.engine import EngineOptions

    real = shard.audit_batch

    def fails_on_boom(batch, *a, **kw):
        if any("BOOM" in (t or "") for t in batch.column("text").to_pylist()):
            raise KeyError("a check broke")
        return real(batch, *a, **kw)
    monkeypatch.setattr(shard, "audit_batch", fails_on_boom)
    texts = {3: "BOOM here", 17: "", 25: "BOOM again"}   # 17: an empty text, flagged as usual
    path = _jsonl(tmp_path / "data" / "c.jsonl", 30, text=lambda i: texts.get(i, f"plain words of record {i}"))
    report = run_audit([*three[:1], path], load_config(None), tmp_path / "out", options=EngineOptions("local"))
    c = report["shards"][1]
    assert (c["status"], c["samples"], c["checks"]) == ("ok", 30, {"empty_text": 1, "unreadable_record": 2})
    flags = [(r["row"], r["check"], r["detail"]) for r in pq.read_table(tmp_path / "out" / "flags.parquet")
             .to_pylist() if r["shard"] == path]
    assert sorted(flags) == [(3, "unreadable_record", "a check failed on this record: KeyError: 'a check broke'"),
                             (17, "empty_text", "empty string"),
                             (25, "unreadable_record", "a check failed on this record: KeyError: 'a check broke'")]
    assert report["duplicate_id"]["ids"] == 40 + 28     # the 28 records checked, each once (none twice)


@pytest.mark.parametrize("error, text", [(MemoryError(), "MemoryError"),
                                         (KeyError("tokens"), "KeyError: 'tokens'")])
def test_f20_every_shard_job_isolates_a_broken_shard(three, tmp_path, monkeypatch, error, text):
    with _breaking_reader(monkeypatch, error):
        code, output = _invoke("dedup", *three, "--out", tmp_path / "dedup", "--engine", "local")
        assert code == 1, output
        report = json.loads((tmp_path / "dedup" / "dedup.json").read_text())
        assert _statuses(report["shards"], "samples") == [
            ("a.jsonl", "ok", 40, None), ("boom.jsonl", "unreadable", 30, text), ("b.jsonl", "ok", 20, None)]

        bench = _jsonl(tmp_path / "bench.jsonl", 3, text=lambda i: f"a benchmark question number {i} " * 3)
        code, output = _invoke("contamination", "--train", *three, "--benchmark", f"quiz={bench}:text",
                               "--out", tmp_path / "con", "--engine", "local")
        assert code == 1, output     # nothing contaminated, but a shard could not be read to the end
        report = json.loads((tmp_path / "con" / "contamination.json").read_text())
        assert _statuses(report["train"]["shards"], "records") == [
            ("a.jsonl", "ok", 40, None), ("boom.jsonl", "unreadable", 30, text), ("b.jsonl", "ok", 20, None)]


def test_f20_dedup_images_isolates_a_broken_shard(tmp_path, monkeypatch):
    from tests.images.image_shards import picture, write_parquet

    shards = [write_parquet(tmp_path / f"{n}.parquet", {"image": [{"bytes": picture(seed=i), "path": f"{i}.jpg"}
                                                                  for i in range(3)], "text": ["x"] * 3})
              for n in ("a", "boom")]
    with _breaking_reader(monkeypatch, RuntimeError("injected")):
        code, output = _invoke("dedup-images", *shards, "--out", tmp_path / "out", "--engine", "local")
    assert code == 1, output
    report = json.loads((tmp_path / "out" / "dedup.json").read_text())
    assert _statuses(report["shards"], "samples") == [("a.parquet", "ok", 3, None),
                                                      ("boom.parquet", "unreadable", 3, "RuntimeError: injected")]


def test_f20_clean_leaves_out_a_shard_it_cannot_write_and_cleans_the_others(three, tmp_path, monkeypatch):
    assert _invoke("audit", *three, "--out", tmp_path / "audit", "--engine", "local")[0] == 0
    from dataaudit.formats import BY_NAME

    jsonl = BY_NAME["jsonl"]
    real = jsonl.write

    def write(src, dst, *a, **kw):
        if "boom" in str(src):
            raise ValueError("injected writer failure")
        return real(src, dst, *a, **kw)
    monkeypatch.setattr(jsonl, "write", write)
    code, output = _invoke("clean", *three, "--audit", tmp_path / "audit", "--out", tmp_path / "clean",
                           "--engine", "local")
    assert code == 1, output
    report = json.loads((tmp_path / "clean" / ".dataaudit/clean.json").read_text())
    assert report["failed"] == [{"path": three[1], "error": "ValueError: injected writer failure"}]
    assert [(s["output"], s["rows"], s["kept"]) for s in report["shards"]] == [("a.jsonl", 40, 40), ("b.jsonl", 20, 20)]
    assert report["totals"]["failed_shards"] == 1 and report["totals"]["rows"] == 60
    assert sorted(p.name for p in (tmp_path / "clean").glob("*.jsonl")) == ["a.jsonl", "b.jsonl"]


def test_f20_tokenizer_drift_keeps_the_texts_of_the_other_sample_shards(three, tmp_path, monkeypatch, shared_data):
    pytest.importorskip("tokenizers")
    import dataaudit.tokenization.sample as sample

    real = sample.iter_shard

    def broken(path, *a, **kw):
        if "boom" in str(path):
            raise RuntimeError("injected reader bug")
        return real(path, *a, **kw)
    monkeypatch.setattr(sample, "iter_shard", broken)
    tok = shared_data / "tokenizers" / "gpt-neo-test-tokenizer.json"
    code, output = _invoke("tokenizer-drift", tok, tok, "--out", tmp_path / "t", "--sample", *three)
    assert code == 1, output
    result = json.loads((tmp_path / "t" / "tokenizer_drift.json").read_text())
    assert result["unreadable_samples"] == [{"path": three[1], "error": "RuntimeError: injected reader bug"}]
    assert result["behaviour"]["by_source"]["sample"]["texts"] == 60


def test_f20_ray_tasks_isolate_a_broken_shard(three, tmp_path, ray_session):
    from dataaudit.audit.shard import AuditShard
    from dataaudit.config import load_config
    from dataaudit.pipelines.audit import run_audit
    from dataaudit.pipelines.engine import EngineOptions

    class Boom(AuditShard):      # defined here: Ray ships it by value
        def add(self, work, batch):
            if "boom" in work.result.path:
                raise ZeroDivisionError("injected on a Ray worker")
            super().add(work, batch)

    def stage(path, config, on_batch=None, handler=None):
        return Boom(config)(path, on_batch=on_batch, handler=handler)

    report = run_audit(three, load_config(None), tmp_path / "out", EngineOptions("ray", workers=2), stage=stage)
    assert report["run"]["engine"] == "ray"
    assert _statuses(report["shards"], "samples") == [
        ("a.jsonl", "ok", 40, None), ("boom.jsonl", "unreadable", 0, "ZeroDivisionError: injected on a Ray worker"),
        ("b.jsonl", "ok", 20, None)]


# ------------------------------------------------------------------------------------------------------- F24, F25

def test_f24_a_shard_changed_since_its_part_is_read_again(three, tmp_path):
    out = tmp_path / "out"
    assert _invoke("audit", *three, "--out", out, "--engine", "local")[0] == 0
    assert _invoke("dedup", *three, "--out", tmp_path / "dedup", "--engine", "local")[0] == 0
    b = Path(three[2])
    st = b.stat()
    lines = b.read_text().splitlines()
    lines[3] = lines[3].replace('"plain words of record 3 in a shard"', '"                                  "')
    b.write_text("\n".join(lines) + "\n")
    os.utime(b, ns=(st.st_atime_ns, st.st_mtime_ns))    # the same size and time: only the bytes tell
    assert b.stat().st_size == st.st_size
    code, output = _invoke("audit", *three, "--out", out, "--engine", "local")
    report = json.loads((out / "report.json").read_text())
    assert report["run"]["resumed_shards"] == 2
    assert report["checks"]["empty_text"]["flagged"] == 1 and code == 0   # empty_text is a warning
    entry = report["shards"][2]
    assert entry["fingerprint"]["xxh3_128"] != "" and entry["samples"] == 20
    from dataaudit.io import fingerprint

    assert entry["fingerprint"] == fingerprint(b)
    assert _invoke("dedup", *three, "--out", tmp_path / "dedup", "--engine", "local")[0] == 0
    dedup = json.loads((tmp_path / "dedup" / "dedup.json").read_text())
    assert dedup["run"]["resumed_shards"] == 2 and dedup["shards"][2]["fingerprint"] == fingerprint(b)
    assert dedup["empty_documents"] == 1      # the new blank record, read now (the part said 0)


def test_f25_clean_refuses_dedup_findings_of_other_bytes(three, tmp_path):
    a, _, b = three
    assert _invoke("dedup", a, b, "--out", tmp_path / "dedup", "--engine", "local")[0] == 0
    Path(b).write_text("".join(json.dumps({"id": f"n{i}", "text": f"rewritten record {i}"}) + "\n"
                               for i in range(20)))          # the same record count, other records
    assert _invoke("audit", a, b, "--out", tmp_path / "audit", "--engine", "local")[0] == 0
    code, output = _invoke("clean", a, b, "--audit", tmp_path / "audit", "--dedup", tmp_path / "dedup",
                           "--out", tmp_path / "clean", "--engine", "local")
    assert code == 2
    assert output.strip() == (f"Error: refused: {b}: the dedup ({tmp_path / 'dedup'}) job read other bytes than the "
                              "audit (the shard changed between them): run it again on this file")
    assert not (tmp_path / "clean").exists()


# ------------------------------------------------------------------------------------------------------- F17, F18

def test_f17_f18_referenced_files_go_to_the_named_path_and_never_over_a_shard(tmp_path):
    from tests.images.image_shards import picture

    data = tmp_path / "data"
    (data / "real").mkdir(parents=True)
    (data / "imgs").symlink_to("real")                      # F18: a reference through a symlinked folder
    (data / "real" / "x.png").write_bytes(picture(64, 64, seed=1, fmt="PNG"))
    rows = {"a.jsonl": [("a record with a picture", "imgs/x.png"), ("points at the other shard", "b.jsonl")],
            "b.jsonl": [("kept record of b", "imgs/x.png"), ("", "imgs/x.png")]}
    for name, records in rows.items():
        (data / name).write_text("".join(json.dumps({"text": t, "image": i}) + "\n" for t, i in records))
    assert _invoke("audit", data, "--out", tmp_path / "audit", "--engine", "local")[0] == 1
    out = tmp_path / "clean"
    code, output = _invoke("clean", data, "--audit", tmp_path / "audit", "--out", out, "--severity", "none",
                           "--check", "empty_caption", "--engine", "local")
    assert code == 0, output
    report = json.loads((out / ".dataaudit/clean.json").read_text())
    a, b = report["shards"]
    assert (a["referenced_files"], a["referenced_missing"], a["referenced_refused"]) == (1, 0, 1)   # F17: refused
    assert (b["kept"], b["dropped"]) == (1, 1)
    # b's output is its cleaned copy, not the original copied over it: the dropped record stays dropped
    assert (out / "b.jsonl").read_text() == json.dumps({"text": "kept record of b", "image": "imgs/x.png"}) + "\n"
    from dataaudit.io import fingerprint

    assert fingerprint(out / "b.jsonl")["xxh3_128"] == b["xxh3_128"]
    assert (out / "imgs" / "x.png").is_file() and not (out / "real").exists()     # F18: the path the record names
    code, output = _invoke("audit", out / "a.jsonl", out / "b.jsonl", "--out", tmp_path / "again",
                           "--engine", "local")
    again = json.loads((tmp_path / "again" / "report.json").read_text())
    assert again["checks"]["image_missing_file"]["flagged"] == 0
    assert again["checks"]["image_path_outside"]["flagged"] == 0


# ------------------------------------------------------------------------------------------- F21, F22, SIGINT, F19

def test_f21_a_full_disk_is_one_line_and_exit_2(three, tmp_path, monkeypatch):
    import dataaudit.atomic as atomic

    @contextmanager
    def full(dst):
        raise OSError(errno.ENOSPC, "No space left on device", str(dst))
        yield
    monkeypatch.setattr(atomic, "atomic_path", full)
    code, output = _invoke("audit", three[0], "--out", tmp_path / "out", "--engine", "local")
    assert code == 2
    lines = output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: {tmp_path / 'out' / 'parts'}/")
    assert lines[0].endswith(".flags.parquet: No space left on device")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in a read-only folder: chmod does not bite")
def test_f21_a_read_only_out_is_one_line_and_exit_2(three, tmp_path):
    out = tmp_path / "ro"
    out.mkdir()
    out.chmod(0o555)
    try:
        r = run_cli("audit", three[0], "--out", out, "--engine", "local")
    finally:
        out.chmod(0o755)
    r.assert_bounded()
    assert r.rc == 2 and r.stderr.strip() == f"Error: {out}: cannot write in the output folder: Permission denied"


def test_f22_a_second_run_into_the_same_out_is_refused(three, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from dataaudit.io import lock_folder; "
                               f"lock_folder({str(out)!r}); print('held', flush=True); time.sleep(60)"],
                              cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        r = run_cli("audit", three[0], "--out", out, "--engine", "local")
        r.assert_bounded()
        assert r.rc == 2
        assert r.stderr.strip().startswith(f"Error: {out}: in use by another dataaudit run (pid {holder.pid}: ")
        assert r.stderr.strip().endswith("): wait for it to end, or choose another --out")
        assert len(r.stderr.strip().splitlines()) == 1 and not (out / "report.json").exists()
    finally:
        holder.kill()
        holder.wait()
    r = run_cli("audit", three[0], "--out", out, "--engine", "local")     # released with its holder
    assert r.rc == 0 and (out / "report.json").is_file() and os.listdir(out) != []


@pytest.fixture(scope="module")
def slow_input(tmp_path_factory) -> list[str]:
    """Eight shards that take a few seconds to audit on two CPUs."""
    d = tmp_path_factory.mktemp("big")
    return [_jsonl(d / f"s{s}.jsonl", 20_000, text=lambda i: f"some words here number {i} " * 4) for s in range(8)]


def _start(args: list, tmp_path: Path, **env: str) -> subprocess.Popen:
    path = str(REPO)
    if env:   # the hook, for the variables it reads
        (tmp_path / "hook").mkdir(exist_ok=True)
        (tmp_path / "hook" / "sitecustomize.py").write_text(HOOK)
        path = f"{tmp_path / 'hook'}{os.pathsep}{REPO}"
    return subprocess.Popen([sys.executable, "-m", "dataaudit.cli", *map(str, args)], cwd=REPO,
                            env={**os.environ, "PYTHONPATH": path, **env}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def _children(pid: int) -> list[int]:
    return [int(p) for p in subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()]


def _wait_for_workers(p: subprocess.Popen, n: int, timeout: float = 30) -> list[int]:
    deadline = time.time() + timeout
    while time.time() < deadline and p.poll() is None:
        kids = _children(p.pid)
        if len(kids) >= n:
            return kids
        time.sleep(0.1)
    raise AssertionError(f"no {n} workers within {timeout} s")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_sigint_is_one_line_and_exit_130_workers_included(slow_input, tmp_path):
    p = _start(["audit", *slow_input, "--out", tmp_path / "out", "--engine", "local", "--workers", "3"], tmp_path)
    kids = _wait_for_workers(p, 2)
    time.sleep(0.5)                            # the workers are importing (the riskiest moment) or auditing
    t0 = time.time()
    os.killpg(p.pid, signal.SIGINT)            # Ctrl-C: the whole foreground group
    _, stderr = p.communicate(timeout=30)
    assert time.time() - t0 < 15
    assert p.returncode == 130 and stderr.strip() == "Error: audit: interrupted", (p.returncode, stderr[-2000:])
    _assert_gone(kids)


def test_a_ctrl_c_while_generated_source_runs_is_exit_130_not_a_death_by_signal(three, tmp_path):
    """`python -m` ends a process by SIGINT after a KeyboardInterrupt left code run from a string, even one caught
    since (CPython 3.11): the command's Ctrl-C at start-up, as modules build their dataclasses, was -2, not 130."""
    p = _start(["audit", *three, "--out", tmp_path / "out"], tmp_path, HOSTILE_INTERRUPT_IN_EXEC="1")
    _, stderr = p.communicate(timeout=60)
    assert p.returncode == 130 and stderr.strip() == "Error: audit: interrupted", (p.returncode, stderr[-2000:])


def _assert_gone(pids: list[int], within: float = 5) -> None:
    deadline = time.time() + within
    while time.time() < deadline and any(_alive(k) for k in pids):
        time.sleep(0.1)
    assert not [k for k in pids if _alive(k)], "orphaned workers"


def test_f19_workers_exit_when_their_parent_is_killed(slow_input, tmp_path):
    p = _start(["audit", *slow_input, "--out", tmp_path / "out", "--engine", "local", "--workers", "3"], tmp_path)
    kids = _wait_for_workers(p, 2)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    _assert_gone(kids)


def test_f19_a_worker_killed_under_a_shard_is_one_line_and_exit_2(slow_input, tmp_path):
    hold = tmp_path / "hold"
    hold.mkdir()
    p = _start(["audit", *slow_input, "--out", tmp_path / "out", "--engine", "local", "--workers", "3"], tmp_path,
               HOSTILE_HOLD=str(hold))
    deadline = time.time() + 60                 # a worker starts its first shard once it has started and warmed up
    while not list(hold.iterdir()) and time.time() < deadline and p.poll() is None:
        time.sleep(0.05)
    on_shard = int(next(hold.iterdir()).name)
    os.kill(on_shard, signal.SIGKILL)           # what the out-of-memory killer does
    _, stderr = p.communicate(timeout=60)
    assert p.returncode == 2, stderr[-2000:]
    assert "Traceback" not in stderr and len(stderr.strip().splitlines()) == 1
    assert stderr.startswith("Error: ") and "a worker process died while on it (killed by the system: out of " \
        "memory?); a rerun with the same --out keeps the finished shards" in stderr


# ------------------------------------------------------------------------------------------------------------ F23

@pytest.mark.parametrize("toml, message", [
    ("[data]\nmax_image_bytes = 9223372036854775807",
     "[data] max_image_bytes must be a positive integer up to 4,294,967,296, got 9223372036854775807"),
    ('[data]\npad_id = "zero"', "[data] pad_id must be an integer from 0 to 2,147,483,647, got 'zero'"),
    ('[data]\nnumeric_dtype = "object"',
     "[data] numeric_dtype: unknown expected dtype 'object'; use int, float, bool or one of "),
    ("[data]\nimage_threads = 100000", "[data] image_threads must be a positive integer up to 256, got 100000"),
    ('[checks.empty_text]\nenabled = "false"', "[checks.empty_text] enabled must be true or false, got 'false'"),
    ("[checks.extreme_span]\nthreshold = nan", "[checks.extreme_span] threshold must be a finite number, got nan"),
    ("[checks.long_unbroken_run]\nmax_run = -1", "[checks.long_unbroken_run] max_run must be 0 or more, got -1"),
    ("[checks.repetition]\ndup_line_frac = 1.5",
     "[checks.repetition] dup_line_frac must be a fraction from 0 to 1, got 1.5"),
    ("[checks.out_of_range]\nmin = 5\nmax = 1", "[checks.out_of_range] min (5) must not be above max (1)"),
    ('[checks.too_long]\ncontext_length = "long"', "[checks.too_long] context_length must be an integer, got 'long'"),
])
def test_f23_a_config_value_is_typed_and_ranged_at_load(three, tmp_path, toml, message):
    cfg = tmp_path / "audit.toml"
    cfg.write_text(toml + "\n")
    code, output = _invoke("audit", three[0], "--config", cfg, "--out", tmp_path / "out", "--engine", "local")
    assert code == 2 and output.startswith(f"Error: {cfg}: {message}"), output
    assert len(output.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------------------------------- the engine

def test_auto_engine_measures_a_sparse_file_by_its_blocks(tmp_path):
    from dataaudit.io import stored_size
    from dataaudit.pipelines.engine import EngineOptions, choose_engine

    sparse = []
    for n in range(2):
        p = tmp_path / f"sparse-{n}.jsonl"
        with open(p, "wb") as f:
            f.truncate(1 << 40)                 # claims 1 TiB, holds nothing
        sparse.append(str(p))
    assert os.path.getsize(sparse[0]) == 1 << 40 and stored_size(sparse[0]) < 1 << 20
    assert choose_engine(sparse, EngineOptions("auto")) == "local"


def test_a_ray_that_cannot_start_is_one_line_and_exit_2(three, tmp_path, monkeypatch):
    ray = pytest.importorskip("ray")

    def refuse(**kw):
        raise RuntimeError("Failed to start the GCS server.\nSee the logs.")
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", refuse)
    code, output = _invoke("audit", three[0], "--out", tmp_path / "out", "--engine", "ray")
    assert code == 2
    assert output.strip() == ("Error: cannot start or join a local Ray: Failed to start the GCS server. See the logs. "
                              "(--engine local runs without Ray)")
    t0 = time.time()           # an address nobody answers at: said at once, not after Ray's minutes of retries
    code, output = _invoke("audit", three[0], "--out", tmp_path / "out", "--engine", "ray",
                           "--ray-address", "127.0.0.1:1")
    assert code == 2 and time.time() - t0 < 10
    assert output.strip() == ("Error: cannot start or join the Ray cluster at 127.0.0.1:1: Connection refused "
                              "(--engine local runs without Ray)")
