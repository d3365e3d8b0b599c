"""The images kept records reference by path are copied next to the cleaned shard, at the same relative paths;
those only dropped records reference are not, nor anything outside the shard's folder."""
from __future__ import annotations

import json

from click.testing import CliRunner

from dataaudit.cli import main
from tests.images.image_shards import picture, write_jsonl


def test_referenced_images_of_kept_records_travel_with_the_cleaned_shard(tmp_path):
    data = tmp_path / "data"
    (data / "img").mkdir(parents=True)
    pics = {name: picture(seed=k) for k, name in enumerate(["a.jpg", "b.jpg", "c.jpg"])}
    for name, b in pics.items():
        (data / "img" / name).write_bytes(b)
    (data / "img" / "broken.jpg").write_bytes(pics["a.jpg"][:200])
    (tmp_path / "secret.jpg").write_bytes(pics["a.jpg"])
    pairs = write_jsonl(data / "pairs.jsonl", [
        {"image": "img/a.jpg", "text": "kept"},
        {"image": "img/broken.jpg", "text": "dropped: corrupt"},
        {"image": "../secret.jpg", "text": "dropped: outside"},
    ])
    chat = write_jsonl(data / "chat.jsonl", [
        {"images": ["img/b.jpg", "img/c.jpg"], "messages": [{"role": "user", "content": "<image><image>Compare."},
                                                              {"role": "assistant", "content": "Two."}]},
        {"images": ["img/a.jpg"], "messages": [{"role": "user", "content": "No placeholder."},
                                               {"role": "assistant", "content": "Dropped."}]},
    ])
    runner = CliRunner()
    res = runner.invoke(main, ["audit", str(data), "--out", str(tmp_path / "audit"), "--engine", "local"])
    assert res.exit_code == 1, res.output
    out = tmp_path / "clean"
    res = runner.invoke(main, ["clean", str(data), "--audit", str(tmp_path / "audit"), "--out", str(out),
                               "--engine", "local", "--max-drop", "100"])   # a small fixture, mostly planted
    assert res.exit_code == 0, res.output
    copied = sorted(p.relative_to(out).as_posix() for p in (out / "img").iterdir())
    assert copied == ["img/a.jpg", "img/b.jpg", "img/c.jpg"]
    assert all((out / rel).read_bytes() == pics[rel.split("/")[1]] for rel in copied)
    assert not (out / "secret.jpg").exists() and not (tmp_path / "img").exists()
    shards = {s["output"]: s for s in json.loads((out / ".dataaudit/clean.json").read_text())["shards"]}
    assert [(o, s["rows"], s["kept"], s["referenced_files"], s["referenced_missing"]) for o, s in shards.items()] == [
        ("chat.jsonl", 2, 1, 2, 0), ("pairs.jsonl", 3, 1, 1, 0)]
    res = runner.invoke(main, ["audit", str(out), "--out", str(tmp_path / "audit2"), "--engine", "local"])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "audit2" / "report.json").read_text())["totals"]["flagged"] == 0
