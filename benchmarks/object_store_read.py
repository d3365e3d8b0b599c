#!/usr/bin/env python
"""Audit throughput reading Parquet and WebDataset shards from an S3-compatible server (moto, on 127.0.0.1, in its
own process) against the same audit of local copies, and what part of the gap is moto's own cost.

Measured, each the median of --repeat runs of `dataaudit audit SHARDS --out TMP --engine local` as a child process,
local and s3 alternating (this machine's speed drifts between minutes)
(start-up included on both sides):
- local: the shards on local disk (page cache warm);
- s3: the same shards as s3://bench/<format>/ (AWS_ENDPOINT_URL: the endpoint, as a user sets it);
- moto alone: raw GET throughput of the server, the objects read through pyarrow's S3 client (the client the audit
  uses) front to back in 1 MiB, 16 MiB (dataaudit.io's REMOTE_BUFFER: what its buffered reader asks for) and 64 MiB
  ranged reads, with no audit: the floor any reader of this server pays. "moto s for 2 passes": the seconds moto
  alone needs to serve the shards twice at the 16 MiB rate (what a URI shard cost while its fingerprint was a hash
  of every byte; it is now the object's ETag, from one HEAD, and the shard is read once);
- with --rss-mb (e.g. 100,1000): peak RSS of the audit of one Parquet shard of each size from the server (the
  kernel's high-water mark of the child, as benchmarks/memory_scaling.py takes it);
- with --count: what the audit of each format's shards asks of the server, on the wire (a counting proxy in front
  of moto, tests/objectstore/proxy.py): bytes in the answers to GETs against the shards' bytes, and requests by
  method, and the audit's time through the proxy.

    .venv/bin/python benchmarks/object_store_read.py --mb 100
    .venv/bin/python benchmarks/object_store_read.py --mb 50 --rss-mb 100,1000
    .venv/bin/python benchmarks/object_store_read.py --mb 20 --repeat 1 --count
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))    # tests.objectstore.proxy (--count)
import _common  # noqa: E402

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.fs as pafs  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from dataaudit.io import REMOTE_BUFFER  # noqa: E402

BUCKET = "bench"
_WRAPPER = """import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
with open(sys.argv[1], "w") as f:
    f.write(f"{rc} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}")
"""


def _texts(rng: np.random.Generator, n: int) -> list[str]:
    words = np.array([f"w{i:04d}" for i in range(4000)])
    lengths = rng.integers(40, 400, n)
    flat = words[rng.integers(0, len(words), int(lengths.sum()))]
    ends = np.cumsum(lengths)
    return [" ".join(flat[e - k:e]) for e, k in zip(ends, lengths)]


def make_parquet(path: Path, mb: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    with pq.ParquetWriter(path, pa.schema([("text", pa.string()), ("id", pa.int64())])) as w:
        done, start = 0, 0
        while done < mb * 1e6:
            texts = _texts(rng, 20_000)
            w.write_table(pa.table({"text": texts, "id": np.arange(start, start + len(texts))}),
                          row_group_size=20_000)
            done += sum(map(len, texts))
            start += len(texts)


def make_tar(path: Path, mb: float, seed: int) -> None:
    import io
    import tarfile

    rng = np.random.default_rng(seed)
    with tarfile.open(path, "w") as tf:
        done, i = 0, 0
        while done < mb * 1e6:
            for text in _texts(rng, 5_000):
                data = text.encode()
                for ext, body in (("txt", data), ("json", json.dumps({"id": i}).encode())):
                    info = tarfile.TarInfo(f"{i:09d}.{ext}")
                    info.size = len(body)
                    tf.addfile(info, io.BytesIO(body))
                done += len(data)
                i += 1


class Moto:
    def __init__(self):
        import socket
        import urllib.request

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{self.url}/moto-api/data.json", timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("moto server did not start (pip install 'moto[server]')")
                time.sleep(0.2)
        self.env = {"AWS_ENDPOINT_URL": self.url, "AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
                    "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}
        self.fs = pafs.S3FileSystem(endpoint_override=self.url, access_key="bench", secret_key="bench",
                                    region="us-east-1", allow_bucket_creation=True)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def get_throughput(fs, keys: list[str], read_size: int) -> float:
    """MB/s of reading every object once, front to back, `read_size` bytes a read."""
    total, t0 = 0, time.perf_counter()
    for key in keys:
        with fs.open_input_file(key) as f:
            while chunk := f.read(read_size):
                total += len(chunk)
    return total / 1e6 / (time.perf_counter() - t0)


def audit(shards: list[str], out: Path, env: dict) -> float:
    shutil.rmtree(out, ignore_errors=True)
    cmd = _common.dataaudit_cli() + ["audit", *shards, "--out", str(out), "--engine", "local"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"audit failed ({proc.returncode}): {(proc.stdout + proc.stderr)[-2000:]}")
    return seconds


def flags_of(out: Path) -> list[tuple]:
    return sorted((r["shard"].rpartition("/")[2], r["row"], r["check"]) for r in
                  pq.read_table(out / "flags.parquet").to_pylist())


def peak_rss(shards: list[str], out: Path, env: dict) -> float:
    """MB: the kernel's high-water mark of the audit child (through a small wrapper process)."""
    shutil.rmtree(out, ignore_errors=True)
    result = out.parent / "rss.txt"
    cmd = _common.dataaudit_cli() + ["audit", *shards, "--out", str(out), "--engine", "local"]
    subprocess.run([sys.executable, "-c", _WRAPPER, str(result), *cmd], env=env, check=True)
    rc, kb = result.read_text().split()
    if int(rc) not in (0, 1):
        raise SystemExit(f"audit failed ({rc})")
    return int(kb) / 1024


