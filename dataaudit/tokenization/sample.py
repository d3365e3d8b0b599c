"""Sample texts for the behavioural diff from shards, through the audit's readers and the shared field rule."""
from __future__ import annotations

import math
from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.texts import DocumentText
from dataaudit.errors import DataAuditError
from dataaudit.formats import iter_shard, read_schema
from dataaudit.sources import ERROR, KEY, ShardReadError
from dataaudit.tokenization.behaviour import TextSet


class SampleError(DataAuditError, ValueError):
    """A sample shard that cannot be used; the message is one line naming the file."""


def read_sample(paths: list[str], max_texts: int, text_field: tuple[str, ...] | None = None,
                on_shard: Callable[[int, int], None] | None = None, into: TextSet | None = None) -> TextSet:
    """The first ceil(max_texts / shards) non-null texts of each shard, in shard order (max_texts 0: all)."""
    out = into if into is not None else TextSet()
    quota = math.ceil(max_texts / len(paths)) if max_texts and paths else None
    for done, path in enumerate(paths, 1):
        taken = 0
        document = DocumentText(text_field)
        try:
            columns = document.columns(read_schema(path))
            if columns == []:
                raise SampleError(_no_text(path, text_field))
            for batch in iter_shard(path, columns=columns):
                if quota is not None and taken >= quota:
                    break
                if not document.fields(batch):
                    if batch.num_rows and pc.all(pc.is_valid(batch.column(ERROR))).as_py():
                        continue      # every record of this batch is unreadable: no columns to look at
                    raise SampleError(_no_text(path, text_field))
                out.text_fields.setdefault(path, document.label)
                texts = document(batch)
                ok = pc.and_(pc.is_null(batch.column(ERROR)), pc.is_valid(texts))
                texts = texts.filter(ok)
                keys = batch.column(KEY).filter(ok)
                if quota is not None:
                    texts, keys = texts.slice(0, quota - taken), keys.slice(0, quota - taken)
                out.texts.extend(texts.to_pylist())
                out.kinds.extend(["sample"] * len(texts))
                out.labels.extend(f"{path}#{key}" for key in keys.to_pylist())
                taken += len(texts)
        except ShardReadError as exc:
            raise SampleError(f"{path}: {exc}") from None
        except pa.ArrowException as exc:
            raise SampleError(f"{path}: {' '.join(str(exc).split())}") from None
        if on_shard:
            on_shard(done, len(out))
    return out


def _no_text(path: str, text_field: tuple[str, ...] | None) -> str:
    if text_field:
        return f"{path}: no text field {', '.join(text_field)!r}"
    return f"{path}: no text field (no string, list of strings or conversation column; use --text-field)"
