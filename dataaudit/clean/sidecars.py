"""The files beside the shards that describe their folder, copied into the cleaned folder so it loads as the input
did: LLaMA-Factory's `dataset_info.json` (its loader reads the folder through it) and the `*.yaml`/`*.yml` files next
to v1 data.

dataset_info.json names files (`file_name`, relative to its folder): the copy keeps only the entries whose file is
in the cleaned folder (a shard the audit did not read, a file that was never there), and says which it removed and
why. Entries loaded from a hub (`hf_hub_url`, ...) name no local file and are kept as they are. A YAML file is
copied as it is: the files it may name are not checked (said in its entry). Each copy is atomic; a sidecar over
MAX_SIDECAR_BYTES, or a dataset_info.json that is not one, is not copied, and its entry says so.
"""
from __future__ import annotations

import os
from glob import escape

from dataaudit.atomic import write_json
from dataaudit.dataset_info import NAME, DatasetInfoError, load
from dataaudit.images.media import resolve_inside
from dataaudit.io import common_parent, copy_file, exists, glob, is_file, is_uri, join, parent, stat

from .plan import CleanJob

MAX_SIDECAR_BYTES = 64 << 20      # a registry or a YAML file describing a folder is kilobytes
YAML_SUFFIXES = ("*.yaml", "*.yml")
# LLaMA-Factory loads an entry with one of these from a hub or a script: its `file_name`, if any, is not read
REMOTE_KEYS = ("hf_hub_url", "ms_hub_url", "om_hub_url", "script_url", "cloud_file_name")


def _folders(job: CleanJob) -> tuple[dict[str, str], dict[str, str]]:
    """(each input folder holding a cleaned shard -> its folder in --out, the folders between those and the shards'
    common folder -> theirs: a registry there names files in subfolders). A store's folder is a key prefix."""
    found = {parent(p if is_uri(p) else os.path.abspath(p)): os.path.dirname(s.output) for p, s in job.shards.items()}
    top = _common(list(job.shards)) if found else ""
    above: dict[str, str] = {}
    for src, dst in found.items():
        while top and src != top and parent(src) != src:     # (a bucket is its own parent)
            src, dst = parent(src), os.path.dirname(dst)
            if src not in found:
                above[src] = dst
    return dict(sorted(found.items())), dict(sorted(above.items()))


def _common(shards) -> str:
    """The folder above all `shards`; "" when some are local and some in a store (nothing is walked above them)."""
    locations = [p if is_uri(p) else os.path.abspath(p) for p in shards]
    return common_parent(locations) if len({is_uri(p) for p in locations}) == 1 else ""


def _registry(src: str, dst: str) -> dict:
    """dataset_info.json copied with only the entries whose file is in `dst` (its folder in --out)."""
    info = load(src)
    kept, removed = {}, {}
    folder = os.path.dirname(dst)
    for name, entry in info.items():
        if isinstance(entry, dict) and "file_name" in entry and not any(entry.get(k) for k in REMOTE_KEYS):
            target, why = resolve_inside(folder, str(entry["file_name"]))
            if target is None:
                removed[name] = why
                continue
            if not exists(target):
                removed[name] = f"{entry['file_name']} is not in the output"
                continue
        kept[name] = entry
    write_json(dst, kept)
    return {"entries": len(kept), "removed": removed}


def _copy(src: str, dst: str, out: str, rewrite) -> dict:
    entry = {"path": src, "output": os.path.relpath(dst, out)}
    try:
        size = stat(src).size
        if size > MAX_SIDECAR_BYTES:
            return {**entry, "error": f"{size} bytes > {MAX_SIDECAR_BYTES}: not copied"}
        return {**entry, **rewrite(src, dst)}
    except (OSError, DatasetInfoError) as exc:
        return {**entry, "error": f"not copied: {' '.join(str(exc).split())}"}


def _verbatim(src: str, dst: str) -> dict:
    copy_file(src, dst)
    return {"note": "copied as it is: the files it names are not checked"}


def copy_sidecars(job: CleanJob) -> list[dict]:
    """Copy the sidecars of every folder holding a cleaned shard (or above one, up to the shards' common folder);
    one entry per file: {path, output, and
    `entries` kept and `removed` {entry: why} (dataset_info.json), or `note`, or `error` (not copied)}. Call it once
    the shards are written: an entry is kept only when its file is there."""
    done = []
    beside, above = _folders(job)
    for src_dir, dst_dir in sorted({**beside, **above}.items()):
        registry = join(src_dir, NAME)
        if is_file(registry):
            done.append(_copy(registry, join(dst_dir, NAME), job.out, _registry))
        if src_dir not in beside:
            continue           # YAML files only next to the data they describe
        for pattern in YAML_SUFFIXES:
            for src in sorted(glob(join(escape(src_dir), pattern))):
                if is_file(src):
                    done.append(_copy(src, join(dst_dir, os.path.basename(src)), job.out, _verbatim))
    return done
