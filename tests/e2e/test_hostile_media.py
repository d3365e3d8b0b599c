"""Issue 38, media / text / template / paths: a hostile input costs a record, never the job.

Each test builds its input small in tmp_path (sparse files for the big ones, os.mkfifo for FIFOs), runs the command
line in a bounded child (tests/hostile_run.py) and checks the exact report, the exit code, and the 60 s / 2 GB
bound where time or memory is the defect.
"""
from __future__ import annotations

import gzip
import io
import json
import os
import re
import stat
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.builders import make_tar
from tests.hostile_run import run_cli

MiB = 1 << 20


def _flagged(report: dict) -> dict:
    return {name: c["flagged"] for name, c in report["checks"].items() if c.get("flagged")}


def _png(side: int = 64) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.radial_gradient("L").resize((side, side)).save(buf, "PNG")
    return buf.getvalue()


def _refs(path: Path, names: list[str]) -> Path:
    """A JSONL shard whose records reference the image files `names` (captions without a file extension)."""
    path.write_text("".join(json.dumps({"image": n, "caption": f"picture number {i}"}) + "\n"
                            for i, n in enumerate(names)))
    return path


def _one_line_error(out) -> str:
    lines = [ln for ln in out.stderr.strip().splitlines() if ln.strip()]
    assert out.rc == 2 and len(lines) == 1 and "Traceback" not in out.stderr, (out.rc, out.stderr[-2000:])
    return lines[0]


# ------------------------------------------------------------------------------------------------ F09: bytes

def test_f09_forty_references_to_one_200_mib_file_stay_bounded(tmp_path):
    with open(tmp_path / "big.jpg", "wb") as f:
        f.truncate(200 * MiB)                            # sparse: no disk, reads as zeros
    shard = _refs(tmp_path / "refs.jsonl", ["big.jpg"] * 40)
    out = run_cli("audit", shard, "--out", tmp_path / "out")
    assert out.rc == 1
    out.assert_bounded(seconds=30, peak_mib=1024)        # was a MemoryError at 4.5 GB
    report = out.report(tmp_path / "out")
    assert _flagged(report) == {"not_an_image": 40}
    assert report["totals"]["samples"] == 40 and report["totals"]["flagged"] == 40
    assert {e["detail"] for e in report["examples"]["not_an_image"]} == \
        {"not an image Pillow can identify (starts b'\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00')"}


def test_f09_images_are_read_in_windows_bounded_by_bytes(tmp_path):
    """60 distinct 20 MiB files (1.2 GB together) referenced by one batch: at most a window (256 MiB) is in memory
    (all of them were: 4,096 x 5 MB images needed 20 GB)."""
    names = [f"img{i:03d}.png" for i in range(60)]
    for n in names:
        with open(tmp_path / n, "wb") as f:
            f.truncate(20 * MiB)
    out = run_cli("audit", _refs(tmp_path / "refs.jsonl", names), "--out", tmp_path / "out")
    assert out.rc == 1
    out.assert_bounded(seconds=40, peak_mib=1024)
    report = out.report(tmp_path / "out")
    assert _flagged(report) == {"not_an_image": 60} and report["totals"]["flagged"] == 60


def test_f09_a_file_over_max_image_bytes_is_flagged_without_reading_it(tmp_path):
    with open(tmp_path / "huge.png", "wb") as f:
        f.truncate(300 * MiB)                            # > max_image_bytes (256 MiB)
    (tmp_path / "fine.png").write_bytes(_png())
    out = run_cli("audit", _refs(tmp_path / "refs.jsonl", ["huge.png", "fine.png"]), "--out", tmp_path / "out")
    assert out.rc == 1
    out.assert_bounded(seconds=30, peak_mib=512)
    report = out.report(tmp_path / "out")
    assert _flagged(report) == {"image_bomb": 1}
    [ex] = report["examples"]["image_bomb"]
    assert (ex["row"], ex["field"]) == (0, "image")
    assert ex["detail"] == f"file of {300 * MiB} bytes > max_image_bytes {256 * MiB} (not read)"


# ------------------------------------------------------------------------------ F10, F11, F12: regular files

