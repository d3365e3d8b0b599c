"""The media files a cleaned shard's kept records reference by path, copied next to it at the same relative paths,
so the cleaned dataset loads on its own: the image path fields of the field rule (`image`, `images: [...]`, even
without an extension), and any string of a kept record, at any depth, that ends in a media extension (images, video,
audio: `videos: [...]`, `audios: [...]`, content parts; dataaudit.clean.media_refs) and names a file.

Only files inside the input shard's folder are copied (dataaudit.images.media.resolve_inside: the rule the audit
applies); a reference that is missing or leaves the folder is counted, never followed. The copy goes to the path the
record names (through a symlinked folder too: the cleaned shard names it so), and never onto a file of the job's
own: a reference to another shard's file name is refused, not copied over that shard's cleaned output. Each file is
copied to a temporary name and renamed (never hard-linked: editing a cleaned image must not edit the original).
"""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa

from dataaudit.fields import FieldSpec, resolve_schema
from dataaudit.formats import iter_shard
from dataaudit.images.batch import flat_images
from dataaudit.images.media import resolve_inside
from dataaudit.io import copy_file, is_file, is_uri, join, parent, stat
from dataaudit.sources import PROVENANCE_COLUMNS, ROW

from .media_refs import media_strings


def _kept_paths(src: str, drop: np.ndarray, image_field: tuple[str, ...] | None, text_unit: str) -> set[str]:
    """The path values of the image path fields, and the media-like strings (any field, any depth), of the records
    not in `drop` (sorted rows)."""
    wanted: set[str] = set()
    path_fields: dict[pa.Schema, list] = {}    # the image path fields of each schema, as the audit's plan has them
    for batch in iter_shard(src, batch_rows=8192, text_unit=text_unit):
        row = batch.schema.get_field_index(ROW)
        kept_rows = ~np.isin(batch.column(row).to_numpy(), drop)
        kept = batch.filter(pa.array(kept_rows))
        wanted |= media_strings(c for name, c in zip(kept.schema.names, kept.columns)   # the record's own fields
                                if name not in PROVENANCE_COLUMNS)
        fields = path_fields.get(batch.schema)
        if fields is None:   # from the first batch of the schema, as the audit resolves its fields (once, not per batch)
            fields = path_fields[batch.schema] = [
                c for c in resolve_schema(batch.schema, FieldSpec(image=image_field), batch).images
                if c.image == "path" and c.parts_of is None]
        if not fields:
            continue
        for col in fields:
            values, which, _ = flat_images(batch.column(batch.schema.get_field_index(col.name)), col.many)
            take = np.flatnonzero(kept_rows[which])
            wanted.update(v for v in values.take(pa.array(take, pa.int64())).to_pylist() if v)
    return wanted


def _target(dst_root: str, ref: str, protected: frozenset[str]) -> str | None:
    """Where the copy of `ref` goes: the reference as written, under the cleaned shard's folder (not where its
    symlinks resolve: the cleaned shard refers to it by that name); None when that leaves the folder or is, or is
    inside, one of the job's own files or folders (`protected`, resolved: the shard outputs, clean's record, parts)."""
    rel = os.path.normpath(ref)
    if rel in (".", "..") or rel.startswith(".." + os.sep) or os.path.isabs(rel):
        return None
    target = join(dst_root, rel)
    place = os.path.realpath(target)
    while place not in protected:
        parent = os.path.dirname(place)
        if parent == place:
            return target
        place = parent
    return None


def copy_referenced(src: str, dst: str | os.PathLike, drop: np.ndarray,
                    image_field: tuple[str, ...] | None = None, protected: frozenset[str] = frozenset(),
                    text_unit: str = "line") -> dict:
    """Copy the files the kept records of `src` reference into the folder of `dst`, each at the path the record
    names; returns {"referenced_files": copied or already there, "referenced_missing": missing or outside the
    folder} and, when there are any, "referenced_refused": references whose copy would land on one of the job's
    own files (`protected`: resolved paths of every shard output and of clean's files), never written."""
    src_root = parent(src) if is_uri(src) else os.path.realpath(os.path.dirname(os.path.abspath(src)))
    dst_root = os.path.dirname(os.fspath(dst))
    present = missing = refused = 0
    for ref in sorted(_kept_paths(src, drop, image_field, text_unit)):
        full, _ = resolve_inside(src_root, ref) if "://" not in ref and not ref.startswith("data:") else (None, "URL")
        if full is None or not is_file(full):
            missing += 1
            continue
        target = _target(dst_root, ref, protected)
        if target is None:
            refused += 1
            continue
        if not (is_file(target) and stat(target).size == stat(full).size):
            copy_file(full, target)
        present += 1
    return {"referenced_files": present, "referenced_missing": missing, **({"referenced_refused": refused}
                                                                            if refused else {})}
