"""Turn the command line's shard arguments (files, folders, globs) into a checked list of shard paths."""
from __future__ import annotations

import glob
import os


class InputPathError(ValueError):
    """A shard argument that names nothing usable; the message names it."""


def _walked(path: str) -> bool:
    """Whether a folder walk takes this file. A .json file only when it holds an array of records: the metadata
    objects beside shards (manifest.json, dataset_info.json) are no data. Named explicitly, any .json is read."""
    from dataaudit.sources import holds_json_array, shard_format   # the readers load when a command runs

    try:
        fmt = shard_format(path)
    except ValueError:
        return False
    return fmt != "json" or holds_json_array(path)


# A folder holding one of these job records is a dataaudit output folder: a folder walk skips the job's own files
# and work folders there (a cleaned dataset written by `clean` sits beside them and is walked as usual).
JOB_FILES = {
    "report.json": ("flags.parquet",),
    "clean.json": ("dropped.parquet",),
    "dedup.json": ("clusters.parquet", "keep.parquet", "overlap.parquet"),
    "contamination.json": ("decontaminate.parquet",),
}
JOB_FOLDERS = ("parts", "work")


def _walk(folder: str) -> list[str]:
    """Every shard file under `folder`, sorted, without the files dataaudit jobs wrote there."""
    found = []
    for root, dirs, files in os.walk(folder):
        records = [r for r in JOB_FILES if r in files]
        skip = {f for r in records for f in JOB_FILES[r]}
        if records:
            dirs[:] = [d for d in dirs if d not in JOB_FOLDERS]
        if os.path.isfile(os.path.join(os.path.dirname(root), "contamination.json")):
            skip.add("items.parquet")        # each benchmark's folder of a contamination run
        found += [p for f in files if f not in skip for p in (os.path.join(root, f),) if _walked(p)]
    return sorted(found)


def expand_shards(args: list[str]) -> list[str]:
    """Files as given, folders walked (sorted; the files of dataaudit's own jobs left out), globs expanded (sorted);
    duplicates dropped, order kept."""
    from dataaudit.sources import shard_format   # the readers load when a command runs, not for `--help`

    paths: list[str] = []
    for arg in args:
        if glob.has_magic(arg):
            matches = sorted(m for m in glob.glob(arg, recursive=True) if os.path.isfile(m))
            if not matches:
                raise InputPathError(f"{arg}: no file matches this pattern")
            paths += matches
        elif os.path.isdir(arg):
            found = _walk(arg)
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
