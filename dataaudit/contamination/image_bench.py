"""Image benchmarks: `--benchmark NAME=IMAGES`, where IMAGES is a folder of images, a WebDataset tar or a Parquet
file whose records hold images (the field rule's image fields, dataaudit.fields).

Each image is one benchmark item, with an id: the file's path in the folder without its extension (the file name
for a flat folder; with it, when two files differ by extension only); the sample key of a tar; the `id`-like field of a Parquet record (else its row), followed by
`/FIELD` when a record holds several images. The images are hashed as `dedup-images` hashes them
(dataaudit.dedup.image_hashes: bounded decode, paths inside the benchmark's folder only) and matched against every
training image by the one rule of `dedup-images --against` (dataaudit.images.overlap: same bytes, near pHash, near
pHash of the mirror image).

A path is an image benchmark when it is a folder (its image files), or a tar or Parquet file whose first records
hold an image field and no field spec (`NAME=PATH:FIELD`) names text to match: a text benchmark file loads as before.
"""
from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.fields import IMAGE_EXTENSIONS, FieldSpec, resolve_schema
from dataaudit.formats import MAX_RECORD, format_of
from dataaudit.io import is_dir, is_file, walk
from dataaudit.images.batch import Limits
from dataaudit.provenance import ERROR, KEY, LINE, ROW, WARNING

from .load import BenchmarkError

IMAGE_FORMATS = ("webdataset", "parquet")
ID_FIELDS = ("id", "image_id", "uid", "idx", "index", "key")
MAX_IMAGES = 1_000_000        # a benchmark is small; a folder walk stops with an error past this
HASHES = ("digest", "phash", "flipped", "decoded", "nbytes")


@dataclass
class ImageBenchmark:
    """One image benchmark. Per image (parallel arrays, in record order then field order): its id, record (0-based
    record of the file; in a folder, the file's position in sorted order) and field path."""
    name: str
    path: str
    format: str                      # folder | webdataset | parquet
    id_is: str                       # how ids are made: "file name", "key", "field", "row number"
    id_field: str | None
    ids: list[str]
    record: np.ndarray
    where: list[str]
    records: int
    hashes: dict[str, np.ndarray]
    image_field: str | None
    files: list[str] | None = None   # folder: each record's file, relative to the folder
    bytes_only: int = 0              # images of low detail, compared by their bytes only
    warnings: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ids)

    def describe(self) -> dict:
        return {"path": self.path, "format": self.format, "id_is": self.id_is, "id_field": self.id_field,
                "image_field": self.image_field}


def _walk_images(folder: str) -> list[str]:
    """The image files under `folder` (relative paths, sorted; hidden entries left out)."""
    out = []
    for root, dirs, files in walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for f in sorted(files):
            if not f.startswith(".") and f.rsplit(".", 1)[-1].lower() in IMAGE_EXTENSIONS:
                out.append(os.path.relpath(os.path.join(root, f), folder))
                if len(out) > MAX_IMAGES:
                    raise BenchmarkError(f"{folder}: more than {MAX_IMAGES} images; a benchmark is expected to be "
                                         "small")
    return out


def image_format(path: str, fields: tuple[str, ...] | None) -> str | None:
    """`folder`, `webdataset` or `parquet` when `path` is an image benchmark; None for a text benchmark."""
    if is_dir(path):
        return "folder"
    if fields:
        return None                   # NAME=PATH:FIELD names the text to match
    try:
        fmt = format_of(path)
    except ValueError:
        return None
    if fmt.name not in IMAGE_FORMATS or not is_file(path):
        return None
    try:
        batch = next(iter(fmt.read(path, None, 64, MAX_RECORD, True, "line")), None)
    except Exception:                 # unreadable: the text loader says why, in one line
        return None
    if batch is None:
        return None
    return fmt.name if resolve_schema(batch.schema, FieldSpec(), batch).images else None


