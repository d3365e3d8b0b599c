#!/usr/bin/env python
"""Deterministic generator of image-text datasets with planted defects, for the image checks.

Built from real photos, read where they are and never copied into the project (`DATAAUDIT_SHARED_DATA` points
at another copy of `../shared/data`):

  ../shared/data/images/hopper.{jpg,png,webp}           one 128x128 photo in three formats
  ../shared/data/images/sugarshack_bad_mpo_header.jpg   640x480 (decodes with a warning: read once, quietly)
  matplotlib's sample_data/grace_hopper.jpg             512x600
  matplotlib's sample_data/Minduka_Present_Blue_Pack.png  128x128 RGBA (composited on white)

Every clean image is a new picture made from one of them with Pillow: a random crop (aspect ratio within 1:3..3:1),
sometimes a small rotation (-8..8 degrees, cropped inside the rotated frame) and a flip, colour jitter
(brightness, contrast, saturation 0.8-1.2), a resize (min side >= 64) and a re-encode (JPEG quality 60-95, PNG
or WebP); always RGB, never near-blank (grey std >= 12). Captions are short English sentences from a small
vocabulary about what the source shows. Five layouts, each written under OUT/<layout>/ in `--shards` shards
with `--records` records per layout:

  webdataset     shard-NNNNN.tar: per sample `KEY.jpg` (or .png / .webp / .gif: the image's format) and
                 `KEY.txt`; members in sorted order (key, then extension); KEY = 6 digits, unique per layout
  parquet_hf     train-NNNNN-of-MMMMM.parquet: `image: struct<bytes: binary, path: string>` (the HF datasets
                 Image feature; `path` a file name like "000123.jpg"), `text: string`; the `huggingface` schema
                 metadata names the Image feature
  parquet_bytes  part-NNNNN.parquet: `jpg: binary`, `caption: string` (clean images are all JPEG)
  jsonl_paths    shard-NNNNN.jsonl: `image` (a path relative to the shard's folder, "images/000123.jpg"),
                 `text`; the image files in OUT/jsonl_paths/images/
  multimodal     shard-NNNNN.jsonl, LLaVA / LLaMA-Factory style: `messages: [{role, content}]` (user turns
                 hold `<image>` placeholders) and `images: [paths relative to the shard's folder]` (files in
                 OUT/multimodal/images/); 1-3 images per record, one placeholder per image

Planted defects: `--rate` of the records per kind (at least one; one kind per planted record; the bomb is always
exactly one record per layout), the others are the clean set. The check expected to fire has the kind's name:

  image_empty            zero-byte image (bytes, member or file)
  not_an_image           an HTML error page, random bytes, a JSON or an S3 XML error body
  image_corrupt          a JPEG or PNG cut at 30-80% of its bytes, or with a run of bytes flipped in the middle of
                         its entropy-coded (JPEG scan / PNG IDAT) data; every one fails `Image.open(b).load()`
  image_bomb             a PNG declaring 20000x20000 greyscale pixels: all-zero rows through a streamed zlib
                         compressor (8-bit: ~390 KB; the fixtures use 1-bit: ~50 KB), see write_png_bomb()
  image_format_mismatch  PNG bytes under a .jpg name (tar member, struct path, jsonl path) / in the `jpg` column
  image_too_small        min side 12-31 (aspect within 1:2)
  image_aspect_ratio     a strip of min side 32-48 and aspect 9-14; or a sliver 1-4 px wide, which is also
                         image_too_small (both checks expected)
  image_blank            a constant, near-constant (+-1 noise) or near-black JPEG (grey std < 2 after decoding)
  image_mode             a CMYK JPEG, a 16-bit greyscale PNG (mode I;16), or a palette PNG with transparency
  image_animated         an animated GIF of 2-4 real crops
  missing_caption        tar sample without .txt; null text (jsonl_paths: also the key absent)
  empty_caption          caption "", " " or "\\n\\t "
  missing_image          caption present, image absent: tar sample without an image member, null image
  image_missing_file     the referenced file does not exist (jsonl_paths, multimodal)
  image_path_outside     a path escaping the shard's folder: "../secret.jpg", "/etc/passwd",
                         "images/../../private/photo.jpg" (jsonl_paths, multimodal; nothing is written there)
  image_placeholders     `<image>` placeholders != len(images): one too many, one too few, or images [] (multimodal)

Kinds skipped per layout: webdataset, parquet_hf, parquet_bytes: image_missing_file, image_path_outside,
image_placeholders (no paths, no placeholders). jsonl_paths: image_placeholders. multimodal: missing_caption,
empty_caption, missing_image (the text is a conversation, which the chat checks cover; a record without images is
a text-only record). In parquet_bytes the column name says JPEG, so every planted image is a JPEG except where the
kind needs another format: the animated GIF and the bomb PNG there are also image_format_mismatch (both listed).
In multimodal one image of the record (`image` in the details) carries the defect.

OUT/truth.json, per layout: `planted` {shard path relative to OUT: {record key: [expected check names]}},
`clean` {shard: [keys]}, `details` {shard: {key: {kind, variant, image, ...}}}, `shards` {shard: records}. A record
key is the tar sample key, or the 0-based row of the Parquet / JSONL shard as a string. Same arguments and the same
Pillow / pyarrow / zlib -> byte-identical files (tar members mtime 0, uid/gid 0, no names; no image metadata;
Parquet written with fixed options). OUT/<layout> is replaced on every run.

    .venv/bin/python benchmarks/image_data.py --out bench-data/images --records 400
    .venv/bin/python benchmarks/image_data.py --fixtures --out fixtures/images
"""
from __future__ import annotations

import argparse
import io
import json
import math
import os
import random
import shutil
import struct
import sys
import tarfile
import warnings
import zlib
from functools import lru_cache
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA_ENV = "DATAAUDIT_SHARED_DATA"
GENERATOR_VERSION = 1

LAYOUTS = ("webdataset", "parquet_hf", "parquet_bytes", "jsonl_paths", "multimodal")
IMAGE_KINDS = ("image_empty", "not_an_image", "image_corrupt", "image_bomb", "image_format_mismatch",
               "image_too_small", "image_aspect_ratio", "image_blank", "image_mode", "image_animated")
