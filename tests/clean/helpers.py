"""Shared by the clean tests: a generated Parquet shard with nested and binary columns and planted defects, and
the CLI run in this process."""
from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from click.testing import CliRunner

from dataaudit.clean import DROPPED, STATE
from dataaudit.cli import main

WORDS = "river stone cloud garden lantern harbor meadow violin copper thunder orchard pebble canyon".split()
NONFINITE_ROWS = (3, 17)     # nonfinite (error)
NOT_IMAGE_ROW = 9            # not_an_image (error)
DUPLICATE_ROW = 21           # same text as row 20: dedup drops it
CONTAMINATED_ROW = 30        # its text is the benchmark's item


def png(rng) -> bytes:
    from PIL import Image

    b = io.BytesIO()
    Image.fromarray(rng.integers(0, 255, (64, 64, 3), dtype=np.uint8)).save(b, "PNG")
    return b.getvalue()


def parquet_table(n: int = 40) -> pa.Table:
    rng = np.random.default_rng(0)
    text = [" ".join(rng.choice(WORDS, 20)) + f" number {i}" for i in range(n)]
    text[DUPLICATE_ROW] = text[DUPLICATE_ROW - 1]
    x = [[float(v) for v in rng.normal(size=4)] for _ in range(n)]
    x[NONFINITE_ROWS[0]][0], x[NONFINITE_ROWS[1]][2] = float("nan"), float("inf")
    imgs = [png(rng) for _ in range(n)]
    imgs[NOT_IMAGE_ROW] = b"not an image at all"
    t = pa.table({"text": text, "x": pa.array(x, pa.list_(pa.float32())),
                  "meta": pa.array([{"source": "s", "n": i, "tags": ["a"] * (i % 3)} for i in range(n)]),
                  "png": pa.array(imgs, pa.binary())})
    return t.replace_schema_metadata({"origin": "clean-test"})


def write_parquet_corpus(folder: Path) -> Path:
    """folder/data/pq/part-0.parquet (zstd, row groups of 8) and folder/bench.jsonl (row 30's text)."""
    t = parquet_table()
    (folder / "data" / "pq").mkdir(parents=True)
    path = folder / "data" / "pq" / "part-0.parquet"
    pq.write_table(t, path, row_group_size=8, compression="zstd")
    (folder / "bench.jsonl").write_text(json.dumps({"q": t.column("text")[CONTAMINATED_ROW].as_py()}) + "\n")
    return path


def cli(*args) -> tuple[int, str]:
    r = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return r.exit_code, r.output


def flags(audit_dir: Path) -> pa.Table:
    return pq.read_table(audit_dir / "flags.parquet")


def flagged_rows(audit_dir: Path, severities=("error",)) -> dict[str, list[int]]:
    """{shard file name: sorted rows flagged at these severities}."""
    out: dict[str, set] = {}
    for r in flags(audit_dir).to_pylist():
        if r["severity"] in severities:
            out.setdefault(Path(r["shard"]).name, set()).add(r["row"])
    return {k: sorted(v) for k, v in out.items()}


def fake_audit(folder: Path, flagged: dict[str, list[int]], counts: dict[str, int], *, status: dict | None = None
               ) -> Path:
    """An audit output folder as `dataaudit audit` writes it (report.json shards with fingerprints, flags.parquet),
    without running the audit: `flagged` {path: rows flagged `nonfinite` (error)}."""
    from dataaudit.audit.batch import FLAG_SCHEMA
    from dataaudit.sources.fingerprint import shard_fingerprint

    folder.mkdir(parents=True, exist_ok=True)
    status = status or {}
    shards = [{"path": p, "samples": n, "status": status.get(p, "ok"), "error": None if p not in status else "broken",
               "fingerprint": shard_fingerprint(p)} for p, n in counts.items()]
    (folder / "report.json").write_text(json.dumps({"schema_version": 1, "shards": shards}))
    recs = [{"shard": p, "key": str(r), "row": r, "field": "x", "role": None, "check": "nonfinite",
             "severity": "error", "value": 1.0, "detail": "planted"} for p, rows in flagged.items() for r in rows]
    pq.write_table(pa.Table.from_pylist(recs, FLAG_SCHEMA), folder / "flags.parquet")
    return folder


def outputs(out: Path) -> dict[str, bytes]:
    """Every file under `out` but clean's own folder (its record and page hold the run's times; the parts), and
    the dropped table, by relative path: what two runs must write alike."""
    found = {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
             if p.is_file() and STATE not in p.relative_to(out).parts}
    if (out / DROPPED).exists():
        found[DROPPED] = (out / DROPPED).read_bytes()
    return found
