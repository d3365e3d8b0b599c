"""Image benchmarks against the training images: which benchmark images leaked, into which training records (shard,
key, row, the image's field path), with what kind of copy; each benchmark's items table, clean subset, summary
(with thumbnails of the leaked images) and clean ids."""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from dataaudit.atomic import write_parquet
from dataaudit.images.overlap import KINDS, image_pairs
from dataaudit.io import copy_file, join, makedirs, remove_tree

from . import CLEAN_SUBSET, ITEMS
from .image_bench import HASHES, ImageBenchmark, _flat, image_bytes


def image_hashing(max_distance: int):
    """The training images' hash stage of image benchmarks, dedup-images' own: (its spec, the schema of its parts,
    the per-shard stage)."""
    from dataaudit.dedup.image_hashes import PART_SCHEMA, ImageDedupSpec, hash_shard
    from dataaudit.images.batch import Limits

    return ImageDedupSpec(max_distance=max_distance, limits=Limits()), PART_SCHEMA, hash_shard

MATCH = pa.struct([("shard", pa.string()), ("key", pa.string()), ("row", pa.int64()), ("line", pa.int64()),
                   ("field", pa.string()), ("match", pa.string())])
ITEMS_SCHEMA = pa.schema([("index", pa.int64()), ("id", pa.string()), ("record", pa.int64()), ("field", pa.string()),
                          ("contaminated", pa.bool_()), ("checked", pa.bool_()), ("match", pa.string()),
                          ("train_records", pa.int64()), ("matches", pa.list_(MATCH))])
MAX_LISTED = 100        # leaked images listed (with thumbnails) in contamination.json and the page, per benchmark


@dataclass
class TrainImages:
    """Every training image with bytes: its shard, its record's row, its position in the shard's flattened part."""
    shard: np.ndarray
    row: np.ndarray
    at: np.ndarray
    hashes: dict[str, np.ndarray]


def train_images(parts) -> TrainImages:
    """From (shard index, part table) of the training shards (dataaudit.dedup.image_hashes parts)."""
    shard, row, at, cols = [], [], [], {h: [] for h in HASHES}
    for s, part in parts:
        owner, hashes, _ = _flat(part, paths=False)
        keep = np.flatnonzero(hashes["nbytes"] > 0)     # an image without bytes: nothing to compare
        shard.append(np.full(len(keep), s, np.int64))
        row.append(owner[keep])
        at.append(keep)
        for h in HASHES:
            cols[h].append(hashes[h][keep])
    cat = lambda x, t: np.concatenate(x).astype(t) if x else np.zeros(0, t)   # noqa: E731
    return TrainImages(cat(shard, np.int64), cat(row, np.int64), cat(at, np.int64),
                       {"digest": cat(cols["digest"], np.uint64), "phash": cat(cols["phash"], np.uint64),
                        "flipped": cat(cols["flipped"], np.uint64), "decoded": cat(cols["decoded"], bool),
                        "nbytes": cat(cols["nbytes"], np.int64)})


@dataclass
class ImageVerdicts:
    checked: np.ndarray        # bool per benchmark image: it has bytes
    kind: np.ndarray           # int8 per benchmark image: 0 exact, 1 near, 2 flipped, 3 none
    records: np.ndarray        # int64: distinct training records holding a copy
    pairs: tuple               # (benchmark image, training image, kind), sorted by benchmark image, kind, shard, row

    @property
    def contaminated(self) -> np.ndarray:
        return self.kind < 3


def match_benchmark(bench: ImageBenchmark, train: TrainImages, max_distance: int) -> ImageVerdicts:
    n = len(bench)
    checked = bench.hashes["nbytes"] > 0
    sel = np.flatnonzero(checked)
    sub = {h: bench.hashes[h][sel] for h in HASHES + ("crops", "crops_flipped", "has_crops") if h in bench.hashes}
    ti, bj, kind = image_pairs(train.hashes, sub, max_distance, every_b=True)
    bj = sel[bj]
    o = np.lexsort((train.row[ti], train.shard[ti], kind, bj))
    ti, bj, kind = ti[o], bj[o], kind[o]
    best = np.full(n, 3, np.int8)
    records = np.zeros(n, np.int64)
    if len(bj):
        _, first = np.unique(bj, return_index=True)
        best[bj[first]] = kind[first]
        # distinct (benchmark image, shard, row)
        key = np.stack([bj, train.shard[ti], train.row[ti]], axis=1)
        uniq = np.unique(key, axis=0)
        records = np.bincount(uniq[:, 0], minlength=n).astype(np.int64)
    return ImageVerdicts(checked, best, records, (bj, ti, kind))


