"""duplicate_id: a record whose id (the record id column of the field rule: `id`, `uuid`, `*_id`, ...) was already
used by an earlier record of the same shard; ids shared between shards are counted in report.json's
`duplicate_id` section, between id columns of the same name only (one file's `id` and another's `doc_id` are
unrelated numberings, whatever values they share).

The id column is hashed to 64 bits without a per-record Python loop (Arrow casts ints to their decimal text, so
the id 5 and the id "5" are the same id; `word_hash_of` of the UTF-8 bytes, vectorized; XXH3 for the rare id over
1 KiB). Null and empty ids are missing, never duplicates.

The state over a shard is JSON: counts, and the distinct hashes seen so far with the row of each one's first
record, as base64 of little-endian arrays (12 bytes a distinct id: 1M ids are a 16 MB summary), kept in sorted,
disjoint chunks merged like a binary counter, so a batch is looked up with `searchsorted` in a few chunks and
re-encodes only what it merges (amortized O(log n) an id, not O(shard) a batch). Decoded chunks are cached by
the identity of their base64 string; a chunk merged away leaves the cache (memory stays ~28 bytes a distinct id). Merging one shard's state into the total counts the ids the total already
has: the duplicates across shards. Each hash is salted with the id column's name (XOR with its XXH3), so ids of
differently named columns never meet. 64-bit hashes: a false duplicate needs ~4e9 distinct ids to be likely.
"""
from __future__ import annotations

import base64
import threading
from collections import OrderedDict
from typing import Any, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from dataaudit.textops.arrow import as_string_array, string_buffers, to_bool
from dataaudit.textops.hashing import token_hashes_of_strings

from .base import CheckOutput, ShardState, register

EXAMPLES = 5          # duplicates kept per shard and shown in the section
SAMPLE = 32           # ids kept per shard by name (the smallest hashes) to name duplicates across shards
ID_CHARS = 80         # an id as a detail or an example shows it
LONG_ID_BYTES = 1024  # longer ids are hashed one by one (bounded memory; the byte polynomial is for short keys)
_CACHE_BYTES = 256 << 20


# ---------------------------------------------------------------------------------------------- hashing

def _as_text(ids) -> pa.Array:
    """The ids as one string array (ints as their decimal text)."""
    if isinstance(ids, pa.ChunkedArray):
        ids = ids.combine_chunks()
    t = ids.type
    if pa.types.is_dictionary(t):
        ids, t = ids.dictionary_decode(), ids.type.value_type
    if pa.types.is_integer(t) or pa.types.is_null(t):
        return ids.cast(pa.string())
    return as_string_array(ids)


def hash_ids(ids, column: str = "") -> tuple[np.ndarray, np.ndarray]:
    """(uint64 hash of every id, whether it has one): null and empty ids have none (hash 0). `column`: the id
    column's name, salting the hashes (the same id under another column name is another id)."""
    text = _as_text(ids)
    n = len(text)
    out = np.zeros(n, np.uint64)
    offsets, data = string_buffers(text)
    lengths = np.diff(offsets)
    valid = to_bool(pc.is_valid(text)) & (lengths > 0)
    short = np.flatnonzero(valid & (lengths <= LONG_ID_BYTES))
    if short.size:
        out[short] = token_hashes_of_strings(text.take(pa.array(short, pa.int64())))
    for i in np.flatnonzero(valid & (lengths > LONG_ID_BYTES)).tolist():
        out[i] = xxhash.xxh3_64_intdigest(data[offsets[i]:offsets[i + 1]].tobytes())
    if column:
        out[valid] ^= np.uint64(xxhash.xxh3_64_intdigest(column.encode("utf-8")))
    return out, valid


# ---------------------------------------------------------------------------------------------- chunks

_cache: OrderedDict[int, tuple[str, np.ndarray]] = OrderedDict()
_cache_bytes = 0
_lock = threading.Lock()


def _decode(s: str, dtype) -> np.ndarray:
    global _cache_bytes
    with _lock:
        hit = _cache.get(id(s))
        if hit is not None and hit[0] is s:
            _cache.move_to_end(id(s))
            return hit[1]
    arr = np.frombuffer(base64.b64decode(s), dtype)
    with _lock:
        old = _cache.pop(id(s), None)
        _cache_bytes -= old[1].nbytes if old is not None else 0
        _cache[id(s)] = (s, arr)      # holding `s` keeps its id from being reused while cached
        _cache_bytes += arr.nbytes
        while _cache_bytes > _CACHE_BYTES and len(_cache) > 1:
            _cache_bytes -= _cache.popitem(last=False)[1][1].nbytes
    return arr


