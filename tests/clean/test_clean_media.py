"""`clean` keeps the dataset loadable (issue 31, item 6): every media file a kept record references (images, video,
audio, at any depth) is copied, dataset_info.json is copied naming only the files written, and clean's own files
sit in --out/.dataaudit/, so a loader globbing --out sees only data."""
from __future__ import annotations

import json
import shutil

import pyarrow as pa

from dataaudit.clean import STATE
from dataaudit.clean.media_refs import media_strings
from dataaudit.clean.plan import plan_clean
from dataaudit.clean.selection import Selection
from dataaudit.cli.paths import expand_shards
from dataaudit.fields import MEDIA_EXTENSIONS
from dataaudit.formats import iter_shard
from dataaudit.pipelines.clean import run_clean
from dataaudit.pipelines.engine import EngineOptions
from tests.clean.helpers import fake_audit
from tests.paths import require_shared


def test_media_strings_finds_paths_at_any_depth_and_no_url_or_prose():
    messages = pa.array([
        [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "a/b.jpg"}, "video": None},
                                      {"type": "video", "image_url": None, "video": "x.MP4"}]}],
        [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://h/c.png"}, "video": None},
                                      {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA.png"},
                                       "video": None}]}],
    ])
    table = pa.table({"messages": messages, "audios": [["s/1.wav", "s/2.flac"], None],
                      "text": ["Describe photo.jpg", "line one\nsecond.jpg"],
                      "meta": pa.array([{"k": "z.mp3"}, None], pa.struct([("k", pa.string())])),
                      "tags": [["p.gif"], []], "src": pa.array(["d/q.webm", None]).dictionary_encode()})
    assert media_strings(table.columns) == {"a/b.jpg", "x.MP4", "s/1.wav", "s/2.flac", "Describe photo.jpg",
                                            "z.mp3", "p.gif", "d/q.webm"}
    # a sliced batch: only the rows it holds
    assert media_strings(table.slice(1, 1).columns) == set()


def _media_of(obj) -> set[str]:
    """Every string in a parsed record ending in a media extension (plain Python: the test's own walk)."""
    if isinstance(obj, dict):
        return set().union(*map(_media_of, obj.values())) if obj else set()
    if isinstance(obj, list):
        return set().union(*map(_media_of, obj)) if obj else set()
    return {obj} if isinstance(obj, str) and obj.lower().rsplit(".", 1)[-1] in MEDIA_EXTENSIONS else set()


def _records(path) -> list:
    text = path.read_text(encoding="utf-8")
    return json.loads(text) if path.suffix == ".json" else [json.loads(line) for line in text.splitlines() if line]


def test_clean_of_llamafactory_data_loads_on_its_own(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(require_shared() / "posttrain", data)   # skips, naming the folder, when it is absent
    paths = expand_shards([str(data)])
    counts = {p: sum(b.num_rows for b in iter_shard(p, batch_rows=8192)) for p in paths}
    audit = fake_audit(tmp_path / "audit", {p: [0] for p in paths}, counts)      # the first record of each file
    out = tmp_path / "out"
    report = run_clean(plan_clean(paths, [str(data)], out, Selection(), audit), out, EngineOptions("local"))

    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file() and STATE not in p.parts)
    assert files == ["dataset_info.json", "dpo_en_demo.json", "identity.json", "kto_en_demo.json",
                     "mllm_audio_demo.json", "mllm_demo.json", "mllm_demo_data/1.jpg", "mllm_demo_data/2.avi",
                     "mllm_demo_data/2.jpg", "mllm_demo_data/2.wav", "mllm_demo_data/3.flac", "mllm_demo_data/3.jpg",
                     "mllm_demo_data/3.mp4", "mllm_demo_data/4.mp3", "mllm_demo_data/4.mp4",
                     "mllm_video_audio_demo.json", "mllm_video_demo.json", "reason_tool_use_demo_50.jsonl",
                     "v1_dpo_demo.jsonl", "v1_multimodal_demo.jsonl"]
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == [STATE]   # the job's own, hidden
    assert expand_shards([str(out)]) == [str(out / f) for f in files if f.endswith((".json", ".jsonl"))
                                         and f != "dataset_info.json"]

    # every media file a kept record names, that the input holds, is in the output, byte for byte
    named = set().union(*(_media_of(_records(out / f)) for f in files if f.endswith((".json", ".jsonl"))
                          and f != "dataset_info.json"))
    present = {m for m in named if (data / m).is_file()}
    assert present == {f for f in files if f.startswith("mllm_demo_data/")}
    assert all((out / m).read_bytes() == (data / m).read_bytes() for m in present)
    assert report["referenced"] == {"copied": 9, "missing": 3, "refused": 0}   # v1: data/mllm_demo_data/*.jpg

    removed = ["alpaca_en_demo", "alpaca_zh_demo", "glaive_toolcall_en_demo", "glaive_toolcall_zh_demo",
               "dpo_zh_demo", "wiki_demo", "c4_demo"]
    info = json.loads((data / "dataset_info.json").read_text())
    assert json.loads((out / "dataset_info.json").read_text()) == {k: v for k, v in info.items() if k not in removed}
    (sidecar,) = report["sidecars"]
    assert sidecar["output"] == "dataset_info.json" and sidecar["entries"] == len(info) - 7
    assert list(sidecar["removed"]) == removed

    t = report["totals"]
    assert (t["rows"], t["kept"], t["dropped"]) == (790, 780, 10)
    assert all(s["rows"] == s["kept"] + 1 and s["dropped"] == 1 for s in report["shards"])
    assert {s["output"]: len(_records(out / s["output"])) for s in report["shards"]} == \
        {s["output"]: counts[s["path"]] - 1 for s in report["shards"]}


