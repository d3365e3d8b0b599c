"""A small corpus in three formats with planted defects, written locally (then copied to a bucket by the tests)."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tests.builders import make_tar

WORDS = "river stone cloud garden lantern harbor meadow violin copper thunder orchard pebble canyon".split()


def _text(i: int) -> str:
    return " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(12)) + f" number {i}"


def write_corpus(folder: Path) -> Path:
    """folder/train/{a.parquet, b.jsonl, sub/c.tar}: an empty text, a NaN, a broken JSON line, a duplicate text."""
    train = folder / "train"
    (train / "sub").mkdir(parents=True)
    texts = [_text(i) for i in range(60)]
    texts[5] = ""
    texts[9] = texts[8]
    x = [float(i) for i in range(60)]
    x[11] = float("nan")
    pq.write_table(pa.table({"text": texts, "x": x}), train / "a.parquet", row_group_size=16)
    lines = [json.dumps({"text": _text(100 + i), "x": float(i)}) for i in range(40)]
    lines[3] = json.dumps({"text": "   ", "x": 1.0})
    lines[7] = '{"text": "broken'
    (train / "b.jsonl").write_text("\n".join(lines) + "\n")
    members = []
    for i in range(20):
        members.append((f"{i:05d}.txt", ("" if i == 4 else _text(200 + i)).encode()))
        members.append((f"{i:05d}.json", json.dumps({"x": float(i)}).encode()))
    make_tar(train / "sub" / "c.tar", members)
    return train
