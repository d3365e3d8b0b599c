"""The reader contract shared by every shard format.

A reader streams one shard as Arrow record batches. Every batch carries the provenance columns below next to
the data columns, so each flag can name its shard and record, and every record read is a row: a record that
could not be decoded is still a row (data columns null, `__error__` set), so nothing is lost uncounted.
"""
from __future__ import annotations

from dataaudit.provenance import ERROR, KEY, LINE, PROVENANCE_COLUMNS, ROW, WARNING  # noqa: F401  (re-exported)


class ShardReadError(Exception):
    """The shard as a whole cannot be read further: open failure, or its stream broke part way.

    Batches yielded before the error stay valid and are counted. The message is one line with the reader's
    error.
    """


# What "this shard could not be read" means for every job: the reader's own error, or the OS refusing the file.
READ_ERRORS = (ShardReadError, OSError)
