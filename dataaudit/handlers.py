"""What happens when a shard cannot be read: the error policy of every job, as small functions.

A stage (dataaudit.stage.ShardStage) passes the exception that stopped its shard to a handler: a reader's error
(READ_ERRORS) or any other exception of the shard's read or checks. The handler returns the one-line error to report
(the shard is `unreadable`, the records read before the break stay counted, the job goes on) or raises to stop the
job.
"""
from __future__ import annotations

from dataaudit.sources.base import READ_ERRORS  # (the readers' own errors; re-exported)
from dataaudit.sources.batch import one_line

MAX_ERROR_CHARS = 1000


def report_unreadable(exc: BaseException, path: str) -> str:
    """The default: report the shard unreadable with the reader's error, and go on with the others. An error that is
    not a reader's (a check that broke on a hostile record, MemoryError) is named by its type as well."""
    text = one_line(exc)[:MAX_ERROR_CHARS]   # a hostile record may make a message of any size
    if isinstance(exc, READ_ERRORS):
        return text or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def reraise(exc: BaseException, path: str) -> str:
    """Stop the job at the first shard that cannot be read (for callers that want all or nothing)."""
    raise exc
