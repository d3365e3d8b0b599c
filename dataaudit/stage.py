"""One shard read batch by batch into a stage: the loop every job runs on each shard (its unit of work).

A stage overrides `add` (what to do with one batch) and usually `start`, `columns` and `finish`; this base owns
the rest: reading the schema, choosing the columns to read, streaming the batches, telling progress, and handing
a read failure to the job's error policy (`dataaudit.handlers`). The shape of datatrove's filter base: a step
overrides one method, the base runs the loop.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

import pyarrow as pa

from dataaudit.handlers import report_unreadable
from dataaudit.formats import iter_shard, read_schema


class ShardStage:
    """Per-shard work; `stage(path)` -> `finish`'s result (usually a (summary dict, table) pair)."""

    batch_rows = 4096
    # Parquet: decode every column of every row group, not only those `columns` names (what a training loader
    # reads: a column that cannot be decoded breaks the shard). The other formats always read whole records.
    decode_all = False
    text_unit = "line"     # plain text: one record per line or per paragraph (`iter_shard`)

    def start(self, path: str) -> Any:
        """A fresh per-shard state (anything `add` and `finish` share)."""
        return {}

    def schema(self, state: Any, path: str) -> pa.Schema | None:
        """What `columns` is given: the schema known before reading (Parquet's footer; None for other formats).
        A stage whose columns do not depend on it returns None, so the reader alone opens the shard and its
        error is the one reported."""
        return read_schema(path)

    def columns(self, state: Any, schema: pa.Schema | None) -> list[str] | None:
        """Columns to read, from the schema Parquet knows before reading (None: every column; schema is None
        for formats that have none before reading)."""
        return None

    def add(self, state: Any, batch: pa.RecordBatch) -> None:
        raise NotImplementedError

    def finish(self, state: Any, error: str | None) -> Any:
        """The shard's result; `error` is the handler's one-line message when the shard broke (else None)."""
        raise NotImplementedError

    def close(self, state: Any) -> None:
        """Release what `start` acquired (threads, files) when the shard ends without `finish`: the handler
        re-raised, `on_batch` or `add` failed, or the run was interrupted. `finish` releases them otherwise."""

    def _batches(self, state: Any, path: str) -> Iterator[pa.RecordBatch]:
        """The shard's batches: every failure to read the shard surfaces from here."""
        columns = self.columns(state, self.schema(state, path))
        yield from iter_shard(path, columns=columns, batch_rows=self.batch_rows, decode_all=self.decode_all,
                              text_unit=self.text_unit)

    def __call__(self, path: str, on_batch: Callable[[int], None] | None = None,
                 handler: Callable[[BaseException, str], str] = report_unreadable) -> Any:
        """Run the shard. Any failure of its read or of the stage's work on a batch (a reader's error, a check that
        breaks on a hostile record, MemoryError) goes to `handler`: the shard is `unreadable` with that error, the
        records counted so far stay counted, and the job goes on. Only `on_batch` (the job's own progress and
        output) is not the shard's fault: its errors propagate, as do KeyboardInterrupt and SystemExit."""
        state = self.start(path)
        error = None
        batches = self._batches(state, path)
        finished = False
        try:
            while error is None:
                try:
                    batch = next(batches, None)
                    if batch is None:
                        break
                    self.add(state, batch)
                except Exception as exc:   # noqa: BLE001  (hostile input may cost its shard, never the job)
                    error = handler(exc, path)
                    break
                if on_batch is not None:
                    on_batch(batch.num_rows)
                # A slice keeps its whole decoded batch (a row group) alive: let it go before the next read starts
                batch = None
            try:
                result = self.finish(state, error)
            except Exception as exc:   # noqa: BLE001  (the stage broke on what it gathered: the shard's fault)
                self.close(state)
                error = error or handler(exc, path)
                state = self.start(path)   # an empty shard with the error: nothing claimed for it
                result = self.finish(state, error)
            finished = True
            return result
        finally:
            batches.close()
            if not finished:
                self.close(state)