def test_f10_a_fifo_as_an_image_path_is_a_flag_not_a_hang(tmp_path):
    os.mkfifo(tmp_path / "pipe.jpg")
    os.symlink("pipe.jpg", tmp_path / "link.jpg")        # a link inside the folder to the FIFO
    (tmp_path / "fine.png").write_bytes(_png())
    out = run_cli("audit", _refs(tmp_path / "refs.jsonl", ["pipe.jpg", "link.jpg", "fine.png"]),
                  "--out", tmp_path / "out", timeout=60)
    assert out.rc == 1
    out.assert_bounded(seconds=30)
    report = out.report(tmp_path / "out")
    assert _flagged(report) == {"image_missing_file": 2}
    assert [(e["row"], e["detail"]) for e in report["examples"]["image_missing_file"]] == [
        (0, "cannot read 'pipe.jpg': not a regular file (a named pipe (FIFO))"),
        (1, "cannot read 'link.jpg': not a regular file (a named pipe (FIFO))")]
    assert (report["totals"]["samples"], report["totals"]["flagged"], report["totals"]["passed"]) == (3, 2, 1)


def test_f11_a_fifo_and_a_dev_zero_link_in_an_audited_folder_are_reported_not_opened(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.jsonl").write_text('{"text": "an ordinary sentence about a harbour."}\n')
    os.mkfifo(data / "b.jsonl")
    os.symlink("/dev/zero", data / "c.jsonl")
    out = run_cli("audit", data, "--out", tmp_path / "out", timeout=60)
    assert out.rc == 1
    out.assert_bounded(seconds=30)
    report = out.report(tmp_path / "out")
    shards = {Path(s["path"]).name: s for s in report["shards"]}
    assert sorted(shards) == ["a.jsonl", "b.jsonl", "c.jsonl"]
    assert shards["a.jsonl"]["status"] == "ok"
    assert [shards[n]["status"] for n in ("b.jsonl", "c.jsonl")] == ["unreadable", "unreadable"]
    assert [shards[n]["error"] for n in ("b.jsonl", "c.jsonl")] == [
        f"{data / 'b.jsonl'}: not a regular file (a named pipe (FIFO))",
        f"{data / 'c.jsonl'}: not a regular file (a character device)"]
    assert report["totals"]["samples"] == 1 and report["totals"]["unreadable_shards"] == 2


def test_f11_a_named_fifo_is_one_line_exit_2(tmp_path):
    os.mkfifo(tmp_path / "b.jsonl")
    out = run_cli("audit", tmp_path / "b.jsonl", "--out", tmp_path / "out", timeout=60)
    assert _one_line_error(out).endswith("b.jsonl: not a regular file (a named pipe (FIFO))")


def test_f11_the_door_opens_regular_files_only(tmp_path):
    from dataaudit import io as door

    os.mkfifo(tmp_path / "pipe")
    os.symlink("/dev/zero", tmp_path / "zero")
    for name, what in (("pipe", "a named pipe (FIFO)"), ("zero", "a character device")):
        for call in (door.open_input, door.read_bytes, door.open_arrow, door.arrow_source):
            with pytest.raises(door.NotRegularFileError, match=re.escape(f"not a regular file ({what})")):
                call(str(tmp_path / name))
    assert door.not_regular(os.stat(tmp_path / "pipe").st_mode) == "a named pipe (FIFO)"
    assert door.not_regular(stat.S_IFREG) is None


def test_f12_a_double_star_glob_over_link_loops_ends(tmp_path):
    sub = tmp_path / "d" / "sub"
    sub.mkdir(parents=True)
    (sub / "a.jsonl").write_text('{"text": "an ordinary sentence about a harbour."}\n')
    os.symlink("..", sub / "up")                          # d/sub/up/sub/up/... forever
    os.symlink("../sub", sub / "again")
    os.symlink(str(tmp_path / "d"), tmp_path / "d" / "self")
    out = run_cli("audit", "d/**/*.jsonl", "--out", tmp_path / "out", cwd=tmp_path, timeout=60)
    assert out.rc == 0, out.stderr[-2000:]
    out.assert_bounded(seconds=20)
    report = out.report(tmp_path / "out")
    assert [s["path"] for s in report["shards"]] == ["d/sub/a.jsonl"]    # each folder entered once
    assert report["totals"]["samples"] == 1


# --------------------------------------------------------------------------------------------- F13: formats

_EPS = b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 10 10\nnewpath 0 0 moveto 10 10 lineto stroke\nshowpage\n"


def test_f13_an_eps_named_jpg_is_flagged_and_never_reaches_ghostscript(tmp_path):
    trap = tmp_path / "bin"
    trap.mkdir()
    (trap / "gs").write_text(f"#!/bin/sh\ntouch {tmp_path}/GHOSTSCRIPT_RAN\nexit 1\n")
    (trap / "gs").chmod(0o755)
    (tmp_path / "a.jpg").write_bytes(_EPS)
    shard = make_tar(tmp_path / "s.tar", [("k1.jpg", _EPS), ("k1.txt", b"a caption"),
                                          ("k2.png", _png()), ("k2.txt", b"another caption")])
    _refs(tmp_path / "refs.jsonl", ["a.jpg"])
    env = {"PATH": f"{trap}:{os.environ['PATH']}", "TMPDIR": str(tmp_path / "tmp")}
    (tmp_path / "tmp").mkdir()
    out = run_cli("audit", shard, tmp_path / "refs.jsonl", "--out", tmp_path / "out", env=env)
    assert out.rc == 1
    out.assert_bounded(seconds=30)
    report = out.report(tmp_path / "out")
    assert _flagged(report) == {"image_format_unsupported": 2, "image_format_mismatch": 2}
    flags = pq.read_table(tmp_path / "out" / "flags.parquet").to_pylist()
    assert sorted((Path(f["shard"]).name, f["field"], f["detail"]) for f in flags
                  if f["check"] == "image_format_unsupported") == [
        ("refs.jsonl", "image", "EPS data: a format not decoded here (not opened)"),
        ("s.tar", "jpg", "EPS data: a format not decoded here (not opened)")]
    assert all(e["thumbnail"] is None for e in report["examples"]["image_format_unsupported"])
    assert {e["detail"] for e in report["examples"]["image_format_mismatch"]} == {"EPS data under a .jpg name"}
    assert report["images"]["image"]["formats"] == {"EPS": 1} and report["images"]["jpg"]["formats"]["EPS"] == 1
    assert not (tmp_path / "GHOSTSCRIPT_RAN").exists()
    assert list((tmp_path / "tmp").iterdir()) == []        # no temporary files for Ghostscript


# ------------------------------------------------------------------------------------------- F14: templates

def _tokenizer(folder: Path, template: str) -> Path:
    """A tiny word-level tokenizer folder with `template` as its chat template."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    folder.mkdir()
    vocab = {w: i for i, w in enumerate(["<unk>", "<s>", "</s>", "question", "answer", "?", ".", "x"])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({"chat_template": template, "bos_token": "<s>",
                                                              "eos_token": "</s>"}))
    return folder


NESTED_RANGE = ("{% for m in messages %}{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}"
                "{% endfor %}{{ m.content }}{% endfor %}")
HUGE_RENDER = "{% for i in range(100000) %}{{ 'x' * 3000 }}{% endfor %}"     # 300 MB


def _chats(path: Path, n: int = 6) -> Path:
    path.write_text("".join(json.dumps({"messages": [{"role": "user", "content": f"question {i} ?"},
                                                     {"role": "assistant", "content": f"answer {i} ."}]}) + "\n"
                            for i in range(n)))
    return path


@pytest.mark.parametrize("template, error", [
    (NESTED_RANGE, "chat template ran over 1 s on 3 conversations: not rendered again"),
    (HUGE_RENDER, f"chat template rendering over {16 * MiB} characters (not tokenized)"),
], ids=["f14_nested_range", "f14b_300_mb"])
def test_f14_a_template_past_its_budget_fails_its_conversations_not_the_audit(tmp_path, template, error):
    _tokenizer(tmp_path / "tok", template)
    (tmp_path / "a.toml").write_text('[data]\ntokenizer = "tok"\n')
    out = run_cli("audit", _chats(tmp_path / "chat.jsonl"), "--config", tmp_path / "a.toml",
                  "--out", tmp_path / "out")
    assert out.rc == 0, out.stderr[-2000:]
    out.assert_bounded(seconds=30, peak_mib=1024)
    report = out.report(tmp_path / "out")
    tokens = report["lengths"]["messages.tokens"]
    assert (tokens["count"], tokens["render_errors"], tokens["render_error"]) == (0, 6, error)
    assert report["totals"]["samples"] == 6


@pytest.mark.parametrize("template, error", [
    (NESTED_RANGE, "chat template rendering ran over 1 s (stopped)"),
    (HUGE_RENDER, f"chat template rendering over {16 * MiB} characters (not tokenized)"),
], ids=["f14_nested_range", "f14b_300_mb"])
def test_f14_tokenizer_drift_probe_fails_with_one_reason(tmp_path, template, error):
    bad = _tokenizer(tmp_path / "bad", template)
    good = _tokenizer(tmp_path / "good", "{% for m in messages %}{{ m.content }} {% endfor %}")
    out = run_cli("tokenizer-drift", bad, good, "--out", tmp_path / "out")
    assert out.rc == 1, out.stderr[-2000:]
    out.assert_bounded(seconds=30, peak_mib=1024)
    chat = out.report(tmp_path / "out", "tokenizer_drift.json")["chat_template"]
    assert chat["train"] == {"present": True, "error": error}
    assert chat["infer"]["rendered"].startswith("You are a helpful assistant.")


# ---------------------------------------------------------------------------------------- F16: long texts

def test_f16_a_40_mb_text_is_checked_on_a_bounded_prefix_and_flagged_long_document(tmp_path):
    text = "The quick brown fox jumps over the lazy dog near the river bank. " * (40 * MiB // 64)
    shard = tmp_path / "big.jsonl.gz"
    with gzip.open(shard, "wt", compresslevel=1) as f:
        f.write(json.dumps({"text": text}) + "\n")
        f.write(json.dumps({"text": "A short and ordinary note about boats in a quiet harbour."}) + "\n")
    out = run_cli("audit", shard, "--out", tmp_path / "out")
    assert out.rc == 0                                   # warnings only
    out.assert_bounded(seconds=40, peak_mib=1536)        # the repetition kernels needed ~2.6 GB for it
    report = out.report(tmp_path / "out")
    assert _flagged(report) == {"long_document": 1, "repetition": 1}
    [ex] = report["examples"]["long_document"]
    assert (ex["row"], ex["value"]) == (0, float(len(text)))
    assert ex["detail"] == f"{len(text)} bytes: repetition statistics on the first {8 * MiB} bytes only"
    assert report["checks"]["long_document"]["severity"] == "warning"
    assert (report["totals"]["samples"], report["totals"]["flagged"], report["totals"]["passed"]) == (2, 1, 1)


# ------------------------------------------------------------------------------- F23c, F26: named specials

def test_f23c_a_tokenizer_that_is_a_fifo_or_a_device_is_one_line_exit_2(tmp_path):
    shard = tmp_path / "a.jsonl"
    shard.write_text('{"text": "an ordinary sentence."}\n')
    os.mkfifo(tmp_path / "fifo.json")
    tok = _tokenizer(tmp_path / "tok", "{{ messages }}")
    (tok / "tokenizer_config.json").unlink()
    os.mkfifo(tok / "tokenizer_config.json")                # a FIFO inside a tokenizer folder
    for target in ("fifo.json", "/dev/zero"):
        (tmp_path / "t.toml").write_text(f'[data]\ntokenizer = "{target}"\n')
        out = run_cli("audit", shard, "--config", tmp_path / "t.toml", "--out", tmp_path / "out", timeout=60)
        what = "a named pipe (FIFO)" if target == "fifo.json" else "a character device"
        assert _one_line_error(out).endswith(f"[data] tokenizer is not a regular file ({what}): "
                                             f"{tmp_path / target if target == 'fifo.json' else target}")
    for args in (("audit", shard, "--config"), ("tokenizer-drift", tok)):
        (tmp_path / "t.toml").write_text('[data]\ntokenizer = "tok"\n')
        extra = (tmp_path / "t.toml",) if args[0] == "audit" else (tok,)
        out = run_cli(*args, *extra, "--out", tmp_path / "out", timeout=60)
        assert _one_line_error(out).endswith("tokenizer_config.json: not a regular file (a named pipe (FIFO))")


def test_f26_replay_of_a_fifo_is_one_line_exit_2(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("safetensors")
    os.mkfifo(tmp_path / "snap.safetensors")
    out = run_cli("replay", tmp_path / "snap.safetensors", "--model", "tests.guard.replay_model:make_loss",
                  timeout=60)
    assert _one_line_error(out).endswith("not a regular file (a named pipe (FIFO)): "
                                         f"'{tmp_path / 'snap.safetensors'}'")
