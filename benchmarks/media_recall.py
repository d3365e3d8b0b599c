#!/usr/bin/env python
"""Recall and false positives of the media checks on defects planted in LLaMA-Factory's demo media; the peak
memory of an audit of crafted header bombs; the probe's speed.

From the real files of ../shared/data/posttrain/mllm_demo_data (videos 1.mp4 3.mp4 4.mp4 2.avi; audio 1.mp3
2.wav 3.flac 4.mp3) it writes one LLaMA-Factory dataset (`messages` + `videos` / `audios`, one file a record,
`<video>`/`<audio>` placeholders right) holding:

  clean        COPIES copies of every demo file (each its own path, so each is probed), and each file in another
               container or codec: videos remuxed to Matroska and re-encoded to MPEG-4, audio decoded and written
               as WAV and as FLAC at its own rate
  cut          the first 0.3 s of each file (stream-copied with PyAV; audio: decoded and written as WAV)
                                                                              expected: media_duration
  truncated    each file cut to 30/50/70/90 % of its bytes                    expected: media_corrupt
  silenced     each audio file decoded and written back as zeros (its rate and channels kept)
                                                                              expected: audio_silent
  blanked      each video re-encoded (mpeg4) with its frames painted black    expected: video_blank
  resampled    each audio file re-encoded at 8 kHz ([data] audio_sample_rate = the source's rate: the audit runs
               once per source rate, on the records of that rate)             expected: audio_sample_rate
  renamed      an HTML error page saved under each file's name                expected: media_corrupt

It audits the dataset with the CLI (`dataaudit audit`, one child process per source rate) and scores
flags.parquet: recall per kind = planted records flagged by the expected check; clean = share of clean records
with any flag. Then:

  bomb         an AVI whose headers declare 10^7 frames (2.avi patched), one declaring 100,000 x 100,000 raw
               pixels, and minimal Matroska files declaring 100,000 x 100,000, 12,000 x 12,000, and 400,000 s
               (10^7 frames at 25 fps) of VP9, audited by the CLI under a wrapper: the kernel's peak RSS of the
               audit (RUSAGE_CHILDREN ru_maxrss) beside a clean video's, and the flags each got.
  speed        probe() on the four demo videos, one thread, in this process: files per CPU-second (full demux
               of every packet, first frames and the last key frame decoded).

Targets: recall >= 0.95 per kind, clean <= 1 %, bomb peak RSS < 2 GB and flagged media_bomb, speed >= 20 files/s.

    .venv/bin/python benchmarks/media_recall.py [--copies 25] [--data DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from fractions import Fraction
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from tests.media import hostile_media as hm  # noqa: E402
from tests.paths import SHARED_DATA  # noqa: E402

EXPECTED = {"cut": "media_duration", "truncated": "media_corrupt", "silenced": "audio_silent",
            "blanked": "video_blank", "resampled": "audio_sample_rate", "renamed": "media_corrupt"}
DATAAUDIT = [sys.executable, "-m", "dataaudit.cli"]


def _kind(name: str) -> str:
    return "video" if name.endswith((".mp4", ".avi")) else "audio"


def _decode_audio(src: Path):
    import av
    import numpy as np

    with av.open(str(src)) as c:
        st = c.streams.audio[0]
        rate = st.codec_context.sample_rate
        res = av.AudioResampler(format="s16", layout="mono", rate=rate)
        chunks = [f.to_ndarray().reshape(-1) for fr in c.decode(st) for f in res.resample(fr)]
        chunks += [f.to_ndarray().reshape(-1) for f in res.resample(None)]
    return np.concatenate(chunks).astype(np.float64) / 32768.0, rate


def _cut_video(src: Path, dst: Path, seconds: float, fmt: str = "mp4") -> None:
    """The video's packets up to `seconds`, stream-copied into a new container (`fmt`)."""
    import av

    with av.open(str(src)) as inp, av.open(str(dst), "w", format=fmt) as out:
        ist = inp.streams.video[0]
        ost = out.add_stream_from_template(ist)
        ost.codec_context.framerate = ist.average_rate   # else Matroska's frame rate comes out as 1 / time base
        for p in inp.demux(ist):
            if p.dts is None:
                continue
            if p.pts is not None and p.pts * ist.time_base >= seconds:
                break
            p.stream = ost
            out.mux(p)


