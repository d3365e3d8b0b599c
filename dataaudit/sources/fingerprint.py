"""What a shard was when a job read it: its size, its modification time and a hash of every byte.

The audit records it for every shard, so that a later step that acts on the audit's findings (cleaning) can
refuse a shard that changed since: the rows the findings name would no longer be the same records.
"""
from __future__ import annotations

import xxhash

from dataaudit.io import open_input, stat

CHUNK = 8 << 20


def shard_fingerprint(path: str) -> dict:
    """{"size", "mtime_ns", "xxh3_128"} of a file (the hash streams the file in 8 MiB chunks, ~GB/s)."""
    st = stat(path)
    h = xxhash.xxh3_128()
    with open_input(path) as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return {"size": st.size, "mtime_ns": st.mtime_ns, "xxh3_128": h.hexdigest()}


def changed(path: str, recorded: dict) -> str | None:
    """Why `path` is not the file `recorded` describes (None: the same size, time and bytes)."""
    try:
        st = stat(path)
    except OSError as e:
        return f"cannot read it: {e.strerror or e}"
    if st.size != recorded.get("size"):
        return f"its size changed ({recorded.get('size')} -> {st.size} bytes)"
    if st.mtime_ns != recorded.get("mtime_ns"):
        return "its modification time changed"
    if shard_fingerprint(path)["xxh3_128"] != recorded.get("xxh3_128"):
        return "its content changed"
    return None
