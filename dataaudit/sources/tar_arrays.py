"""WebDataset members that hold arrays or packed objects: `.npy`, `.npz`, `.ten`/`.tb` (tenbin), `.mp`/`.msgpack`/
`.msg` (msgpack) and `.cbor`, decoded without pickle and bounded before anything is allocated.

Each decoder is one function of (member bytes, column name, suffix, bytes it may inflate to) -> ({column: (kind,
value)}, warnings), and `DECODERS`
is the table the tar reader consults by suffix. An array becomes the column's flat values plus `<col>.shape` and
`<col>.dtype` (what the numeric and image-tensor checks read, as for .npy). A packed object becomes columns like a
.json member's.

webdataset's own decoders are not called: its `.npz` loader is numpy's (a zip whose members could inflate without
bound), its tenbin parser trusts the chunk lengths of the stream (a negative length loops backwards forever), and
its `.cbor` decoder needs the unmaintained `cbor` package. The parsers here read the same formats, refusing a
header that asks for more than the member holds.
"""
from __future__ import annotations

import io
import math
import struct
import zipfile

import numpy as np

from .batch import BYTES, LIST_EMPTY, LIST_FLOAT, LIST_INT, STR, INT64_MAX, flatten_object, json_value, one_line
from .json_budget import MAX_VALUES


class MemberError(Exception):
    """A member that cannot be decoded; the message becomes (part of) the record's __error__."""


def array_values(col: str, shape: tuple, dtype: np.dtype, body, fortran: bool = False, what: str = "array"
                 ) -> tuple[dict, list[str]]:
    """The columns of one array: its values (flat, C order), `<col>.shape` and `<col>.dtype`. `body` must hold at
    least the bytes the shape asks for (checked here, before anything is allocated)."""
    if not all(type(d) is int and d >= 0 for d in shape):
        # numpy's header parser takes any tuple of ints; np.load refuses negative dimensions (and reshape raises)
        raise MemberError(f"invalid {what} header: shape {shape} has a negative dimension")
    count = math.prod(shape)
    if len(body) < count * dtype.itemsize:
        raise MemberError(f"{what} data is {len(body)} bytes, header {shape} {dtype.name} needs "
                          f"{count * dtype.itemsize}")
    values = {f"{col}.shape": (LIST_INT if shape else LIST_EMPTY, list(shape)), f"{col}.dtype": (STR, dtype.name)}
    if dtype.kind not in "biuf":
        return values, [f"dtype {dtype.name} values not decoded"]
    flat = np.frombuffer(body, dtype=dtype, count=count)
    if fortran and len(shape) > 1:
        flat = flat.reshape(shape, order="F").ravel()
    if dtype.kind == "f" or (dtype.kind == "u" and dtype.itemsize == 8 and count and flat.max() > INT64_MAX):
        values[col] = (LIST_FLOAT, flat)
    else:
        values[col] = (LIST_INT, flat)
    return values, []


def decode_npy(data: bytes, col: str, suffix: str = "npy", limit: int = 0) -> tuple[dict, list[str]]:
    """Parse the .npy header ourselves: refuses object arrays (pickle) and checks the size before allocating."""
    fmt = np.lib.format
    fp = io.BytesIO(data)
    try:
        version = fmt.read_magic(fp)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(fp)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = fmt.read_array_header_2_0(fp)
        else:
            raise MemberError(f"unsupported .npy version {version}")
    except MemberError:
        raise
    except Exception as e:  # numpy parses the header with literal_eval: anything can come out of bad bytes
        raise MemberError(f"invalid .npy header: {one_line(e)}") from None
    if dtype.hasobject:
        raise MemberError("object array in .npy (would need unpickling; not loaded)")
    return array_values(col, shape, dtype, memoryview(data)[fp.tell():], fortran, ".npy")


