"""dedup.json's examples: a few clusters and validation overlaps with their documents' text (for the HTML
page), each shard read only until the rows wanted are found."""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa

from dataaudit.handlers import READ_ERRORS
from dataaudit.formats import iter_shard, read_schema
from dataaudit.sources import ROW
from dataaudit.texts import DocumentText

from .clusters import Clusters
from .corpus import Corpus

EXAMPLE_CLUSTERS = 8
EXAMPLE_MEMBERS = 4
EXAMPLE_CHARS = 1500


def _texts_of_shard(path: str, rows: set[int], configured: tuple[str, ...] | None,
                    text_unit: str) -> dict[tuple[str, int], str]:
    """Texts of the given rows of one shard (read, text columns only, until they are all found)."""
    out = {}
    left = set(rows)
    text = DocumentText(configured)
    try:
        for batch in iter_shard(path, text.columns(read_schema(path)), batch_rows=8192, text_unit=text_unit):
            r = batch.column(batch.schema.get_field_index(ROW)).to_numpy()
            hit = np.flatnonzero(np.isin(r, list(left)))
            if len(hit):
                texts = text(batch.take(pa.array(hit))).to_pylist()
                for i, t in zip(hit.tolist(), texts):
                    out[(path, int(r[i]))] = t if t is None else t[:EXAMPLE_CHARS]
                    left.discard(int(r[i]))
            if not left:
                break
    except READ_ERRORS:
        pass
    return out


def _fetch_texts(wanted: dict[str, set[int]], configured: tuple[str, ...] | None,
                 text_unit: str) -> dict[tuple[str, int], str]:
    """Texts of a few (shard, row) for the HTML examples: the shards read at once on a few threads (decoding
    releases the GIL)."""
    out = {}
    if not wanted:
        return out
    with ThreadPoolExecutor(min(len(wanted), os.cpu_count() or 1, 4)) as pool:
        for found in pool.map(_texts_of_shard, wanted, wanted.values(), [configured] * len(wanted),
                              [text_unit] * len(wanted)):
            out.update(found)
    return out


def examples(clusters: Clusters, train: Corpus, val: Corpus, val_examples: list,
             configured: tuple[str, ...] | None = None, text_unit: str = "line") -> dict:
    """A few clusters (the largest, then ones with near duplicates) and validation overlaps, with text."""
    ct, kind = clusters.table, clusters.kind
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
    texts = _fetch_texts(wanted, configured, text_unit)
    gids = np.array([m["gid"] for c in meta for m in c["members"]], np.int64)
    keys, lines = train.column(gids, "key"), train.column(gids, "line")
    for c in meta:
        for m in c["members"]:
            m["line"] = lines.get(m["gid"])
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
