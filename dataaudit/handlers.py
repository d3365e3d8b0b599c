"""What happens when a shard cannot be read: the error policy of every job, as small functions.

A stage (dataaudit.stage.ShardStage) passes the exception that stopped its shard to a handler. The handler
returns the one-line error to report (the shard is `unreadable`, the records read before the break stay
counted, the job goes on) or raises to stop the job.
"""
from __future__ import annotations

from dataaudit.sources.base import READ_ERRORS  # noqa: F401  (the errors every handler is given)
from dataaudit.sources.batch import one_line


def report_unreadable(exc: BaseException, path: str) -> str:
    """The default: report the shard unreadable with the reader's error, and go on with the others."""
    return one_line(exc) or type(exc).__name__


def reraise(exc: BaseException, path: str) -> str:
    """Stop the job at the first shard that cannot be read (for callers that want all or nothing)."""
    raise exc
