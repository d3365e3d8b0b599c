"""Decode one image, bounded, and measure what the image checks read.

Pillow is used as it ships: its global flags (LOAD_TRUNCATED_IMAGES, MAX_IMAGE_PIXELS) are never changed. The
pixel count is read from the header and checked against our limit before anything is decoded; Pillow's own
refusal (DecompressionBombError, above twice its MAX_IMAGE_PIXELS) is a bomb too. The decode is a full one,
every byte of the stream is read, so a truncated or corrupt file fails here and not in a dataloader hours into
a run; JPEGs are decoded at a reduced scale (`draft`: the DCT is scaled, the whole entropy-coded stream is
still read), which is what makes the decode several times faster than a plain `load()`.
"""
from __future__ import annotations

import functools
import io
import re
import warnings
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from dataaudit.fields import sniff_image_format

# What a probe found, as a small int (ImageBatch.status).
# REMOTE: a URL, never fetched: not checked (named in the notes; --strict fails on it), never flagged.
OK, EMPTY, NOT_IMAGE, CORRUPT, BOMB, MISSING, OUTSIDE, TOO_BIG, UNSUPPORTED, REMOTE = range(10)
STATUS_NAMES = ("ok", "empty", "not an image", "corrupt", "bomb", "missing", "outside", "too big", "unsupported",
                "not fetched")

# The only formats Pillow may open here (`Image.open(formats=...)`, everywhere dataaudit opens an image): raster
# formats that Pillow decodes itself. Left out: EPS/PostScript (Pillow hands it to Ghostscript, an interpreter,
# with temporary files), WMF/EMF, the stub formats that need a handler from outside, and the rarer formats (fewer
# parsers exposed to hostile bytes). An image in another format is named from its signature (UNSUPPORTED) and
# never decoded. (An MPO opens as a JPEG.)
DECODE_FORMATS = ("JPEG", "PNG", "WEBP", "GIF", "BMP", "DIB", "TIFF", "TGA", "PPM", "ICO", "JPEG2000",
                  "AVIF", "QOI", "PCX", "SGI", "DDS", "PSD")

DEFAULT_MAX_PIXELS = 89_478_485      # Pillow's own default MAX_IMAGE_PIXELS (a 1 GB RGBA image / 4 / 3)
DEFAULT_MAX_BYTES = 256 << 20        # an image file larger than this is not read (like a WebDataset member)
STATS_SIDE = 64                      # the grey level spread is measured on the image reduced to about this side
HASH_SIDE = 32                       # perceptual hash input: 32x32 grey (dataaudit.images.phash)


@dataclass
class Probe:
    """One image: its status, the error that gave it, and what was measured (None / nan when not decoded)."""

    status: int
    error: str | None = None
    format: str | None = None
    width: int = -1
    height: int = -1
    mode: str | None = None
    frames: int = 1
    transparency: bool = False
    grey_std: float = float("nan")
    brightness: float = float("nan")    # mean grey level / 255 on the reduced image (exposure)
    sharpness: float = float("nan")     # variance of the Laplacian on the reduced image (blur)
    grey32: np.ndarray | None = None    # HASH_SIDE x HASH_SIDE float32, for the perceptual hash
    pixels: int = -1                    # the pixel count the header declares (-1: unknown)


