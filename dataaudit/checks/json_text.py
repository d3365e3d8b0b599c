"""JSON documents in text fields: a `tools` column, function-call arguments, observation turns.

Parsed with the standard library's C decoder (Arrow has no JSON parser for an array of strings); only JSON fields
and turns come here, never prose.
"""
from __future__ import annotations

import json

import numpy as np

from .base import CheckOutput, register
from .text_common import as_string_array, null_mask


def _locate(text: str, **params) -> tuple[int, int] | None:
    """The character where parsing failed (the last one when the document ends too soon)."""
    try:
        json.loads(text)
    except json.JSONDecodeError as e:
        at = min(e.pos, len(text) - 1)
        return (at, at + 1) if at >= 0 else None
    except (ValueError, RecursionError):
        return None
    return None


@register("json_invalid", target="json", severity="error", locate=_locate,
          detail="not valid JSON",
          description="A field or turn that should hold one JSON document (a column of JSON documents, a "
                      "function call or observation turn) does not parse. value = character offset of the error.")
def json_invalid(arr, **params) -> CheckOutput:
    arr = as_string_array(arr)
    n = len(arr)
    flagged = np.zeros(n, bool)
    value = np.zeros(n)
    detail = np.full(n, None, dtype=object)
    present = np.flatnonzero(~null_mask(arr))
    for i, s in zip(present.tolist(), arr.take(present).to_pylist()):
        try:
            json.loads(s)
        except json.JSONDecodeError as e:
            flagged[i], value[i], detail[i] = True, e.pos, f"not valid JSON: {e.msg} at character {e.pos}"
        except (ValueError, RecursionError) as e:
            flagged[i], detail[i] = True, f"not valid JSON: {type(e).__name__}"
    return CheckOutput(flagged=flagged, value=value, detail=detail)
