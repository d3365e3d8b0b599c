"""Texts repeated within a shard are signed once: the signature stage's columns (count, exact hash, signature) are
a function of the text alone, so a record whose text (its bytes, before normalization) came earlier in the shard
takes the columns of that first record instead of being normalized and signed again. Chat and instruction data
repeat texts a lot (system prompts, questions asked many times): in 100,000 short records of real chat turns and
questions, 48% of a shard's records repeat an earlier one.

A text is known by the XXH3-128 of its bytes (`exact.exact_digests`: the hash of the exact stage, here of the raw
text), looked up in a dict (~0.3 us a record with the hash; a sort-based lookup cost more); a 128-bit collision
between two texts of one shard is not a practical concern. A shard whose first rows repeat little stops looking
(FEW_REPEATS). Only the signature columns are shared; each record keeps its own row, line and key.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from .exact import exact_digests
from .signature_columns import signature_array, signature_matrix

COLUMNS = ("count", "exact_hi", "exact_lo", "sig")     # what a repeat takes from its first record
FEW_REPEATS = 0.02             # a shard with fewer repeats than this share of its first FEW_AFTER rows ...
FEW_AFTER = 16_384             # ... is signed record by record from then on (a lookup costs ~0.3 us a record)


class Repeats:
    """The texts of one shard seen so far. `plan` (as each batch is read, in order) says which records of a batch to
    sign; `fill` (as each batch's signed columns come back, in the same order) completes them for every record."""

    def __init__(self):
        self.first: dict[bytes, int] = {}         # digest of a text seen -> the shard row of its first record
        self.rows = 0                             # rows planned so far
        self.active = True                        # False once the shard shows too few repeats to look for more
        self.repeated = 0                         # records planned as repeats
        self.starts: list[int] = []               # shard row of each filled batch's first record
        self.filled: list[dict[str, np.ndarray]] = []    # each filled batch's columns, as arrays

    def plan(self, text: pa.Array) -> tuple[np.ndarray, np.ndarray] | None:
        """(rows of the batch to sign, in order; the shard row whose columns each record of the batch takes), or
        None: sign every record (after FEW_AFTER rows with fewer than FEW_REPEATS of them repeated, the shard is
        taken to have none worth the lookups)."""
        if not self.active:
            return None
        n = len(text)
        first = self.first
        base = self.rows
        source = [first.setdefault(d, base + i) for i, d in enumerate(exact_digests(text))]   # a dict lookup each
        source = np.asarray(source, np.int64)
        sign = np.flatnonzero(source == np.arange(base, base + n))
        self.rows += n
        self.repeated += n - len(sign)
        if self.rows >= FEW_AFTER and self.repeated < FEW_REPEATS * self.rows:
            self.active = False
        return sign, source

    def fill(self, signed: dict[str, pa.Array], sign_rows: np.ndarray, source: np.ndarray) -> dict[str, pa.Array]:
        """The columns of every record of the batch, from those of its signed records (`plan`'s rows, in order)."""
        start = self.rows_filled()
        n = len(source)
        cols = {k: _values(signed[k]) for k in COLUMNS}
        if len(sign_rows) == n:                    # nothing repeated: as signed
            self._keep(start, cols)
            return {k: signed[k] for k in COLUMNS}
        out = {k: np.empty((n,) + v.shape[1:], v.dtype) for k, v in cols.items()}
        own = np.zeros(n, np.int64)                               # batch row -> its position among the signed
        own[sign_rows] = np.arange(len(sign_rows))
        here = source >= start                                    # first seen in this batch (signed now)
        for k in COLUMNS:
            out[k][here] = cols[k][own[source[here] - start]]
        earlier = np.flatnonzero(~here)
        if len(earlier):
            batch_of = np.searchsorted(self.starts, source[earlier], side="right") - 1
            for b in np.unique(batch_of).tolist():
                sel = earlier[batch_of == b]
                local = source[sel] - self.starts[b]
                for k in COLUMNS:
                    out[k][sel] = self.filled[b][k][local]
        self._keep(start, out)
        return {"count": pa.array(out["count"]), "exact_hi": pa.array(out["exact_hi"]),
                "exact_lo": pa.array(out["exact_lo"]), "sig": _signature_array(out["sig"])}

    def rows_filled(self) -> int:
        return self.starts[-1] + len(self.filled[-1]["count"]) if self.filled else 0

    def _keep(self, start: int, cols: dict[str, np.ndarray]) -> None:
        self.starts.append(start)
        self.filled.append(cols)


def _values(arr: pa.Array) -> np.ndarray:
    if pa.types.is_fixed_size_binary(arr.type):
        return signature_matrix(arr)
    return arr.to_numpy()


def _signature_array(sig: np.ndarray) -> pa.Array:
    return signature_array(sig)
