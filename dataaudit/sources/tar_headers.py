"""Tar headers read with bounds, for the WebDataset reader's `tarfile` stream.

`tarfile` reads the data of an extended header (GNU long name/link 'L'/'K', pax 'x'/'g'/'X') whole before it hands
over the member it describes: a header declaring a gigabyte takes a gigabyte (or a MemoryError). And Python 3.11.7
parses pax data with regular expressions that backtrack (CVE-2024-6232): 256 KiB took 68 s, quadratic. So each
header block is looked at before `tarfile` reads on: an extended header larger than MAX_EXTENDED_HEADER_BYTES is
refused, and pax data is read here first and refused unless every record is well formed (a length, a space, a
keyword ending in '=' inside the record) with no long run of digits, the shapes on which `tarfile`'s expressions
stay linear; then `tarfile` parses the same bytes. A refusal ends the shard there (the records before it are kept):
what follows a header that cannot be read cannot be trusted to be the member it names.

It also remembers which header error ended the stream: `tarfile.next()` turns a bad or missing header after the
first into a silent end of archive, and the reader must tell a real end-of-archive block from a cut shard.
"""
from __future__ import annotations

import re
import tarfile

# A long path is at most a few KiB (PATH_MAX is 4096) and pax records of real archives (times, ids, long names,
# SELinux labels and ACLs) fit in a few KiB; 64 KiB leaves room for large extended attributes, holds nothing big in
# memory, and bounds what the checks below read.
MAX_EXTENDED_HEADER_BYTES = 64 << 10
# tarfile looks for "\d+ hdrcharset=" anywhere in pax data: each digit of a run restarts the match, so a run of n
# digits costs n**2. Real values (sizes, times, ids) have at most ~30 digits.
MAX_PAX_DIGIT_RUN = 64

_EXTENDED = {tarfile.GNUTYPE_LONGNAME: "GNU long name", tarfile.GNUTYPE_LONGLINK: "GNU long link",
             tarfile.XHDTYPE: "pax", tarfile.XGLTYPE: "pax global", tarfile.SOLARIS_XHDTYPE: "Solaris pax"}
_PAX = {tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE}
_RECORD_START = re.compile(rb"(\d{1,20}) ")
_DIGIT_RUN = re.compile(rb"\d{%d}" % (MAX_PAX_DIGIT_RUN + 1))


class HeaderRefused(tarfile.TarError):
    """An extended header this reader does not let `tarfile` read; the message is one line naming it."""


def _pax_problem(data: bytes) -> str | None:
    """Why pax data could make tarfile's parsing superlinear, or None. Linear: one look per record."""
    if _DIGIT_RUN.search(data):
        return f"a run of more than {MAX_PAX_DIGIT_RUN} digits"
    pos = 0
    while pos < len(data):
        m = _RECORD_START.match(data, pos)
        if m is None:
            break      # tarfile stops parsing here too
        length = int(m.group(1))
        end = pos + length
        if end > len(data) or data.find(b"=", m.end(), end) <= m.end():   # the keyword ends inside the record
            return f"malformed record at byte {pos}"
        pos = end
    return None


class _Replay:
    """The stream with bytes already read put back in front, so tarfile reads the pax data checked here."""

    def __init__(self, data: bytes, stream):
        self._data, self._stream = data, stream

    def read(self, size: int) -> bytes:
        if not self._data:
            return self._stream.read(size)
        out, self._data = self._data[:size], self._data[size:]
        return out + self._stream.read(size - len(out)) if len(out) < size else out

    def tell(self) -> int:
        return self._stream.tell() - len(self._data)

    def __getattr__(self, name):
        return getattr(self._stream, name)


class BoundedTarInfo(tarfile.TarInfo):
    """TarInfo whose extended headers are bounded (see the module's docstring); records in `tf.dataaudit_end` the
    header error that ended the stream."""

    @classmethod
    def fromtarfile(cls, tf):
        try:
            buf = tf.fileobj.read(tarfile.BLOCKSIZE)
            obj = cls.frombuf(buf, tf.encoding, tf.errors)
            obj.offset = tf.fileobj.tell() - tarfile.BLOCKSIZE
            kind = _EXTENDED.get(obj.type)
            if kind is None:
                return obj._proc_member(tf)
            if obj.size > MAX_EXTENDED_HEADER_BYTES:
                raise HeaderRefused(f"{kind} header at byte {obj.offset} declares {obj.size} bytes, more than "
                                    f"{MAX_EXTENDED_HEADER_BYTES} (not read)")
            if obj.type not in _PAX:
                return obj._proc_member(tf)
            data = tf.fileobj.read(obj._block(obj.size))
            why = _pax_problem(data[:obj.size])
            if why is not None:
                raise HeaderRefused(f"{kind} header at byte {obj.offset}: {why} (not parsed)")
            stream = tf.fileobj
            tf.fileobj = _Replay(data, stream)
            try:
                return obj._proc_member(tf)
            finally:
                tf.fileobj = stream
        except tarfile.HeaderError as e:
            tf.dataaudit_end = e
            raise