CAPTION_KINDS = ("missing_caption", "empty_caption", "missing_image")
PATH_KINDS = ("image_missing_file", "image_path_outside")
KINDS = IMAGE_KINDS + CAPTION_KINDS + PATH_KINDS + ("image_placeholders",)
LAYOUT_KINDS = {
    "webdataset": IMAGE_KINDS + CAPTION_KINDS,
    "parquet_hf": IMAGE_KINDS + CAPTION_KINDS,
    "parquet_bytes": IMAGE_KINDS + CAPTION_KINDS,
    "jsonl_paths": IMAGE_KINDS + CAPTION_KINDS + PATH_KINDS,
    "multimodal": IMAGE_KINDS + PATH_KINDS + ("image_placeholders",),
}

SHARED_IMAGES = ("hopper.jpg", "hopper.png", "hopper.webp", "sugarshack_bad_mpo_header.jpg")
MPL_SAMPLES = ("grace_hopper.jpg", "Minduka_Present_Blue_Pack.png")
THEME = {"hopper.jpg": "portrait", "hopper.png": "portrait", "hopper.webp": "portrait", "grace_hopper.jpg": "portrait",
         "sugarshack_bad_mpo_header.jpg": "cabin", "Minduka_Present_Blue_Pack.png": "gift"}

EXT = {"jpeg": "jpg", "png": "png", "webp": "webp", "gif": "gif"}
PIL_FORMAT = {"jpeg": "JPEG", "png": "PNG", "webp": "WEBP", "gif": "GIF"}

# sizes of the clean pictures: min side drawn from min_side, long side at most max_side
PROFILES = {
    "default": {"min_side": (64, 320), "max_side": 768, "formats": (("jpeg", 0.6), ("png", 0.15), ("webp", 0.25)),
                "strip": (32, 48), "bomb_bits": 8},
    "small": {"min_side": (64, 80), "max_side": 160, "formats": (("jpeg", 0.6), ("png", 0.1), ("webp", 0.3)),
              "strip": (32, 34), "bomb_bits": 1},
}
BOMB_SIZE = (20000, 20000)
MIN_CLEAN_STD = 12.0


def shared_data_dir() -> Path:
    """`$DATAAUDIT_SHARED_DATA`, else `../shared/data` beside the repository (as benchmarks/chat_data.py)."""
    return Path(os.path.abspath(os.path.expanduser(os.environ.get(SHARED_DATA_ENV) or
                                                   REPO.parent / "shared" / "data")))


def image_sources(shared: Path | None = None) -> list[tuple[str, Path]]:
    """(name, path) of the six source photos; FileNotFoundError naming the folder when it is missing."""
    shared = shared_data_dir() if shared is None else Path(shared)
    folder = shared / "images"
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: missing (put ../shared/data beside the checkout or set {SHARED_DATA_ENV})")
    out = []
    for name in SHARED_IMAGES:
        p = folder / name
        if not p.is_file():
            raise FileNotFoundError(f"{p}: missing (the folder {folder} is there; see {shared / 'README.md'})")
        out.append((name, p))
    import matplotlib

    sample_data = Path(matplotlib.get_data_path()) / "sample_data"
    for name in MPL_SAMPLES:
        p = sample_data / name
        if not p.is_file():
            raise FileNotFoundError(f"{p}: missing (matplotlib's bundled sample photo)")
        out.append((name, p))
    return out


def load_sources(shared: Path | None = None) -> list[dict]:
    """The source photos decoded once, as RGB with no metadata: [{name, theme, image}]."""
    from PIL import Image

    out = []
    for name, path in image_sources(shared):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")          # sugarshack: "malformed MPO file", read as its base JPEG
            with Image.open(path) as im:
                im.load()
                if im.mode in ("RGBA", "LA", "PA") or (im.mode == "P" and "transparency" in im.info):
                    rgba = im.convert("RGBA")
                    rgb = Image.new("RGB", rgba.size, (255, 255, 255))
                    rgb.paste(rgba, mask=rgba.getchannel("A"))
                else:
                    rgb = im.convert("RGB")
        rgb.info = {}
        out.append({"name": name, "theme": THEME[name], "image": rgb})
    return out


# ------------------------------------------------------------------------------------------------ the PNG bomb

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
IDAT_SIZE = 1 << 16


def _png_chunk(tag: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)