def wire_counts(shards: dict[str, list[Path]], tmp: Path, moto: Moto, env: dict, repeat: int) -> None:
    """GET bytes and requests of one audit of each format's shards, through a counting proxy (best time of
    `repeat`; the counts are the same every run)."""
    from tests.objectstore.proxy import CountingProxy

    proxy = CountingProxy(moto.port)
    try:
        rows = []
        for fmt, paths in shards.items():
            uris = [f"s3://{BUCKET}/{fmt}/{p.name}" for p in paths]
            size = sum(p.stat().st_size for p in paths)
            seconds = []
            for _ in range(repeat):
                proxy.reset()
                seconds.append(audit(uris, tmp / "out-count", {**env, "AWS_ENDPOINT_URL": proxy.url}))
            rows.append([fmt, f"{size:,}", f"{proxy.get_bytes:,}", f"{proxy.get_bytes / size:.3f}",
                         str(proxy.requests["HEAD"]), str(proxy.requests["GET"]), f"{min(seconds):.2f}"])
        print(_common.fmt_table(["format", "shard bytes", "GET bytes", "GET / shard bytes", "HEAD", "GET",
                                 "audit s (through the proxy)"], rows,
                                "what one audit of the shards asks of the server"))
    finally:
        proxy.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=100.0, help="MB of text per format (two shards each)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rss-mb", default="", help="comma-separated Parquet shard sizes (MB of text) for peak RSS")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--count", action="store_true", help="only the GET bytes and requests of one audit per format")
    args = ap.parse_args()
    print(_common.machine_line())
    print(f"dataaudit from {_common.dataaudit_origin()}; pyarrow {pa.__version__}")
    tmp = Path(tempfile.mkdtemp(prefix="objstore-bench-"))
    moto = Moto()
    try:
        shards = {"parquet": [], "webdataset": []}
        for i in range(2):
            p = tmp / "parquet" / f"part-{i}.parquet"
            t = tmp / "webdataset" / f"part-{i}.tar"
            p.parent.mkdir(exist_ok=True)
            t.parent.mkdir(exist_ok=True)
            make_parquet(p, args.mb / 2, args.seed + i)
            make_tar(t, args.mb / 2, args.seed + 10 + i)
            shards["parquet"].append(p)
            shards["webdataset"].append(t)
        moto.fs.create_dir(BUCKET)
        t0 = time.perf_counter()
        pafs.copy_files(str(tmp / "parquet"), f"{BUCKET}/parquet", destination_filesystem=moto.fs)
        pafs.copy_files(str(tmp / "webdataset"), f"{BUCKET}/webdataset", destination_filesystem=moto.fs)
        size = {k: sum(p.stat().st_size for p in v) / 1e6 for k, v in shards.items()}
        print(f"uploaded {sum(size.values()):.0f} MB to moto in {time.perf_counter() - t0:.1f} s")
        env = {**_common.child_env(), **moto.env}
        if args.count:
            wire_counts(shards, tmp, moto, env, args.repeat)
            return 0
        rows = []
        for fmt, paths in shards.items():
            keys = [f"{BUCKET}/{fmt}/{p.name}" for p in paths]
            get_1m = max(get_throughput(moto.fs, keys, 1 << 20) for _ in range(args.repeat))
            get_16m = max(get_throughput(moto.fs, keys, REMOTE_BUFFER) for _ in range(args.repeat))
            get_64m = max(get_throughput(moto.fs, keys, 64 << 20) for _ in range(args.repeat))
            runs = [(audit([str(p) for p in paths], tmp / "out-local", env),
                     audit([f"s3://{k}" for k in keys], tmp / "out-s3", env)) for _ in range(args.repeat)]
            local, remote = (statistics.median(side) for side in zip(*runs))
            same = flags_of(tmp / "out-local") == flags_of(tmp / "out-s3")
            rows.append([fmt, f"{size[fmt]:.0f}", f"{local:.2f}", f"{size[fmt] / local:.1f}", f"{remote:.2f}",
                         f"{size[fmt] / remote:.1f}", f"{local / remote:.2f}x", f"{get_1m:.0f}", f"{get_16m:.0f}",
                         f"{get_64m:.0f}", f"{2 * size[fmt] / get_16m:.1f}", "yes" if same else "NO"])
        print(_common.fmt_table(["format", "MB", "local s", "local MB/s", "s3 s", "s3 MB/s", "s3/local",
                                 "moto GET MB/s: 1 MiB reads", "16 MiB (the audit's)", "64 MiB",
                                 "moto s for 2 passes", "same flags"], rows,
                                "audit of local copies vs the same shards on moto (medians of "
                                f"{args.repeat}; child processes, start-up included)"))
        if args.rss_mb:
            rss_rows = []
            for mb in [float(x) for x in args.rss_mb.split(",")]:
                p = tmp / f"rss-{mb:g}.parquet"
                make_parquet(p, mb, args.seed + 100)
                key = f"{BUCKET}/rss/{p.name}"
                pafs.copy_files(str(p), key, source_filesystem=pafs.LocalFileSystem(), destination_filesystem=moto.fs)
                rss_rows.append([f"{mb:g}", f"{p.stat().st_size / 1e6:.0f}",
                                 f"{peak_rss([f's3://{key}'], tmp / 'out-rss', env):.0f}",
                                 f"{peak_rss([str(p)], tmp / 'out-rss', env):.0f}"])
                moto.fs.delete_file(key)
                p.unlink()
            print(_common.fmt_table(["text MB", "file MB", "peak RSS s3 (MB)", "peak RSS local (MB)"], rss_rows,
                                    "peak RSS of the audit of one Parquet shard"))
    finally:
        moto.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
