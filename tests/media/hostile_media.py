"""Small hostile media, generated from LLaMA-Factory's demo media (../shared/data/posttrain/mllm_demo_data): cut
copies, a zero-byte file, a renamed text file, silence, a tone too short, another sample rate, a header declaring
10^7 frames. Shared by the media tests and benchmarks/media_recall.py. The tests that take the demo media get it
through tests.paths.shared_file, so they skip when the folder is absent; the crafted Matroska headers need none."""
from __future__ import annotations

import struct
import wave
from pathlib import Path

import numpy as np

DEMO = "posttrain/mllm_demo_data"
VIDEOS = ("1.mp4", "3.mp4", "4.mp4", "2.avi")
AUDIOS = ("1.mp3", "2.wav", "3.flac", "4.mp3")


def cut(src: Path, dst: Path, keep: float = 0.6) -> Path:
    """The first `keep` of the file's bytes (a download or copy that stopped)."""
    data = src.read_bytes()
    dst.write_bytes(data[: int(len(data) * keep)])
    return dst


def write_wav(dst: Path, samples: np.ndarray, rate: int) -> Path:
    """16-bit mono PCM (samples in [-1, 1])."""
    with wave.open(str(dst), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())
    return dst


def tone(seconds: float, rate: int = 16000, hz: float = 440.0, level: float = 0.3) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return level * np.sin(2 * np.pi * hz * t)


def silenced(src_wav: Path, dst: Path) -> Path:
    """A copy of a WAV file with every sample zero (its header, rate and length kept)."""
    with wave.open(str(src_wav), "rb") as r:
        params, n = r.getparams(), r.getnframes()
    with wave.open(str(dst), "wb") as w:
        w.setparams(params)
        w.writeframes(b"\x00" * (n * params.sampwidth * params.nchannels))
    return dst


def resampled(src_wav: Path, dst: Path, rate: int) -> Path:
    """A WAV file re-encoded at another sample rate (linear interpolation: what a careless pipeline does)."""
    with wave.open(str(src_wav), "rb") as r:
        old, x = r.getframerate(), np.frombuffer(r.readframes(r.getnframes()), "<i2").astype(np.float64) / 32768
    n = int(len(x) * rate / old)
    return write_wav(dst, np.interp(np.arange(n) * old / rate, np.arange(len(x)), x), rate)


def frames_bomb(src_avi: Path, dst: Path, frames: int = 10**7) -> Path:
    """An AVI whose headers (avih dwTotalFrames, strh dwLength) declare `frames` frames: its index is the real one."""
    d = bytearray(src_avi.read_bytes())
    avih, strh = d.find(b"avih"), d.find(b"strh")
    struct.pack_into("<I", d, avih + 8 + 16, frames)
    struct.pack_into("<I", d, strh + 8 + 32, frames)
    dst.write_bytes(bytes(d))
    return dst


def renamed_text(dst: Path) -> Path:
    dst.write_text("<html><body>404 Not Found</body></html>\n")
    return dst


def encoded_video(dst: Path, frames: int, width: int, height: int, rate: int = 25, black: bool = True) -> Path:
    """An MPEG-4 video written with PyAV: black frames (or a moving gradient)."""
    import av

    with av.open(str(dst), "w", format="mp4") as out:
        st = out.add_stream("mpeg4", rate=rate)
        st.width, st.height, st.pix_fmt = width, height, "yuv420p"
        for i in range(frames):
            img = np.zeros((height, width, 3), np.uint8)
            if not black:
                img[:] = ((np.arange(width)[None, :, None] * 4 + i * 8) % 256).astype(np.uint8)
            for p in st.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                out.mux(p)
        for p in st.encode(None):
            out.mux(p)
    return dst


def float_wav(dst: Path, samples: np.ndarray, rate: int = 16000) -> Path:
    """32-bit float mono WAV written with PyAV (NaN and inf samples kept as they are)."""
    import av

    with av.open(str(dst), "w", format="wav") as out:
        st = out.add_stream("pcm_f32le", rate=rate, layout="mono")
        frame = av.AudioFrame.from_ndarray(samples.astype(np.float32).reshape(1, -1), format="flt", layout="mono")
        frame.sample_rate = rate
        for p in st.encode(frame):
            out.mux(p)
        for p in st.encode(None):
            out.mux(p)
    return dst


def _ebml(id_hex: str, payload: bytes) -> bytes:
    return bytes.fromhex(id_hex) + b"\x01" + len(payload).to_bytes(7, "big") + payload   # sizes: 8-byte vints


def _uint(id_hex: str, value: int) -> bytes:
    return _ebml(id_hex, value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big"))


def matroska_header(dst: Path, codec: str, width: int, height: int, seconds: float = 1000.0) -> Path:
    """A minimal Matroska file whose one video track declares `width` x `height` (PixelWidth, PixelHeight) and
    `seconds`, with one 64-byte block of zeros: a header that lies, with nothing behind it."""
    head = _ebml("1A45DFA3", _uint("4286", 1) + _uint("42F7", 1) + _uint("42F2", 4) + _uint("42F3", 8)
                 + _ebml("4282", b"matroska") + _uint("4287", 4) + _uint("4285", 2))
    info = _ebml("1549A966", _uint("2AD7B1", 1_000_000) + _ebml("4489", struct.pack(">d", seconds * 1000)))
    video = _ebml("E0", _uint("B0", width) + _uint("BA", height))
    track = _ebml("AE", _uint("D7", 1) + _uint("73C5", 1) + _uint("83", 1) + _ebml("86", codec.encode()) + video)
    block = b"\x81" + struct.pack(">h", 0) + b"\x80" + b"\x00" * 64
    cluster = _ebml("1F43B675", _uint("E7", 0) + _ebml("A3", block))
    dst.write_bytes(head + _ebml("18538067", info + _ebml("1654AE6B", track) + cluster))
    return dst
