"""Turn the command line's shard arguments (files, folders, globs) into a checked list of shard paths."""
from __future__ import annotations

import os
from glob import has_magic

from dataaudit.errors import DataAuditError


class InputPathError(DataAuditError, ValueError):
    """A shard argument that names nothing usable; the message names it."""


def _walked(path: str) -> bool:
    """Whether a folder walk takes this file: a file of a known format that its format claims (a .json file only
    when it holds an array of records: the metadata objects beside shards are no data). Named, any is read."""
    from dataaudit.formats import format_of   # the readers load when a command runs

    try:
        fmt = format_of(path)
    except ValueError:
        return False
    return fmt.walked(path)


def job_files() -> dict[str, tuple[str, ...]]:
    """Each job's record (a folder holding one is a dataaudit output folder) -> the tables it writes there, from
    the jobs' own declarations (`FILES` of each command's package)."""
    from dataaudit import audit, clean, contamination, dedup, tokenization

    return {f.record: f.tables for f in (audit.FILES, clean.FILES, dedup.FILES, contamination.FILES,
                                         tokenization.FILES)}


def _walk(folder: str) -> list[str]:
    """Every shard file under `folder`, sorted, without the files dataaudit jobs wrote there: a job's tables, and
    its part and work folders (a cleaned dataset written by `clean` sits beside them and is walked as usual), and
    `clean`'s hidden folder of its own files inside a cleaned dataset."""
    from dataaudit import clean, contamination
    from dataaudit.io import is_file, join, walk
    from dataaudit.outputs import PARTS, WORK

    own = job_files()
    found = []
    for root, dirs, files in walk(folder):
        dirs[:] = [d for d in dirs if d != clean.STATE]
        records = [r for r in own if r in files]
        skip = {f for r in records for f in own[r]}
        if records:
            dirs[:] = [d for d in dirs if d not in (PARTS, WORK)]
        if is_file(join(os.path.dirname(root), contamination.FILES.record)):
            skip.update(contamination.FILES.nested)        # each benchmark's folder of a contamination run
        found += [p for f in files if f not in skip for p in (join(root, f),) if _walked(p)]
    return sorted(found)


def _unreachable_object(arg: str) -> bool:
    """Whether `arg` is a URI naming a shard (its name has a shard format's suffix) that cannot be looked at now: not
    there, forbidden, or its server not answering. It is taken as a shard all the same, so that the job reports it
    `unreadable` with the provider's message and goes on with the others (one missing object of thousands must not
    stop a job). A URI naming a prefix that cannot be listed is one line, exit 2: there is nothing to report."""
    from dataaudit.formats import format_of
    from dataaudit.io import exists, is_uri

    if not is_uri(arg) or arg.endswith("/"):
        return False
    try:
        format_of(arg)
    except ValueError:
        return False
    try:
        return not exists(arg)
    except OSError:
        return True


def _looked_at(arg: str, look):
    """`look(arg)` (is_dir, is_file, glob, _walk), an OSError of a URI's store (forbidden, no server) as one line
    naming it."""
    from dataaudit.sources.batch import one_line

    try:
        return look(arg)
    except OSError as exc:
        raise InputPathError(f"{arg}: {one_line(exc)}") from None


def expand_shards(args: list[str]) -> list[str]:
    """Files as given, folders walked (sorted; the files of dataaudit's own jobs left out), globs expanded (sorted);
    duplicates dropped, order kept."""
    from dataaudit.formats import format_of, titles   # the readers load when a command runs, not for `--help`
    from dataaudit.io import glob, is_dir, is_file, special

    paths: list[str] = []
    for arg in args:
        if has_magic(arg):
            matches = _looked_at(arg, glob)
            if not matches:
                raise InputPathError(f"{arg}: no file matches this pattern")
            # LLaMA-Factory's dataset registry beside the shards describes them; it is not one
            matches = [m for m in matches if os.path.basename(m) != "dataset_info.json"]
            for m in matches:      # each match is a named file: an unsupported one is the same one line
                try:
                    format_of(m)
                except ValueError as exc:
                    raise InputPathError(str(exc)) from None
            paths += matches
        elif _unreachable_object(arg):
            paths.append(arg)
        elif _looked_at(arg, is_dir):
            found = _looked_at(arg, _walk)
            if not found:
                raise InputPathError(f"{arg}: folder holds no {titles()} shard")
            paths += found
        elif _looked_at(arg, is_file):
            if os.path.basename(arg) == "dataset_info.json":
                raise InputPathError(f"{arg}: LLaMA-Factory's dataset registry, not a shard (it is read beside "
                                     "the shards it lists, or named with --dataset-info)")
            try:
                format_of(arg)
            except ValueError as exc:
                raise InputPathError(str(exc)) from None
            paths.append(arg)
        else:
            what = special(arg)
            raise InputPathError(f"{arg}: " + (f"not a regular file ({what})" if what else "path not found"))
    return list(dict.fromkeys(paths))
