"""LLaMA-Factory's dataset registry (`dataset_info.json`): which entry describes a shard, so its `formatting`,
`ranking`, `columns` and `tags` decide the pair layout (dataaudit.fields.PairLayout). The file sits beside the
shards or is named with --dataset-info ([data] dataset_info); it is never itself read as a shard."""
from __future__ import annotations

import functools
import json
import os
from typing import Mapping

from dataaudit.errors import DataAuditError
from dataaudit.io import is_file, read_text

NAME = "dataset_info.json"


class DatasetInfoError(DataAuditError, ValueError):
    """A dataset_info.json that cannot be read: one line."""


@functools.lru_cache(maxsize=16)
def load(path: str) -> dict:
    """The registry at `path` (read once); DatasetInfoError when it is not one."""
    try:
        found = json.loads(read_text(path))
    except (OSError, ValueError) as exc:
        raise DatasetInfoError(f"{path}: not a readable dataset_info.json ({' '.join(str(exc).split())})") from None
    if not isinstance(found, dict):
        raise DatasetInfoError(f"{path}: not a dataset_info.json (expected an object of datasets)")
    return found


def entry_for(shard: str, given: str | None = None) -> Mapping | None:
    """The entry whose `file_name` is this shard (given file, else one beside the shard); None when none."""
    path = given or os.path.join(os.path.dirname(shard), NAME)
    if given is None and not is_file(path):
        return None
    base = os.path.basename(shard)
    for entry in load(path).values():
        if isinstance(entry, dict) and os.path.basename(str(entry.get("file_name", ""))) == base:
            return entry if entry.get("ranking") or (entry.get("columns") or {}).get("kto_tag") else None
    return None


def is_registry(path: str) -> bool:
    return os.path.basename(path) == NAME
