"""Video and audio through the audit: hostile media generated from LLaMA-Factory's demo media, each flagged by
its one check with the field and index named; the demo's own video and audio datasets pass, counted exactly."""
from __future__ import annotations

import json
import shutil

import pytest

from dataaudit.audit.shard import audit_shard
from dataaudit.config import build_config
from tests.media import hostile_media as hm
from tests.paths import shared_file

pytest.importorskip("av", reason="the media checks need PyAV (pip install 'dataaudit[media]')")

MEDIA_CHECKS = ("media_missing_file", "media_empty", "media_corrupt", "media_bomb", "media_duration",
                "video_resolution", "video_fps", "video_blank", "audio_silent", "audio_clipped", "audio_nonfinite",
                "audio_sample_rate", "audio_channels", "transcript_rate", "video_placeholders", "audio_placeholders")


def _record(kind: str, files: list[str], reply: str = "ok", placeholders: int | None = None) -> dict:
    token = f"<{kind}>"
    n = len(files) if placeholders is None else placeholders
    return {"messages": [{"role": "user", "content": token * n + "What is it?"},
                         {"role": "assistant", "content": reply}],
            f"{kind}s": files}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    demo = shared_file(f"{hm.DEMO}/2.wav").parent
    root = tmp_path_factory.mktemp("media")
    data = root / "data"
    data.mkdir()
    for name in ("1.mp4", "2.wav"):
        shutil.copy(demo / name, data / name)
    hm.cut(demo / "2.avi", data / "cut.avi")
    (data / "zero.wav").write_bytes(b"")
    hm.renamed_text(data / "text.mp4")
    hm.silenced(demo / "2.wav", data / "silent.wav")
    hm.frames_bomb(demo / "2.avi", data / "frames.avi")
    hm.write_wav(data / "short.wav", hm.tone(0.2), 16000)
    hm.resampled(demo / "2.wav", data / "rate8k.wav", 8000)
    (root / "x.mp4").write_bytes((demo / "4.mp4").read_bytes())
    records = [
        _record("video", ["1.mp4"]),                        # 0: clean
        _record("video", ["404.mp4"]),                      # 1: missing
        _record("video", ["cut.avi"]),                      # 2: truncated
        _record("audio", ["zero.wav"]),                     # 3: zero bytes
        _record("video", ["1.mp4", "text.mp4"]),            # 4: a renamed text file, second in the list
        _record("audio", ["silent.wav"]),                   # 5: silence
        _record("video", ["frames.avi"]),                   # 6: 10^7 frames declared
        _record("audio", ["2.wav"], placeholders=0),        # 7: no <audio> placeholder
        _record("video", ["../x.mp4"]),                     # 8: outside the shard's folder
        _record("audio", ["short.wav"]),                    # 9: 0.2 s
        _record("audio", ["2.wav"], reply="word " * 40),    # 10: 200 characters for 2.9 s of audio
        _record("audio", ["rate8k.wav"]),                   # 11: re-encoded at 8 kHz
    ]
    path = data / "hostile.json"
    path.write_text(json.dumps(records))
    return path


def _flags(flags) -> list[tuple]:
    return sorted((r["row"], r["field"], r["check"]) for r in flags.to_pylist() if r["check"] in MEDIA_CHECKS)


