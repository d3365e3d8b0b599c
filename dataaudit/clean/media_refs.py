"""Every string of a batch that may name a media file: values at any depth (lists, structs, maps, the content parts
of a conversation such as {"type": "image_url", "image_url": {"url": "a/b.jpg"}} or {"type": "video", "video":
"x.mp4"}) that end in a media extension (dataaudit.fields.MEDIA_EXTENSIONS: images, video, audio), are no URL
(`scheme://`, `data:`) and are short and on one line (a path, not prose). Vectorized: nested arrays are flattened
with pyarrow and the strings filtered with pyarrow.compute; only the distinct matches reach Python.

Whether a candidate names a file (inside the shard's folder, regular) is the caller's to decide.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.fields import MEDIA_EXTENSIONS

MAX_PATH_CHARS = 4096    # PATH_MAX: a longer string names no file
_MEDIA = r"(?i)\.(" + "|".join(MEDIA_EXTENSIONS) + r")$"
_NOT_A_PATH = r"(?i)^([a-z][a-z0-9+.-]*://|data:)|[\n\r\x00]"


def _is(kind: str, t: pa.DataType) -> bool:
    """pa.types.<kind>(t), False where this pyarrow has no such type (the view types are recent)."""
    test = getattr(pa.types, kind, None)
    return bool(test and test(t))


def _strings(arr: pa.Array):
    """The string arrays inside `arr`, at any depth."""
    t = arr.type
    if pa.types.is_dictionary(t):
        yield from _strings(arr.dictionary_decode())
    elif pa.types.is_string(t) or pa.types.is_large_string(t):
        yield arr
    elif _is("is_string_view", t):
        yield arr.cast(pa.large_string())
    elif pa.types.is_struct(t):
        for child in arr.flatten():          # the parent's nulls applied to each field
            yield from _strings(child)
    elif pa.types.is_map(t):
        yield from _strings(arr.keys)
        yield from _strings(arr.items)
    elif any(_is(k, t) for k in ("is_list", "is_large_list", "is_fixed_size_list", "is_list_view",
                                  "is_large_list_view")):
        yield from _strings(arr.flatten())   # only the values the list's (sliced) offsets hold


def media_strings(arrays) -> set[str]:
    """The distinct candidate media paths among the strings of `arrays` (Arrays or ChunkedArrays)."""
    found: set[str] = set()
    for a in arrays:
        for chunk in (a.chunks if isinstance(a, pa.ChunkedArray) else [a]):
            for s in _strings(chunk):
                s = s.drop_null()
                if not len(s):
                    continue
                s = s.filter(pc.less_equal(pc.utf8_length(s), MAX_PATH_CHARS))
                s = s.filter(pc.match_substring_regex(s, _MEDIA))
                s = s.filter(pc.invert(pc.match_substring_regex(s, _NOT_A_PATH)))
                if len(s):
                    found.update(pc.unique(s).to_pylist())
    return found