def _folder_batches(files: list[str], rows: int):
    """A folder's images as record batches of `rows` records (an `image` path each, keyed by the file's name), so
    no more than a batch of images is decoded at once."""
    for start in range(0, len(files), rows):
        part = files[start:start + rows]
        n = len(part)
        yield pa.record_batch({"image": pa.array(part, pa.string()),
                               KEY: pa.array([os.path.splitext(f)[0] for f in part], pa.string()),
                               ROW: pa.array(np.arange(start, start + n, dtype=np.int64)),
                               LINE: pa.nulls(n, pa.int64()), ERROR: pa.nulls(n, pa.string()),
                               WARNING: pa.nulls(n, pa.string())})


def _flat(part: pa.Table, paths: bool = True) -> tuple[np.ndarray, dict[str, np.ndarray], list[str] | None]:
    """(record row, hashes, field path or None) of every image of a part table (dataaudit.dedup.image_hashes)."""
    lists = part.column("images").combine_chunks()
    lengths = pc.fill_null(pc.list_value_length(lists), 0).to_numpy(zero_copy_only=False)
    rows = part.column("row").to_numpy(zero_copy_only=False)
    owner = np.repeat(rows.astype(np.int64), lengths)
    flat = lists.flatten()
    hashes = {h: flat.field(h).to_numpy(zero_copy_only=False) for h in HASHES}
    hashes["decoded"] = hashes["decoded"].astype(bool)
    return owner, hashes, flat.field("path").to_pylist() if paths else None


def _parquet_ids(path: str, id_field: str | None, records: int) -> tuple[list[str] | None, str | None]:
    import pyarrow.parquet as pq

    names = pq.read_schema(path).names
    chosen = id_field or next((f for f in ID_FIELDS if f in names), None)
    if chosen is None:
        return None, None
    if chosen not in names:
        raise BenchmarkError(f"{path}: id field {chosen!r} not found (columns: {', '.join(names[:20])})")
    values = pq.read_table(path, columns=[chosen]).column(chosen).to_pylist()
    if len(values) != records or any(v is None or v == "" or isinstance(v, (dict, list)) for v in values):
        bad = next((i for i, v in enumerate(values) if v is None or v == "" or isinstance(v, (dict, list))), 0)
        raise BenchmarkError(f"{path}: row {bad}: id field {chosen!r} is empty or not a value")
    return [str(v) for v in values], chosen


def load_image_benchmark(name: str, path: str, fmt: str, id_field: str | None = None,
                         limits: Limits = Limits()) -> ImageBenchmark:
    """Hash every image of an image benchmark (BenchmarkError: one line naming the file)."""
    from dataaudit.dedup.image_hashes import ImageDedupSpec, hash_batch, hash_shard

    spec = ImageDedupSpec(limits=limits)
    path = os.fspath(path)
    files = None
    if fmt == "folder":
        files = _walk_images(path)
        if not files:
            raise BenchmarkError(f"{path}: folder holds no image file ({', '.join(IMAGE_EXTENSIONS)})")
        folder_spec = ImageDedupSpec(image_field=("image",), limits=limits)
        part = pa.concat_tables([hash_batch(batch, folder_spec, path)[0] for batch in _folder_batches(files,
                                                                                                  spec.batch_rows)])
        records, image_field = len(files), None
    else:
        summary, part = hash_shard(path, spec)
        if summary["status"] != "ok":
            raise BenchmarkError(f"{path}: cannot read it: {summary['error']}")
        records, image_field = summary["records"], summary["image_field"]
    owner, hashes, where = _flat(part)
    keys = part.column("key").to_pylist()
    if fmt == "folder":     # two files that differ by extension only (a.jpg, a.png): each keeps its extension
        stems = [os.path.splitext(f)[0] for f in files]
        seen = Counter(stems)
        rec_ids = [f if seen[x] > 1 else x for f, x in zip(files, stems)]
        id_is = "file name"
        where = [files[r] for r in owner.tolist()]
    elif fmt == "webdataset":
        rec_ids, id_is = keys, "key"
    else:
        rec_ids, id_field = _parquet_ids(path, id_field, records)
        id_is = "field" if rec_ids is not None else "row number"
        rec_ids = rec_ids if rec_ids is not None else [str(r) for r in range(records)]
    per_record = np.bincount(owner, minlength=records)
    ids = [rec_ids[r] if per_record[r] == 1 else f"{rec_ids[r]}/{w}" for r, w in zip(owner.tolist(), where)]
    bench = ImageBenchmark(name=name, path=path, format=fmt, id_is=id_is, id_field=id_field if fmt == "parquet"
                           else None, ids=ids, record=owner, where=where, records=records, hashes=hashes,
                           image_field=image_field, files=files)
    if not len(bench):
        raise BenchmarkError(f"{path}: no image found in its {records} record(s)")
    empty = int((hashes["nbytes"] <= 0).sum())
    undecoded = int((~hashes["decoded"] & (hashes["nbytes"] > 0)).sum())
    if empty:
        bench.warnings.append(f"{empty} image(s) without bytes (missing or empty file): not checked, never counted "
                              "clean (left out of the clean subset)")
    if undecoded:
        bench.warnings.append(f"{undecoded} image(s) that do not decode: matched by their bytes only")
    if np.any(per_record == 0):
        bench.warnings.append(f"{int((per_record == 0).sum())} record(s) without an image: not checked, kept in "
                              "the clean subset")
    uniq, counts = np.unique(np.array(ids, object), return_counts=True)
    if (counts > 1).any():
        bench.warnings.append(f"{int((counts > 1).sum())} image ids occur more than once (first: "
                              f"{uniq[counts > 1][0]!r}); images are told apart by their index")
    add_crop_hashes(bench, limits)
    return bench