def _match_rows(v: ImageVerdicts, train: TrainImages, train_paths: list[str], read_part, max_matches: int
                ) -> dict[int, list[dict]]:
    """The first `max_matches` training records of each leaked benchmark image (best kind first, then corpus
    order), each with the field path of its matching image."""
    bj, ti, kind = v.pairs
    keep = np.zeros(len(bj), bool)
    if len(bj):
        rec = np.stack([bj, train.shard[ti], train.row[ti]], axis=1)
        new = np.ones(len(bj), bool)
        new[1:] = np.any(rec[1:] != rec[:-1], axis=1) if len(bj) > 1 else new[1:]
        # pairs are sorted by image, kind, shard, row: a record's first pair is its best; rank within the image
        firsts = np.flatnonzero(new)
        start = np.ones(len(firsts), bool)
        start[1:] = bj[firsts[1:]] != bj[firsts[:-1]]
        group = np.cumsum(start) - 1
        rank = np.arange(len(firsts)) - np.flatnonzero(start)[group]
        keep[firsts[rank < max_matches]] = True
    out: dict[int, list[dict]] = {}
    sel = np.flatnonzero(keep)
    for s in np.unique(train.shard[ti[sel]]).tolist():
        mine = sel[train.shard[ti[sel]] == s]
        part = read_part(s)
        _, _, paths = _flat(part)
        rows = part.column("row").to_numpy(zero_copy_only=False)
        pos = np.searchsorted(rows, train.row[ti[mine]])     # part rows are in shard order
        keys, lines = part.column("key").to_pylist(), part.column("line").to_pylist()
        for m, p in zip(mine.tolist(), pos.tolist()):
            out.setdefault(int(bj[m]), []).append({
                "shard": train_paths[s], "key": keys[p], "row": int(train.row[ti[m]]), "line": lines[p],
                "field": paths[int(train.at[ti[m]])], "match": KINDS[int(kind[m])], "_order": m})
    for lst in out.values():
        lst.sort(key=lambda r: r.pop("_order"))
    return out


def items_table(bench: ImageBenchmark, v: ImageVerdicts, matches: dict[int, list[dict]]) -> pa.Table:
    names = np.array(KINDS + (None,), object)
    return pa.table({"index": pa.array(np.arange(len(bench))), "id": pa.array(bench.ids, pa.string()),
                     "record": pa.array(bench.record), "field": pa.array(bench.where, pa.string()),
                     "contaminated": pa.array(v.contaminated), "checked": pa.array(v.checked),
                     "match": pa.array(names[v.kind].tolist(), pa.string()), "train_records": pa.array(v.records),
                     "matches": pa.array([matches.get(i, []) for i in range(len(bench))], pa.list_(MATCH))},
                    schema=ITEMS_SCHEMA)


def clean_records(bench: ImageBenchmark, v: ImageVerdicts) -> np.ndarray:
    """Per benchmark record: none of its images leaked, and every one was checked (a record without an image: kept,
    said in the benchmark's warnings)."""
    bad = np.zeros(bench.records, bool)
    bad[bench.record[v.contaminated | ~v.checked]] = True
    return ~bad


def write_clean_images(bench: ImageBenchmark, keep: np.ndarray, folder: str) -> list[str]:
    """The clean subset in the benchmark's own form: a folder of the clean image files (`clean/`, relative paths
    kept), or the clean records rewritten by the format's writer (`clean.tar`, `clean.parquet`)."""
    from dataaudit.formats import BY_NAME
    from dataaudit.writers.base import WriteOptions

    if bench.format == "folder":
        dst = join(folder, CLEAN_SUBSET)
        remove_tree(dst)
        for r in np.flatnonzero(keep).tolist():
            target = join(dst, bench.files[r])
            makedirs(os.path.dirname(target))
            copy_file(join(bench.path, bench.files[r]), target)
        makedirs(dst)
        return [CLEAN_SUBSET + "/"]
    fmt = BY_NAME[bench.format]
    own = f"{CLEAN_SUBSET}{fmt.suffixes[0]}"
    fmt.write(bench.path, join(folder, own), np.flatnonzero(~keep), bench.records, WriteOptions(compress=False))
    return [own]


def thumbnails(bench: ImageBenchmark, wanted: np.ndarray, limits) -> dict[int, str | None]:
    """A thumbnail (PNG data URI, at most 64 px) of each benchmark image in `wanted`, read again."""
    import base64

    from dataaudit.images.probe import thumbnail_png

    out = {}
    for i, data in image_bytes(bench, wanted, limits):
        png = thumbnail_png(data, max_pixels=limits.max_pixels)
        out[i] = None if png is None else "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    return out