def test_sidecars_name_only_files_written_and_yaml_is_copied_as_it_is(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.jsonl").write_text('{"text": "one"}\n{"text": "two"}\n')
    (data / "v1.yaml").write_text("sft:\n  path: a.jsonl\n")
    info = {"a": {"file_name": "a.jsonl"}, "gone": {"file_name": "b.jsonl"}, "up": {"file_name": "../a.jsonl"},
            "hub": {"hf_hub_url": "org/set", "file_name": "nowhere.json"}}
    (data / "dataset_info.json").write_text(json.dumps(info))
    paths = [str(data / "a.jsonl")]
    audit = fake_audit(tmp_path / "audit", {paths[0]: [1]}, {paths[0]: 2})
    out = tmp_path / "out"
    report = run_clean(plan_clean(paths, [str(data)], out, Selection(), audit), out, EngineOptions("local"))
    assert json.loads((out / "dataset_info.json").read_text()) == {"a": info["a"], "hub": info["hub"]}
    assert (out / "v1.yaml").read_bytes() == (data / "v1.yaml").read_bytes()
    assert [(c["output"], c.get("removed")) for c in report["sidecars"]] == [
        ("dataset_info.json", {"gone": "b.jsonl is not in the output",
                               "up": "path '../a.jsonl' resolves outside the media root (the shard's folder, or "
                                     "--media-root)"}),
        ("v1.yaml", None)]
    assert (out / "a.jsonl").read_text() == '{"text": "one"}\n'


def test_content_parts_media_are_copied_and_urls_and_outside_paths_are_not(tmp_path):
    from tests.clean.helpers import cli

    data = tmp_path / "data"
    (data / "m").mkdir(parents=True)
    for name in ("a.jpg", "x.mp4", "s.wav", "gone.jpg"):
        (data / "m" / name).write_bytes(name.encode() * 10)
    (tmp_path / "outside.mp4").write_bytes(b"secret")
    parts = [{"type": "image_url", "image_url": {"url": "m/a.jpg"}}, {"type": "video", "video": "m/x.mp4"},
             {"type": "input_audio", "input_audio": {"data": "m/s.wav"}},
             {"type": "image_url", "image_url": {"url": "https://example.com/m/a.jpg"}},
             {"type": "video", "video": "../outside.mp4"}, {"type": "text", "text": "Compare them."}]
    records = [{"messages": [{"role": "user", "content": parts}, {"role": "assistant", "content": "Same."}]},
               {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "m/gone.jpg"}}]},
                             {"role": "assistant", "content": "Dropped."}]}]
    shard = data / "chat.jsonl"
    shard.write_text("".join(json.dumps(r) + "\n" for r in records))
    (data / "dataset_info.json").write_text(json.dumps({"chat": {"file_name": "chat.jsonl"},
                                                        "old": {"file_name": "old.jsonl"}}))
    audit = fake_audit(tmp_path / "audit", {str(shard): [1]}, {str(shard): 2})
    out = tmp_path / "out"
    code, output = cli("clean", data, "--audit", audit, "--out", out, "--engine", "local")
    assert code == 0, output
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if STATE not in p.parts and p.is_file()) \
        == ["chat.jsonl", "dataset_info.json", "m/a.jpg", "m/s.wav", "m/x.mp4"]
    # missing: ../outside.mp4 (outside the shard's folder); the URL is no file reference (never fetched)
    assert json.loads((out / STATE / "clean.json").read_text())["referenced"] == {"copied": 3, "missing": 1,
                                                                                 "refused": 0}
    assert "media the kept records reference: copied 3, missing 1, refused 0" in output
    assert "dataset_info.json: 1 entry removed, their file not in the output (old)" in output
    assert not (out / "outside.mp4").exists() and not (out / "example.com").exists()


def test_a_registry_above_the_shards_names_files_in_subfolders(tmp_path):
    data = tmp_path / "data"
    (data / "sft").mkdir(parents=True)
    (data / "dpo").mkdir()
    for sub in ("sft", "dpo"):
        (data / sub / "a.jsonl").write_text('{"text": "one"}\n{"text": "two"}\n')
    info = {"sft": {"file_name": "sft/a.jsonl"}, "dpo": {"file_name": "dpo/a.jsonl"},
            "pt": {"file_name": "pt/a.jsonl"}}
    (data / "dataset_info.json").write_text(json.dumps(info))
    paths = [str(data / "dpo" / "a.jsonl"), str(data / "sft" / "a.jsonl")]
    audit = fake_audit(tmp_path / "audit", {p: [0] for p in paths}, {p: 2 for p in paths})
    out = tmp_path / "out"
    report = run_clean(plan_clean(paths, [str(data)], out, Selection(), audit), out, EngineOptions("local"))
    assert json.loads((out / "dataset_info.json").read_text()) == {"sft": info["sft"], "dpo": info["dpo"]}
    assert [(c["output"], c["removed"]) for c in report["sidecars"]] == [
        ("dataset_info.json", {"pt": "pt/a.jsonl is not in the output"})]
