"""The field rule reads video and audio as media, never as text: LLaMA-Factory's `videos`/`audios` lists of
paths, a single `video` path, a string column whose values all end in an audio extension, WebDataset media
members and Parquet binary columns with a media signature (no PyAV needed: the rule only looks)."""
from __future__ import annotations

import json

import pyarrow as pa

from dataaudit.fields import FieldSpec, resolve_schema, sniff_media_format
from dataaudit.sources.webdataset_tar import iter_webdataset
from tests.builders import make_tar

WAV = b"RIFF\x24\x00\x00\x00WAVEfmt "
MP4 = b"\x00\x00\x00\x20ftypisom\x00\x00\x02\x00"


def _resolve(table: pa.Table):
    batch = table.to_batches()[0]
    return resolve_schema(table.schema, FieldSpec(), batch)


def test_llamafactory_lists_of_paths_are_media_not_text():
    t = pa.table({"messages": [[{"role": "user", "content": "<video><audio>hi"}, {"role": "assistant", "content": "ok"}]],
                  "videos": [["mllm_demo_data/404.mp4"]], "audios": [["a/1.wav"]]})
    f = _resolve(t)
    assert [c.name for c in f.text] == ["messages"]
    assert [(c.name, c.media, c.image, c.many) for c in f.media] == [("videos", "video", "path", True),
                                                                      ("audios", "audio", "path", True)]
    assert f.formats()["videos"] == "list of video paths" and f.formats()["audios"] == "list of audio paths"
    assert f.roles()["media"] == ["videos", "audios"] and f.unchecked == ()


def test_string_columns_by_name_or_by_extension():
    t = pa.table({"text": ["a caption"] * 3, "video": ["v/1.mp4", "v/2.mkv", None],
                  "clip": ["x.wav", "y.FLAC", "z.mp3"], "note": ["x.wav", "plain words", "z.mp3"]})
    f = _resolve(t)
    assert [(c.name, c.media, c.many) for c in f.media] == [("video", "video", False), ("clip", "audio", False)]
    assert [c.name for c in f.text] == ["text", "note"]   # not all media paths: still text


def test_urls_are_not_media_paths():
    f = _resolve(pa.table({"clip": ["https://x.org/a.wav", "b.wav"]}))
    assert f.media == () and [c.name for c in f.text] == ["clip"]


def test_sniff_media_format():
    assert sniff_media_format(WAV) == ("audio", "WAV")
    assert sniff_media_format(b"RIFF\x00\x00\x00\x00AVI LIST") == ("video", "AVI")
    assert sniff_media_format(MP4) == ("video", "MP4")
    assert sniff_media_format(b"\x00\x00\x00\x20ftypM4A \x00\x00") == ("audio", "M4A")
    assert sniff_media_format(b"\x1a\x45\xdf\xa3\x01") == ("video", "MKV")
    assert sniff_media_format(b"fLaC\x00") == ("audio", "FLAC")
    assert sniff_media_format(b"OggS\x00") == ("audio", "OGG")
    assert sniff_media_format(b"ID3\x04") == ("audio", "MP3")
    assert sniff_media_format(b"\xff\xfb\x90\x00") == ("audio", "MP3")
    assert sniff_media_format(b"\xff\xd8\xff\xe0") is None            # a JPEG
    assert sniff_media_format(b"RIFF\x00\x00\x00\x00WEBPVP8 ") is None   # a WebP image
    assert sniff_media_format(b"hello") is None
    assert sniff_media_format(b"\xff\xff\xff\xff\xff\xff\xff\xff") is None     # int64 -1: no valid bitrate


def test_parquet_binary_columns_with_media_magic():
    t = pa.table({"payload": pa.array([WAV + b"\x00" * 8, None, WAV], pa.binary()),
                  "blob": pa.array([b"not media", b"x", b"y"], pa.binary()),
                  "mostly": pa.array([WAV, b"a", b"b"], pa.binary()),   # one stray signature: not media
                  "rec": pa.array([{"bytes": MP4, "path": "a.mp4"}, None, None],
                                  pa.struct([("bytes", pa.binary()), ("path", pa.string())]))})
    f = _resolve(t)
    assert [(c.name, c.media, c.image) for c in f.media] == [("payload", "audio", "bytes"), ("rec", "video", "struct")]
    assert "payload" not in [c.name for c in f.images]


def test_webdataset_media_members_are_binary_columns(tmp_path):
    path = make_tar(tmp_path / "s.tar", [("a.mp4", MP4), ("a.wav", WAV), ("a.txt", b"a caption"),
                                         ("a.json", json.dumps({"k": 1}).encode())])
    batch = next(iter_webdataset(str(path)))
    assert pa.types.is_binary(batch.schema.field("mp4").type) and batch.column("wav").to_pylist() == [WAV]
    f = resolve_schema(batch.schema, FieldSpec(), batch)
    assert [(c.name, c.media, c.image) for c in f.media] == [("mp4", "video", "bytes"), ("wav", "audio", "bytes")]
    assert [c.name for c in f.text] == ["txt"]
