"""Captions in WebDataset samples: the `.txt`/`.caption`/`.cap` member or a `caption`/`text` key of the `.json`
member. Metadata strings (`key`, `url`, `source`, `status`, ...) are never a caption and not prose, so a sample
whose only string is metadata is `missing_caption`."""
from __future__ import annotations

import json

from tests.builders import make_tar
from tests.images.image_shards import cli_audit, picture


def _meta(key: str, **more) -> bytes:
    return json.dumps({"key": key, "url": f"https://example.com/{key}.jpg", "source": "laion", "status": "success",
                       **more}).encode()


def test_metadata_is_never_a_caption(tmp_path):
    shard = make_tar(tmp_path / "s.tar", [
        ("a.jpg", picture(seed=1)), ("a.txt", b"a dog on grass"), ("a.json", _meta("a")),
        ("b.jpg", picture(seed=2)), ("b.json", _meta("b")),                        # no caption: metadata only
        ("c.jpg", picture(seed=3)), ("c.txt", b"   "), ("c.json", _meta("c")),     # a blank caption
        ("d.jpg", picture(seed=4)), ("d.caption", b"a cat on a mat"),
        ("e.jpg", picture(seed=5)), ("e.json", _meta("e", caption="a kite")),      # the caption in the .json
        ("f.jpg", picture(seed=6)), ("f.cap", b"a boat"), ("f.json", _meta("f", source="")),   # empty metadata
    ])
    res, report, flags = cli_audit([shard], tmp_path / "out")
    assert res.exit_code == 1, res.output
    assert flags == [("s.tar", "b", "txt, caption, cap", "missing_caption"),
                     ("s.tar", "c", "txt, caption, cap", "empty_caption")]
    formats = report["shards"][0]["formats"]
    assert {k: formats[k] for k in ("url", "source", "status")} == {
        "url": "metadata (not audited as prose)", "source": "metadata (not audited as prose)",
        "status": "metadata (not audited as prose)"}
    assert sorted(report["shards"][0]["fields"]["text"]) == ["cap", "caption", "txt"]
