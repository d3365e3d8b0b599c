"""Turn the command line's shard arguments (files, folders, globs) into a checked list of shard paths."""
from __future__ import annotations

import glob
import os

from dataaudit.sources import holds_json_array, shard_format


class InputPathError(ValueError):
    """A shard argument that names nothing usable; the message names it."""


def _walked(path: str) -> bool:
    """Whether a folder walk takes this file. A .json file only when it holds an array of records: the metadata
    objects beside shards (manifest.json, dataset_info.json) are no data. Named explicitly, any .json is read."""
    try:
        fmt = shard_format(path)
    except ValueError:
        return False
    return fmt != "json" or holds_json_array(path)


def expand_shards(args: list[str]) -> list[str]:
    """Files as given, folders walked (sorted), globs expanded (sorted); duplicates dropped, order kept."""
    paths: list[str] = []
    for arg in args:
        if glob.has_magic(arg):
            matches = sorted(m for m in glob.glob(arg, recursive=True) if os.path.isfile(m))
            if not matches:
                raise InputPathError(f"{arg}: no file matches this pattern")
            paths += matches
        elif os.path.isdir(arg):
            found = sorted(p for root, _, files in os.walk(arg) for p in (os.path.join(root, f) for f in files)
                           if _walked(p))
            if not found:
                raise InputPathError(f"{arg}: folder holds no Parquet, WebDataset, JSONL or JSON-array shard")
            paths += found
        elif os.path.isfile(arg):
            try:
                shard_format(arg)
            except ValueError as exc:
                raise InputPathError(str(exc)) from None
            paths.append(arg)
        else:
            raise InputPathError(f"{arg}: path not found")
    return list(dict.fromkeys(paths))
