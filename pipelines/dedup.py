"""The dedup job: signatures per shard, band hashes shuffled into partitions, clusters, outputs.

Stages (the shard is the unit of work, failure and resume, as in the audit):

1. sign    one unit per shard (in-process or one Ray task per shard): `dataaudit.dedup.sign_shard` ->
           OUT/parts/{train,val}-NNNNN-<digest>.sig.parquet (+ a .json marker written last). A rerun with the
           same signature settings skips finished shards, whatever the threshold or verification setting.
2. map     one unit per shard: band hashes of its non-empty documents and their exact (XXH3-128) hashes,
           hash-partitioned into P partitions: OUT/work/{bands,exact}-<side>-NNNNN.arrow, an Arrow IPC file
           whose record batch p holds partition p (read back memory-mapped, batch by batch).
3. reduce  one unit per partition: every shard's batch p, sorted by key; runs of equal keys give exact
           edges, near (band) edges and validation->train matches. Only this partition is in memory, so the
           peak is about 1/P of the band entries; P grows with the corpus (`partitions="auto"`).
4. cluster on the driver, from edges only: optional exact-Jaccard verification of near edges, connected
           components (scipy.sparse.csgraph) over the documents that have an edge, the first document of each
           cluster (corpus order) kept.

A document is known by its global index (gid): train shards in the order given, rows in shard order, then
the validation shards. Empty documents (no shingle after normalization) and unreadable records never enter
stages 2-4: they are counted, and kept in the keep-list, never clustered.

With --engine ray on a multi-node cluster, OUT must be on storage that every node sees (stage 2 and 3
exchange the partition files through it).
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import shutil
import time
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from dataaudit.dedup import DedupSpec, band_hashes, cluster_table, jaccard_pairs, sign_shard, unique_edges
from dataaudit.dedup.clusters import components
from dataaudit.dedup.lsh import all_pair_edges, runs, star_edges
from dataaudit.report.atomic import remove_stale_temps, write_json, write_parquet
from pipelines.engine import choose_engine, package_version, ray_init
from pipelines.units import _fingerprint_digest

SCHEMA_VERSION = 1
PARTITION_BYTES = 64 << 20       # auto partitions: about this much band/exact entries per reduce unit
VERIFY_ALL_PAIRS = 32            # with verification, runs up to this size give every pair (else a star)
MAX_MATCHES = 20                 # train matches listed per validation sample (all are counted)
EXAMPLE_CLUSTERS = 8
EXAMPLE_MEMBERS = 4
EXAMPLE_CHARS = 1500

CLUSTER_SCHEMA = pa.schema([pa.field("shard", pa.string()), pa.field("key", pa.string()),
                            pa.field("row", pa.int64()), pa.field("cluster_id", pa.int64()),
                            pa.field("is_representative", pa.bool_()), pa.field("kind", pa.string()),
                            pa.field("cluster_size", pa.int64()), pa.field("exact_group", pa.int64())])
KEEP_SCHEMA = pa.schema([pa.field("shard", pa.string()), pa.field("key", pa.string()),
                         pa.field("row", pa.int64())])
_MATCH = pa.struct([pa.field("shard", pa.string()), pa.field("key", pa.string()), pa.field("row", pa.int64()),
                    pa.field("kind", pa.string())])
OVERLAP_SCHEMA = pa.schema([pa.field("shard", pa.string()), pa.field("key", pa.string()),
                            pa.field("row", pa.int64()), pa.field("match", pa.string()),
                            pa.field("train_matches", pa.int64()), pa.field("train", pa.list_(_MATCH))])


# ------------------------------------------------------------------------------------------ stage 1: parts

class SignatureStore:
    """OUT/parts/<side>-<index>-<path digest>.sig.parquet + .json marker (written last = shard finished)."""

    def __init__(self, out_dir: Path, fingerprint: dict, side: str):
        self.dir = Path(out_dir) / "parts"
        self.digest = _fingerprint_digest(fingerprint)
        self.side = side

    def _stem(self, index: int, path: str) -> Path:
        return self.dir / f"{self.side}-{index:05d}-{hashlib.sha1(path.encode()).hexdigest()[:12]}"

    def table_path(self, index: int, path: str) -> Path:
        return self._stem(index, path).with_suffix(".sig.parquet")

    def load(self, index: int, path: str, need_shingles: bool) -> dict | None:
        try:
            done = json.loads(self._stem(index, path).with_suffix(".json").read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError):
            return None
        if done.get("job") != self.digest or (need_shingles and not done.get("shingles")):
            return None
        if not self.table_path(index, path).exists():
            return None
        return done["summary"]

    def save(self, index: int, path: str, summary: dict, table: pa.Table) -> None:
        write_parquet(self.table_path(index, path), [table], table.schema)
        write_json(self._stem(index, path).with_suffix(".json"),
                   {"job": self.digest, "shingles": "shingles" in table.column_names, "summary": summary})

    def read(self, index: int, path: str, columns: list[str]) -> pa.Table:
        return pq.read_table(self.table_path(index, path), columns=columns, memory_map=True)


def _sign_local(pending, spec, with_shingles, on_done, on_rows):
    for store, index, path in pending:
        summary, table = sign_shard(path, spec, with_shingles, on_batch=on_rows)
        on_done(store, index, path, summary, table)


def _sign_ray(pending, spec, with_shingles, on_done, ray_address):
    ray = ray_init(ray_address)

    @ray.remote(max_retries=3)
    def sign_task(path, spec, with_shingles):
        return sign_shard(path, spec, with_shingles)

    spec_ref = ray.put(spec)
    futures = {sign_task.remote(path, spec_ref, with_shingles): (store, index, path)
               for store, index, path in pending}
    remaining = list(futures)
    while remaining:
        done, remaining = ray.wait(remaining, num_returns=1)
        store, index, path = futures[done[0]]
        summary, table = ray.get(done[0])
        on_done(store, index, path, summary, table)


# ------------------------------------------------------------------------------------------ stage 2: map

def _partition_of(keys: np.ndarray, parts: int) -> np.ndarray:
    return (keys % np.uint64(parts)).astype(np.int64) if parts > 1 else np.zeros(len(keys), np.int64)


def _write_partitioned(path: Path, columns: dict[str, np.ndarray], part: np.ndarray, parts: int) -> None:
    order = np.argsort(part, kind="stable")
    bounds = np.searchsorted(part[order], np.arange(parts + 1))
    table = pa.table({k: pa.array(v[order]) for k, v in columns.items()})
    tmp = path.with_name("." + path.name + ".tmp")
    with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        for p in range(parts):
            writer.write_batch(table.slice(bounds[p], bounds[p + 1] - bounds[p]).to_batches(max_chunksize=None)[0]
                               if bounds[p + 1] > bounds[p] else pa.RecordBatch.from_pylist([], table.schema))
    os.replace(tmp, path)


def map_shard(sig_path: str, base: int, bands: int, rows: int, parts: int, band_file: str,
              exact_file: str) -> int:
    """Stage 2 for one shard's signature part: partitioned (band hash, gid) and (exact hash, gid) entries of
    its non-empty documents. Returns the number of documents entered."""
    table = pq.read_table(sig_path, columns=["count", "exact_hi", "exact_lo", "sig"], memory_map=True)
    count = table.column("count").to_numpy()
    keep = np.flatnonzero(count > 0)
    gid = (base + keep).astype(np.int64)
    hi = table.column("exact_hi").to_numpy()[keep]
    lo = table.column("exact_lo").to_numpy()[keep]
    sig_col = table.column("sig").combine_chunks()
    num_perm = sig_col.type.list_size
    flat = sig_col.values.to_numpy(zero_copy_only=False) if len(sig_col) else np.zeros(0, np.uint32)
    sig = flat.reshape(-1, num_perm)[keep]
    bh = band_hashes(sig, bands, rows)                              # (n, bands)
    keys = bh.reshape(-1)
    bgid = np.repeat(gid, bands)
    _write_partitioned(Path(band_file), {"key": keys, "gid": bgid}, _partition_of(keys, parts), parts)
    _write_partitioned(Path(exact_file), {"hi": hi, "lo": lo, "gid": gid}, _partition_of(hi, parts), parts)
    return len(keep)


# ------------------------------------------------------------------------------------------ stage 3: reduce

def _read_partition(files: list[str], p: int, names: list[str]) -> dict[str, np.ndarray]:
    cols: dict[str, list[np.ndarray]] = {n: [] for n in names}
    for f in files:
        with pa.memory_map(f) as source:
            batch = pa.ipc.open_file(source).get_batch(p)
            for n in names:
                cols[n].append(batch.column(batch.schema.get_field_index(n)).to_numpy(zero_copy_only=False).copy())
    return {n: (np.concatenate(v) if v else np.zeros(0, np.uint64 if n != "gid" else np.int64))
            for n, v in cols.items()}


def _val_pairs(gid: np.ndarray, bounds: np.ndarray, n_train: int, cap: int) -> tuple[np.ndarray, np.ndarray]:
    """(val gid, train gid) for every validation entry of a run that holds train entries (first `cap` of them).
    Within a run entries are in gid order, so its train entries come first."""
    sizes = np.diff(bounds)
    run_id = np.repeat(np.arange(len(sizes)), sizes)
    is_val = gid >= n_train
    ntrain = np.bincount(run_id, weights=~is_val, minlength=len(sizes)).astype(np.int64)
    v = np.flatnonzero(is_val & (ntrain[run_id] > 0))
    if len(v) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    cnt = np.minimum(ntrain[run_id[v]], cap)
    src = np.repeat(gid[v], cnt)
    start = np.repeat(bounds[:-1][run_id[v]], cnt)
    off = np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    return src, gid[start + off]


def reduce_partition(p: int, band_files: list[str], exact_files: list[str], n_train: int,
                     all_pairs: bool) -> dict[str, np.ndarray]:
    """Stage 3 for partition p: exact and near edges among train documents, validation->train matches."""
    out = {}
    e = _read_partition(exact_files, p, ["hi", "lo", "gid"])
    order = np.lexsort((e["gid"], e["lo"], e["hi"]))
    hi, lo, gid = e["hi"][order], e["lo"][order], e["gid"][order]
    if len(gid):
        change = np.flatnonzero((hi[1:] != hi[:-1]) | (lo[1:] != lo[:-1])) + 1
        bounds = np.concatenate(([0], change, [len(gid)])).astype(np.int64)
    else:
        bounds = np.zeros(1, np.int64)
    out["val_exact_src"], out["val_exact_dst"] = _val_pairs(gid, bounds, n_train, MAX_MATCHES)
    tr = gid < n_train
    if len(gid):
        t_hi, t_lo, t_gid = hi[tr], lo[tr], gid[tr]
        if len(t_gid):
            change = np.flatnonzero((t_hi[1:] != t_hi[:-1]) | (t_lo[1:] != t_lo[:-1])) + 1
            tb = np.concatenate(([0], change, [len(t_gid)])).astype(np.int64)
        else:
            tb = np.zeros(1, np.int64)
        out["exact_src"], out["exact_dst"] = star_edges(t_gid, tb)
    else:
        out["exact_src"], out["exact_dst"] = np.zeros(0, np.int64), np.zeros(0, np.int64)
    del e, hi, lo, gid, order

    b = _read_partition(band_files, p, ["key", "gid"])
    order = np.argsort(b["key"], kind="stable")                    # stable: gid order inside a run
    key, gid = b["key"][order], b["gid"][order]
    del b, order
    bounds = runs(key)
    out["val_near_src"], out["val_near_dst"] = _val_pairs(gid, bounds, n_train, MAX_MATCHES)
    tr = gid < n_train
    key, gid = key[tr], gid[tr]
    bounds = runs(key)
    if all_pairs:
        src, dst = all_pair_edges(gid, bounds, VERIFY_ALL_PAIRS)
    else:
        src, dst = star_edges(gid, bounds)
    out["near_src"], out["near_dst"] = unique_edges(src, dst)
    return out


# ------------------------------------------------------------------------------------------ helpers

class Corpus:
    """The shards of one side and their parts: gid <-> (shard, row, key)."""

    def __init__(self, paths: list[str], store: SignatureStore, summaries: list[dict], base0: int):
        self.paths = paths
        self.store = store
        self.summaries = summaries
        counts = np.array([s["samples"] for s in summaries], np.int64)
        self.base = base0 + np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64) if len(counts) \
            else np.zeros(0, np.int64)
        self.total = int(counts.sum())
        self.base0 = base0

    def shard_of(self, gid: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.base, gid, side="right") - 1

    def take(self, gids: np.ndarray, name: str) -> pa.Array:
        """Column `name` of the parts for the given gids (any order, repeats allowed), in that order."""
        gids = np.asarray(gids, np.int64)
        if len(gids) == 0:
            return pa.array([], pa.string()) if name == "key" else pa.array([], pa.int64())
        uniq, inv = np.unique(gids, return_inverse=True)
        sh = self.shard_of(uniq)
        pieces = []
        for s in np.unique(sh):
            sel = uniq[sh == s]
            col = self.store.read(int(s), self.paths[s], [name]).column(name)
            pieces.append(col.take(pa.array(sel - self.base[s])).combine_chunks())
        return pa.concat_arrays(pieces).take(pa.array(inv.astype(np.int64)))

    def column(self, gids: np.ndarray, name: str) -> dict[int, object]:
        """{gid: value of column `name` of its part} for the given gids (one read per shard involved)."""
        gids = np.unique(np.asarray(gids, np.int64))
        out: dict[int, object] = {}
        if len(gids) == 0:
            return out
        sh = self.shard_of(gids)
        for s in np.unique(sh):
            sel = gids[sh == s]
            col = self.store.read(int(s), self.paths[s], [name]).column(name)
            vals = col.take(pa.array(sel - self.base[s])).to_pylist()
            out.update(zip(sel.tolist(), vals))
        return out


def _load_sets(gids: np.ndarray, corpora: list[Corpus]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sorted gids, offsets, values): the unique shingle hashes of each gid, from the parts. Corpora and
    their shards are visited in gid order, so the lists come out in gid order."""
    gids = np.unique(gids)
    values, lens = [], []
    for c in corpora:
        mine = gids[(gids >= c.base0) & (gids < c.base0 + c.total)]
        if len(mine) == 0:
            continue
        sh = c.shard_of(mine)
        for s in np.unique(sh):
            col = c.store.read(int(s), c.paths[s], ["shingles"]).column("shingles").combine_chunks()
            lists = col.take(pa.array(mine[sh == s] - c.base[s]))
            lens.append(np.diff(lists.offsets.to_numpy()))
            values.append(lists.flatten().to_numpy(zero_copy_only=False))
    offsets = np.zeros(len(gids) + 1, np.int64)
    if lens:
        np.cumsum(np.concatenate(lens), out=offsets[1:])
    flat = np.concatenate(values).astype(np.uint64) if values else np.zeros(0, np.uint64)
    return gids, offsets, flat