def test_each_hostile_file_is_flagged_by_its_check(hostile):
    result, flags = audit_shard(str(hostile), build_config({"data": {"audio_sample_rate": 16000}}))
    summary = result.summary()
    assert summary["fields"]["media"] == ["videos", "audios"]
    assert summary["fields"]["text"] == ["messages"]
    assert _flags(flags) == [
        (1, "videos[0]", "media_missing_file"),
        (2, "videos[0]", "media_corrupt"),
        (3, "audios[0]", "media_empty"),
        (4, "videos[1]", "media_corrupt"),
        (5, "audios[0]", "audio_silent"),
        (6, "videos[0]", "media_bomb"),
        (7, "messages", "audio_placeholders"),
        (8, "videos[0]", "media_missing_file"),
        (9, "audios[0]", "media_duration"),
        (10, "messages", "transcript_rate"),
        (11, "audios[0]", "audio_sample_rate"),
    ]
    detail = {(r["row"], r["check"]): r["detail"] for r in flags.to_pylist()}
    assert detail[(1, "media_missing_file")] == "no such file: '404.mp4'"
    assert detail[(2, "media_corrupt")] == "1 of 166 packets corrupt (truncated or damaged stream)"
    assert detail[(3, "media_empty")] == "0 bytes"
    assert detail[(6, "media_bomb")] == "10000000 frames declared > max_media_frames 1000000 (not decoded)"
    assert detail[(7, "audio_placeholders")] == "0 <audio> placeholders, 1 audio files"
    assert detail[(8, "media_missing_file")] == "path '../x.mp4' resolves outside the media root (the shard's folder, or --media-root)"
    assert detail[(9, "media_duration")] == "duration 0.20 s < 0.5 s"
    assert detail[(10, "transcript_rate")] == "200 characters for 2.90 s of audio = 68.9/s"
    assert detail[(11, "audio_sample_rate")] == "8000 Hz, expected 16000 Hz"
    # a flagged video's example shows its poster frame (decoded before the stream broke off)
    example = summary["examples"]["media_corrupt"][0]
    assert example["row"] == 2 and example["thumbnail"].startswith("data:image/jpeg;base64,")
    stats = summary["media"]
    assert (stats["videos"]["files"], stats["videos"]["ok"]) == (7, 2)
    assert (stats["audios"]["files"], stats["audios"]["ok"]) == (6, 5)


def test_without_pyav_media_fields_are_not_checked(hostile, monkeypatch):
    import dataaudit.audit.plan as plan

    monkeypatch.setattr(plan, "available", lambda module: module != "av")
    result, flags = audit_shard(str(hostile), build_config({}))
    summary = result.summary()
    assert _flags(flags) == []
    assert "media" not in summary["fields"]   # roles with no field are left out
    assert summary["problems"] == ["videos, audios: not checked: the video and audio checks need av (PyAV), which "
                                   "is not installed: pip install 'dataaudit[media]'"]
    assert summary["skipped"]["media_corrupt"].startswith("its field in this shard needs av (PyAV)")
    from click.testing import CliRunner

    from dataaudit.cli import main

    out = hostile.parent.parent / "strict_without_av"
    res = CliRunner().invoke(main, ["audit", str(hostile), "--out", str(out), "--strict"])
    assert res.exit_code == 1, res.output     # no error flagged, but the media were not checked
    assert CliRunner().invoke(main, ["audit", str(hostile), "--out", str(out.with_name("plain"))]).exit_code == 0
    notes = json.loads((out / "report.json").read_text())["notes"]
    assert f"{hostile}: {summary['problems'][0]}" in notes


@pytest.mark.parametrize("name, records", [("mllm_video_demo.json", 3), ("mllm_audio_demo.json", 3),
                                           ("mllm_video_audio_demo.json", 3)])
def test_llamafactory_media_demos_pass(name, records, tmp_path):
    path = shared_file(f"posttrain/{name}")
    result, flags = audit_shard(str(path), build_config({}))
    summary = result.summary()
    assert (summary["records"], summary["flagged"], flags.num_rows) == (records, 0, 0)
    kinds = {"mllm_video_demo.json": ["videos"], "mllm_audio_demo.json": ["audios"],
             "mllm_video_audio_demo.json": ["videos", "audios"]}[name]
    assert summary["fields"]["media"] == kinds and summary["fields"]["text"] == ["messages"]
    assert {k: (v["files"], v["ok"]) for k, v in summary["media"].items()} == {k: (3, 3) for k in kinds}
    assert "messages" in summary["lengths"] and not any(k.startswith(("videos", "audios")) for k in summary["lengths"])
    assert summary["unchecked"] == {} and summary["problems"] == []



