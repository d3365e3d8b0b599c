"""Image checks: every image of a batch is probed once (dataaudit.images: bounded Pillow decode, a full read of
the stream) and each check reads the probe's arrays, vectorized; then the pairing of images with their captions
and with the `<image>` placeholders of a conversation."""
from __future__ import annotations

import numpy as np

from dataaudit.images.pairs import BLANK, MISSING, NO_FIELD
from dataaudit.images.probe import (BOMB, CORRUPT, EMPTY, MISSING as FILE_MISSING, NOT_IMAGE, OUTSIDE, TOO_BIG,
                                   UNSUPPORTED)

from .base import CheckOutput, register

# Extensions and the format names Pillow reports for them (an MPO is a JPEG with extra pictures).
FORMATS = {"jpg": ("JPEG", "MPO"), "jpeg": ("JPEG", "MPO"), "png": ("PNG",), "webp": ("WEBP",), "gif": ("GIF",),
           "bmp": ("BMP",), "tif": ("TIFF",), "tiff": ("TIFF",)}
UNUSUAL_MODES = ("CMYK", "I;16", "I;16B", "I;16L", "I;16N", "I", "F", "LA", "PA", "1", "YCbCr", "LAB", "HSV")


def _status(ib, *codes) -> CheckOutput:
    """A probe outcome as a flag, with the probe's message as detail and the bytes read as value."""
    flagged = np.isin(ib.status, codes)
    return CheckOutput(flagged=flagged, value=np.maximum(ib.nbytes, 0).astype(np.float64), detail=ib.errors)


@register("image_empty", target="image", severity="error", detail="zero-byte image",
          description="An image of zero bytes. value = bytes.")
def image_empty(ib, **params) -> CheckOutput:
    return _status(ib, EMPTY)


@register("not_an_image", target="image", severity="error", detail="not an image",
          description="Bytes that no image decoder identifies (an HTML error page, random bytes). value = bytes.")
def not_an_image(ib, **params) -> CheckOutput:
    return _status(ib, NOT_IMAGE)


@register("image_format_unsupported", target="image", severity="error", detail="image format not decoded",
          description="An image in a format outside the decoders the audit allows (dataaudit.images.probe."
                      "DECODE_FORMATS: EPS/PostScript, which Pillow runs through Ghostscript, and rare formats): "
                      "named from its signature, never decoded, so nothing else about it is checked. value = bytes.")
def image_format_unsupported(ib, **params) -> CheckOutput:
    return _status(ib, UNSUPPORTED)


@register("image_corrupt", target="image", severity="error", detail="image does not decode",
          description="A truncated or corrupt image: the header reads, a full decode of the stream fails "
                      "(Pillow's message). value = bytes.")
def image_corrupt(ib, **params) -> CheckOutput:
    return _status(ib, CORRUPT)


@register("image_bomb", target="image", severity="error", detail="decompression bomb",
          description="An image whose header declares more pixels than [data] max_image_pixels (default Pillow's "
                      "89,478,485), or a file larger than max_image_bytes: never decoded. value = pixels.")
def image_bomb(ib, **params) -> CheckOutput:
    out = _status(ib, BOMB, TOO_BIG)
    out.value = np.where(ib.pixels >= 0, ib.pixels.astype(np.float64), np.nan)
    return out


@register("image_missing_file", target="image", severity="error", detail="image file missing",
          description="A referenced image file that does not exist or cannot be read (paths are resolved "
                      "against the media root: the shard's folder, or `--media-root`). A URL is never fetched "
                      "nor flagged: it is counted in the notes as not checked. value = 0.")
def image_missing_file(ib, **params) -> CheckOutput:
    return _status(ib, FILE_MISSING)


@register("image_path_outside", target="image", severity="error", detail="path outside the media root",
          description="A referenced image path that is absolute or resolves outside the media root (the shard's "
                      "folder, or `--media-root`) "
                      "(`..`, a symlink out): never opened. value = 0.")
def image_path_outside(ib, **params) -> CheckOutput:
    return _status(ib, OUTSIDE)


@register("image_format_mismatch", target="image", severity="warning", detail="format differs from extension",
          description="The file extension (WebDataset member, path, file name) names another format than the "
                      "bytes hold: loaders that pick a decoder by extension fail on it.")
