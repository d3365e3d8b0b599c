"""Reliability of dedup, contamination and tokenizer-drift: identical outputs across runs and engines, SIGKILL
resume, unreadable shards reported, every data string escaped in their HTML."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from dataaudit.cli import main
from tests.e2e.test_reliability_security import PAYLOAD, _evil_tar
from tests.paths import REPO

SHARDS = 6


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, shared_data) -> dict:
    """Shakespeare paragraphs in 6 shards, with copies of some paragraphs and of GSM8K questions planted."""
    import re

    folder = tmp_path_factory.mktemp("commands-corpus")
    text = (shared_data / "corpora" / "tinyshakespeare.txt").read_text(encoding="utf-8")
    paras = [p for p in re.split(r"\n\s*\n", text) if len(p.split()) >= 8]
    questions = [json.loads(line)["question"] for line in
                 (shared_data / "benchmarks" / "gsm8k_test.jsonl").read_text().splitlines()[:40]]
    per = len(paras) // SHARDS
    for s in range(SHARDS):
        docs = paras[s * per:(s + 1) * per]
        docs += paras[s * 7: s * 7 + 5]                               # exact copies across shards
        docs += [f"As the story goes, {questions[s * 3]} And so on." for _ in range(2)]
        pq.write_table(pa.table({"text": docs}), folder / f"train-{s:02d}.parquet", row_group_size=256)
    bench = folder / "gsm8k.jsonl"
    bench.write_text("\n".join((shared_data / "benchmarks" / "gsm8k_test.jsonl").read_text().splitlines()[:40]) + "\n")
    return {"folder": folder, "shards": sorted(str(p) for p in folder.glob("train-*.parquet")), "bench": bench}


COMMANDS = {
    "dedup": (lambda c, out, extra: ["dedup", *c["shards"], "--out", str(out), *extra],
              "dedup.json", ["clusters.parquet", "keep.parquet"]),
    "contamination": (lambda c, out, extra: ["contamination", "--train", *c["shards"], "--benchmark",
                                             f"gsm8k={c['bench']}", "--out", str(out), *extra],
                      "contamination.json", ["gsm8k/items.parquet", "gsm8k/clean.jsonl"]),
}


def _outputs(out: Path, report_name: str, files: list[str]):
    report = json.loads((out / report_name).read_text())
    report.pop("run")
    tables = [pq.read_table(out / f) if f.endswith(".parquet") else (out / f).read_bytes() for f in files]
    return report, tables


def _same(a, b) -> bool:
    return a[0] == b[0] and all((x.equals(y) if isinstance(x, pa.Table) else x == y) for x, y in zip(a[1], b[1]))


@pytest.mark.parametrize("command", list(COMMANDS))
def test_identical_outputs_across_runs_and_engines(command, corpus, tmp_path, ray_session):
    args, report_name, files = COMMANDS[command]
    runs = {}
    for name, extra in {"local-1": ["--engine", "local"], "local-2": ["--engine", "local"],
                        "ray": ["--engine", "ray"]}.items():
        res = CliRunner().invoke(main, args(corpus, tmp_path / name, extra))
        assert res.exit_code in (0, 1), res.output
        runs[name] = _outputs(tmp_path / name, report_name, files)
    assert _same(runs["local-1"], runs["local-2"])
    assert _same(runs["local-1"], runs["ray"])


def _popen(argv) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "dataaudit.cli", *argv], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _parts(out: Path) -> int:
    return len(list((out / "parts").rglob("*.json"))) if (out / "parts").exists() else 0


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("kill_at_parts", [1, SHARDS - 2])
def test_sigkill_then_rerun_matches_uninterrupted(command, kill_at_parts, corpus, tmp_path):
    args, report_name, files = COMMANDS[command]
    ref = tmp_path / "ref"
    assert _popen(args(corpus, ref, ["--engine", "local"])).wait(timeout=300) in (0, 1)
    out = tmp_path / "out"
    proc = _popen(args(corpus, out, ["--engine", "local"]))
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None and _parts(out) < kill_at_parts:
        time.sleep(0.01)
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    done = _parts(out)
    rerun = _popen(args(corpus, out, ["--engine", "local"]))
    assert rerun.wait(timeout=300) in (0, 1), rerun.stderr.read()
    assert _same(_outputs(out, report_name, files), _outputs(ref, report_name, files))
    assert json.loads((out / report_name).read_text())["run"]["resumed_shards"] == done
    assert not list(out.rglob(".*.tmp"))


@pytest.mark.parametrize("command", list(COMMANDS))
def test_unreadable_shard_is_reported_and_the_job_goes_on(command, corpus, tmp_path, shared_data):
    bad = tmp_path / "not-a-tar.tar"
    bad.write_bytes(b"\x00garbage" * 100)
    args, report_name, _ = COMMANDS[command]
    argv = args({**corpus, "shards": corpus["shards"][:2] + [str(bad)]}, tmp_path / "out", ["--engine", "local"])
    res = CliRunner().invoke(main, argv)
    assert res.exit_code == 1, res.output
    report = json.loads((tmp_path / "out" / report_name).read_text())
    shards = report["shards"] if "shards" in report else report["train"]["shards"]
    status = {Path(s["path"]).name: (s["status"], s["error"]) for s in shards}
    assert status["not-a-tar.tar"][0] == "unreadable" and status["not-a-tar.tar"][1].startswith("tar: ")
    assert [status[Path(p).name][0] for p in corpus["shards"][:2]] == ["ok", "ok"]


def test_script_payloads_are_escaped_in_every_html(tmp_path, shared_data):
    shard = _evil_tar(tmp_path)
    bench = tmp_path / f"bench{PAYLOAD.replace('/', '_')}.jsonl"
    bench.write_text(json.dumps({"question": f"{PAYLOAD} an innocent caption, then"}) + "\n")
    tok = shared_data / "tokenizers"
    runner = CliRunner()
    pages = {
        "dedup.html": ["dedup", str(shard), str(shard), "--out", str(tmp_path / "d"), "--engine", "local"],
        "contamination.html": ["contamination", "--train", str(shard), "--benchmark", f"evil={bench}:question",
                               "--out", str(tmp_path / "c"), "--engine", "local"],
        "tokenizer_drift.html": ["tokenizer-drift", str(tok / "llama-test-tokenizer.json"),
                                 str(tok / "gpt-neo-test-tokenizer.json"), "--out", str(tmp_path / "t"),
                                 "--sample", str(shard)],
    }
    for page, argv in pages.items():
        res = runner.invoke(main, argv)
        assert res.exit_code in (0, 1), (page, res.output)
        html = (Path(argv[argv.index("--out") + 1]) / page).read_text()
        assert "<script" not in html.lower(), page
        assert "&lt;script&gt;" in html, page
