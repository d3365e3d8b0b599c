"""Images inside message content parts (OpenAI `image_url`, LLaMA-Factory v1 `image_url` values, Qwen-VL `image`):
found by the field rule, probed like any image, flagged at `messages[T].content[P]`; data: URLs decoded after
their size is checked; URLs never fetched, named in the notes; `--media-root` for paths relative to another
folder."""
from __future__ import annotations

import base64
import json
import shutil

from click.testing import CliRunner

from dataaudit.cli import main
from tests.images.image_shards import cli_audit, picture, write_jsonl
from tests.paths import needs_shared, shared_file


def _openai(image: str, text: str = "Who is it?") -> dict:
    return {"messages": [
        {"role": "user", "content": [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": image}}]},
        {"role": "assistant", "content": [{"type": "text", "text": "A player."}]}]}


def _qwen(image: str) -> dict:
    return {"messages": [
        {"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": "Describe it."}]},
        {"role": "assistant", "content": [{"type": "text", "text": "A field."}]}]}


def _v1(image: str, text: str = "What is it?") -> dict:
    return {"messages": [
        {"role": "user", "content": [{"type": "text", "value": text}, {"type": "image_url", "value": image}]},
        {"role": "assistant", "content": [{"type": "text", "value": "A goal."}]}]}


def _pictures(tmp_path, n: int = 2) -> None:
    (tmp_path / "img").mkdir()
    for i in range(n):
        (tmp_path / "img" / f"{i}.jpg").write_bytes(picture(seed=20 + i))


def test_every_part_form_is_probed_and_a_missing_file_is_named_by_turn_and_part(tmp_path):
    _pictures(tmp_path)
    for form in (_openai, _qwen, _v1):
        shard = write_jsonl(tmp_path / f"{form.__name__}.jsonl",
                            [form("img/0.jpg"), form("img/missing.jpg"), form("img/1.jpg")])
        res, report, flags = cli_audit([shard], tmp_path / f"out{form.__name__}")
        assert res.exit_code == 1, res.output
        part = 0 if form is _qwen else 1
        assert flags == [(shard.name, "1", f"messages[0].content[{part}]", "image_missing_file")], form
        assert report["images"]["messages.content[].image"]["images"] == 3
        assert report["images"]["messages.content[].image"]["decoded"] == 2
        assert report["shards"][0]["fields"]["image"] == ["messages.content[].image"]
        # the image part's value is no text: the path is not audited as prose
        assert report["shards"][0]["fields"]["text"] == ["messages"]


def test_a_data_url_is_decoded_and_a_broken_or_oversized_one_is_flagged(tmp_path):
    good = base64.b64encode(picture(seed=3)).decode()
    huge = "A" * 4_000_000          # ~3 MB once decoded, over the 1 MB limit set below: refused before decoding
    shard = write_jsonl(tmp_path / "d.jsonl", [
        _openai(f"data:image/jpeg;base64,{good}"),
        _openai("data:image/png;base64,@@not base64@@"),
        _openai(f"data:image/png;base64,{huge}"),
        _openai(f"data:image/jpeg;base64,{good[:200]}"),      # a truncated JPEG
    ])
    res, report, flags = cli_audit([shard], tmp_path / "out", "[data]\nmax_image_bytes = 1000000\n")
    assert res.exit_code == 1, res.output
    assert flags == [("d.jsonl", "1", "messages[0].content[1]", "image_corrupt"),
                     ("d.jsonl", "2", "messages[0].content[1]", "image_bomb"),
                     ("d.jsonl", "3", "messages[0].content[1]", "image_corrupt")]
    details = [e["detail"] for e in report["examples"]["image_bomb"]]
    assert details == ["data: URL of about 3000000 bytes > max_image_bytes 1000000 (not decoded)"]
    assert report["images"]["messages.content[].image"]["decoded"] == 1


def test_a_url_is_not_fetched_nor_flagged_but_named_and_strict_fails(tmp_path):
    _pictures(tmp_path, 1)
    shard = write_jsonl(tmp_path / "u.jsonl", [_openai("img/0.jpg"), _openai("https://example.com/a.jpg"),
                                               _openai("s3://bucket/b.jpg")])
    res, report, flags = cli_audit([shard], tmp_path / "out")
    assert res.exit_code == 0, res.output
    assert flags == []
    assert report["images"]["messages.content[].image"]["formats"] == {"JPEG": 1, "(not fetched)": 2}
    note = f"{shard}: warning: 2 image reference(s) in messages.content[].image are URLs: not fetched, not checked"
    assert note in report["notes"]
    strict = CliRunner().invoke(main, ["audit", str(shard), "--out", str(tmp_path / "o2"), "--strict"])
    assert strict.exit_code == 1, strict.output


