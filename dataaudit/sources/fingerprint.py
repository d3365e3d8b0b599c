"""What a shard was when a job read it: its size, its modification time and a hash of every byte; for an object in
a store that names its versions (an S3 ETag, a GCS generation, ...), its size and that version, from one metadata
request (the job then reads the object once, not once more to hash it).

The jobs record it for every shard, so that a rerun redoes a shard that changed since its part was written, and
a later step that acts on a job's findings (cleaning) refuses a shard that changed since: the rows the findings
name would no longer be the same records. The functions live in the file door (`dataaudit.io`), where the
pipelines reach them; these are their names for the readers' side.
"""
from __future__ import annotations

from dataaudit.io import changed, content_digest, content_hash, content_key
from dataaudit.io import fingerprint as shard_fingerprint

__all__ = ["changed", "content_digest", "content_hash", "content_key", "shard_fingerprint"]