def _blank_video(src: Path, dst: Path) -> None:
    """The video re-encoded (MPEG-4, its size, rate and frame count) with every frame black."""
    import av

    with av.open(str(src)) as inp:
        st = inp.streams.video[0]
        w, h = st.codec_context.width & ~1, st.codec_context.height & ~1
        rate = st.average_rate or Fraction(25)
        frames = sum(1 for p in inp.demux(st) if p.dts is not None)
    hm.encoded_video(dst, max(frames, 1), w, h, rate)


def _reencode_video(src: Path, dst: Path) -> None:
    """The video decoded and encoded again (MPEG-4 in MP4, its size and rate): a clean file of another codec."""
    import av

    with av.open(str(src)) as inp, av.open(str(dst), "w", format="mp4") as out:
        ist = inp.streams.video[0]
        ost = out.add_stream("mpeg4", rate=ist.average_rate or Fraction(25))
        ost.width, ost.height, ost.pix_fmt = ist.codec_context.width & ~1, ist.codec_context.height & ~1, "yuv420p"
        for frame in inp.decode(ist):
            rgb = frame.to_ndarray(format="rgb24")[: ost.height, : ost.width]
            for p in ost.encode(av.VideoFrame.from_ndarray(rgb, format="rgb24")):
                out.mux(p)
        for p in ost.encode(None):
            out.mux(p)


def _flac(pcm, rate: int, dst: Path) -> None:
    import av
    import numpy as np

    with av.open(str(dst), "w", format="flac") as out:
        st = out.add_stream("flac", rate=rate, layout="mono")
        frame = av.AudioFrame.from_ndarray((pcm * 32767).astype(np.int16).reshape(1, -1), format="s16",
                                           layout="mono")
        frame.sample_rate = rate
        for p in st.encode(frame):
            out.mux(p)
        for p in st.encode(None):
            out.mux(p)


def build(root: Path, copies: int) -> tuple[dict, dict]:
    """The dataset's records by source rate ({rate or "video": [(record, kind)]}) and the files' folder."""
    demo = SHARED_DATA / hm.DEMO
    data = root / "data"
    data.mkdir(parents=True, exist_ok=True)
    groups: dict = defaultdict(list)
    rates = {}

    def add(group, name: str, kind: str, planted: str) -> None:
        k = kind
        groups[group].append(({"messages": [{"role": "user", "content": f"<{k}>What is it?"},
                                            {"role": "assistant", "content": "A short clip."}],
                               f"{k}s": [name]}, planted))

    for name in hm.VIDEOS + hm.AUDIOS:
        src = demo / name
        kind = _kind(name)
        stem, ext = name.rsplit(".", 1)
        if kind == "audio":
            pcm, rate = _decode_audio(src)
            rates[name] = rate
        group = "video" if kind == "video" else rates[name]
        for i in range(copies):
            dst = f"clean_{stem}_{ext}_{i}.{ext}"
            shutil.copy(src, data / dst)
            add(group, dst, kind, "clean")
        for keep in (0.3, 0.5, 0.7, 0.9):
            dst = f"trunc_{stem}_{ext}_{int(keep * 100)}.{ext}"
            hm.cut(src, data / dst, keep)
            add(group, dst, kind, "truncated")
        dst = f"renamed_{stem}_{ext}.{ext}"
        hm.renamed_text(data / dst)
        add(group, dst, kind, "renamed")
        if kind == "video":   # clean files of other containers and codecs: remuxed to Matroska, re-encoded
            dst = f"clean_{stem}_{ext}_remux.mkv"
            _cut_video(src, data / dst, float("inf"), "matroska")
            add(group, dst, kind, "clean")
            dst = f"clean_{stem}_{ext}_mpeg4.mp4"
            _reencode_video(src, data / dst)
            add(group, dst, kind, "clean")
        else:                 # clean audio decoded and written again as WAV and FLAC at its own rate
            dst = f"clean_{stem}_{ext}_pcm.wav"
            hm.write_wav(data / dst, pcm, rate)
            add(group, dst, kind, "clean")
            dst = f"clean_{stem}_{ext}_pcm.flac"
            _flac(pcm, rate, data / dst)
            add(group, dst, kind, "clean")
        if kind == "video":
            dst = f"cut_{stem}_{ext}.mp4"
            _cut_video(src, data / dst, 0.3)
            add(group, dst, kind, "cut")
            dst = f"blank_{stem}_{ext}.mp4"
            _blank_video(src, data / dst)
            add(group, dst, kind, "blanked")
        else:
            dst = f"cut_{stem}_{ext}.wav"
            hm.write_wav(data / dst, pcm[: int(0.3 * rate)], rate)
            add(group, dst, kind, "cut")
            dst = f"silent_{stem}_{ext}.wav"
            hm.write_wav(data / dst, pcm * 0.0, rate)
            add(group, dst, kind, "silenced")
            dst = f"rate8k_{stem}_{ext}.wav"
            import numpy as np
            n = int(len(pcm) * 8000 / rate)
            hm.write_wav(data / dst, np.interp(np.arange(n) * rate / 8000, np.arange(len(pcm)), pcm), 8000)
            add(group, dst, kind, "resampled")
    return groups, data


