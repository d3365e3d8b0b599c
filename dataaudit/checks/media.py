"""Video and audio checks: every media file of a batch is probed once (dataaudit.media: PyAV, bounded, a full
demux and a decode of the ends) and each check reads the probes' values; then per record, its `<video>` /
`<audio>` placeholders against its files and its transcript against its audio's length."""
from __future__ import annotations

import numpy as np

from dataaudit.media.probe import BOMB, CORRUPT, EMPTY, MISSING, OUTSIDE, TOO_BIG

from .base import CheckOutput, register


def _status(mb, *codes) -> CheckOutput:
    flagged = np.isin(mb.status, codes)
    return CheckOutput(flagged=flagged, value=np.zeros(len(mb)), detail=[p.error for p in mb.probes])


@register("media_missing_file", target="media", severity="error", detail="media file missing", needs="av",
          description="A referenced video or audio file that does not exist, cannot be read, or whose path is "
                      "absolute or leaves the shard's folder (never opened; URLs are not downloaded). value = 0.")
def media_missing_file(mb, **params) -> CheckOutput:
    return _status(mb, MISSING, OUTSIDE)


@register("media_empty", target="media", severity="error", detail="zero-byte media file", needs="av",
          description="A video or audio file of zero bytes. value = 0.")
def media_empty(mb, **params) -> CheckOutput:
    return _status(mb, EMPTY)


@register("media_corrupt", target="media", severity="error", detail="media does not read", needs="av",
          description="A video or audio file FFmpeg cannot open (not a media file: a renamed text file), without "
                      "the stream its field names (no video stream in a `videos` file), with a demux or decode "
                      "error, packets FFmpeg marks corrupt, or a stream that ends well before the duration its "
                      "header declares (truncated). value = 0.")
def media_corrupt(mb, **params) -> CheckOutput:
    return _status(mb, CORRUPT)


@register("media_bomb", target="media", severity="error", detail="media bomb", needs="av",
          description="A file whose header declares more pixels per frame ([data] max_media_pixels), frames "
                      "(max_media_frames) or seconds (max_media_seconds) than allowed, or larger than "
                      "max_media_bytes (default 2 GiB): refused before any decode. value = 0.")
def media_bomb(mb, **params) -> CheckOutput:
    return _status(mb, BOMB, TOO_BIG)


@register("media_duration", target="media", severity="warning", params={"min_seconds": 0.5, "max_seconds": 3600.0},
          detail="duration {value:.2f} s", needs="av",
          description="A video or audio file shorter than min_seconds or longer than max_seconds (its declared "
                      "duration). value = seconds.")
def media_duration(mb, min_seconds=0.5, max_seconds=3600.0, **params) -> CheckOutput:
    d = mb.array("duration")
    flagged = mb.measured & np.isfinite(d) & ((d < min_seconds) | (d > max_seconds))
    detail = [f"duration {x:.2f} s {'<' if x < min_seconds else '>'} {min_seconds if x < min_seconds else max_seconds} s"
              if f else None for f, x in zip(flagged.tolist(), d.tolist())]
    return CheckOutput(flagged=flagged, value=d, detail=detail)


@register("video_resolution", target="media", severity="warning", params={"min_side": 32, "max_side": 8192},
          detail="{value:.0f} px", needs="av",
          description="A video whose shorter side is below min_side or longer side above max_side pixels. "
                      "value = shorter side.")
def video_resolution(mb, min_side=32, max_side=8192, **params) -> CheckOutput:
    w, h = mb.array("width"), mb.array("height")
    short, long = np.minimum(w, h), np.maximum(w, h)
    flagged = mb.is_video & mb.measured & (short > 0) & ((short < min_side) | (long > max_side))
    detail = [f"{int(a)}x{int(b)}" if f else None for f, a, b in zip(flagged.tolist(), w.tolist(), h.tolist())]
    return CheckOutput(flagged=flagged, value=short, detail=detail)


@register("video_fps", target="media", severity="warning", params={"min_fps": 1.0, "max_fps": 240.0},
          detail="{value:.2f} frames/s", needs="av",
          description="A video whose frame rate (declared average) is below min_fps or above max_fps. "
                      "value = frames per second.")
def video_fps(mb, min_fps=1.0, max_fps=240.0, **params) -> CheckOutput:
    fps = mb.array("fps")
    flagged = mb.is_video & mb.measured & np.isfinite(fps) & ((fps < min_fps) | (fps > max_fps))
    return CheckOutput(flagged=flagged, value=fps)


@register("video_blank", target="media", severity="warning", params={"max_std": 2.0},
          detail="blank video: grey std {value:.2f} < {max_std}", needs="av",
          description="A video whose sampled frames (its first frames and the key frame of its last second, "
                      "reduced to about 64 px grey) are all near-constant: black or a still colour. "
                      "value = the largest grey std of those frames (0-255).")
def video_blank(mb, max_std=2.0, **params) -> CheckOutput:
    std = mb.array("frame_std")
    return CheckOutput(flagged=mb.is_video & (np.nan_to_num(std, nan=np.inf) < max_std), value=std)


@register("audio_silent", target="media", severity="warning", params={"min_rms": 0.001},
          detail="silent audio: RMS {value:.5f} < {min_rms}", needs="av",
          description="An audio file whose decoded samples (the first and last 10 s of it; all of a file up to "
                      "20 s) have an RMS below min_rms (full scale 1.0; 0.001 = -60 dBFS): silence, a NaN-loss "
                      "risk for speech models. value = RMS.")