def test_report_json_and_page_show_media(tmp_path):
    from click.testing import CliRunner

    from dataaudit.cli import main

    path = shared_file("posttrain/mllm_video_audio_demo.json")
    res = CliRunner().invoke(main, ["audit", str(path), "--out", str(tmp_path / "o"), "--strict"])
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    media = report["media"]
    assert sorted(media) == ["audios", "videos"]
    assert {k: (v["kind"], v["files"], v["ok"], v["formats"]) for k, v in media.items()} == {
        "audios": ("audio", 3, 3, {"mp3": 3}), "videos": ("video", 3, 3, {"mov,mp4,m4a,3gp,3g2,mj2": 3})}
    # 4.mp4: 5.0 s at 30 frames/s; 4.mp3: 5.0 s at 44,100 Hz (histograms in integers: ms, fps x100, Hz)
    assert (media["videos"]["duration"]["min"], media["videos"]["fps"]["min"]) == (5000, 3000)
    assert (media["audios"]["duration"]["min"], media["audios"]["sample_rate"]["max"]) == (5000, 44100)
    assert "fps" not in media["audios"] and "sample_rate" not in media["videos"]
    assert list(report["lengths"]) == ["messages"]    # no length histogram of file paths
    page = (tmp_path / "o" / "report.html").read_text()
    assert '<h2 id="media">Video and audio</h2>' in page and "<h3>videos: fps" in page


