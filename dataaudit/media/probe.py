"""Probe one video or audio file with PyAV, bounded, and measure what the media checks read.

Order of work, so that a hostile file costs its probe and never the job: the file was sized before (a byte cap,
dataaudit.images.media); the container is opened with a whitelist of formats (no playlist or concat demuxer that
would open other files or URLs) and one decoding thread; the header's declared width x height, frame count and
duration are checked against the limits BEFORE anything is decoded (a bomb is refused unread); then every packet
is demuxed (a demux error, a packet FFmpeg marks corrupt, or a stream that ends well before its declared duration
is a corrupt file) and only the ends are decoded: audio, its first and last AUDIO_WINDOW seconds (RMS, clipped
and non-finite samples); video, its first frames and the key frame its last second starts from (reduced to grey
for a blank test; the first also as a small poster). A video's last second is not decoded frame by frame: with
one key frame per file (x264's default GOP on a short clip) that is a full decode, 20 times the cost of a probe.

PyAV is used as it ships: no global setter is called (av.logging stays as PyAV 18 leaves it: FFmpeg's log off).
"""
from __future__ import annotations

import io
import math
from dataclasses import dataclass

import numpy as np

# Status codes shared with the image probe (one meaning each across the report).
from dataaudit.images.probe import BOMB, CORRUPT, EMPTY, MISSING, OK, OUTSIDE, TOO_BIG

__all__ = ["BOMB", "CORRUPT", "EMPTY", "MISSING", "OK", "OUTSIDE", "TOO_BIG", "MediaLimits", "MediaProbe", "probe"]

DEFAULT_MAX_BYTES = 2 << 30          # a media file larger than this is not read
DEFAULT_MAX_PIXELS = 89_478_485      # per frame (as images: Pillow's default MAX_IMAGE_PIXELS)
DEFAULT_MAX_FRAMES = 1_000_000       # about 9 hours at 30 fps
DEFAULT_MAX_SECONDS = 36_000.0       # 10 hours
VIDEO_WINDOW = 1.0                   # video: its first VIDEO_SAMPLES frames, and the key frame of its last second
AUDIO_WINDOW = 10.0                  # seconds decoded at each end of an audio stream
VIDEO_SAMPLES = 3                    # frames of each window measured for the blank test
POSTER_SIDE = 64                     # the report shows thumbnails of at most 64 px
STATS_SIDE = 64
# The containers FFmpeg may open here: media files, never a playlist (hls, dash), a concat list or an image
# sequence, whose demuxers open other files or URLs.
FORMATS = ("mov,mp4,m4a,3gp,3g2,mj2", "matroska,webm", "avi", "wav", "flac", "mp3", "ogg", "aac", "asf", "flv",
           "mpegts", "mpeg", "yuv4mpegpipe", "w64", "aiff", "caf")
MPEG_AUDIO = ("mp3", "mp3float", "mp2", "mp2float")   # encoders write whole frames only
CLIP_LEVEL = 0.999                   # |sample| at or above this (full scale 1.0) counts as clipped


@dataclass(frozen=True)
class MediaLimits:
    max_bytes: int = DEFAULT_MAX_BYTES
    max_pixels: int = DEFAULT_MAX_PIXELS
    max_frames: int = DEFAULT_MAX_FRAMES
    max_seconds: float = DEFAULT_MAX_SECONDS
    threads: int = 4

    @classmethod
    def from_data(cls, data: dict) -> "MediaLimits":
        import os

        return cls(int(data.get("max_media_bytes", DEFAULT_MAX_BYTES)),
                   int(data.get("max_media_pixels", DEFAULT_MAX_PIXELS)),
                   int(data.get("max_media_frames", DEFAULT_MAX_FRAMES)),
                   float(data.get("max_media_seconds", DEFAULT_MAX_SECONDS)),
                   int(data.get("media_threads", min(4, os.cpu_count() or 1))))


