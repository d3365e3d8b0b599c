"""What a shard was when a job read it: its size, its modification time and a hash of every byte.

The jobs record it for every shard, so that a rerun redoes a shard that changed since its part was written, and
a later step that acts on a job's findings (cleaning) refuses a shard that changed since: the rows the findings
name would no longer be the same records. The functions live in the file door (`dataaudit.io`), where the
pipelines reach them; these are their names for the readers' side.
"""
from __future__ import annotations

from dataaudit.io import changed, fingerprint as shard_fingerprint  # noqa: F401  (re-exported)