def test_an_image_part_is_its_own_placeholder(tmp_path):
    _pictures(tmp_path)
    two = _openai("img/0.jpg")
    two["messages"][0]["content"].append({"type": "image_url", "image_url": {"url": "img/1.jpg"}})
    shard = write_jsonl(tmp_path / "p.jsonl", [
        _openai("img/0.jpg"),                        # one part: one image, its own placeholder
        two,                                         # two parts: fine
        _openai("img/0.jpg", "Who is <image> here?"),  # a part and an <image> token: one placeholder too many
    ])
    res, report, flags = cli_audit([shard], tmp_path / "out")
    assert res.exit_code == 1, res.output
    assert flags == [("p.jsonl", "2", "messages", "image_placeholders")]
    assert [e["detail"] for e in report["examples"]["image_placeholders"]] == [
        "1 <image> placeholders + 1 image parts, 1 images"]


def test_paths_resolve_from_the_media_root_and_never_outside_it(tmp_path):
    root = tmp_path / "root"
    (root / "data").mkdir(parents=True)
    (root / "data" / "a.jpg").write_bytes(picture(seed=5))
    (tmp_path / "outside.jpg").write_bytes(picture(seed=6))
    (tmp_path / "shards").mkdir()
    shard = write_jsonl(tmp_path / "shards" / "m.jsonl", [_v1("data/a.jpg"), _v1("../outside.jpg")])
    res, report, flags = cli_audit([shard], tmp_path / "out1")
    assert flags == [("m.jsonl", "0", "messages[0].content[1]", "image_missing_file"),
                     ("m.jsonl", "1", "messages[0].content[1]", "image_path_outside")]
    args = ["audit", str(shard), "--out", str(tmp_path / "out2"), "--media-root", str(root)]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 1, res.output
    report = json.loads((tmp_path / "out2" / "report.json").read_text())
    assert report["checks"]["image_missing_file"]["flagged"] == 0
    assert report["checks"]["image_path_outside"]["flagged"] == 1     # ../outside.jpg leaves the root: not opened
    # the config's [data] media_root, relative to the config file, does the same; a root that is no folder: exit 2
    (tmp_path / "cfg.toml").write_text('[data]\nmedia_root = "root"\n')
    res = CliRunner().invoke(main, ["audit", str(shard), "--out", str(tmp_path / "out3"),
                                    "--config", str(tmp_path / "cfg.toml")])
    assert json.loads((tmp_path / "out3" / "report.json").read_text())["checks"]["image_path_outside"]["flagged"] == 1
    (tmp_path / "bad.toml").write_text('[data]\nmedia_root = "nowhere"\n')
    res = CliRunner().invoke(main, ["audit", str(shard), "--out", str(tmp_path / "out4"),
                                    "--config", str(tmp_path / "bad.toml")])
    assert res.exit_code == 2
    assert res.output.strip().splitlines()[-1].endswith(f"[data] media_root is not a folder: {tmp_path / 'nowhere'}")


@needs_shared
def test_llama_factory_v1_multimodal_demo_with_its_media_root(tmp_path):
    """The demo's paths are relative to LLaMA-Factory's root (`data/mllm_demo_data/1.jpg`), not to the file: without
    a media root every image is missing (24 records); with it, none is."""
    demo = shared_file("posttrain/v1_multimodal_demo.jsonl")
    root = tmp_path / "lf"
    shutil.copytree(shared_file("posttrain/mllm_demo_data/1.jpg").parent, root / "data" / "mllm_demo_data")
    res, report, flags = cli_audit([demo], tmp_path / "out1")
    assert res.exit_code == 1 and report["checks"]["image_missing_file"]["flagged"] == 24
    res = CliRunner().invoke(main, ["audit", str(demo), "--out", str(tmp_path / "out2"), "--media-root", str(root),
                                    "--strict"])
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "out2" / "report.json").read_text())
    stats = report["images"]["messages.content[].image"]
    assert (stats["images"], stats["decoded"], stats["formats"]) == (32, 32, {"JPEG": 32})
    assert report["totals"]["flagged"] == 0
