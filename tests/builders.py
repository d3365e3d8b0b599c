"""Small builders for test shards: tars from (member name, bytes) pairs and .npy member bytes; HOSTILE_HTML, data
that a page must show as text."""
from __future__ import annotations

import io
import tarfile
from pathlib import Path

import numpy as np

# Would change a page's title if it ran; a page must show it as text. No dot after its last slash: it is also a
# WebDataset key (a tar member `HOSTILE_HTML.txt`: the key is the member's path up to the first dot of its basename).
HOSTILE_HTML = "<script>document.title='pwned'</script><img src=x onerror=\"document['title']='pwned'\">"


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