def _verify(src: np.ndarray, dst: np.ndarray, corpora: list[Corpus], threshold: float
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Keep the pairs whose exact Jaccard of shingle sets is >= threshold; also returns every Jaccard."""
    if len(src) == 0:
        return src, dst, np.zeros(0)
    gids, offsets, flat = _load_sets(np.concatenate([src, dst]), corpora)
    j = jaccard_pairs(flat, offsets, np.searchsorted(gids, src), np.searchsorted(gids, dst))
    ok = j >= threshold
    return src[ok], dst[ok], j


def _histogram(sizes: np.ndarray) -> dict[str, int]:
    bins = [(2, 2), (3, 3), (4, 4), (5, 9), (10, 99), (100, 999), (1000, None)]
    out = {}
    for lo, hi in bins:
        sel = (sizes >= lo) & ((sizes <= hi) if hi is not None else True)
        label = str(lo) if lo == hi else (f"{lo}-{hi}" if hi is not None else f"{lo}+")
        out[label] = int(sel.sum())
    return out


def _fetch_texts(wanted: dict[str, set[int]], field_of: dict[str, str | None]) -> dict[tuple[str, int], str]:
    """Texts of a few (shard, row) for the HTML examples (each shard read until its rows are found)."""
    from dataaudit.dedup.shard import _text_column
    from dataaudit.sources import ROW, ShardReadError, iter_shard

    out = {}
    for path, rows in wanted.items():
        field = field_of.get(path)
        if not field:
            continue
        left = set(rows)
        try:
            for batch in iter_shard(path, [field], batch_rows=8192):
                r = batch.column(batch.schema.get_field_index(ROW)).to_numpy()
                hit = np.flatnonzero(np.isin(r, list(left)))
                if len(hit):
                    texts = _text_column(batch, field).take(pa.array(hit)).to_pylist()
                    for i, t in zip(hit.tolist(), texts):
                        out[(path, int(r[i]))] = t if t is None else t[:EXAMPLE_CHARS]
                        left.discard(int(r[i]))
                if not left:
                    break
        except ShardReadError:
            continue
    return out


# ------------------------------------------------------------------------------------------ the job

def run_dedup(paths: Sequence[str], spec: DedupSpec, out_dir: Path, against: Sequence[str] = (),
              engine: str = "auto", ray_address: str | None = None, partitions: int | str = "auto",
              on_progress: Callable[[str, int, int, int], None] | None = None, html: bool = True) -> dict:
    """Deduplicate `paths` (and compare `against` validation shards with them) into `out_dir`:
    dedup.json, clusters.parquet, keep.parquet, dedup.html (+ overlap.parquet with `against`).
    Returns dedup.json's content. `on_progress(stage, done, total, samples)` reports the signature stage per
    batch (local) or per shard (Ray), then the later stages."""
    out_dir = Path(out_dir)
    remove_stale_temps(out_dir)   # a killed run's half-written files; finished parts are reused
    started = time.time()
    paths, against = list(paths), list(against)
    engine = choose_engine(paths + against, engine, ray_address)
    bands, rows = spec.bands()
    fp = spec.signature_fingerprint()
    stores = {"train": SignatureStore(out_dir, fp, "train"), "val": SignatureStore(out_dir, fp, "val")}
    sides = [("train", paths), ("val", against)]
    summaries: dict[tuple[str, int], dict] = {}
    pending = []
    for side, ps in sides:
        for i, p in enumerate(ps):
            done = stores[side].load(i, p, spec.verify)
            if done is None:
                pending.append((stores[side], i, p))
            else:
                summaries[(side, i)] = done
    total_shards = len(paths) + len(against)
    counted = {"finished": sum(s["samples"] for s in summaries.values()), "current": 0}

    def tell(stage="sign", done=None, total=None):
        if on_progress:
            on_progress(stage, len(summaries) if done is None else done,
                        total_shards if total is None else total, counted["finished"] + counted["current"])

    def on_rows(n):
        counted["current"] += n
        tell()

    def on_done(store, index, path, summary, table):
        store.save(index, path, summary, table)
        summaries[(store.side, index)] = summary
        counted["finished"] += summary["samples"]
        counted["current"] = 0
        tell()

    tell()
    if pending:
        (_sign_ray(pending, spec, spec.verify, on_done, ray_address) if engine == "ray"
         else _sign_local(pending, spec, spec.verify, on_done, on_rows))
    t_sign = time.time() - started

    train = Corpus(paths, stores["train"], [summaries[("train", i)] for i in range(len(paths))], 0)
    val = Corpus(against, stores["val"], [summaries[("val", i)] for i in range(len(against))], train.total)
    n_train = train.total

    # ---- stage 2 + 3: partitioned band hashes -> edges
    t0 = time.time()
    nonempty = sum(s["samples"] - s["empty"] for s in summaries.values())
    if partitions == "auto":
        parts = max(1, math.ceil(nonempty * (16 * bands + 24) / PARTITION_BYTES))
    else:
        parts = int(partitions)
        if parts < 1:
            raise ValueError(f"partitions must be >= 1, got {partitions}")
    work = out_dir / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    maps = []
    for c, side in ((train, "train"), (val, "val")):
        for i, p in enumerate(c.paths):
            maps.append((str(c.store.table_path(i, p)), int(c.base[i]), str(work / f"bands-{side}-{i:05d}.arrow"),
                         str(work / f"exact-{side}-{i:05d}.arrow")))
    band_files = [m[2] for m in maps]
    exact_files = [m[3] for m in maps]
    if engine == "ray":
        ray = ray_init(ray_address)
        map_task = ray.remote(max_retries=3)(map_shard)
        ray.get([map_task.remote(sp, base, bands, rows, parts, bf, ef) for sp, base, bf, ef in maps])
        tell("map", len(maps), len(maps))
        red_task = ray.remote(max_retries=3)(reduce_partition)
        results = ray.get([red_task.remote(p, band_files, exact_files, n_train, spec.verify) for p in range(parts)])
        tell("reduce", parts, parts)
    else:
        for k, (sp, base, bf, ef) in enumerate(maps):
            map_shard(sp, base, bands, rows, parts, bf, ef)
            tell("map", k + 1, len(maps))
        results = []
        for p in range(parts):
            results.append(reduce_partition(p, band_files, exact_files, n_train, spec.verify))
            tell("reduce", p + 1, parts)
    shutil.rmtree(work, ignore_errors=True)

    def cat(name):
        return np.concatenate([r[name] for r in results]) if results else np.zeros(0, np.int64)

    exact_src, exact_dst = unique_edges(cat("exact_src"), cat("exact_dst"))
    near_src, near_dst = unique_edges(cat("near_src"), cat("near_dst"))
    t_lsh = time.time() - t0

    # ---- stage 4: verification and clusters
    t0 = time.time()
    ex_nodes, ex_labels = components(exact_src, exact_dst)

    def exact_group(g):
        pos = np.searchsorted(ex_nodes, g)
        pos = np.minimum(pos, max(len(ex_nodes) - 1, 0))
        hit = (ex_nodes[pos] == g) if len(ex_nodes) else np.zeros(len(g), bool)
        return np.where(hit, ex_labels[pos] if len(ex_nodes) else -1, -1 - g)   # singleton: its own group

    # near edges inside one exact group add nothing
    same = exact_group(near_src) == exact_group(near_dst)
    near_src, near_dst = near_src[~same], near_dst[~same]
    candidates = len(near_src)
    verify_stats = None
    if spec.verify:
        near_src, near_dst, jac = _verify(near_src, near_dst, [train], spec.threshold)
        verify_stats = {"candidate_pairs": candidates, "confirmed_pairs": int(len(near_src)),
                        "rejected_pairs": int(candidates - len(near_src))}
    ct = cluster_table(np.concatenate([exact_src, near_src]), np.concatenate([exact_dst, near_dst]))
    has_exact = np.isin(ct["gid"], ex_nodes)
    kind = np.where(has_exact, "exact", "near")
    exact_id = np.where(has_exact, exact_group(ct["gid"]), -1)     # documents with the same text share it
    rep_mask = ct["is_representative"]
    n_clusters = int(rep_mask.sum())
    dropped = ct["gid"][~rep_mask]

    # validation overlap
    overlap = None
    if against:
        ve_src, ve_dst = cat("val_exact_src"), cat("val_exact_dst")
        vn_src, vn_dst = cat("val_near_src"), cat("val_near_dst")
        pe = np.unique(np.stack([ve_src, ve_dst], 1), axis=0) if len(ve_src) else np.zeros((0, 2), np.int64)
        pn = np.unique(np.stack([vn_src, vn_dst], 1), axis=0) if len(vn_src) else np.zeros((0, 2), np.int64)
        if len(pn) and len(pe):             # a near match that is also exact is listed once, as exact
            void = np.dtype((np.void, 16))
            pn = pn[~np.isin(np.ascontiguousarray(pn).view(void).ravel(), np.ascontiguousarray(pe).view(void).ravel())]
        if spec.verify and len(pn):
            s, d, _ = _verify(pn[:, 0], pn[:, 1], [train, val], spec.threshold)
            pn = np.stack([s, d], 1) if len(s) else np.zeros((0, 2), np.int64)
        overlap = {"exact": pe, "near": pn}
    t_cluster = time.time() - t0

    # ---- outputs
    t0 = time.time()
    order = np.argsort(ct["gid"], kind="stable")
    cg = ct["gid"][order]
    c_shard = train.shard_of(cg)
    fields = {train.paths[i]: train.summaries[i].get("text_field") for i in range(len(paths))}
    fields.update({val.paths[i]: val.summaries[i].get("text_field") for i in range(len(against))})

    def cluster_tables():
        for s in np.unique(c_shard):
            sel = order[c_shard == s]
            local = ct["gid"][sel] - train.base[s]
            keys = train.store.read(int(s), paths[s], ["key"]).column("key").take(pa.array(local))
            yield pa.table({"shard": pa.array([paths[s]] * len(sel), pa.string()), "key": keys,
                            "row": pa.array(local), "cluster_id": pa.array(ct["cluster_id"][sel]),
                            "is_representative": pa.array(rep_mask[sel]), "kind": pa.array(kind[sel]),
                            "cluster_size": pa.array(ct["size"][sel]),
                            "exact_group": pa.array(exact_id[sel])}, schema=CLUSTER_SCHEMA)

    write_parquet(out_dir / "clusters.parquet", cluster_tables(), CLUSTER_SCHEMA)
    drop_sorted = np.sort(dropped)

    def keep_tables():
        for i, p in enumerate(paths):
            t = train.store.read(i, p, ["row", "key"])
            lo_i, hi_i = np.searchsorted(drop_sorted, [train.base[i], train.base[i] + t.num_rows])
            mask = np.ones(t.num_rows, bool)
            mask[drop_sorted[lo_i:hi_i] - train.base[i]] = False
            t = t.filter(pa.array(mask))
            yield pa.table({"shard": pa.array([p] * t.num_rows, pa.string()), "key": t.column("key"),
                            "row": t.column("row")}, schema=KEEP_SCHEMA)

    kept = write_parquet(out_dir / "keep.parquet", keep_tables(), KEEP_SCHEMA)

    against_json = None
    val_examples = []
    if overlap is not None:
        against_json, val_examples = _write_overlap(out_dir, train, val, overlap)

    exact_groups = int(len(np.unique(ex_labels))) if len(ex_labels) else 0
    exact_docs = int(len(ex_nodes))
    removed = int(len(dropped))
    near_docs = int((kind == "near").sum())
    near_clusters = int(len(np.unique(ct["cluster_id"][kind == "near"]))) if near_docs else 0
    sizes = np.bincount(ct["cluster_id"]) if len(ct["cluster_id"]) else np.zeros(0, np.int64)
    samples = train.total
    report = {
        "schema_version": SCHEMA_VERSION,
        "documents": samples,
        "empty_documents": sum(s["empty"] - s["unreadable_records"] for s in train.summaries),
        "unreadable_records": sum(s["unreadable_records"] for s in train.summaries),
        "unreadable_shards": sum(s["status"] != "ok" for s in train.summaries + val.summaries),
        "exact": {"groups": exact_groups, "documents": exact_docs, "duplicates": exact_docs - exact_groups},
        "near": {"clusters": near_clusters, "documents": near_docs, "duplicates": removed - (exact_docs - exact_groups),
                 "candidate_pairs": candidates, "verification": verify_stats},
        "clusters": {"count": n_clusters, "documents": int(len(ct["gid"])), "size_histogram": _histogram(sizes),
                     "largest": int(sizes.max()) if len(sizes) else 0},
        "duplicates": removed,
        "duplicate_rate": round(removed / samples, 6) if samples else 0.0,
        "kept": kept,
        "against": against_json,
        "params": {**spec.as_dict(), "partitions": parts, "minhash_scheme": "datasketch legacy (mod 2^61-1)"},
        # Timings belong to `run`: everything else must be identical between two runs on the same input.
        "shards": [{k: v for k, v in s.items() if k != "seconds"} for s in train.summaries],
        "validation_shards": [{k: v for k, v in s.items() if k != "seconds"} for s in val.summaries],
        "notes": _notes(train.summaries + val.summaries, bands, rows, spec),
    }
    report["examples"] = _examples(ct, kind, order, train, fields, val_examples, val)
    report["run"] = {"engine": engine, "resumed_shards": total_shards - len(pending), "started": started,
                     "seconds": {"sign": round(t_sign, 3), "lsh": round(t_lsh, 3), "cluster": round(t_cluster, 3),
                                 "outputs": round(time.time() - t0, 3), "total": round(time.time() - started, 3),
                                 "shards": [s.get("seconds") for s in train.summaries + val.summaries]},
                     "host": platform.node(), "python": platform.python_version(), "dataaudit": package_version()}
    write_json(out_dir / "dedup.json", report)
    if html:
        from dataaudit.report.pages import write_dedup_html
        write_dedup_html(out_dir / "dedup.html", report)
    return report


def _notes(summaries: list[dict], bands: int, rows: int, spec: DedupSpec) -> list[str]:
    notes = [f"LSH: {bands} bands x {rows} rows of {spec.num_perm} permutations for Jaccard threshold "
             f"{spec.threshold}: a pair with Jaccard exactly {spec.threshold} becomes a candidate with probability "
             f"{1 - (1 - spec.threshold ** rows) ** bands:.2f}, one at {min(spec.threshold + 0.1, 1.0):.2f} with "
             f"{1 - (1 - min(spec.threshold + 0.1, 1.0) ** rows) ** bands:.2f}"]
    for s in summaries:
        if s["status"] != "ok":
            notes.append(f"unreadable shard {s['path']}: {s['error']} (records read before the break are included)")
        elif s.get("error"):
            notes.append(f"{s['path']}: {s['error']}")
    return notes


def _write_overlap(out_dir: Path, train: Corpus, val: Corpus, overlap: dict) -> tuple[dict, list]:
    """overlap.parquet: one row per validation sample with its match status and (up to MAX_MATCHES) train
    samples, exact matches first; built with array operations (no loop over samples)."""
    pe, pn = overlap["exact"], overlap["near"]
    pairs = np.concatenate([pe, pn]).astype(np.int64) if len(pe) + len(pn) else np.zeros((0, 2), np.int64)
    is_near = np.r_[np.zeros(len(pe), bool), np.ones(len(pn), bool)]
    order = np.lexsort((pairs[:, 1], is_near, pairs[:, 0]))
    pairs, is_near = pairs[order], is_near[order]
    vloc = pairs[:, 0] - val.base0                                   # validation sample index (0..total)
    n_val = val.total
    n_matches = np.bincount(vloc, minlength=n_val).astype(np.int64)
    n_exact = np.bincount(vloc[~is_near], minlength=n_val)
    status = np.where(n_exact > 0, "exact", np.where(n_matches > 0, "near", "none"))
    first = np.concatenate(([0], np.cumsum(n_matches)[:-1]))
    rank = np.arange(len(pairs)) - first[vloc] if len(pairs) else np.zeros(0, np.int64)
    listed = rank < MAX_MATCHES
    lp, lnear = pairs[listed], is_near[listed]
    t_shard = train.shard_of(lp[:, 1]) if len(lp) else np.zeros(0, np.int64)
    shard_names = pa.array(train.paths, pa.string()).take(pa.array(t_shard)) if len(lp) else pa.array([], pa.string())
    structs = pa.StructArray.from_arrays(
        [shard_names, train.take(lp[:, 1], "key"), pa.array(lp[:, 1] - train.base[t_shard] if len(lp) else
                                                               np.zeros(0, np.int64)),
         pa.array(np.where(lnear, "near", "exact"), pa.string())], fields=list(_MATCH))
    list_offsets = np.zeros(n_val + 1, np.int64)
    np.cumsum(np.minimum(n_matches, MAX_MATCHES), out=list_offsets[1:])
    lists = pa.ListArray.from_arrays(pa.array(list_offsets.astype(np.int32)), structs)

    def tables():
        for i, p in enumerate(val.paths):
            t = val.store.read(i, p, ["row", "key"])
            lo = int(val.base[i] - val.base0)
            hi = lo + t.num_rows
            yield pa.table({"shard": pa.array([p] * t.num_rows, pa.string()), "key": t.column("key"),
                            "row": t.column("row"), "match": pa.array(status[lo:hi], pa.string()),
                            "train_matches": pa.array(n_matches[lo:hi]), "train": lists.slice(lo, hi - lo)},
                           schema=OVERLAP_SCHEMA)

    write_parquet(out_dir / "overlap.parquet", tables(), OVERLAP_SCHEMA)
    exact_n, near_n = int((status == "exact").sum()), int((status == "near").sum())
    examples = []
    for v in np.flatnonzero(n_matches > 0)[:EXAMPLE_CLUSTERS].tolist():
        g = v + val.base0
        vs = int(val.shard_of(np.array([g]))[0])
        t = int(pairs[first[v], 1])
        ts = int(train.shard_of(np.array([t]))[0])
        examples.append({"val": (val.paths[vs], g - int(val.base[vs])), "train": (train.paths[ts], t - int(train.base[ts])),
                         "kind": str(status[v]), "train_key": train.take(np.array([t]), "key")[0].as_py()})
    samples = val.total
    return ({"validation_samples": samples, "exact": exact_n, "near": near_n, "overlapping": exact_n + near_n,
             "overlap_rate": round((exact_n + near_n) / samples, 6) if samples else 0.0,
             "max_matches_listed": MAX_MATCHES}, examples)


def _examples(ct: dict, kind: np.ndarray, order: np.ndarray, train: Corpus, fields: dict,
              val_examples: list, val: Corpus) -> dict:
    """A few clusters (the largest, then ones with near duplicates) and validation overlaps, with text."""
    if len(ct["gid"]) == 0 and not val_examples:
        return {"clusters": [], "overlap": []}
    cid = ct["cluster_id"]
    picked: list[int] = []
    if len(cid):
        sizes = np.bincount(cid)
        by_size = np.argsort(-sizes, kind="stable")
        has_near = np.unique(cid[kind == "near"])
        for c in list(has_near[:EXAMPLE_CLUSTERS // 2]) + list(by_size[:EXAMPLE_CLUSTERS]):
            if int(c) not in picked and len(picked) < EXAMPLE_CLUSTERS:
                picked.append(int(c))
    members = []
    for c in picked:
        sel = np.flatnonzero(cid == c)
        sel = sel[np.argsort(ct["gid"][sel])][:EXAMPLE_MEMBERS]
        members.append((c, sel))
    wanted: dict[str, set[int]] = {}
    meta = []
    for c, sel in members:
        rows_ = []
        for k in sel.tolist():
            g = int(ct["gid"][k])
            s = int(train.shard_of(np.array([g]))[0])
            row = g - int(train.base[s])
            wanted.setdefault(train.paths[s], set()).add(row)
            rows_.append({"shard": train.paths[s], "row": row, "gid": g, "kind": str(kind[k]),
                          "is_representative": bool(ct["is_representative"][k])})
        meta.append({"cluster_id": c, "size": int(ct["size"][sel[0]]), "members": rows_})
    for ex in val_examples:
        wanted.setdefault(ex["val"][0], set()).add(ex["val"][1])
        wanted.setdefault(ex["train"][0], set()).add(ex["train"][1])
    texts = _fetch_texts(wanted, fields)
    keys = train.column(np.array([m["gid"] for c in meta for m in c["members"]], np.int64), "key")
    for c in meta:
        for m in c["members"]:
            m["key"] = keys.get(m.pop("gid"))
            m["text"] = texts.get((m["shard"], m["row"]))
    ov = []
    for ex in val_examples:
        vkey = val.column(np.array([val.base[val.paths.index(ex["val"][0])] + ex["val"][1]]), "key")
        ov.append({"kind": ex["kind"],
                   "val": {"shard": ex["val"][0], "row": ex["val"][1], "key": next(iter(vkey.values()), None),
                           "text": texts.get(ex["val"])},
                   "train": {"shard": ex["train"][0], "row": ex["train"][1], "key": ex["train_key"],
                             "text": texts.get(ex["train"])}})
    return {"clusters": meta, "overlap": ov}