def png_bomb_parts(width: int, height: int, bit_depth: int = 8):
    """The bytes of a valid greyscale PNG of `width` x `height` zero pixels, piece by piece: the rows go through a
    streamed zlib compressor a block at a time, so the image is never held (8-bit 20000x20000: 400 MB of pixels
    in ~390 KB; 1-bit: 50 MB in ~50 KB). IDAT chunks of 64 KiB, correct CRCs."""
    if bit_depth not in (1, 2, 4, 8, 16):
        raise ValueError(f"bit_depth {bit_depth}: greyscale PNG takes 1, 2, 4, 8 or 16")
    if not (0 < width < 2 ** 31 and 0 < height < 2 ** 31):
        raise ValueError(f"{width}x{height}: PNG sides are 1 .. 2**31-1")
    yield PNG_SIGNATURE
    yield _png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, bit_depth, 0, 0, 0, 0))
    row = bytes(1 + (width * bit_depth + 7) // 8)       # filter byte 0 (None) + the row's zero samples
    per_block = max(1, (1 << 20) // len(row))
    block = row * per_block
    comp = zlib.compressobj(9)
    pending = bytearray()
    left = height
    while left:
        n = min(per_block, left)
        left -= n
        pending += comp.compress(block if n == per_block else row * n)
        while len(pending) >= IDAT_SIZE:
            yield _png_chunk(b"IDAT", bytes(pending[:IDAT_SIZE]))
            del pending[:IDAT_SIZE]
    pending += comp.flush()
    for i in range(0, len(pending), IDAT_SIZE):
        yield _png_chunk(b"IDAT", bytes(pending[i:i + IDAT_SIZE]))
    yield _png_chunk(b"IEND", b"")


def write_png_bomb(path, width: int = BOMB_SIZE[0], height: int = BOMB_SIZE[1], bit_depth: int = 8) -> int:
    """Write a greyscale PNG declaring width x height pixels (all zero) to `path` without ever allocating the
    image; returns its size in bytes."""
    n = 0
    with open(path, "wb") as f:
        for part in png_bomb_parts(width, height, bit_depth):
            f.write(part)
            n += len(part)
    return n


@lru_cache(maxsize=4)
def png_bomb_bytes(width: int = BOMB_SIZE[0], height: int = BOMB_SIZE[1], bit_depth: int = 8) -> bytes:
    return b"".join(png_bomb_parts(width, height, bit_depth))


# ------------------------------------------------------------------------------------------------ captions

SUBJECTS = {
    "portrait": ("a woman in a naval uniform", "an officer in a dark uniform", "a smiling woman",
                 "a woman with short grey hair", "a computer scientist", "an older woman in a dark jacket",
                 "a naval officer"),
    "cabin": ("a wooden cabin", "a sugar shack", "a small timber house", "a rustic hut", "an old wooden building",
              "a log cabin"),
    "gift": ("a blue gift box", "a wrapped present", "a blue package", "a small gift with a bow",
             "a present wrapped in blue paper"),
}
SETTINGS = {
    "portrait": ("in front of a flag", "against a plain background", "in an old photograph", "looking at the camera",
                 "in a studio", "with medals on her jacket"),
    "cabin": ("in the woods", "among bare trees", "on a sunny afternoon", "with snow on the ground",
              "beside a dirt road", "at the edge of a forest"),
    "gift": ("on a white background", "with a ribbon on top", "ready for a birthday", "seen from above",
             "in soft light", "next to nothing else"),
}
OPENERS = ("A photo of", "A close-up of", "An image of", "A picture showing", "A cropped view of", "A bright photo of",
           "A faded photo of", "A snapshot of")
ADJECTIVES = ("sharp", "slightly blurred", "well lit", "warm", "cool-toned", "grainy", "detailed", "colourful", "muted",
              "soft", "high-contrast")


def caption(rng: random.Random, theme: str) -> str:
    subj, setting = rng.choice(SUBJECTS[theme]), rng.choice(SETTINGS[theme])
    a, b = rng.sample(ADJECTIVES, 2)
    t = rng.randrange(5)
    if t == 0:
        s = f"{rng.choice(OPENERS)} {subj} {setting}."
    elif t == 1:
        s = f"{subj[0].upper()}{subj[1:]} {setting}."
    elif t == 2:
        s = f"{rng.choice(OPENERS)} {subj}."
    elif t == 3:
        s = f"{subj[0].upper()}{subj[1:]}, {a} and {b}."
    else:
        s = f"This is {subj} {setting}, {a}."
    return s


PROMPTS_ONE = ("<image>\nDescribe this image.", "<image>\nWhat is shown in this picture?",
               "What do you see here?\n<image>", "<image>\nWrite a short caption for this photo.",
               "<image>\nWhat is in the photo?")
PROMPTS_MANY = ("Describe each of these images in one sentence.", "What do these photos have in common?",
                "Write a caption for every picture.")
FOLLOW_UPS = (("Is it a recent photo?", "It is hard to say; the picture looks {a}."),
              ("How would you describe the colours?", "The colours look {a} and {b}."),
              ("Is the picture sharp?", "It looks {a}."))


# ------------------------------------------------------------------------------------------- pictures (Pillow)

def _weighted(rng: random.Random, pairs) -> str:
    r, acc = rng.random(), 0.0
    for v, w in pairs:
        acc += w
        if r < acc:
            return v
    return pairs[-1][0]


def encode(im, fmt: str, rng: random.Random | None = None, quality: int | None = None, **kw) -> bytes:
    """Encoded bytes with no metadata; JPEG / WebP quality from `quality` or rng (60-95)."""
    im.info = {}
    buf = io.BytesIO()
    if fmt in ("jpeg", "webp"):
        q = quality if quality is not None else rng.randint(60, 95)
        if fmt == "jpeg":
            im.save(buf, "JPEG", quality=q, **kw)
        else:
            im.save(buf, "WEBP", quality=q, method=4, **kw)
    elif fmt == "png":
        im.save(buf, "PNG", compress_level=6, **kw)
    elif fmt == "gif":
        im.save(buf, "GIF", **kw)
    else:
        raise ValueError(fmt)
    return buf.getvalue()


def grey_std(im) -> float:
    import numpy as np

    return float(np.asarray(im.convert("L"), dtype=np.float64).std())


def _crop(rng: random.Random, src, aspect: float, scale=(0.45, 1.0), rotate: float = 0.3):
    """A crop of aspect w/h from the source (maybe rotated a little first, cropping inside the rotated frame), maybe
    flipped, colour-jittered."""
    from PIL import Image, ImageEnhance

    img = src["image"]
    W, H = img.size
    x0, y0, x1, y1 = 0, 0, W, H
    if rng.random() < rotate:
        angle = rng.uniform(-8, 8)
        t = math.tan(math.radians(abs(angle)))
        mx, my = math.ceil(H / 2 * t) + 1, math.ceil(W / 2 * t) + 1
        img = img.rotate(angle, resample=Image.BICUBIC)
        x0, y0, x1, y1 = mx, my, W - mx, H - my
    w, h = x1 - x0, y1 - y0
    bw, bh = (w, w / aspect) if w / aspect <= h else (h * aspect, h)
    s = rng.uniform(*scale)
    cw, ch = max(1, int(bw * s)), max(1, int(bh * s))
    x = rng.randint(x0, x1 - cw)
    y = rng.randint(y0, y1 - ch)
    im = img.crop((x, y, x + cw, y + ch))
    if rng.random() < 0.5:
        im = im.transpose(Image.FLIP_LEFT_RIGHT)
    if rng.random() < 0.05:
        im = im.transpose(Image.FLIP_TOP_BOTTOM)
    im = ImageEnhance.Brightness(im).enhance(rng.uniform(0.8, 1.2))
    im = ImageEnhance.Contrast(im).enhance(rng.uniform(0.8, 1.2))
    im = ImageEnhance.Color(im).enhance(rng.uniform(0.8, 1.2))
    im.info = {}
    return im


def picture(rng: random.Random, src, size: tuple[int, int], min_std: float = MIN_CLEAN_STD):
    """A real picture of exactly `size` (w, h) cut from `src`, with detail (grey std >= min_std)."""
    from PIL import Image

    w, h = size
    for _ in range(50):
        im = _crop(rng, src, w / h).resize((w, h), Image.LANCZOS)
        if grey_std(im) >= min_std:
            return im
    raise RuntimeError(f"{src['name']}: no crop of {w}x{h} with grey std >= {min_std}")


def clean_size(rng: random.Random, prof: dict) -> tuple[int, int]:
    """(w, h): aspect within 1:3..3:1 (often near square), min side >= 64, long side <= max_side."""
    aspect = math.exp(rng.uniform(math.log(1 / 3), math.log(3))) if rng.random() < 0.6 else rng.uniform(0.75, 1.33)
    short = rng.randint(*prof["min_side"])
    long_ = min(prof["max_side"], round(short * max(aspect, 1 / aspect)))
    short = min(short, long_)
    return (long_, short) if aspect >= 1 else (short, long_)


def clean_picture(rng: random.Random, sources, prof: dict, fmt: str | None = None) -> tuple[dict, dict]:
    """(image dict {bytes, fmt, ext, size}, source)."""
    src = rng.choice(sources)
    size = clean_size(rng, prof)
    im = picture(rng, src, size)
    fmt = fmt or _weighted(rng, prof["formats"])
    return {"bytes": encode(im, fmt, rng), "fmt": fmt, "ext": EXT[fmt], "size": list(size)}, src


# ------------------------------------------------------------------------------------------ decode verification

def load_fails(data: bytes) -> bool:
    """Whether a full decode of the first frame raises (a warning alone is not a failure)."""
    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with Image.open(io.BytesIO(data)) as im:
                im.load()
    except Exception:  # noqa: BLE001  (any failure is the answer)
        return True
    return False


# --------------------------------------------------------------------------------------------- planted images

HTML_PAGE = """<!DOCTYPE html>
<html><head><title>{code} {reason}</title></head>
<body><h1>{reason}</h1><p>The requested URL /images/{name} was not found on this server.</p>
<hr><address>nginx/1.18.0 (Ubuntu)</address></body></html>
"""
S3_ERROR = """<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>AccessDenied</Code><Message>Access Denied</Message><RequestId>{rid}</RequestId></Error>
"""


def _not_an_image(rng: random.Random, variant: str, key: str) -> bytes:
    from PIL import Image, UnidentifiedImageError

    for _ in range(50):
        if variant == "html":
            code, reason = rng.choice(((404, "Not Found"), (403, "Forbidden"), (502, "Bad Gateway")))
            data = HTML_PAGE.format(code=code, reason=reason, name=f"{key}.jpg").encode()
        elif variant == "random bytes":
            data = rng.randbytes(rng.randint(200, 2000))
        elif variant == "json error":
            data = json.dumps({"error": {"code": 403, "message": "Request had insufficient authentication scopes.",
                                         "status": "PERMISSION_DENIED"}}).encode()
        else:
            data = S3_ERROR.format(rid=rng.randbytes(8).hex().upper()).encode()
        try:
            with Image.open(io.BytesIO(data)):
                pass
        except UnidentifiedImageError:
            return data
    raise RuntimeError(f"not_an_image/{variant}: Pillow kept identifying the bytes")


def _segment(data: bytes, fmt: str) -> tuple[int, int]:
    """[start, end) of the entropy-coded data: the first JPEG scan up to EOI, or the PNG IDAT chunks' bytes."""
    if fmt == "jpeg":
        i = data.index(b"\xff\xda")
        start = i + 2 + int.from_bytes(data[i + 2:i + 4], "big")
        return start, data.rindex(b"\xff\xd9")
    i = data.index(b"IDAT")
    return i + 4, data.rindex(b"IEND") - 8


def _corrupt(rng: random.Random, data: bytes, fmt: str, variant: str) -> tuple[bytes, dict]:
    """Truncated (30-80% kept) or a run of flipped bytes in the middle of the entropy-coded data; tried until a full
    decode fails."""
    for attempt in range(500):
        if variant.startswith("truncated"):
            cut = int(len(data) * rng.uniform(0.3, 0.8))
            bad, info = data[:cut], {"kept_bytes": cut, "of": len(data)}
        else:
            s, e = _segment(data, fmt)
            p = rng.randint(s + (e - s) * 3 // 10, s + (e - s) * 6 // 10)
            k = rng.randint(32, 256) if fmt == "jpeg" else rng.randint(4, 16)
            k = max(1, min(k, e - p))
            b = bytearray(data)
            for j in range(p, p + k):
                b[j] ^= 0xFF
            bad, info = bytes(b), {"flipped_at": p, "flipped_bytes": k, "of": len(data)}
        if load_fails(bad):
            info["attempts"] = attempt + 1
            return bad, info
    raise RuntimeError(f"image_corrupt/{variant}: every try still decodes")


VARIANTS = {
    "image_empty": ("zero bytes",),
    "not_an_image": ("html", "random bytes", "json error", "s3 xml error"),
    "image_corrupt": ("truncated-jpeg", "flipped-jpeg", "truncated-png", "flipped-png"),
    "image_bomb": ("png 20000x20000 greyscale",),
    "image_format_mismatch": ("png under .jpg",),
    "image_too_small": ("small",),
    "image_aspect_ratio": ("tall strip", "wide strip", "sliver"),
    "image_blank": ("constant", "near-constant", "near-black"),
    "image_mode": ("cmyk-jpeg", "i16-png", "palette-png-transparency"),
    "image_animated": ("gif",),
    "missing_caption": ("null",),
    "empty_caption": ("empty", "space", "whitespace"),
    "missing_image": ("absent",),
    "image_missing_file": ("not written", "missing folder"),
    "image_path_outside": ("parent", "absolute", "climbs out"),
    "image_placeholders": ("one too many", "one too few", "images empty"),
}
JPEG_ONLY_VARIANTS = {"image_corrupt": ("truncated-jpeg", "flipped-jpeg"), "image_mode": ("cmyk-jpeg",)}
OUTSIDE_PATHS = {"parent": "../secret.jpg", "absolute": "/etc/passwd", "climbs out": "images/../../private/photo.jpg"}
EMPTY_CAPTIONS = {"empty": "", "space": " ", "whitespace": "\n\t "}


def planted_image(rng: random.Random, kind: str, variant: str, sources, prof: dict, key: str,
                  jpeg_only: bool) -> tuple[dict, dict]:
    """(image dict {bytes, fmt, ext, size}, details) for an image-level kind. `jpeg_only`: the layout names its
    images JPEG (parquet_bytes), so formats other than JPEG are used only where the kind needs them."""
    from PIL import Image

    any_fmt = (("jpeg", 0.5), ("png", 0.25), ("webp", 0.25))
    info: dict = {}
    if kind == "image_empty":
        return {"bytes": b"", "fmt": None, "ext": "jpg", "size": None}, info
    if kind == "not_an_image":
        return {"bytes": _not_an_image(rng, variant, key), "fmt": None, "ext": "jpg", "size": None}, info
    if kind == "image_bomb":
        w, h = BOMB_SIZE
        bits = prof["bomb_bits"]
        info.update(declared=[w, h], bit_depth=bits)
        return {"bytes": png_bomb_bytes(w, h, bits), "fmt": "png", "ext": "png", "size": [w, h]}, info
    src = rng.choice(sources)
    info["source"] = src["name"]
    if kind == "image_corrupt":
        fmt = "jpeg" if "jpeg" in variant else "png"
        size = clean_size(rng, prof)
        good = encode(picture(rng, src, size), fmt, rng)
        bad, more = _corrupt(rng, good, fmt, variant)
        info.update(more)
        return {"bytes": bad, "fmt": fmt, "ext": EXT[fmt], "size": list(size)}, info
    if kind == "image_format_mismatch":
        size = clean_size(rng, prof)
        return {"bytes": encode(picture(rng, src, size), "png"), "fmt": "png", "ext": "jpg", "size": list(size)}, info
    if kind == "image_too_small":
        short = rng.randint(12, 31)
        other = min(31 if rng.random() < 0.5 else 48, rng.randint(short, 2 * short))
        size = (short, other) if rng.random() < 0.5 else (other, short)
        fmt = "jpeg" if jpeg_only else _weighted(rng, any_fmt)
        im = picture(rng, src, size)
        return {"bytes": encode(im, fmt, rng), "fmt": fmt, "ext": EXT[fmt], "size": list(size)}, info
    if kind == "image_aspect_ratio":
        if variant == "sliver":
            short, ratio = rng.randint(1, 4), None
            long_ = rng.randint(300, 600)
            info["also"] = "min side < 32"
        else:
            short = rng.randint(*prof["strip"])
            ratio = rng.uniform(9, 14)
            long_ = round(short * ratio)
        size = (short, long_) if variant == "tall strip" or (variant == "sliver" and rng.random() < 0.5) \
            else (long_, short)
        fmt = "jpeg" if jpeg_only else _weighted(rng, any_fmt)
        im = picture(rng, src, size, min_std=0 if variant == "sliver" else MIN_CLEAN_STD)
        return {"bytes": encode(im, fmt, rng), "fmt": fmt, "ext": EXT[fmt], "size": list(size)}, info
    if kind == "image_blank":
        import numpy as np

        del info["source"]
        size = clean_size(rng, prof)
        for _ in range(20):
            if variant == "near-black":
                colour = [rng.randint(0, 12) for _ in range(3)]
            else:
                colour = [rng.randint(0, 255) for _ in range(3)]
            arr = np.empty((size[1], size[0], 3), dtype=np.int16)
            arr[:] = colour
            if variant != "constant":
                nrng = np.random.default_rng(rng.getrandbits(64))
                arr += nrng.integers(-1, 2, size=arr.shape, dtype=np.int16)
            im = Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8), "RGB")
            data = encode(im, "jpeg", rng)
            with Image.open(io.BytesIO(data)) as back:
                std = grey_std(back)
            if std < 2:
                info.update(colour=colour, grey_std=round(std, 3))
                return {"bytes": data, "fmt": "jpeg", "ext": "jpg", "size": list(size)}, info
        raise RuntimeError("image_blank: the JPEG keeps a grey std >= 2")
    if kind == "image_mode":
        import numpy as np

        size = clean_size(rng, prof)
        im = picture(rng, src, size)
        if variant == "cmyk-jpeg":
            data, fmt = encode(im.convert("CMYK"), "jpeg", rng), "jpeg"
        elif variant == "i16-png":
            grey = np.asarray(im.convert("L"), dtype=np.uint16) * 257
            data, fmt = encode(Image.fromarray(grey), "png"), "png"
        else:
            pal = im.quantize(colors=rng.randint(16, 64))
            idx = rng.randrange(len(pal.getcolors()))
            data, fmt = encode(pal, "png", transparency=pal.getcolors()[idx][1]), "png"
            info["transparency"] = pal.getcolors()[idx][1]
        return {"bytes": data, "fmt": fmt, "ext": EXT[fmt], "size": list(size)}, info
    if kind == "image_animated":
        n = rng.randint(2, 4)
        short = prof["min_side"][0]
        size = (short, round(short * rng.uniform(0.75, 1.33)))
        frames = [picture(rng, rng.choice(sources), size) for _ in range(n)]
        data = encode(frames[0], "gif", save_all=True, append_images=frames[1:], duration=rng.choice((100, 200, 500)),
                      loop=0)
        info.update(frames=n)
        del info["source"]
        return {"bytes": data, "fmt": "gif", "ext": "gif", "size": list(size)}, info
    raise ValueError(f"not an image kind: {kind!r}")


# -------------------------------------------------------------------------------------------------- records

def _plan(rng: random.Random, layout: str, records: int, rate: float, kinds, counts=None) -> list[str | None]:
    per_kind = max(1, math.ceil(rate * records))
    plan = []
    for k in kinds:
        plan += [k] * ((counts or {}).get(k) or (1 if k == "image_bomb" else per_kind))
    if len(plan) > records:
        raise ValueError(f"{layout}: {len(plan)} planted records need at least that many records (have {records}): "
                         f"raise --records or lower --rate")
    plan += [None] * (records - len(plan))
    rng.shuffle(plan)
    return plan


def build_layout(layout: str, sources, records: int, rate: float, seed: int, prof: dict, kinds=None, counts=None,
                 used: dict | None = None) -> list[dict]:
    """The records of one layout, in order: {key, kind, variant, checks, caption (None = missing), images [image
    dicts, each maybe with `path` (a path to write in place of the default) and `write` False], details}.
    counts: plants per kind in place of the rate's; used: {kind: {variant: times}} shared by the layouts, so the
    variants take turns across layouts too."""
    rng = random.Random(f"{seed}:{layout}")
    applies = LAYOUT_KINDS[layout]
    kinds = tuple(applies if kinds is None else [k for k in kinds if k in applies])
    plan = _plan(rng, layout, records, rate, kinds, counts)
    jpeg_only = layout == "parquet_bytes"
    used = {} if used is None else used
    seen: dict[str, int] = {}
    out = []
    for i, kind in enumerate(plan):
        key = f"{i:06d}"
        variant = None
        if kind:
            variants = (JPEG_ONLY_VARIANTS.get(kind) if jpeg_only else None) or VARIANTS[kind]
            u = used.setdefault(kind, {})
            variant = min(variants, key=lambda v: u.get(v, 0))        # the least used so far, in order
            u[variant] = u.get(variant, 0) + 1
            seen[kind] = seen.get(kind, 0) + 1
        n_images = 1
        if layout == "multimodal":
            n_images = _weighted(rng, ((1, 0.5), (2, 0.3), (3, 0.2)))
        images, srcs = [], []
        for _ in range(n_images):
            img, src = clean_picture(rng, sources, prof, "jpeg" if jpeg_only else None)
            images.append(img)
            srcs.append(src)
        rec = {"key": key, "kind": kind, "variant": variant, "checks": [kind] if kind else [],
               "caption": caption(rng, srcs[0]["theme"]), "images": images, "details": {}, "sources": srcs}
        if kind:
            j = rng.randrange(n_images)
            details = {"kind": kind, "variant": variant}
            if layout == "multimodal" and kind != "image_placeholders":
                details["image"] = j
            if kind in IMAGE_KINDS:
                img, info = planted_image(rng, kind, variant, sources, prof, key, jpeg_only)
                images[j] = img
                details.update(info)
                if jpeg_only and img["fmt"] not in (None, "jpeg") and kind != "image_format_mismatch":
                    rec["checks"].append("image_format_mismatch")
                if kind == "image_aspect_ratio" and variant == "sliver":
                    rec["checks"].append("image_too_small")
                if img["size"]:
                    details["size"] = img["size"]
                if img["fmt"]:
                    details["format"] = img["fmt"]
            elif kind == "missing_caption":
                rec["caption"] = None
                if layout == "jsonl_paths" and seen[kind] % 2 == 0:
                    details["variant"] = rec["variant"] = "key absent"
            elif kind == "empty_caption":
                rec["caption"] = EMPTY_CAPTIONS[variant]
            elif kind == "missing_image":
                images[j] = {"bytes": None, "fmt": None, "ext": None, "size": None}
            elif kind == "image_missing_file":
                images[j]["write"] = False
                if variant == "missing folder":
                    images[j]["path"] = f"images/lost/{key}.{images[j]['ext']}"
            elif kind == "image_path_outside":
                images[j]["write"] = False
                images[j]["path"] = OUTSIDE_PATHS[variant]
            details["checks"] = rec["checks"]
            rec["details"] = details
        out.append(rec)
    return out


def _placeholder_turns(rng: random.Random, rec: dict, n_placeholders: int) -> list[dict]:
    """The conversation of a multimodal record: the first user turn holds the placeholders (sometimes the last one
    goes to a second user turn), the assistant answers with the captions."""
    n = len(rec["images"])
    caps = [rec["caption"]] + [caption(rng, s["theme"]) for s in rec["sources"][1:]]
    caps = caps[:max(n, 1)]
    if n_placeholders <= 1 and n <= 1:
        user = rng.choice(PROMPTS_ONE).replace("<image>", "<image>" * n_placeholders) if n_placeholders else \
            rng.choice(PROMPTS_ONE).replace("<image>\n", "").replace("\n<image>", "")
        answer = caps[0]
    elif rng.random() < 0.5:
        user = "<image>" * n_placeholders + "\n" + rng.choice(PROMPTS_MANY)
        answer = " ".join(f"Image {i + 1}: {c}" for i, c in enumerate(caps))
    else:
        user = "".join(f"Image {i + 1}: <image>\n" for i in range(n_placeholders)) + rng.choice(PROMPTS_MANY)
        answer = " ".join(f"Image {i + 1}: {c}" for i, c in enumerate(caps))
    turns = [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]
    if rng.random() < 0.3:
        q, a = rng.choice(FOLLOW_UPS)
        adj = rng.sample(ADJECTIVES, 2)
        turns += [{"role": "user", "content": q}, {"role": "assistant", "content": a.format(a=adj[0], b=adj[1])}]
    if turns[0]["content"].count("<image>") >= 2 and len(turns) == 4 and rng.random() < 0.5:
        # the last placeholder moves to the follow-up question
        first = turns[0]["content"]
        at = first.rindex("<image>")
        turns[0]["content"] = first[:at] + first[at + len("<image>"):]
        turns[2]["content"] = "<image>\n" + turns[2]["content"]
    return turns


# ---------------------------------------------------------------------------------------------------- writing

def _shard_names(layout: str, n: int) -> list[str]:
    if layout == "webdataset":
        return [f"shard-{i:05d}.tar" for i in range(n)]
    if layout == "parquet_hf":
        return [f"train-{i:05d}-of-{n:05d}.parquet" for i in range(n)]
    if layout == "parquet_bytes":
        return [f"part-{i:05d}.parquet" for i in range(n)]
    return [f"shard-{i:05d}.jsonl" for i in range(n)]


def write_tar(path: Path, members: list[tuple[str, bytes]]) -> None:
    """A plain ustar archive, members in the order given, mtime 0, uid/gid 0, no owner names, mode 0644."""
    with open(path, "wb") as f, tarfile.open(fileobj=f, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        for name, data in members:
            ti = tarfile.TarInfo(name)
            ti.size, ti.mtime, ti.mode, ti.uid, ti.gid, ti.uname, ti.gname = len(data), 0, 0o644, 0, 0, "", ""
            tf.addfile(ti, io.BytesIO(data))


def write_parquet(path: Path, rows: list[dict], schema) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path, row_group_size=64, compression="snappy",
                   use_dictionary=False, write_statistics=False, version="2.6", data_page_version="1.0")


def write_jsonl(path: Path, rows: list[dict]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def _hf_schema():
    import pyarrow as pa

    features = {"image": {"_type": "Image"}, "text": {"dtype": "string", "_type": "Value"}}
    return pa.schema([("image", pa.struct([("bytes", pa.binary()), ("path", pa.string())])), ("text", pa.string())],
                     metadata={"huggingface": json.dumps({"info": {"features": features}})})


def write_layout(out: Path, layout: str, recs: list[dict], shards: int, seed: int) -> dict:
    """Write one layout's shards (and image files) under out/layout; returns its truth section."""
    import pyarrow as pa

    folder = out / layout
    folder.mkdir(parents=True)
    n = max(1, min(shards, len(recs)))
    names = _shard_names(layout, n)
    per = math.ceil(len(recs) / n)
    rng = random.Random(f"{seed}:{layout}:text")
    truth = {"kinds": [k for k in LAYOUT_KINDS[layout]], "shards": {}, "planted": {}, "clean": {}, "details": {}}
    for s, name in enumerate(names):
        part = recs[s * per:(s + 1) * per]
        rel = f"{layout}/{name}"
        planted, clean, details = {}, [], {}
        rows, members = [], []
        for row, rec in enumerate(part):
            img = rec["images"][0]
            if rec["kind"] == "image_placeholders":
                k = len(rec["images"])
                n_ph = {"one too many": k + 1, "one too few": k - 1}.get(rec["variant"], k)
                if rec["variant"] == "images empty":
                    for im in rec["images"]:
                        im["write"] = False
                rec["details"].update(placeholders=n_ph, images=0 if rec["variant"] == "images empty" else k)
            if layout == "webdataset":
                ms = []
                if img["bytes"] is not None:
                    ms.append((f"{rec['key']}.{img['ext']}", img["bytes"]))
                if rec["caption"] is not None:
                    ms.append((f"{rec['key']}.txt", rec["caption"].encode("utf-8")))
                members += sorted(ms)
            elif layout == "parquet_hf":
                rows.append({"image": None if img["bytes"] is None else
                             {"bytes": img["bytes"], "path": f"{rec['key']}.{img['ext']}"}, "text": rec["caption"]})
            elif layout == "parquet_bytes":
                rows.append({"jpg": img["bytes"], "caption": rec["caption"]})
            else:
                paths = []
                for j, im in enumerate(rec["images"]):
                    if im["bytes"] is None and im.get("path") is None:
                        paths.append(None)
                        continue
                    stem = rec["key"] if layout == "jsonl_paths" else f"{rec['key']}_{j}"
                    p = im.get("path") or f"images/{stem}.{im['ext']}"
                    if im.get("write", True):
                        (folder / p).parent.mkdir(parents=True, exist_ok=True)
                        (folder / p).write_bytes(im["bytes"])
                    paths.append(p)
                if layout == "jsonl_paths":
                    r = {"image": paths[0], "text": rec["caption"]}
                    if rec["variant"] == "key absent":
                        del r["text"]
                    rows.append(r)
                else:
                    d = rec["details"]
                    n_ph = d["placeholders"] if rec["kind"] == "image_placeholders" else len(paths)
                    imgs = [] if rec["variant"] == "images empty" else paths
                    rows.append({"messages": _placeholder_turns(rng, rec, n_ph), "images": imgs})
            rk = rec["key"] if layout == "webdataset" else str(row)
            if rec["kind"]:
                planted[rk] = rec["checks"]
                details[rk] = rec["details"] if layout == "webdataset" else {"key": rec["key"], **rec["details"]}
            else:
                clean.append(rk)
        path = folder / name
        if layout == "webdataset":
            write_tar(path, members)
        elif layout == "parquet_hf":
            write_parquet(path, rows, _hf_schema())
        elif layout == "parquet_bytes":
            write_parquet(path, rows, pa.schema([("jpg", pa.binary()), ("caption", pa.string())]))
        else:
            write_jsonl(path, rows)
        truth["shards"][rel] = len(part)
        truth["planted"][rel] = planted
        truth["clean"][rel] = clean
        truth["details"][rel] = details
    return truth


# ------------------------------------------------------------------------------------------------------- main

def _versions() -> dict:
    import PIL
    import pyarrow

    from PIL import features

    return {"pillow": PIL.__version__, "libjpeg_turbo": features.version("libjpeg_turbo"),
            "webp": features.version("webp"), "zlib": zlib.ZLIB_VERSION, "pyarrow": pyarrow.__version__}


def _clear(out: Path, layouts) -> None:
    """OUT/<layout> is rewritten from scratch (a stale image file would turn an image_missing_file plant into a
    file that exists); a folder this generator did not write is left alone."""
    for layout in layouts:
        d = out / layout
        if d.exists():
            if not (out / "truth.json").is_file():
                raise SystemExit(f"image_data: {d} exists and {out / 'truth.json'} does not: not a folder this "
                                 f"generator wrote; pick another --out or remove it")
            shutil.rmtree(d)


def generate(out: str | Path, records: int = 400, rate: float = 0.04, seed: int = 0, layouts=LAYOUTS,
             kinds=None, shards: int = 4, profile: str = "default", counts: dict | None = None,
             shared: Path | None = None, log=print) -> dict:
    """Write the layouts and OUT/truth.json; returns the truth. counts: {kind: plants per layout} in place of
    the rate's for those kinds."""
    out = Path(out)
    bad = [x for x in layouts if x not in LAYOUTS]
    if bad:
        raise ValueError(f"unknown layouts {bad} (expected {', '.join(LAYOUTS)})")
    if kinds is not None and [k for k in kinds if k not in KINDS]:
        raise ValueError(f"unknown kinds {[k for k in kinds if k not in KINDS]} (expected {', '.join(KINDS)})")
    prof = PROFILES[profile]
    sources = load_sources(shared)
    _clear(out, layouts)
    truth = {"generator_version": GENERATOR_VERSION,
             "params": {"records": records, "rate": rate, "seed": seed, "shards": shards, "profile": profile,
                        "kinds": list(kinds) if kinds is not None else None, "counts": counts},
             "made_with": _versions(),
             "sources": [s["name"] for s in sources],
             "layouts": {}}
    used: dict = {}
    for layout in layouts:
        recs = build_layout(layout, sources, records, rate, seed, prof, kinds, counts, used)
        t = write_layout(out, layout, recs, shards, seed)
        t["skipped_kinds"] = [k for k in KINDS if k not in LAYOUT_KINDS[layout]]
        truth["layouts"][layout] = t
        tally: dict[str, int] = {}
        for r in recs:
            if r["kind"]:
                tally[r["kind"]] = tally.get(r["kind"], 0) + 1
        log(f"{layout}: {len(recs)} records in {len(t['shards'])} shards, "
            f"{sum(len(c) for c in t['clean'].values())} clean, planted {tally}")
    out.mkdir(parents=True, exist_ok=True)
    (out / "truth.json").write_text(json.dumps(truth, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return truth


# ----------------------------------------------------------------------------------------------------- fixtures

FIXTURE_ARGS = {"records": 24, "rate": 0.01, "seed": 7, "shards": 2, "profile": "small",
                "counts": {"image_path_outside": 2, "image_placeholders": 3}}

FIXTURE_README = """# Image-text fixtures with planted defects

Small image-text datasets for docs and tests, written by

```bash
.venv/bin/python benchmarks/image_data.py --fixtures --out fixtures/images
```

(`--records {records} --rate {rate} --seed {seed} --shards {shards}`, small pictures, the 1-bit bomb) from real
photos read in place: `../shared/data/images/hopper.{{jpg,png,webp}}`, `sugarshack_bad_mpo_header.jpg` and
matplotlib's sample photos `grace_hopper.jpg` and `Minduka_Present_Blue_Pack.png`. Clean images are random crops
of them (aspect 1:3..3:1, min side >= 64), flipped, rotated a little, colour-jittered, resized and re-encoded
(JPEG 60-95, PNG, WebP); captions are generated English sentences. Made with {made_with};
the same versions write the same bytes (`tests/image_data/test_generator.py` checks it, and that every plant is
what its kind says).

| layout | files | records |
| --- | --- | --- |
| WebDataset: `KEY.jpg` / `.png` / `.webp` / `.gif` + `KEY.txt` | `webdataset/shard-0000{{0,1}}.tar` | {n} |
| HF datasets Image: `image: struct<bytes, path>`, `text` | `parquet_hf/train-0000{{0,1}}-of-00002.parquet` | {n} |
| raw bytes: `jpg: binary`, `caption` | `parquet_bytes/part-0000{{0,1}}.parquet` | {n} |
| paths: `image` ("images/000123.jpg", relative to the shard), `text` | `jsonl_paths/shard-0000{{0,1}}.jsonl` + `jsonl_paths/images/` | {n} |
| multimodal SFT: `messages` with `<image>` placeholders, `images` [paths] | `multimodal/shard-0000{{0,1}}.jsonl` + `multimodal/images/` | {n} |

Every kind that applies to a layout is planted once (`image_path_outside` twice and `image_placeholders` three
times, so that every variant of every kind is somewhere); the check expected to fire has the kind's name, and the
other records are clean. `truth.json` has, per layout, `planted` {{shard: {{record key: [checks]}}}}, `clean` {{shard:
[keys]}} and `details` (variant, size, format, multimodal image index). A record key is the tar sample key, or the
0-based row in a Parquet / JSONL shard. `image_bomb` is a 20000x20000 1-bit greyscale PNG of zero rows (~50 KB;
Pillow refuses to open it: `DecompressionBombError`). `image_path_outside` paths point outside the folder
("../secret.jpg", "/etc/passwd", "images/../../private/photo.jpg"): nothing is written there, and an audit should
not open them.

| layout | shard | key | kind | checks | variant |
| --- | --- | --- | --- | --- | --- |
{rows}
"""


def write_fixtures(out: str | Path, shared: Path | None = None) -> dict:
    out = Path(out)
    a = FIXTURE_ARGS
    truth = generate(out, a["records"], a["rate"], a["seed"], shards=a["shards"], profile=a["profile"],
                     counts=a["counts"], shared=shared, log=lambda s: None)
    rows = []
    for layout, lt in truth["layouts"].items():
        for shard, planted in lt["planted"].items():
            for key, checks in planted.items():
                d = lt["details"][shard][key]
                rows.append(f"| {layout} | `{shard.split('/', 1)[1]}` | {key} | {d['kind']} | "
                            f"{', '.join(f'`{c}`' for c in checks)} | {d['variant']} |")
    mw = truth["made_with"]
    made_with = (f"Pillow {mw['pillow']} (libjpeg-turbo {mw['libjpeg_turbo']}, libwebp {mw['webp']}), "
                 f"zlib {mw['zlib']}, pyarrow {mw['pyarrow']}")
    (out / "README.md").write_text(FIXTURE_README.format(rows="\n".join(rows), made_with=made_with, n=a["records"],
                                                         **a), encoding="utf-8")
    return truth


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="output folder (OUT/<layout>/..., OUT/truth.json)")
    ap.add_argument("--records", type=int, default=400, help="records per layout (default 400)")
    ap.add_argument("--rate", type=float, default=0.04,
                    help="share of records planted per kind (default 0.04; at least one; one bomb per layout)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shards", type=int, default=4, help="shards per layout (default 4)")
    ap.add_argument("--layouts", default=",".join(LAYOUTS))
    ap.add_argument("--kinds", default=None, help="comma-separated kinds to plant (default: every kind of the layout)")
    ap.add_argument("--small", action="store_true", help="small pictures (min side 64-80) and the 1-bit bomb")
    ap.add_argument("--fixtures", action="store_true",
                    help="write the committed fixture set (fixtures/images: 24 records per layout, every kind once, "
                         "README.md with the truth table) into --out; other options are ignored")
    args = ap.parse_args(argv)
    try:
        if args.fixtures:
            write_fixtures(args.out)
            return 0
        generate(args.out, args.records, args.rate, args.seed, tuple(args.layouts.split(",")),
                 args.kinds.split(",") if args.kinds else None, args.shards, "small" if args.small else "default")
    except FileNotFoundError as e:
        raise SystemExit(f"image_data: {e}")
    except ValueError as e:
        raise SystemExit(f"image_data: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