def image_bytes(bench: ImageBenchmark, wanted, limits: Limits):
    """(index, bytes) of each benchmark image in `wanted` (indices in hashing order), read again as it was hashed
    (paths inside the benchmark's folder only, each file bounded by `limits.max_bytes`)."""
    from dataaudit.dedup.image_hashes import image_order
    from dataaudit.formats import BY_NAME
    from dataaudit.images.batch import ImageBatch

    want = set(np.asarray(wanted).tolist())
    if not want:
        return
    if bench.format == "folder":
        batches, folder, spec = _folder_batches(bench.files, 256), bench.path, FieldSpec(image=("image",))
    else:
        batches = BY_NAME[bench.format].read(bench.path, None, 256, MAX_RECORD, True, "line")
        folder, spec = os.path.dirname(bench.path), FieldSpec()
    base, last = 0, max(want)
    for batch in batches:
        ib = ImageBatch.of(batch, resolve_schema(batch.schema, spec, batch).images, folder, limits)
        order = image_order(ib) if len(ib) else np.zeros(0, np.int64)
        for k, i in enumerate(order.tolist()):
            if base + k in want and ib.nbytes[i] > 0:
                data = ib.media.fetch(i)
                if isinstance(data, bytes):
                    yield base + k, data
        base += len(order)
        if base > last:
            break


def add_crop_hashes(bench: ImageBenchmark, limits: Limits) -> None:
    """The hashes of every decoded benchmark image with a few percent cut from its borders, and of their mirror
    images (dataaudit.images.overlap.border_crop_hashes): border-cropped training copies match them."""
    from dataaudit.images.overlap import BORDER_CROPS, LOW_DETAIL, border_crop_hashes

    n, v = len(bench), len(BORDER_CROPS)
    crops, flipped, has = np.zeros((n, v), np.uint64), np.zeros((n, v), np.uint64), np.zeros(n, bool)
    flat = np.zeros(n, bool)
    for i, data in image_bytes(bench, np.flatnonzero(bench.hashes["decoded"]), limits):
        got = border_crop_hashes(data, limits.max_pixels)
        if got is not None:
            crops[i], flipped[i], has[i] = got[0], got[1], True
            flat[i] = got[2] < LOW_DETAIL
    # a nearly flat picture: its hashes match unrelated pictures, so it is compared by its bytes only
    bench.hashes["decoded"] = bench.hashes["decoded"] & ~flat
    bench.hashes.update(crops=crops, crops_flipped=flipped, has_crops=has & ~flat)
    bench.bytes_only = int(flat.sum())
    if flat.any():
        bench.warnings.append(f"{int(flat.sum())} image(s) of low detail (grey std under {LOW_DETAIL:g} of 255 at "
                              "32x32): matched by their bytes only (the perceptual hash of a nearly flat picture "
                              "matches unrelated ones)")
