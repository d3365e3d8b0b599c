"""The frame size a video's container header declares, read from its first bytes without FFmpeg.

FFmpeg zeroes the dimensions it refuses (above about 268 M pixels, av_image_check_size), so a header declaring
100,000 x 100,000 opens with none and PyAV cannot say what it declared. These readers look at the two places such a
header says it: an AVI's main header (`avih`: dwWidth, dwHeight) and a Matroska/WebM video track (`Video` element
0xE0 holding PixelWidth 0xB0 and PixelHeight 0xBA). Only the first HEAD_BYTES are read; anything else is None.
"""
from __future__ import annotations

import struct

HEAD_BYTES = 1 << 20


def declared_size(head: bytes) -> tuple[int, int] | None:
    """(width, height) the header declares, or None when neither reader finds one."""
    if head[:4] == b"RIFF" and head[8:12] == b"AVI ":
        return _avi(head)
    if head[:4] == b"\x1a\x45\xdf\xa3":
        return _matroska(head)
    return None


def _avi(head: bytes) -> tuple[int, int] | None:
    at = head.find(b"avih")
    if at < 0 or at + 8 + 40 > len(head):
        return None
    width, height = struct.unpack_from("<II", head, at + 8 + 32)
    return (width, height) if width and height else None


def _vint(data: bytes, at: int) -> tuple[int, int] | None:
    """(value, length) of the EBML variable-size integer at `at` (the size marker bit removed)."""
    if at >= len(data) or data[at] == 0:
        return None
    first = data[at]
    n = 8 - first.bit_length() + 1
    if at + n > len(data):
        return None
    value = first & ((1 << (8 - n)) - 1)
    for b in data[at + 1:at + n]:
        value = (value << 8) | b
    return value, n


def _matroska(head: bytes) -> tuple[int, int] | None:
    at = head.find(b"\xe0")
    while at >= 0:
        found = _video_element(head, at)
        if found is not None:
            return found
        at = head.find(b"\xe0", at + 1)
    return None


def _video_element(head: bytes, at: int) -> tuple[int, int] | None:
    """PixelWidth and PixelHeight of a Video element starting at `at` (None: it is not one, or lacks them)."""
    size = _vint(head, at + 1)
    if size is None:
        return None
    length, n = size
    pos, end = at + 1 + n, min(at + 1 + n + length, len(head))
    dims = {}
    while pos < end:
        ident = head[pos]
        child = _vint(head, pos + 1)
        if child is None:
            return None
        clen, cn = child
        body = head[pos + 1 + cn:pos + 1 + cn + clen]
        if ident in (0xB0, 0xBA) and 0 < clen <= 8 and len(body) == clen:
            dims[ident] = int.from_bytes(body, "big")
        pos += 1 + cn + clen
    return (dims[0xB0], dims[0xBA]) if 0xB0 in dims and 0xBA in dims else None