def audit(shard: Path, out: Path, config: dict | None) -> tuple[int, list]:
    import pyarrow.parquet as pq

    cmd = [*DATAAUDIT, "audit", str(shard), "--out", str(out)]
    if config:
        cfg = out.parent / (out.name + ".toml")
        cfg.write_text("[data]\n" + "".join(f"{k} = {v}\n" for k, v in config.items()))
        cmd += ["--config", str(cfg)]
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    rc = subprocess.run(cmd, env=env, capture_output=True, text=True).returncode
    return rc, pq.read_table(out / "flags.parquet").to_pylist()


def recall(root: Path, copies: int) -> dict:
    groups, data = build(root, copies)
    found: dict = defaultdict(Counter)
    clean_flags: Counter = Counter()
    for group, records in groups.items():
        shard = data / f"records_{group}.json"
        shard.write_text(json.dumps([r for r, _ in records]))
        config = None if group == "video" else {"audio_sample_rate": group}
        _, flags = audit(shard, root / f"out_{group}", config)
        by_row = defaultdict(set)
        for f in flags:
            by_row[f["row"]].add(f["check"])
        for row, (rec, planted) in enumerate(records):
            kind = "video" if "videos" in rec else "audio"
            if planted == "clean":
                found[("clean", kind)]["n"] += 1
                if by_row[row]:
                    found[("clean", kind)]["hit"] += 1
                    clean_flags.update(by_row[row])
                continue
            found[(planted, kind)]["n"] += 1
            found[(planted, kind)]["hit"] += EXPECTED[planted] in by_row[row]
            if EXPECTED[planted] not in by_row[row]:
                found[(planted, kind)]["missed:" + rec[f"{kind}s"][0]] += 1
    return {"found": found, "clean_flags": clean_flags}


def _wrapped_rss(shard: Path, out: Path) -> dict:
    """Peak RSS of the CLI audit of `shard`, as the kernel counts it for a child (ru_maxrss of a wrapper)."""
    wrapper = ("import resource, subprocess, sys; rc = subprocess.run(sys.argv[1:]).returncode; "
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, rc)")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    res = subprocess.run([sys.executable, "-c", wrapper, *DATAAUDIT, "audit", str(shard), "--out", str(out)],
                         env=env, capture_output=True, text=True)
    kib, rc = res.stdout.split()[-2:]
    return {"maxrss_bytes": int(kib) * 1024, "rc": int(rc)}


