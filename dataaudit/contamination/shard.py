"""One training shard streamed through the benchmark index: the contamination job's unit of work.

`ScanStage` is a `dataaudit.stage.ShardStage`: the base reads the shard batch by batch and hands a read
failure to the job's error policy; this stage picks the text column, matches each batch (`scan.match_texts`)
and keeps, per shard, which benchmark grams occur and the match rows (snippets only for the best few per item).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.texts import DocumentText
from dataaudit.handlers import report_unreadable
from dataaudit.formats import format_of
from dataaudit.sources import ERROR, KEY, LINE, ROW, ShardReadError
from dataaudit.stage import ShardStage

from .config import ContaminationConfig
from .index import ContaminationIndex
from .scan import MATCH_SCHEMA, match_texts, matches_table, rank_order, top_mask


@dataclass
class ShardScan:
    summary: dict
    matches: pa.Table


@dataclass
class _ScanState:
    summary: dict
    text: DocumentText            # each record's text under the field rule
    found_bits: dict[int, np.ndarray] = field(default_factory=dict)   # k -> which of the k table's grams occur
    tables: list[pa.Table] = field(default_factory=list)


class ScanStage(ShardStage):
    """Stream one training shard through the index. Never raises for a bad shard (with the default handler):
    it is reported with status `unreadable` and its error; the records read before the break are scanned."""

    def __init__(self, index: ContaminationIndex, config: ContaminationConfig):
        self.index = index
        self.config = config
        self.batch_rows = config.batch_rows
        self.text_unit = config.text_unit

    def start(self, path: str) -> _ScanState:
        return _ScanState({"path": path, "status": "ok", "error": None, "records": 0, "unreadable_records": 0,
                           "text_field": None, "words": 0, "matches": 0}, DocumentText(self.config.text_field))

    def schema(self, state: _ScanState, path: str) -> pa.Schema | None:
        # Parquet's footer names the text columns before reading; for the other formats the reader alone opens the
        # shard, so its error is the one reported.
        return format_of(path).schema_peek(path)

    def columns(self, state: _ScanState, schema: pa.Schema | None) -> list[str] | None:
        cols = state.text.columns(schema)
        if cols == []:
            raise ShardReadError("no text field to scan")
        return cols

    def add(self, state: _ScanState, batch: pa.RecordBatch) -> None:
        summary = state.summary
        n = batch.num_rows
        summary["records"] += n
        err = batch.column(batch.schema.get_field_index(ERROR))
        summary["unreadable_records"] += n - int(pc.sum(pc.is_null(err)).as_py() or 0) if n else 0
        if not state.text.fields(batch):
            return
        texts = state.text(batch)
        m = match_texts(texts, self.index, self.config)
        summary["words"] += m.words
        for k, u in m.found.items():
            if k not in state.found_bits:
                state.found_bits[k] = np.zeros(len(self.index.tables[k].set), bool)
            state.found_bits[k][u] = True
        if len(m):
            rows = batch.column(batch.schema.get_field_index(ROW)).to_numpy()
            keys = batch.column(batch.schema.get_field_index(KEY))
            lines = batch.column(batch.schema.get_field_index(LINE))
            state.tables.append(matches_table(m, texts, rows, keys, self.config.max_matches, lines,
                                              self.index))

    def finish(self, state: _ScanState, error: str | None) -> ShardScan:
        summary = state.summary
        if error is not None:
            summary["status"] = "unreadable"
            summary["error"] = error
        summary["text_field"] = state.text.label
        if summary["status"] == "ok" and summary["records"] and state.text.label is None:
            configured = state.text.spec.text
            summary["status"] = "unreadable"
            summary["error"] = (f"text field {', '.join(configured)!r} not found" if configured
                                else "no text field to scan")
        summary["found"] = {str(k): np.flatnonzero(bits).tolist() for k, bits in sorted(state.found_bits.items())}
        table = self._best_snippets(pa.concat_tables(state.tables) if state.tables else MATCH_SCHEMA.empty_table())
        summary["matches"] = table.num_rows
        return ShardScan(summary, table)

    def _best_snippets(self, table: pa.Table) -> pa.Table:
        """The shard's match rows in (item, row) order, snippets kept only for its best few per item (the
        candidates for the report)."""
        if not table.num_rows:
            return table
        item = table.column("item").to_numpy()
        exact = table.column("exact").to_numpy(zero_copy_only=False)
        shared = table.column("shared").to_numpy()
        mh = table.column("minhash").to_numpy(zero_copy_only=False).astype(np.float64)
        rows = table.column("row").to_numpy()
        top = top_mask(item, rank_order(item, exact, shared, mh, [rows]), self.config.max_matches)
        table = table.set_column(table.schema.get_field_index("snippet"), "snippet",
                                 pc.if_else(pa.array(top), table.column("snippet"), pa.scalar(None, pa.string())))
        return table.take(pa.array(np.lexsort((rows, item))))


def scan_shard(path: str, index: ContaminationIndex, config: ContaminationConfig,
               on_batch: Callable[[int], None] | None = None,
               handler: Callable[[BaseException, str], str] = report_unreadable) -> ShardScan:
    """One training shard through the index: its summary and match rows (see `ScanStage`)."""
    return ScanStage(index, config)(path, on_batch, handler)