def train_thumbnails(train_paths: list[str], wanted: list[dict], limits) -> None:
    """Add `thumbnail` (a PNG data URI, at most 64 px; None where it does not decode) to each match in `wanted`
    ({shard, row, field}), its training image read again: only the batches holding a wanted record are probed, and
    only those records."""
    from dataaudit.fields import FieldSpec, resolve_schema
    from dataaudit.formats import iter_shard
    from dataaudit.images.batch import ImageBatch
    from dataaudit.provenance import ROW

    by_shard: dict[str, dict[tuple[int, str], list[dict]]] = {}
    for m in wanted:
        m["thumbnail"] = None
        by_shard.setdefault(m["shard"], {}).setdefault((m["row"], m["field"]), []).append(m)
    for path, want in by_shard.items():
        rows = np.array(sorted({r for r, _ in want}), np.int64)
        try:
            for batch in iter_shard(path, batch_rows=1024):
                got = batch.column(batch.schema.get_field_index(ROW)).to_numpy(zero_copy_only=False)
                keep = np.flatnonzero(np.isin(got, rows))
                if not len(keep):
                    continue
                sub = batch.take(pa.array(keep))
                ib = ImageBatch.of(sub, resolve_schema(sub.schema, FieldSpec(), sub).images, os.path.dirname(path),
                                   limits)
                for k, (field, t) in enumerate(zip(ib.paths(np.arange(len(ib))), ib.thumbnails(range(len(ib))))):
                    for m in want.get((int(got[keep[ib.rows[k]]]), field), []):
                        m["thumbnail"] = t
                if got[-1] >= rows[-1]:
                    break
        except Exception:   # noqa: BLE001  (read at hashing time; gone or changed since: no thumbnail, said as None)
            continue


def benchmark_summary(bench: ImageBenchmark, v: ImageVerdicts, matches: dict[int, list[dict]], files: list[str],
                      thumbs: dict[int, str | None], max_distance: int) -> dict:
    leaked = np.flatnonzero(v.contaminated)
    counts = np.bincount(v.kind[leaked].astype(np.int64), minlength=3) if len(leaked) else np.zeros(3, np.int64)
    return {"kind": "images", **bench.describe(), "items": len(bench), "records": bench.records,
            "contaminated": int(len(leaked)), "rate": float(len(leaked) / len(bench)) if len(bench) else 0.0,
            "not_checked": int((~v.checked).sum()), "bytes_only": bench.bytes_only, "max_distance": max_distance,
            **{k: int(c) for k, c in zip(KINDS, counts.tolist())},
            "files": files, "warnings": list(bench.warnings),
            "leaked": [{"index": int(i), "id": bench.ids[i], "record": int(bench.record[i]), "field": bench.where[i],
                        "match": KINDS[int(v.kind[i])], "train_records": int(v.records[i]),
                        "thumbnail": thumbs.get(int(i)), "matches": matches.get(int(i), [])}
                       for i in leaked[:MAX_LISTED].tolist()]}


def clean_ids_entry(bench: ImageBenchmark, v: ImageVerdicts) -> dict:
    """clean_ids.json's entry: the clean images' ids, and the clean records' rows (0-based record of the file; in
    a folder, the file's position in sorted order)."""
    keep = clean_records(bench, v)
    clean = np.flatnonzero(~v.contaminated & v.checked)
    return {"path": bench.path, "id_field": bench.id_field, "id_is": bench.id_is, "items": len(bench),
            "clean": int(len(clean)), "ids": [bench.ids[i] for i in clean.tolist()],
            "rows": np.flatnonzero(keep).tolist(), "short_items_found": []}


def image_benchmark_outputs(out_dir, bench: ImageBenchmark, v: ImageVerdicts, train: TrainImages,
                            train_paths: list[str], read_part, max_matches: int, max_distance: int, limits) -> dict:
    """Write `<name>/items.parquet` and the clean subset; -> the benchmark's summary for contamination.json."""
    folder = join(out_dir, bench.name)
    matches = _match_rows(v, train, train_paths, read_part, max_matches)
    write_parquet(join(folder, ITEMS), [items_table(bench, v, matches)], ITEMS_SCHEMA)
    files = [ITEMS] + write_clean_images(bench, clean_records(bench, v), folder)
    listed = np.flatnonzero(v.contaminated)[:MAX_LISTED]
    thumbs = thumbnails(bench, listed, limits)
    train_thumbnails(train_paths, [m for i in listed.tolist() for m in matches.get(i, [])], limits)
    return benchmark_summary(bench, v, matches, [f"{bench.name}/{f}" for f in files], thumbs, max_distance)


