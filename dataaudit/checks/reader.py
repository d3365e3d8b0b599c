"""Reader findings as checks: a record the reader could not decode, or decoded with something skipped.

They go through the registry like any validator so configs can change their severity and reports count them.
Their target is the record batch itself: each reads the provenance column the reader wrote its message into.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.checks.base import CheckOutput, register
from dataaudit.provenance import ERROR, WARNING


def _reader_message(arr: pa.Array) -> CheckOutput:
    flagged = pc.is_valid(arr).to_numpy(zero_copy_only=False)
    return CheckOutput(flagged=flagged, value=np.zeros(len(arr)), detail=arr)


@register("unreadable_record", target="reader", severity="error", detail="{value}",
          description="The reader could not decode the record (its fields are missing); the detail is the reader's error.")
def unreadable_record(batch: pa.RecordBatch) -> CheckOutput:
    return _reader_message(batch.column(ERROR))


@register("reader_warning", target="reader", severity="warning", detail="{value}",
          description="The record was read but something in it was skipped (unpickleable member, non-adjacent key, "
                      "unsafe path, a reserved member name, a value of another type than its column: `field_type:`).")
def reader_warning(batch: pa.RecordBatch) -> CheckOutput:
    return _reader_message(batch.column(WARNING))
