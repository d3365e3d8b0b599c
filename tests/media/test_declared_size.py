"""The frame size a container header declares, read without FFmpeg (dataaudit.media.declared)."""
from __future__ import annotations

import struct

from dataaudit.media.declared import declared_size
from tests.media import hostile_media as hm


def test_matroska_and_avi_declarations(tmp_path):
    mkv = hm.matroska_header(tmp_path / "a.mkv", "V_VP9", 100000, 70000).read_bytes()
    assert declared_size(mkv) == (100000, 70000)
    avi = bytearray(b"RIFF" + b"\0" * 4 + b"AVI LIST" + b"\0" * 8 + b"avih" + struct.pack("<I", 56) + b"\0" * 56)
    at = avi.find(b"avih")
    struct.pack_into("<II", avi, at + 8 + 32, 640, 480)
    assert declared_size(bytes(avi)) == (640, 480)
    assert declared_size(bytes(avi[:at + 20])) is None        # cut before its width: nothing declared
    assert declared_size(b"\x1a\x45\xdf\xa3" + b"\xe0\xff") is None   # an unparseable Video element
    assert declared_size(b"not a container") is None