@dataclass
class MediaProbe:
    """One media file: its status, the error that gave it, and what was measured (-1 / nan when unknown)."""

    status: int
    error: str | None = None
    format: str | None = None       # the container FFmpeg identified
    codec: str | None = None        # the codec of the stream probed
    duration: float = float("nan")  # seconds, as declared
    width: int = -1
    height: int = -1
    fps: float = float("nan")
    frames: int = -1                # declared frame count (0 / -1: not declared)
    sample_rate: int = -1
    channels: int = -1
    packets: int = -1               # packets demuxed (all streams)
    rms: float = float("nan")       # audio: RMS of the decoded samples (full scale 1.0)
    clipped: float = float("nan")   # audio: fraction of decoded samples at full scale
    nonfinite: int = 0              # audio: NaN / inf samples decoded (float PCM)
    frame_std: float = float("nan")  # video: largest grey std (0-255) of the sampled frames
    poster: bytes | None = None     # video: a small JPEG of the first decoded frame
    zeroed: bool = False            # FFmpeg zeroed the frame size it refused (dataaudit.media.declared reads it)


def _message(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _seconds(value, time_base) -> float:
    return float(value * time_base) if value is not None and time_base is not None else float("nan")


def probe(source: str | bytes, kind: str, limits: MediaLimits = MediaLimits()) -> MediaProbe:
    """Open, bound, demux and partly decode one media file: `source` its bytes or a regular file's path (sized
    and resolved by the caller); `kind` "video" or "audio" (the stream probed)."""
    import av

    if isinstance(source, (bytes, bytearray)) and not source:
        return MediaProbe(EMPTY, "0 bytes")
    f = io.BytesIO(source) if isinstance(source, (bytes, bytearray)) else _Capped(_open_file(source), limits.max_bytes)
    try:
        try:
            container = av.open(f, options={"threads": "1"},
                                container_options={"format_whitelist": ",".join(FORMATS)}, metadata_errors="replace")
        except Exception as e:   # not a container FFmpeg reads (a renamed text file), a broken header
            return MediaProbe(CORRUPT, f"not a readable media file ({_message(e)})")
        with container:
            out = _probe_open(container, kind, limits)
        if out.zeroed:   # FFmpeg refused the header's frame size: say what it declared, a bomb when over the limit
            _declared_bomb(out, source, limits)
        return out
    finally:
        f.close()


def _declared_bomb(out: "MediaProbe", source: str | bytes, limits: MediaLimits) -> None:
    from .declared import HEAD_BYTES, declared_size

    if isinstance(source, (bytes, bytearray)):
        head = bytes(source[:HEAD_BYTES])
    else:
        with _open_file(source) as f:
            head = f.read(HEAD_BYTES)
    size = declared_size(head)
    if size is not None and size[0] * size[1] > limits.max_pixels:
        out.status = BOMB
        out.width, out.height = size
        out.error = f"{size[0]}x{size[1]} = {size[0] * size[1]} pixels per frame declared > max_media_pixels " \
                    f"{limits.max_pixels} (FFmpeg refuses the header; not decoded)"


class _Capped:
    """A file read through at most `limit` bytes: FFmpeg sees a file that ends there, even one that grew past
    max_media_bytes after it was sized."""

    def __init__(self, f, limit: int):
        self.f, self.limit = f, limit

    def read(self, n: int = -1) -> bytes:
        left = self.limit - self.f.tell()
        return self.f.read(max(0, left if n is None or n < 0 else min(n, left)))

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.f.seek(offset, whence)

    def tell(self) -> int:
        return self.f.tell()

    def seekable(self) -> bool:
        return True

    def close(self) -> None:
        self.f.close()

    @property
    def name(self) -> str:
        return self.f.name


def _open_file(path: str):
    from dataaudit.io import open_input   # a regular file only (a FIFO would block FFmpeg's read forever)

    return open_input(path)


def _probe_open(container, kind: str, limits: MediaLimits) -> MediaProbe:
    streams = container.streams.video if kind == "video" else container.streams.audio
    out = MediaProbe(OK, format=container.format.name)
    if not streams:
        out.status, out.error = CORRUPT, f"no {kind} stream (streams: " \
            f"{', '.join(s.type for s in container.streams) or 'none'})"
        return out
    st = streams[0]
    cc = st.codec_context
    if cc is None:   # a codec this FFmpeg has no decoder for: nothing of the stream can be read
        out.status, out.error = CORRUPT, f"no decoder for its {kind} codec"
        return out
    out.codec = cc.name
    out.duration = container.duration / 1e6 if container.duration is not None and container.duration > 0 else \
        _seconds(st.duration, st.time_base)
    out.frames = int(st.frames or 0)
    if kind == "video":
        out.width, out.height = int(cc.width or 0), int(cc.height or 0)
        rate = st.average_rate or st.guessed_rate
        out.fps = float(rate) if rate else float("nan")
    else:
        out.sample_rate = int(cc.sample_rate or 0)
        out.channels = int(cc.layout.nb_channels) if cc.layout is not None else int(getattr(cc, "channels", 0))
    if kind == "audio" and (out.sample_rate <= 0 or out.channels <= 0):
        out.status, out.error = CORRUPT, "audio stream without a sample rate or channels (not audio data)"
        return out
    if kind == "video" and (out.width <= 0 or out.height <= 0):
        # FFmpeg zeroes dimensions it refuses (a header declaring 100000 x 100000 of raw video, av_image_check_size)
        out.status, out.error = CORRUPT, "video stream without valid dimensions (FFmpeg refused the header's)"
        out.zeroed = True
        return out
    bomb = _bomb(out, limits)
    if bomb is not None:
        out.status, out.error = BOMB, bomb + " (not decoded)"
        return out
    cc.thread_count = 1
    try:
        _demux(container, st, kind, out)
    except Exception as e:  # noqa: BLE001 - hostile streams raise anything: the file is corrupt
        out.status, out.error = CORRUPT, _message(e)
    return out


def _bomb(p: MediaProbe, limits: MediaLimits) -> str | None:
    """Why the header's declarations exceed the limits, else None."""
    if p.width > 0 and p.height > 0 and p.width * p.height > limits.max_pixels:
        return f"{p.width}x{p.height} = {p.width * p.height} pixels per frame > max_media_pixels {limits.max_pixels}"
    if p.frames > limits.max_frames:
        return f"{p.frames} frames declared > max_media_frames {limits.max_frames}"
    if p.duration > limits.max_seconds:
        return f"{p.duration:.0f} s declared > max_media_seconds {limits.max_seconds:g}"
    return None


class _Audio:
    """Running sums over decoded audio samples (float, full scale 1.0)."""

    def __init__(self):
        self.n = self.clipped = self.nonfinite = 0
        self.squares = 0.0

    def add(self, frame) -> None:
        a = frame.to_ndarray()
        if a.dtype.kind == "f":
            finite = np.isfinite(a)
            bad = int(a.size - np.count_nonzero(finite))
            if bad:
                self.nonfinite += bad
                a = a[finite]
            x = a.astype(np.float64, copy=False)
        elif a.dtype == np.uint8:
            x = (a.astype(np.float64) - 128.0) / 128.0
        else:
            x = a.astype(np.float64) / float(np.iinfo(a.dtype).max + 1)
        self.n += x.size
        self.squares += float(np.dot(x.ravel(), x.ravel()))
        self.clipped += int(np.count_nonzero(np.abs(x) >= CLIP_LEVEL))


def _grey_std(frame) -> float:
    w, h = frame.width, frame.height
    scale = STATS_SIDE / max(w, h, 1)
    small = frame.reformat(width=max(2, int(w * scale) & ~1), height=max(2, int(h * scale) & ~1), format="gray", interpolation="FAST_BILINEAR")
    return float(small.to_ndarray().std())


def _poster(frame) -> bytes | None:
    try:
        scale = POSTER_SIDE / max(frame.width, frame.height, 1)
        small = frame.reformat(width=max(2, int(frame.width * scale) & ~1),
                               height=max(2, int(frame.height * scale) & ~1), format="rgb24", interpolation="FAST_BILINEAR")
        buf = io.BytesIO()
        small.to_image().save(buf, "JPEG", quality=80)
        return buf.getvalue()
    except Exception:  # noqa: BLE001 - no poster (Pillow missing, an odd pixel format): nothing else lost
        return None


def _decode(st, packets, measure) -> int:
    """Decode `packets` of the probed stream, calling `measure(frame)`; the frames decoded."""
    n = 0
    for packet in packets:
        for frame in st.codec_context.decode(packet):
            measure(frame)
            n += 1
    return n


def _demux(container, st, kind: str, out: MediaProbe) -> None:
    """Every packet demuxed (counted; corrupt or short streams flagged), the probed stream's first window decoded
    on the way, then its last window after a seek back."""
    window = VIDEO_WINDOW if kind == "video" else AUDIO_WINDOW
    declared = out.duration
    known = declared == declared
    whole = known and declared <= 2 * window   # short: decoded whole; of unknown length: its first window only
    if whole:
        window = math.inf
    tb = st.time_base
    base = float(tb) if tb else 0.0
    start = st.start_time or 0
    audio, stds = _Audio(), []
    corrupt = packets = mine = 0
    low, high, last = math.inf, 0, -1     # the probed stream's packet sizes: all but the last, and the last
    last_end = -math.inf
    first_window: list = []

    def video_measure(frame):
        if len(stds) < VIDEO_SAMPLES:
            stds.append(_grey_std(frame))
            if out.poster is None:
                out.poster = _poster(frame)

    measure = audio.add if kind == "audio" else video_measure
    for packet in container.demux():
        if packet.size == 0 and packet.dts is None:
            continue   # the flush packet demux() ends with
        packets += 1
        corrupt += bool(packet.is_corrupt)
        if packet.stream_index != st.index:
            continue
        mine += 1
        if last >= 0:
            low, high = min(low, last), max(high, last)
        last = packet.size
        if packet.pts is not None and tb is not None:
            t = (packet.pts - start) * base
            last_end = max(last_end, t + (packet.duration or 0) * base)
            if t < window and kind == "audio":
                first_window.append(packet)
                if len(first_window) >= 64:   # decoded as they come: few packets held at once
                    _decode(st, first_window, measure)
                    first_window.clear()
            elif t < window and len(stds) < VIDEO_SAMPLES:   # a video's first frames, then no more decoding
                _decode(st, [packet], measure)
    out.packets = packets
    if not mine:
        out.status, out.error = CORRUPT, f"no packet in its {kind} stream (not {kind} data: FFmpeg went by the name)"
        return
    _decode(st, first_window + [None], measure)   # None flushes the decoder
    if corrupt:
        out.status, out.error = CORRUPT, f"{corrupt} of {packets} packets corrupt (truncated or damaged stream)"
        return
    if st.codec_context.name in MPEG_AUDIO and high - low <= 1 and mine > 2 and last < low - 1:
        # constant-bitrate MPEG audio: every frame the same size (+-1 padding byte); a short last one was cut
        out.status, out.error = CORRUPT, f"last frame {last} bytes of {low} (truncated)"
        return
    if declared == declared and last_end < 0.9 * declared - 0.5:
        out.status, out.error = CORRUPT, (f"stream ends at {max(last_end, 0):.2f} s of {declared:.2f} s declared "
                                          "(truncated)")
        return
    if known and not whole:
        st.codec_context.flush_buffers()
        container.seek(int((declared - window) / tb) + start if tb else 0, stream=st, backward=True)
        if kind == "audio":     # the last window
            tail_from = declared - window + float(start * tb if tb else 0)
            for frame in container.decode(st):
                if frame.time is None or frame.time >= tail_from:
                    audio.add(frame)
        else:   # the key frame the last second starts from (decoding every frame after it costs a full decode)
            st.codec_context.skip_frame = "NONKEY"
            for frame in container.decode(st):
                stds.append(_grey_std(frame))
                break
    if kind == "audio":
        if audio.n:
            out.rms = math.sqrt(audio.squares / audio.n)
            out.clipped = audio.clipped / audio.n
        out.nonfinite = audio.nonfinite
    elif stds:
        out.frame_std = max(stds)