def _message(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def probe(data: bytes, max_pixels: int = DEFAULT_MAX_PIXELS) -> Probe:
    """Identify, bound and fully decode one image's bytes."""
    from PIL import Image, UnidentifiedImageError

    if not data:
        return Probe(EMPTY, "0 bytes")
    # The caller silences Pillow's warnings (quiet()): warning filters are not thread-safe to change here.
    try:
        im = Image.open(io.BytesIO(data), formats=decode_formats())
    except Image.DecompressionBombError as e:   # Pillow's own refusal, before it tells us the size
        declared = re.search(r"\((\d+) pixels\)", str(e))
        return Probe(BOMB, _message(e), format=sniff_image_format(data), pixels=int(declared.group(1)) if declared else -1)
    except UnidentifiedImageError:
        other = refused_format(data)
        if other is not None:
            return Probe(UNSUPPORTED, f"{other} data: a format not decoded here (not opened)", format=other)
        signed = sniff_image_format(data)
        if signed is not None and signed != "BMP":   # (BMP's "BM" starts plain text too: no signature of an image)
            # an image's signature, then a header or stream no decoder reads: a broken image, not some other data
            return Probe(CORRUPT, f"{signed} signature, but the image does not read (starts {data[:16]!r})",
                         format=signed)
        return Probe(NOT_IMAGE, f"not an image Pillow can identify (starts {data[:8]!r})")
    except Exception as e:  # hostile headers raise anything: SyntaxError, struct.error, ValueError, ...
        return Probe(CORRUPT, _message(e))
    with im:
        out = Probe(OK, format=im.format, width=im.size[0], height=im.size[1], mode=im.mode,
                    pixels=im.size[0] * im.size[1])
        if out.width * out.height > max_pixels:
            out.status, out.error = BOMB, f"{out.width}x{out.height} = {out.width * out.height} pixels " \
                                          f"> max_pixels {max_pixels} (not decoded)"
            return out
        try:
            out.transparency = "transparency" in im.info
            out.frames = int(getattr(im, "n_frames", 1)) if getattr(im, "is_animated", False) else 1
            # JPEG: decode the grey channel at the smallest DCT scale that keeps the stats side (the whole
            # entropy-coded stream is still read, so truncation and bad codes still fail)
            im.draft("L" if im.mode in ("RGB", "L", "YCbCr") else None, (STATS_SIDE, STATS_SIDE))
            im.load()
        except Exception as e:  # truncated streams (OSError), bad codes, hostile tags: the file is corrupt
            out.status, out.error = CORRUPT, _message(e)
            return out
        try:
            grey = _grey(im)
        except Exception:   # a mode Pillow cannot turn grey: decoded fine, no blank check or hash for it
            return out
        factor = max(1, min(grey.size) // STATS_SIDE)
        if factor > 1:
            grey = grey.reduce(factor)
        stats = np.asarray(grey, dtype=np.float32)
        out.grey_std = float(stats.std())
        out.brightness, out.sharpness = exposure_and_sharpness(stats)
        # box filter: on the ~64 px drafted image a 2x2 mean, 10x cheaper than Lanczos, and all a pHash needs
        out.grey32 = np.asarray(grey.resize((HASH_SIDE, HASH_SIDE), Image.Resampling.BOX), dtype=np.float32)
        return out


def exposure_and_sharpness(grey: np.ndarray) -> tuple[float, float]:
    """(mean grey / 255, variance of the 4-neighbour Laplacian) of a grey image reduced to about STATS_SIDE px.
    The mean grey is cleanvision's brightness for grey images, and decides as it does on colour photos (measured:
    40 of 40 originals, darkened and brightened copies); the Laplacian is measured on the reduced image, so its
    scale does not depend on the photo's resolution."""
    brightness = float(grey.mean()) / 255.0
    if grey.shape[0] < 3 or grey.shape[1] < 3:
        return brightness, float("nan")
    lap = grey[1:-1, :-2] + grey[1:-1, 2:] + grey[:-2, 1:-1] + grey[2:, 1:-1] - 4.0 * grey[1:-1, 1:-1]
    return brightness, float(lap.var())


@functools.cache
def decode_formats() -> tuple[str, ...]:
    """DECODE_FORMATS that this Pillow has a decoder for (`formats=` must name registered decoders only), in
    Pillow's own order of trying them (so an image is identified as it always was)."""
    from PIL import Image

    Image.init()
    return tuple(f for f in Image.ID if f in DECODE_FORMATS)


def refused_format(data: bytes) -> str | None:
    """The format Pillow would have opened `data` as, of those left out of DECODE_FORMATS (None: none): asked of
    each plugin's signature test alone, on the first 16 bytes (what Image.open shows it), nothing is opened."""
    from PIL import Image

    Image.init()
    head = data[:16]
    for fmt in Image.ID:
        accept = Image.OPEN[fmt][1] if fmt not in decode_formats() else None
        try:
            if accept is not None and accept(head):
                return fmt
        except Exception:   # a signature test that cannot read these bytes: not that format
            continue
    return None


def _grey(im):
    """The image as 8-bit grey ("L"); 16-bit and float images scaled from their own range."""
    from PIL import Image

    if im.mode == "L":
        return im
    if im.mode.startswith("I") or im.mode == "F":
        a = np.asarray(im, dtype=np.float32)
        top = 65535.0 if im.mode.startswith("I;16") else max(float(np.abs(a).max()), 1.0)
        return Image.fromarray(np.clip(a * (255.0 / top), 0, 255).astype(np.uint8), "L")
    return im.convert("L")


@contextmanager
def quiet():
    """Pillow's warnings (DecompressionBombWarning, malformed MPO headers, ...) silenced while images are probed
    (our findings are the flags), restored after; entered once around a batch, not in its worker threads."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def thumbnail_png(data: bytes, side: int = 64, max_pixels: int = DEFAULT_MAX_PIXELS) -> bytes | None:
    """A small PNG of an image (at most side x side), re-encoded so the report shows pixels, never the file
    itself; None when the image does not decode within the limits."""
    from PIL import Image

    if not data:
        return None
    with quiet():
        try:
            with Image.open(io.BytesIO(data), formats=decode_formats()) as im:
                if im.size[0] * im.size[1] > max_pixels:
                    return None
                im.draft("RGB", (side, side))
                im.thumbnail((side, side))
                im = im.convert("RGBA" if "A" in im.mode or "transparency" in im.info else "RGB")
                buf = io.BytesIO()
                im.save(buf, "PNG", optimize=True)
                return buf.getvalue()
        except Exception:
            return None