def audio_silent(mb, min_rms=0.001, **params) -> CheckOutput:
    rms = mb.array("rms")
    return CheckOutput(flagged=~mb.is_video & (np.nan_to_num(rms, nan=np.inf) < min_rms), value=rms)


@register("audio_clipped", target="media", severity="warning", params={"max_fraction": 0.01},
          detail="{value:.2%} of samples at full scale", needs="av",
          description="An audio file where more than max_fraction of the decoded samples sit at full scale "
                      "(|x| >= 0.999): clipped. value = that fraction.")
def audio_clipped(mb, max_fraction=0.01, **params) -> CheckOutput:
    c = mb.array("clipped")
    return CheckOutput(flagged=~mb.is_video & (np.nan_to_num(c, nan=0.0) > max_fraction), value=c)


@register("audio_nonfinite", target="media", severity="warning", detail="{value:.0f} NaN/inf samples", needs="av",
          description="A float-PCM audio file holding NaN or infinite samples. value = how many were decoded.")
def audio_nonfinite(mb, **params) -> CheckOutput:
    n = mb.array("nonfinite")
    return CheckOutput(flagged=~mb.is_video & (n > 0), value=n)


@register("audio_sample_rate", target="media", severity="warning", params={"audio_sample_rate": None},
          data={"audio_sample_rate": "audio_sample_rate"}, required=("audio_sample_rate",),
          detail="{value:.0f} Hz, expected {audio_sample_rate} Hz",
          needs="av",
          description="An audio file whose sample rate differs from [data] audio_sample_rate (runs when it is "
                      "set). value = Hz.")
def audio_sample_rate(mb, audio_sample_rate=None, **params) -> CheckOutput:
    sr = mb.array("sample_rate")
    return CheckOutput(flagged=~mb.is_video & mb.measured & (sr > 0) & (sr != audio_sample_rate), value=sr)


@register("audio_channels", target="media", severity="warning", params={"audio_channels": None},
          data={"audio_channels": "audio_channels"}, required=("audio_channels",),
          detail="{value:.0f} channels, expected {audio_channels}", needs="av",
          description="An audio file whose channel count differs from [data] audio_channels (runs when it is "
                      "set). value = channels.")
def audio_channels(mb, audio_channels=None, **params) -> CheckOutput:
    ch = mb.array("channels")
    return CheckOutput(flagged=~mb.is_video & mb.measured & (ch > 0) & (ch != audio_channels), value=ch)


def _pair(flagged: np.ndarray, value: np.ndarray, where, detail=None) -> CheckOutput:
    return CheckOutput(flagged=flagged, value=value.astype(np.float64), detail=detail,
                       where=np.full(flagged.size, where, dtype=object))


@register("transcript_rate", target="media_pairs", severity="warning", params={"min_cps": 0.0, "max_cps": 40.0},
          detail="{value:.1f} characters/s of audio", needs="av",
          description="A record whose transcript (its assistant replies, else its caption) holds fewer than "
                      "min_cps or more than max_cps characters per second of its audio (speech is about 15): a "
                      "transcript longer than the audio fails CTC training. value = characters per second.")
def transcript_rate(mp, min_cps=0.0, max_cps=40.0, **params) -> CheckOutput:
    sec = mp.audio_seconds
    rate = np.divide(mp.transcript_chars, sec, out=np.full(sec.shape, np.nan), where=np.isfinite(sec) & (sec > 0))
    flagged = (mp.audios > 0) & np.isfinite(rate) & ((rate < min_cps) | (rate > max_cps))
    detail = [f"{c} characters for {s:.2f} s of audio = {r:.1f}/s" if f else None
              for f, c, s, r in zip(flagged.tolist(), mp.transcript_chars.tolist(), sec.tolist(), rate.tolist())]
    return _pair(flagged, rate, mp.transcript_field, detail)


def _placeholders(mp, files: np.ndarray, token: str, what: str, kind: str) -> CheckOutput:
    n = files.size
    if mp.conversation_field is None:
        return _pair(np.zeros(n, bool), np.zeros(n), None)
    count = mp.placeholders(token, kind)
    flagged = (count != files) & ((files > 0) | (count > 0))
    detail = [f"{c} {token} placeholders, {i} {what}" if f else None
              for f, c, i in zip(flagged.tolist(), count.tolist(), files.tolist())]
    return _pair(flagged, count, mp.conversation_field, detail)


@register("video_placeholders", target="media_pairs", severity="error", params={"token": "<video>"},
          detail="{value:.0f} placeholders", needs="av",
          description="A conversation whose number of video placeholders (token, default `<video>`) differs from "
                      "its number of videos: the processor fails or pairs the wrong video. value = placeholders.")
def video_placeholders(mp, token="<video>", **params) -> CheckOutput:
    if mp.video_field is None:
        return _pair(np.zeros(mp.videos.size, bool), np.zeros(mp.videos.size), None)
    return _placeholders(mp, mp.videos, token, "videos", "video")


@register("audio_placeholders", target="media_pairs", severity="error", params={"token": "<audio>"},
          detail="{value:.0f} placeholders", needs="av",
          description="A conversation whose number of audio placeholders (token, default `<audio>`) differs from "
                      "its number of audio files. value = placeholders.")
def audio_placeholders(mp, token="<audio>", **params) -> CheckOutput:
    if mp.audio_field is None:
        return _pair(np.zeros(mp.audios.size, bool), np.zeros(mp.audios.size), None)
    return _placeholders(mp, mp.audios, token, "audio files", "audio")