def image_format_mismatch(ib, **params) -> CheckOutput:
    claims = ib.expected_format()
    flagged = np.array([fmt is not None and ext in FORMATS and fmt not in FORMATS[ext]
                        for ext, fmt in zip(claims, ib.formats)], bool)
    detail = [f"{fmt} data under a .{ext} name" if f else None for f, ext, fmt in zip(flagged, claims, ib.formats)]
    return CheckOutput(flagged=flagged, value=np.zeros(len(ib)), detail=detail)


@register("image_too_small", target="image", severity="warning", params={"min_side": 32},
          detail="smallest side {value:.0f} px < {min_side}",
          description="An image whose shorter side is below min_side pixels. value = shorter side.")
def image_too_small(ib, min_side=32, **params) -> CheckOutput:
    short = np.minimum(ib.width, ib.height)
    return CheckOutput(flagged=(short >= 0) & (short < min_side), value=short.astype(np.float64))


@register("image_too_large", target="image", severity="warning", params={"max_side": 16384},
          detail="longest side {value:.0f} px > {max_side}",
          description="An image whose longer side is above max_side pixels. value = longer side.")
def image_too_large(ib, max_side=16384, **params) -> CheckOutput:
    long = np.maximum(ib.width, ib.height)
    return CheckOutput(flagged=(np.minimum(ib.width, ib.height) >= 0) & (long > max_side),
                       value=long.astype(np.float64))


@register("image_aspect_ratio", target="image", severity="warning", params={"max_aspect": 8.0},
          detail="aspect ratio {value:.1f}:1 > {max_aspect}",
          description="An image whose longer side is more than max_aspect times its shorter side (strips, "
                      "banners: cropped or padded badly by a vision encoder). value = long / short.")
def image_aspect_ratio(ib, max_aspect=8.0, **params) -> CheckOutput:
    short = np.minimum(ib.width, ib.height).astype(np.float64)
    long = np.maximum(ib.width, ib.height).astype(np.float64)
    ratio = np.divide(long, short, out=np.full(short.shape, np.inf), where=short > 0)
    ratio[short < 0] = np.nan
    return CheckOutput(flagged=(short >= 0) & (ratio > max_aspect), value=ratio)


@register("image_blank", target="image", severity="warning", params={"max_std": 2.0},
          detail="near-constant image: grey std {value:.2f} < {max_std}",
          description="A blank or near-constant image: the standard deviation of its grey levels (0-255, on the "
                      "image reduced to about 64 px) is below max_std. value = that std.")
def image_blank(ib, max_std=2.0, **params) -> CheckOutput:
    std = ib.grey_std.astype(np.float64)
    return CheckOutput(flagged=np.nan_to_num(std, nan=np.inf) < max_std, value=std)


# image_dark, image_bright, image_blurry (cleanvision's dark, light and blurry issues) are off by default: on the
# audit's own fixtures, crops of real photos that are fine (a smooth patch of sky, a dim portrait) were flagged;
# `[checks.image_blurry] enabled = true` turns each on.
def _not_blank(ib, min_std: float) -> np.ndarray:
    """Decoded images that are not near-constant (those are image_blank's): exposure and blur say nothing of them."""
    return np.nan_to_num(ib.grey_std.astype(np.float64), nan=-1.0) >= min_std


@register("image_dark", target="image", severity="warning", enabled=False, params={"max_brightness": 0.22, "min_std": 2.0},
          detail="dark: brightness {value:.3f} < {max_brightness}",
          description="An underexposed image: its mean grey level (0-1, on the image reduced to about 64 px) is "
                      "below max_brightness, cleanvision's dark threshold (0.22). Near-constant images are "
                      "image_blank's. value = brightness.")
def image_dark(ib, max_brightness=0.22, min_std=2.0, **params) -> CheckOutput:
    value = ib.brightness.astype(np.float64)
    return CheckOutput(flagged=_not_blank(ib, min_std) & (np.nan_to_num(value, nan=1.0) < max_brightness),
                       value=value)


@register("image_bright", target="image", severity="warning", enabled=False, params={"min_brightness": 0.95, "min_std": 2.0},
          detail="overexposed: brightness {value:.3f} > {min_brightness}",
          description="An overexposed (washed-out) image: its mean grey level (0-1, on the reduced image) is above "
                      "min_brightness, cleanvision's light threshold (1 - 0.05). value = brightness.")
def image_bright(ib, min_brightness=0.95, min_std=2.0, **params) -> CheckOutput:
    value = ib.brightness.astype(np.float64)
    return CheckOutput(flagged=_not_blank(ib, min_std) & (np.nan_to_num(value, nan=0.0) > min_brightness),
                       value=value)