def decontaminate_rows(bench: ImageBenchmark, v: ImageVerdicts, train: TrainImages) -> list[tuple[int, int, str]]:
    """(shard, row, `<benchmark>/<image id>`) of every training record holding a leaked benchmark image."""
    bj, ti, _ = v.pairs
    if not len(bj):
        return []
    rec = np.unique(np.stack([train.shard[ti], train.row[ti], bj], axis=1), axis=0)
    return [(s, r, f"{bench.name}/{bench.ids[b]}") for s, r, b in rec.tolist()]


def merge_decontaminate(tables, image_rows: list[tuple[int, int, str]], train_paths: list[str], read_part):
    """The text scan's drop-list tables (per shard) with the image benchmarks' records added: one row per training
    record, in corpus order, with every item it holds."""
    from .results import DECON_SCHEMA

    if not image_rows:
        yield from tables
        return
    rows: dict[tuple[int, int], list] = {}
    at = {p: i for i, p in enumerate(train_paths)}
    for t in tables:
        for r in t.to_pylist():
            rows[(at[r["shard"]], r["row"])] = [r["key"], r["line"], list(r["items"])]
    need: dict[int, list] = {}
    for s, r, label in image_rows:
        if (s, r) in rows:
            rows[(s, r)][2].append(label)
        else:
            need.setdefault(s, []).append((r, label))
    for s, got in need.items():
        part = read_part(s)
        prow = part.column("row").to_numpy(zero_copy_only=False)
        keys, lines = part.column("key").to_pylist(), part.column("line").to_pylist()
        for r, label in got:
            p = int(np.searchsorted(prow, r))
            entry = rows.setdefault((s, r), [keys[p], lines[p], []])
            entry[2].append(label)
    order = sorted(rows)
    yield pa.table({"shard": pa.array([train_paths[s] for s, _ in order], pa.string()),
                    "key": pa.array([rows[k][0] for k in order], pa.string()),
                    "row": pa.array([r for _, r in order], pa.int64()),
                    "line": pa.array([rows[k][1] for k in order], pa.int64()),
                    "items": pa.array([sorted(set(rows[k][2])) for k in order], pa.list_(pa.string()))},
                   schema=DECON_SCHEMA)


def text_free_summaries(image_summaries: list[dict]) -> list[dict]:
    """The training shards' entries of contamination.json when only image benchmarks were given (no text read)."""
    return [{"path": s["path"], "status": s["status"], "error": s["error"], "records": s["records"],
             "unreadable_records": 0, "text_field": None, "words": 0, "matches": 0,
             "fingerprint": s.get("fingerprint")} for s in image_summaries]


def add_image_report(report: dict, image_reports: dict, image_summaries: list[dict], max_distance: int) -> None:
    """contamination.json's `image_benchmarks`, the training shards' image fields, and the totals and notes."""
    t = report["totals"]
    t["benchmarks"] += len(image_reports)
    t["items"] += sum(b["items"] for b in image_reports.values())
    t["contaminated"] += sum(b["contaminated"] for b in image_reports.values())
    t["image_items"] = sum(b["items"] for b in image_reports.values())
    t["images_contaminated"] = sum(b["contaminated"] for b in image_reports.values())
    t["train_images"] = sum(s.get("images", 0) for s in image_summaries)
    t["unreadable_shards"] = max(t["unreadable_shards"], sum(s["status"] != "ok" for s in image_summaries))
    report["image_benchmarks"] = image_reports
    report["train"]["image_shards"] = [{k: s.get(k) for k in ("path", "status", "error", "records", "images",
                                                              "no_image", "undecodable", "image_field")}
                                       for s in image_summaries]
    report["methods"]["image"] = {
        "enabled": True, "max_distance": max_distance, "contaminated": t["images_contaminated"],
        "rule": "a training image has the same bytes as the benchmark image (exact), a pHash within max_distance "
                "bits of its pHash (near: re-encoded, resized, slightly cropped) or of its mirror image's (flipped)"}
    none = [s["path"] for s in image_summaries if s["status"] == "ok" and s["records"] and not s.get("image_field")]
    if none:
        report["notes"].append(f"{len(none)} training shard(s) hold no image field (first: {none[0]}): image "
                               "benchmarks not checked against them")
    bad = sum(s.get("undecodable", 0) for s in image_summaries)
    if bad:
        report["notes"].append(f"{bad} training image(s) do not decode: matched against image benchmarks by their "
                               "bytes only")
    for name, b in image_reports.items():
        if b["not_checked"]:
            report["notes"].append(f"{name}: {b['not_checked']} benchmark image(s) without bytes: not checked "
                                   "(left out of the clean subset and clean ids)")
