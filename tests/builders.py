"""Small builders for test shards: tars from (member name, bytes) pairs and .npy member bytes."""
from __future__ import annotations

import io
import tarfile
from pathlib import Path

import numpy as np


def make_tar(path: Path, members: list[tuple[str, bytes]], mode: str = "w",
             format: int = tarfile.DEFAULT_FORMAT) -> Path:
    with tarfile.open(path, mode, format=format) as tf:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def npy_bytes(a: np.ndarray) -> bytes:
    # allow_pickle only matters for object arrays, which tests write on purpose to see them refused.
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=True)
    return buf.getvalue()