def test_media_bytes_in_parquet_and_webdataset_members(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.builders import make_tar

    demo = shared_file(f"{hm.DEMO}/2.wav").parent
    wav, mp4 = (demo / "2.wav").read_bytes(), (demo / "4.mp4").read_bytes()
    silent = hm.silenced(demo / "2.wav", tmp_path / "silent.wav").read_bytes()
    pq.write_table(pa.table({"text": ["a cough", "silence", "cut"],
                             "payload": pa.array([wav, silent, wav[: len(wav) // 2]], pa.binary())}),
                   tmp_path / "a.parquet")
    result, flags = audit_shard(str(tmp_path / "a.parquet"), build_config({}))
    assert result.summary()["fields"]["media"] == ["payload"]
    assert _flags(flags) == [(1, "payload", "audio_silent"), (2, "payload", "media_corrupt")]
    tar = make_tar(tmp_path / "s.tar", [("a.mp4", mp4), ("a.txt", b"a girl drawing"),
                                        ("b.mp4", mp4[:30000]), ("b.txt", b"cut"), ("c.wav", b""), ("c.txt", b"x")])
    result, flags = audit_shard(str(tar), build_config({}))
    assert result.summary()["fields"]["media"] == ["mp4", "wav"]
    assert _flags(flags) == [(1, "mp4", "media_corrupt"), (2, "wav", "media_empty")]


def test_header_limits_refuse_before_decoding(tmp_path):
    from dataaudit.media.probe import BOMB, CORRUPT, MediaLimits, probe

    demo = shared_file(f"{hm.DEMO}/4.mp4").parent
    p = probe(str(demo / "4.mp4"), "video", MediaLimits(max_pixels=224 * 224 - 1))
    assert (p.status, p.error, p.poster, p.packets) == (
        BOMB, "224x224 = 50176 pixels per frame > max_media_pixels 50175 (not decoded)", None, -1)
    p = probe(str(demo / "4.mp3"), "audio", MediaLimits(max_seconds=4))
    assert (p.status, p.error) == (BOMB, "5 s declared > max_media_seconds 4 (not decoded)")
    p = probe((demo / "4.mp3").read_bytes(), "video")
    assert (p.status, p.error) == (CORRUPT, "no video stream (streams: audio)")
    # a file read through the byte cap only (one that grew past it after it was sized reads as cut there)
    p = probe(str(demo / "2.wav"), "audio", MediaLimits(max_bytes=60000))
    assert (p.status, p.error) == (CORRUPT, "1 of 30 packets corrupt (truncated or damaged stream)")
    cut = hm.cut(demo / "1.mp3", tmp_path / "cut.mp3", 0.7)
    assert probe(str(cut), "audio").error == "last frame 460 bytes of 768 (truncated)"


def test_a_concat_list_is_never_followed(tmp_path):
    """FFmpeg's concat demuxer would open the files a list names (even from a file object): not a format the probe
    allows, so the list is a corrupt file and the file it names is never opened through it."""
    import av

    from dataaudit.media.probe import CORRUPT, probe

    shutil.copy(shared_file(f"{hm.DEMO}/4.mp4"), tmp_path / "4.mp4")
    (tmp_path / "list.mp4").write_text("ffconcat version 1.0\nfile 4.mp4\n")
    with open(tmp_path / "list.mp4", "rb") as f, av.open(f) as c:   # what an unrestricted open does
        assert (c.format.name, len(c.streams.video)) == ("concat", 1)
    p = probe(str(tmp_path / "list.mp4"), "video")
    assert p.status == CORRUPT and p.error.startswith("not a readable media file (") and p.packets == -1


def test_synthetic_defects_warnings(tmp_path):
    import numpy as np

    shutil.copy(shared_file(f"{hm.DEMO}/4.mp4"), tmp_path / "ok.mp4")
    hm.encoded_video(tmp_path / "black.mp4", 30, 64, 48)
    hm.encoded_video(tmp_path / "tiny.mp4", 30, 16, 16, black=False)
    hm.write_wav(tmp_path / "clipped.wav", np.clip(hm.tone(2.0, level=3.0), -1, 1), 16000)
    nan = hm.tone(2.0)
    nan[100:110] = np.nan
    hm.float_wav(tmp_path / "nan.wav", nan)
    hm.encoded_video(tmp_path / "fast.mp4", 200, 64, 48, rate=300, black=False)
    records = [_record("video", ["ok.mp4"]), _record("video", ["black.mp4"]), _record("video", ["tiny.mp4"]),
               _record("audio", ["clipped.wav"]), _record("audio", ["nan.wav"]), _record("video", ["fast.mp4"])]
    (tmp_path / "d.json").write_text(json.dumps(records))
    result, flags = audit_shard(str(tmp_path / "d.json"), build_config({}))
    assert _flags(flags) == [(1, "videos[0]", "video_blank"), (2, "videos[0]", "video_resolution"),
                             (3, "audios[0]", "audio_clipped"), (4, "audios[0]", "audio_nonfinite"),
                             (5, "videos[0]", "video_fps")]
    detail = {r["check"]: (r["value"], r["detail"]) for r in flags.to_pylist()}
    assert detail["video_resolution"] == (16.0, "16x16")
    assert detail["video_fps"] == (300.0, "300.00 frames/s")
    assert detail["audio_nonfinite"] == (10.0, "10 NaN/inf samples")
    assert detail["video_blank"][0] < 2.0 and detail["audio_clipped"][0] > 0.5


def test_crafted_matroska_headers(tmp_path):
    """A header declaring 12,000 x 12,000 (FFmpeg reports it) is refused before decoding; one declaring
    100,000 x 100,000 is past FFmpeg's own limit (it zeroes the dimensions): read from the header itself, it is a bomb
    too; a codec FFmpeg cannot decode is corrupt. No PyAV needed to write them, and none shared data."""
    from dataaudit.media.probe import BOMB, CORRUPT, probe

    big = hm.matroska_header(tmp_path / "big.mkv", "V_VP9", 12000, 12000)
    huge = hm.matroska_header(tmp_path / "huge.mkv", "V_VP9", 100000, 100000)
    odd = hm.matroska_header(tmp_path / "odd.mkv", "V_NOSUCHCODEC", 64, 64)
    long = hm.matroska_header(tmp_path / "long.mkv", "V_VP9", 64, 64, seconds=400000.0)
    assert [(p.status, p.error) for p in (probe(str(f), "video") for f in (big, huge, odd, long))] == [
        (BOMB, "12000x12000 = 144000000 pixels per frame > max_media_pixels 89478485 (not decoded)"),
        (BOMB, "100000x100000 = 10000000000 pixels per frame declared > max_media_pixels 89478485 (FFmpeg refuses "
               "the header; not decoded)"),
        (CORRUPT, "no decoder for its video codec"),
        (BOMB, "400000 s declared > max_media_seconds 36000 (not decoded)")]