@register("image_blurry", target="image", severity="warning", enabled=False, params={"min_sharpness": 400.0, "min_std": 2.0},
          detail="blurry: Laplacian variance {value:.0f} < {min_sharpness}",
          description="A blurry image: the variance of the Laplacian of its grey levels, on the image reduced to "
                      "about 64 px, is below min_sharpness. Measured on real photos: originals 1,640-6,250; copies "
                      "blurred by a Gaussian of 1.6% of their size 14-1,690, of 3.2% 5-340. value = that variance.")
def image_blurry(ib, min_sharpness=400.0, min_std=2.0, **params) -> CheckOutput:
    value = ib.sharpness.astype(np.float64)
    return CheckOutput(flagged=_not_blank(ib, min_std) & (np.nan_to_num(value, nan=np.inf) < min_sharpness),
                       value=value)


@register("image_mode", target="image", severity="info", params={"modes": list(UNUSUAL_MODES)},
          detail="unusual mode",
          description="An image in a mode pipelines often mishandle: CMYK, 16-bit or float, grey with alpha, "
                      "bilevel, or a palette with transparency (converting to RGB loses it).")
def image_mode(ib, modes=UNUSUAL_MODES, **params) -> CheckOutput:
    modes = set(modes)
    flagged = np.array([m in modes or (m in ("P", "PA") and t) for m, t in zip(ib.modes, ib.transparency)], bool)
    detail = [None if not f else f"mode {m}" + (" with transparency" if t else "")
              for f, m, t in zip(flagged, ib.modes, ib.transparency)]
    return CheckOutput(flagged=flagged, value=np.zeros(len(ib)), detail=detail)


@register("image_animated", target="image", severity="info", detail="animated: {value:.0f} frames",
          description="An animated image (GIF, WebP, PNG): training usually sees only its first frame. "
                      "value = frames.")
def image_animated(ib, **params) -> CheckOutput:
    return CheckOutput(flagged=ib.frames > 1, value=ib.frames.astype(np.float64))


def _pair_flags(pairs, flagged: np.ndarray, where: str | None, value: np.ndarray, detail=None) -> CheckOutput:
    return CheckOutput(flagged=flagged, value=value.astype(np.float64), detail=detail,
                       where=np.full(flagged.size, where, dtype=object))


@register("missing_caption", target="pairs", severity="error", detail="image without a caption",
          description="A record with an image and no caption (no text member, a null caption). value = images.")
def missing_caption(pairs, **params) -> CheckOutput:
    return _pair_flags(pairs, (pairs.images > 0) & (pairs.caption == MISSING), pairs.caption_field, pairs.images)


@register("empty_caption", target="pairs", severity="error", detail="empty caption",
          description="A record with an image whose caption is empty or only whitespace. value = images.")
def empty_caption(pairs, **params) -> CheckOutput:
    return _pair_flags(pairs, (pairs.images > 0) & (pairs.caption == BLANK), pairs.caption_field, pairs.images)


@register("missing_image", target="pairs", severity="error", detail="no image",
          description="A record of image-text data (it has a caption field) with no image: no image member, a "
                      "null image. value = 0.")
def missing_image(pairs, **params) -> CheckOutput:
    flagged = (pairs.images == 0) & (pairs.caption != NO_FIELD)
    return _pair_flags(pairs, flagged, pairs.image_field, pairs.images)


@register("image_placeholders", target="pairs", severity="error", params={"token": "<image>"},
          detail="{value:.0f} placeholders",
          description="A multimodal conversation whose number of image placeholders (token, default `<image>`) "
                      "differs from its number of images: the processor fails or pairs the wrong image. An image "
                      "inside a content part is its own placeholder (an `<image>` token beside it is one too many). "
                      "value = placeholders.")
def image_placeholders(pairs, token="<image>", **params) -> CheckOutput:
    n = pairs.images.size
    if pairs.conversation_field is None or not pairs.has_list:
        return _pair_flags(pairs, np.zeros(n, bool), None, np.zeros(n))
    count = pairs.placeholders(token)
    flagged = count != pairs.images
    parts = pairs.part_images if pairs.part_images is not None else np.zeros(n, np.int64)
    detail = [(f"{c - k} {token} placeholders" + (f" + {k} image parts" if k else "") + f", {i} images") if f
              else None for f, c, k, i in zip(flagged.tolist(), count.tolist(), parts.tolist(),
                                              pairs.images.tolist())]
    return _pair_flags(pairs, flagged, pairs.conversation_field, count, detail)

