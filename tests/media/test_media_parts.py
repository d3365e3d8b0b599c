"""Video and audio inside message content parts (Qwen-VL `video`/`audio`, OpenAI `input_audio` base64): probed like
a `videos`/`audios` field, flagged at `messages[T].content[P]`; a part is its own placeholder."""
from __future__ import annotations

import base64
import json
import shutil

import pytest
from click.testing import CliRunner

import pyarrow.parquet as pq

from dataaudit.cli import main
from tests.paths import shared_file

pytest.importorskip("av", reason="the media checks need PyAV (pip install 'dataaudit[media]')")


def _turns(part: dict, text: str = "What happens?") -> dict:
    return {"messages": [{"role": "user", "content": [part, {"type": "text", "text": text}]},
                         {"role": "assistant", "content": [{"type": "text", "text": "A goal."}]}]}


def test_video_and_audio_parts_are_probed_and_named_by_turn_and_part(tmp_path):
    demo = shared_file("posttrain/mllm_demo_data/1.mp4").parent
    (tmp_path / "m").mkdir()
    shutil.copy(demo / "1.mp4", tmp_path / "m" / "a.mp4")
    shutil.copy(demo / "2.wav", tmp_path / "m" / "b.wav")
    wav = base64.b64encode((demo / "2.wav").read_bytes()).decode()
    shard = tmp_path / "c.jsonl"
    shard.write_text("".join(json.dumps(r) + "\n" for r in [
        _turns({"type": "video", "video": "m/a.mp4"}),
        _turns({"type": "video", "video": "m/gone.mp4"}),
        _turns({"type": "input_audio", "input_audio": {"data": wav, "format": "wav"}}),
        _turns({"type": "audio", "audio": "m/b.wav"}, "Listen <audio>"),     # a part and a token: one too many
        _turns({"type": "input_audio", "input_audio": {"data": "bm90IGF1ZGlv", "format": "wav"}}),  # "not audio"
    ]))
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["audit", str(shard), "--out", str(out)])
    assert res.exit_code == 1, res.output
    flags = sorted((f["row"], f["field"], f["check"]) for f in pq.read_table(out / "flags.parquet").to_pylist())
    assert flags == [(1, "messages[0].content[0]", "media_missing_file"),
                     (3, "messages", "audio_placeholders"),
                     (4, "messages[0].content[0]", "media_corrupt")]
    report = json.loads((out / "report.json").read_text())
    assert report["shards"][0]["fields"]["media"] == ["messages.content[].video", "messages.content[].audio"]
    assert report["media"]["messages.content[].audio"]["files"] == 3
    assert report["media"]["messages.content[].video"]["files"] == 2
