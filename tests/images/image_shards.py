"""Small image shards for the image tests, made with Pillow from generated pictures (they need no real data)."""
from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from click.testing import CliRunner

from dataaudit.cli import main


def picture(w: int = 96, h: int = 72, seed: int = 0, fmt: str = "JPEG", mode: str = "RGB") -> bytes:
    """A textured picture (waves whose frequencies and phases depend on the seed, plus noise: not blank, and
    pictures of different seeds look different to a perceptual hash), encoded."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w] / np.array([max(h, 1), max(w, 1)])[:, None, None]
    fx, fy = rng.integers(1, 5, 3), rng.integers(1, 5, 3)
    phase = rng.uniform(0, 2 * np.pi, 3)
    base = np.stack([127 + 100 * np.sin(2 * np.pi * (fx[c] * x + fy[c] * y) + phase[c]) for c in range(3)], -1)
    arr = np.clip(base + rng.integers(-30, 30, base.shape), 0, 255).astype(np.uint8)
    im = Image.fromarray(arr, "RGB")
    if mode != "RGB":
        im = im.convert(mode)
    buf = io.BytesIO()
    im.save(buf, fmt)
    return buf.getvalue()


def blank(w: int = 80, h: int = 80, colour=(30, 120, 200)) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (w, h), colour).save(buf, "JPEG", quality=90)
    return buf.getvalue()


def write_parquet(path: Path, columns: dict) -> Path:
    pq.write_table(pa.table(columns), path)
    return path


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def cli_audit(paths: list, out: Path, config_text: str | None = None):
    """(click result, report.json or None, flags as rows (shard name, key, field, check))."""
    args = ["audit", *map(str, paths), "--out", str(out), "--engine", "local"]
    if config_text is not None:
        cfg = out.parent / f"{out.name}.toml"
        cfg.write_text(config_text)
        args += ["--config", str(cfg)]
    res = CliRunner().invoke(main, args)
    if not (out / "report.json").exists():
        return res, None, None
    flags = pq.read_table(out / "flags.parquet").to_pylist()
    rows = sorted((Path(f["shard"]).name, f["key"], f["field"], f["check"]) for f in flags)
    return res, json.loads((out / "report.json").read_text()), rows