def bomb(root: Path) -> dict:
    import struct

    import pyarrow.parquet as pq

    demo = SHARED_DATA / hm.DEMO
    data = root / "bomb"
    data.mkdir(parents=True, exist_ok=True)
    hm.frames_bomb(demo / "2.avi", data / "frames.avi")
    d = bytearray((demo / "2.avi").read_bytes())     # raw video declaring 100,000 x 100,000 pixels
    avih, strh, strf = d.find(b"avih"), d.find(b"strh"), d.find(b"strf")
    d[strh + 12:strh + 16] = b"\0\0\0\0"
    struct.pack_into("<ii", d, strf + 12, 100000, 100000)
    struct.pack_into("<H", d, strf + 8 + 14, 24)
    d[strf + 8 + 16:strf + 8 + 20] = b"\0\0\0\0"
    struct.pack_into("<II", d, avih + 8 + 32, 100000, 100000)
    (data / "pixels.avi").write_bytes(bytes(d))
    hm.matroska_header(data / "huge.mkv", "V_VP9", 100000, 100000)
    hm.matroska_header(data / "big.mkv", "V_VP9", 12000, 12000)
    hm.matroska_header(data / "long.mkv", "V_VP9", 64, 64, seconds=10**7 / 25)   # 10^7 frames at 25 fps
    shutil.copy(demo / "4.mp4", data / "clean.mp4")
    names = ("frames.avi", "pixels.avi", "huge.mkv", "big.mkv", "long.mkv", "clean.mp4")
    recs = [{"messages": [{"role": "user", "content": "<video>?"}, {"role": "assistant", "content": "ok"}],
             "videos": [n]} for n in names]
    out = {}
    for name, rows in (("bombs", recs), ("clean only", recs[-1:])):
        shard = data / f"{name.replace(' ', '_')}.json"
        shard.write_text(json.dumps(rows))
        m = _wrapped_rss(shard, root / f"out_bomb_{name.replace(' ', '_')}")
        flags = pq.read_table(root / f"out_bomb_{name.replace(' ', '_')}" / "flags.parquet").to_pylist()
        m["flags"] = sorted((rows[f["row"]]["videos"][0], f["check"], f["detail"]) for f in flags)
        out[name] = m
    return out


def speed(rounds: int) -> dict:
    from dataaudit.media.probe import MediaLimits, probe

    demo = SHARED_DATA / hm.DEMO
    files = [str(demo / n) for n in hm.VIDEOS]
    limits = MediaLimits(threads=1)
    for f in files:
        probe(f, "video", limits)   # warm (imports, FFmpeg's tables)
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(rounds):
        for f in files:
            p = probe(f, "video", limits)
            assert p.status == 0, p.error
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    n = rounds * len(files)
    return {"files": n, "cpu_s": cpu, "wall_s": wall, "files_per_cpu_s": n / cpu}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--copies", type=int, default=25, help="clean copies of each demo file")
    ap.add_argument("--rounds", type=int, default=50, help="speed: probes of each demo video")
    ap.add_argument("--data", type=Path, default=None, help="folder for the generated data (default: a temp dir)")
    args = ap.parse_args()
    if not (SHARED_DATA / hm.DEMO).is_dir():
        print(f"skipped: {SHARED_DATA / hm.DEMO} missing")
        return 0
    os.environ["OMP_NUM_THREADS"] = "1"
    root = args.data or Path(tempfile.mkdtemp(prefix="media_recall_"))
    r = recall(root, args.copies)
    print(f"{'kind':<11} {'media':<6} {'planted':>7} {'flagged':>7} {'recall':>7}  expected check / misses")
    misses_total = []
    for (planted, kind), c in sorted(r["found"].items()):
        if planted == "clean":
            continue
        misses = [k.split(":", 1)[1] for k in c if k.startswith("missed:")]
        misses_total += misses
        print(f"{planted:<11} {kind:<6} {c['n']:>7} {c['hit']:>7} {c['hit'] / c['n']:>7.3f}  {EXPECTED[planted]}"
              + (f"; missed: {', '.join(misses)}" if misses else ""))
    for kind in ("video", "audio"):
        c = r["found"][("clean", kind)]
        print(f"clean {kind}: {c['hit']} / {c['n']} records flagged = {c['hit'] / max(c['n'], 1):.4f}")
    if r["clean_flags"]:
        print(f"  checks on clean records: {dict(r['clean_flags'])}")
    for name, m in bomb(root).items():
        print(f"bomb audit ({name}): peak RSS {m['maxrss_bytes'] / 2**20:,.0f} MiB, rc {m['rc']}, flags {m['flags']}")
    s = speed(args.rounds)
    print(f"probe speed: {s['files']} demo videos in {s['cpu_s']:.2f} CPU s ({s['wall_s']:.2f} s wall), "
          f"{s['files_per_cpu_s']:.1f} files per CPU-second (one thread)")
    if args.data is None:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
