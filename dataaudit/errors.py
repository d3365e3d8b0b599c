"""The one base of every error that is the user's input or config, not a bug: a missing or malformed file, a
bad setting, a refusal to act on stale findings.

The `dataaudit` command prints such an error as one line and exits 2 (the click group in `dataaudit.cli` is the
only place that catches it); library callers catch `DataAuditError` alone. It imports nothing: the training guard
raises it with only torch loaded.
"""
from __future__ import annotations


class DataAuditError(Exception):
    """One line that names the file (and where in it) and what is wrong with it. `prefix` is said before it on
    the command line ("refused: " for a refusal)."""

    prefix = ""
