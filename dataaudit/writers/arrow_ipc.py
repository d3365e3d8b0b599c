"""Arrow IPC (`.arrow`): the kept records with the input's schema (its metadata included: `datasets` keeps its
features there), as the same kind of IPC (stream or file), one output batch per input batch."""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa

from dataaudit.io import atomic_path

from .base import ShardMismatch, WriteOptions, check_rows


def rewrite_arrow(src: str, dst: str | os.PathLike, drop: np.ndarray, expected: int,
                  options: WriteOptions = WriteOptions()) -> dict:
    """Write `src` without the records in `drop` (sorted) to `dst`; `expected`: the records the audit read (else
    ShardMismatch, nothing written). Returns {"records", "kept"}."""
    from dataaudit.sources.arrow_ipc import arrow_is_stream, open_ipc

    try:
        stream = arrow_is_stream(src)
        schema, batches = open_ipc(src)
    except (pa.ArrowException, OSError) as e:
        raise ShardMismatch(f"{src}: arrow: {e}") from None
    rows = kept = 0
    with atomic_path(dst) as tmp:
        with pa.OSFile(str(tmp), "wb") as sink, \
                (pa.ipc.new_stream if stream else pa.ipc.new_file)(sink, schema) as writer:
            for batch in batches:
                n = batch.num_rows
                local = drop[(drop >= rows) & (drop < rows + n)] - rows
                rows += n
                if local.size:
                    mask = np.ones(n, bool)
                    mask[local] = False
                    batch = batch.filter(pa.array(mask))
                kept += batch.num_rows
                writer.write_batch(batch)
        check_rows(src, rows, expected)
    return {"records": rows, "kept": kept}
