"""Turn the command line's shard arguments (files, folders, globs) into a checked list of shard paths."""
from __future__ import annotations

import glob
import os

from dataaudit.sources import shard_format


class InputPathError(ValueError):
    """A shard argument that names nothing usable; the message names it."""


def _supported(path: str) -> bool:
    try:
        shard_format(path)
    except ValueError:
        return False
    return True


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
            found = sorted(os.path.join(root, f) for root, _, files in os.walk(arg) for f in files
                           if _supported(f))
            if not found:
                raise InputPathError(f"{arg}: folder holds no Parquet, WebDataset or JSONL shard")
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