def decode_npz(data: bytes, col: str, suffix: str = "npz", limit: int = 0) -> tuple[dict, list[str]]:
    """Each `.npy` of the zip as `<col>.<name>`: the sizes its directory declares are summed and checked against
    `limit` (what is left of the sample's byte budget) before a byte is inflated; each read stops one byte past
    its declared size, so a directory that lies is caught too."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = [i for i in zf.infolist() if not i.filename.endswith("/")]   # (folders hold no array)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as e:
        raise MemberError(f"invalid .npz: {one_line(e)}") from None
    declared = sum(i.file_size for i in infos)
    if declared > limit:
        raise MemberError(f".npz declares {declared} bytes once inflated, more than the {limit} its sample may "
                          "decode (not inflated)")
    values: dict = {}
    warnings: list[str] = []
    for info in infos:
        name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
        try:
            with zf.open(info) as f:
                body = f.read(info.file_size + 1)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError) as e:
            raise MemberError(f"invalid .npz member {info.filename!r}: {one_line(e)}") from None
        if len(body) > info.file_size:
            raise MemberError(f".npz member {info.filename!r} inflates past its declared {info.file_size} bytes")
        if not info.filename.endswith(".npy"):
            warnings.append(f".npz member {info.filename!r} is not an .npy array (not decoded)")
            continue
        got, more = decode_npy(body, f"{col}.{name}")
        values.update(got)
        warnings.extend(more)
    return values, warnings


_TEN_MAGIC = b"~TenBin~"
_TEN_DTYPES = {"f2": "float16", "f4": "float32", "f8": "float64", "i1": "int8", "i2": "int16", "i4": "int32",
               "i8": "int64", "u1": "uint8", "u2": "uint16", "u4": "uint32", "u8": "uint64"}


def _ten_chunks(data: bytes) -> list[memoryview]:
    """The chunks of a tenbin buffer: magic, int64 length, bytes padded to 64; a length past the end is refused."""
    view, out, at = memoryview(data), [], 0
    while at < len(data):
        if bytes(view[at:at + 8]) != _TEN_MAGIC or at + 16 > len(data):
            raise MemberError(f"tenbin: no chunk magic at byte {at}")
        (n,) = struct.unpack("<q", view[at + 8:at + 16])
        if n < 0 or at + 16 + n > len(data):
            raise MemberError(f"tenbin: chunk length {n} at byte {at} passes the member's end")
        out.append(view[at + 16:at + 16 + n])
        at += 16 + (n + 63) // 64 * 64
    return out


def decode_tenbin(data: bytes, col: str, suffix: str = "ten", limit: int = 0) -> tuple[dict, list[str]]:
    """The arrays of a tenbin member (webdataset's `.ten`): one column for one array, `<col>.<name or i>` for more."""
    chunks = _ten_chunks(data)
    if len(chunks) % 2:
        raise MemberError("tenbin: a header chunk without its data chunk")
    arrays = []
    for i in range(0, len(chunks), 2):
        head = chunks[i]
        if len(head) < 24 or len(head) % 8:
            raise MemberError("tenbin: header chunk too short")
        words = struct.unpack(f"<{len(head) // 8}q", head)
        code = struct.pack("<q", words[0]).rstrip(b"\0").decode("ascii", "replace")
        if code not in _TEN_DTYPES:
            raise MemberError(f"tenbin: unknown dtype code {code!r}")
        name = struct.pack("<q", words[1]).rstrip(b"\0").decode("ascii", "replace")
        rank = words[2]
        if not 0 <= rank <= len(words) - 3:
            raise MemberError(f"tenbin: rank {rank} does not fit its header")
        arrays.append((name, tuple(words[3:3 + rank]), np.dtype(_TEN_DTYPES[code]), chunks[i + 1]))
    values: dict = {}
    warnings: list[str] = []
    for i, (name, shape, dtype, body) in enumerate(arrays):
        got, more = array_values(col if len(arrays) == 1 else f"{col}.{name or i}", shape, dtype, body)
        values.update(got)
        warnings.extend(more)
    return values, warnings


class _Plain:
    """A packed object made plain (dicts with string keys, lists, str, int, float, bool, None): bytes stay bytes at
    the top level (a binary column) and are named elsewhere, other types (timestamps, decimals) become text, and a
    value past MAX_VALUES or a cycle (CBOR shared references) stops the member."""

    def __init__(self):
        self.count = 0
        self.warnings: list[str] = []
        self._open: set[int] = set()

    def __call__(self, v, top: bool = False):
        self.count += 1
        if self.count > MAX_VALUES:
            raise MemberError(f"more than {MAX_VALUES} values (the budget of one record)")
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, (bytes, bytearray, memoryview)):
            if top:
                return bytes(v)
            self.warnings.append(f"a {len(v)}-byte binary value inside a nested field (not checked)")
            return None
        if isinstance(v, (dict, list, tuple)):
            if id(v) in self._open:
                raise MemberError("a value that contains itself (a shared reference cycle)")
            self._open.add(id(v))
            try:
                if isinstance(v, dict):
                    return {k if isinstance(k, str) else str(k): self(x, top) for k, x in v.items()}
                return [self(x) for x in v]
            finally:
                self._open.discard(id(v))
        return str(v)


def _packed_columns(obj, col: str, suffix: str) -> tuple[dict, list[str]]:
    """An object's fields as columns, like a .json member's: unprefixed for a bare `.mp` member, `<col>.<field>`
    for `x.meta.mp`; anything else is one column."""
    plain = _Plain()
    obj = plain(obj, top=True)
    values: dict = {}
    if isinstance(obj, dict):
        binary = {k: v for k, v in obj.items() if isinstance(v, bytes)}
        flatten_object({k: v for k, v in obj.items() if k not in binary}, "" if col == suffix else col + ".",
                       values, plain.warnings, suffix)
        values.update({("" if col == suffix else col + ".") + k: (BYTES, v) for k, v in binary.items()})
    elif isinstance(obj, bytes):
        values[col] = (BYTES, obj)
    else:
        values[col] = json_value(obj)
    return values, plain.warnings


def decode_msgpack(data: bytes, col: str, suffix: str = "mp", limit: int = 0) -> tuple[dict, list[str]]:
    import msgpack

    try:
        obj = msgpack.unpackb(data, raw=False, strict_map_key=False)
    except (ValueError, msgpack.UnpackException, RecursionError, TypeError) as e:
        raise MemberError(f"invalid msgpack: {one_line(e)[:200]}") from None
    return _packed_columns(obj, col, suffix)


def decode_cbor(data: bytes, col: str, suffix: str = "cbor", limit: int = 0) -> tuple[dict, list[str]]:
    import cbor2

    try:
        obj = cbor2.loads(data)
    except (cbor2.CBORDecodeError, ValueError, RecursionError, TypeError, OverflowError, MemoryError) as e:
        raise MemberError(f"invalid CBOR: {one_line(e)[:200]}") from None
    return _packed_columns(obj, col, suffix)


# suffix -> (decoder, the module it needs beside numpy, or None). The tar reader decodes a member by this table;
# a member whose suffix is in no table (here, the text ones, images, media) is kept as bytes and named unchecked.
DECODERS = {"npy": (decode_npy, None), "npz": (decode_npz, None), "ten": (decode_tenbin, None),
            "tb": (decode_tenbin, None), "mp": (decode_msgpack, "msgpack"), "msgpack": (decode_msgpack, "msgpack"),
            "msg": (decode_msgpack, "msgpack"), "cbor": (decode_cbor, "cbor2")}