def _forget(chunk: dict) -> None:
    """Drop a chunk merged away from the cache: the cache holds its strings (to keep their ids), so a stale chunk
    would stay in memory until the cache's budget pushed it out (145 MB for a shard of 620,000 ids)."""
    global _cache_bytes
    with _lock:
        for s in (chunk["hashes"], chunk["rows"]):
            hit = _cache.get(id(s))
            if hit is not None and hit[0] is s:
                del _cache[id(s)]
                _cache_bytes -= hit[1].nbytes


def _encode(a: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(a).tobytes()).decode("ascii")


def _chunk(hashes: np.ndarray, rows: np.ndarray) -> dict:
    """A chunk: sorted distinct hashes and the row of each one's first record (uint32 when they fit)."""
    rows_dt = "<u4" if rows.size == 0 or int(rows.max()) < 2 ** 32 else "<i8"
    return {"n": int(hashes.size), "hashes": _encode(hashes.astype("<u8")), "rows": _encode(rows.astype(rows_dt)),
            "rows_dtype": rows_dt}


def _arrays(chunk: dict) -> tuple[np.ndarray, np.ndarray]:
    return _decode(chunk["hashes"], "<u8"), _decode(chunk["rows"], chunk["rows_dtype"])


def _lookup(chunks: list[dict], query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(is each query hash in the chunks, the first row it maps to (-1: absent))."""
    found = np.zeros(query.size, bool)
    row = np.full(query.size, -1, np.int64)
    for chunk in chunks:
        if not chunk["n"] or not query.size:
            continue
        hashes, rows = _arrays(chunk)
        pos = np.minimum(np.searchsorted(hashes, query), hashes.size - 1)
        hit = hashes[pos] == query
        found |= hit
        row[hit] = rows[pos[hit]]
    return found, row


def _compact(chunks: list[dict]) -> list[dict]:
    """Merge the newest chunks while the newest is at least as large as the one before (a binary counter: an id
    is re-encoded O(log n) times over a shard)."""
    while len(chunks) > 1 and chunks[-1]["n"] >= chunks[-2]["n"]:
        (h1, r1), (h2, r2) = _arrays(chunks[-2]), _arrays(chunks[-1])
        hashes, rows = np.concatenate([h1, h2]), np.concatenate([r1.astype(np.int64), r2.astype(np.int64)])
        order = np.argsort(hashes, kind="stable")
        _forget(chunks[-2])
        _forget(chunks[-1])
        chunks[-2:] = [_chunk(hashes[order], rows[order])]
    return chunks


# ---------------------------------------------------------------------------------------------- state

def _clipped(v: Any) -> Any:
    """An id as examples keep it: a string clipped to ID_CHARS, an int as it is."""
    return v[: ID_CHARS - 1] + "…" if isinstance(v, str) and len(v) > ID_CHARS else v


def _shown(v: Any) -> str:
    """An id as a detail or a note shows it: a string quoted, an int bare."""
    return repr(v) if isinstance(v, str) else str(v)


def empty_state() -> dict:
    return {"records": 0, "ids": 0, "missing": 0, "within": 0, "across": 0, "chunks": [], "sample": [],
            "examples": [], "shared": []}


def distinct(state: dict) -> int:
    return sum(c["n"] for c in state["chunks"])


def _keep_sample(pairs: list) -> list:
    """The SAMPLE smallest hashes (hex, sorted) with their ids."""
    return [[h, v] for h, v in sorted(dict(map(tuple, pairs)).items())[:SAMPLE]]


def merge_state(into: dict, part: dict) -> dict:
    """Fold a batch's part into its shard's state, or a shard's state into the total. Hashes `into` already has
    are duplicates across shards (a batch's part holds only hashes its shard had not seen)."""
    for key in ("records", "ids", "missing", "within", "across"):
        into[key] += part[key]
    shared: list[str] = []
    for chunk in part["chunks"]:
        seen, _ = _lookup(into["chunks"], _arrays(chunk)[0])
        if seen.any():
            hashes, rows = _arrays(chunk)
            into["across"] += int(seen.sum())
            shared += [f"{h:016x}" for h in hashes[seen][: 64 * SAMPLE].tolist()]
            _forget(chunk)
            chunk = _chunk(hashes[~seen], rows[~seen])
        if chunk["n"]:
            into["chunks"].append(chunk)
            into["chunks"] = _compact(into["chunks"])
    if shared or part["shared"]:     # name the shared ids that either side keeps by name
        names = dict(map(tuple, into["sample"] + part["sample"]))
        known = into["shared"] + [p for p in part["shared"] if p not in into["shared"]]
        known += [[h, names[h]] for h in shared if h in names and [h, names[h]] not in known]
        into["shared"] = sorted(known)[:EXAMPLES]
    into["sample"] = _keep_sample(into["sample"] + part["sample"])
    into["examples"] += part["examples"][: max(0, EXAMPLES - len(into["examples"]))]
    return into


def section(total: dict, shards: list[tuple[str, dict | None]], settings, data: Mapping[str, Any]) -> dict | None:
    """report.json's `duplicate_id`: ids, distinct, duplicates within and across shards, examples (None when no
    shard has an id column)."""
    checked = [(p, st) for p, st in shards if st is not None and st["records"]]
    if not settings.enabled or not checked:
        return None
    within = [{"shard": p, **ex} for p, st in checked for ex in st["examples"]][:EXAMPLES]
    across = []
    for h, name in total["shared"]:
        query = np.array([int(h, 16)], np.uint64)
        across.append({"id": name, "shards": [p for p, st in checked if _lookup(st["chunks"], query)[0][0]]})
    dups = total["within"] + total["across"]
    return {
        "severity": settings.severity,
        "shards": len(checked),
        "ids": total["ids"],
        "distinct": distinct(total),
        "missing": total["missing"],
        "duplicates": dups,
        "duplicates_within_shards": total["within"],
        "duplicates_across_shards": total["across"],
        "examples_within_shards": within,
        "examples_across_shards": across,
    }


def notes(section: dict) -> list[str]:
    if not section["duplicates"]:
        return []
    shown = [_shown(e["id"]) for e in section["examples_within_shards"] + section["examples_across_shards"]]
    eg = f"; e.g. {', '.join(dict.fromkeys(shown))}" if shown else ""
    return [f"duplicate_id: {section['duplicates']} of {section['ids']} record ids are repeats "
            f"({section['duplicates_within_shards']} within a shard, {section['duplicates_across_shards']} across "
            f"shards){eg}"]


# ---------------------------------------------------------------------------------------------- the check

@register("duplicate_id", target="ids", severity="warning",
          state=ShardState(start=empty_state, merge=merge_state, section=section, notes=notes),
          detail="duplicate id (first at row {value:.0f})",
          description="A record whose id is the id of an earlier record of the same shard (null and empty ids "
                      "are missing, not duplicates; the int 5 and the string \"5\" are one id). Ids shared by "
                      "several shards under the same id column name are counted in report.json's `duplicate_id` "
                      "section. value = row of the id's first record.")
def duplicate_id(ids, state: dict, column: str = "", **params) -> CheckOutput:
    """`column`: the id column's name (the audit passes it): ids are compared under the same name only."""
    n = len(ids)
    base = state["records"]
    hashes, valid = hash_ids(ids, column)
    present = np.flatnonzero(valid)
    uniq, first, inverse = np.unique(hashes[present], return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    seen, seen_row = _lookup(state["chunks"], uniq)
    first_row = np.where(seen, seen_row, base + present[first])          # per distinct id of the batch
    repeat = seen[inverse] | (first[inverse] != np.arange(present.size))
    flagged_idx = present[repeat]
    flagged = np.zeros(n, bool)
    flagged[flagged_idx] = True
    value = np.zeros(n, np.float64)
    value[flagged_idx] = first_row[inverse[repeat]]
    detail = np.full(n, None, dtype=object)
    dup_ids = [_clipped(v) for v in ids.take(pa.array(flagged_idx, pa.int64())).to_pylist()] \
        if flagged_idx.size else []
    for i, v in zip(flagged_idx.tolist(), dup_ids):
        detail[i] = f"duplicate id {_shown(v)} (first at row {value[i]:.0f})"
    new = ~seen
    new_first = present[first[new]]
    names = ids.take(pa.array(new_first[:SAMPLE], pa.int64())).to_pylist() if new_first.size else []
    part = {
        "records": n, "ids": int(present.size), "missing": int(n - present.size), "within": int(flagged_idx.size),
        "across": 0,
        "chunks": [_chunk(uniq[new], base + new_first)] if new_first.size else [],
        "sample": [[f"{h:016x}", _clipped(v)] for h, v in zip(uniq[new][:SAMPLE].tolist(), names)],
        "examples": [{"id": v, "row": base + i, "first_row": int(value[i])}
                     for i, v in zip(flagged_idx[:EXAMPLES].tolist(), dup_ids)],
        "shared": [],
    }
    return CheckOutput(flagged=flagged, value=value, detail=detail, state=part)
