"""Text encodings of a trace buffer: Intel HEX, Motorola S-record and plain ASCII hex.

Debuggers save memory in these forms (TraceX guide appendix D); TraceX converts them to bytes
before reading (``tml_convert_file``): data records are concatenated in file order and their load
addresses are ignored.  crosstrace does the same, checks record checksums, and reports damage
with the line number and byte offset.

>>> to_binary(b":0400000042545854BA\\n:00000001FF\\n")
b'BTXT'
>>> to_binary(b"S107000042545854B6\\nS9030000FC\\n")
b'BTXT'
>>> to_binary(b"42 54 58 54\\n")
b'BTXT'
"""

from __future__ import annotations

import binascii
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - imported by the converters that keep offsets (sniffing needs none)
    import numpy as np

from ..errors import TraceFormatError

_HEXCHARS = frozenset(b"0123456789abcdefABCDEF")
_WS = re.compile(rb"\s+")


def detect(data: bytes) -> str | None:
    """``"ihex"``, ``"srec"``, ``"hex"`` or ``None`` from the first non-blank characters."""
    s = data.lstrip()
    if not s:
        return None
    if s[:1] == b":":
        return "ihex"
    if s[:1] in (b"S", b"s") and len(s) > 1 and s[1:2].isdigit():
        return "srec"
    probe = _WS.sub(b"", s[:256])
    if probe and all(c in _HEXCHARS for c in probe):
        return "hex"
    return None


def to_binary(data: bytes, path: str | None = None, *, partial: bool = False) -> bytes | None:
    """Convert a text-encoded buffer to bytes; ``None`` when ``data`` is not one of the encodings.

    ``partial=True`` (used by the sniffer on the file's first bytes) ignores an incomplete last
    line and never raises.  Otherwise a malformed record raises :class:`TraceFormatError`
    (``TRX_BAD_MAGIC``) naming the line and its byte offset.
    """
    kind = detect(data)
    if kind is None:
        return None
    try:
        if kind == "hex":
            return _plain_hex(data, partial)
        return _records(data, kind, partial)
    except _BadRecord as e:
        if partial:
            return None
        raise TraceFormatError(f"{_NAMES[kind]} record on line {e.line} is malformed: {e.why}",
                               code="TRX_BAD_MAGIC", path=path, offset=e.offset) from None


_NAMES = {"ihex": "Intel HEX", "srec": "S-record", "hex": "hex text"}


@dataclass
class Converted:
    """A text-encoded buffer as bytes, with the file offset of every byte and where the text is cut."""

    data: bytes
    kind: str
    text_offset: np.ndarray  #: int64, file offset of the hex digits of every converted byte
    cut: tuple[int, str] | None = None  #: (file offset, what) when the text ends early
    end: int = 0  #: size of the text file

    def file_offset(self, offset: int) -> int:
        """File offset for an offset into the converted bytes (past the end: the text's cut/end)."""
        if 0 <= offset < len(self.text_offset):
            return int(self.text_offset[offset])
        return self.cut[0] if self.cut else self.end


def convert(data: bytes, path: str | None = None) -> Converted | None:
    """Like :func:`to_binary` but keeps each byte's file offset and tolerates a cut at the end.

    A malformed *last* line with no line end, or records that stop without an end-of-file record
    (Intel HEX, S-record), mean the text was cut: the complete records are kept and ``cut`` says
    where.  Damage elsewhere raises like :func:`to_binary`.
    """
    kind = detect(data)
    if kind is None:
        return None
    try:
        if kind == "hex":
            return _plain_hex_mapped(data)
        return _records_mapped(data, kind)
    except _BadRecord as e:
        raise TraceFormatError(f"{_NAMES[kind]} record on line {e.line} is malformed: {e.why}",
                               code="TRX_BAD_MAGIC", path=path, offset=e.offset) from None


def _plain_hex_mapped(data: bytes) -> Converted:
    import numpy as np

    arr = np.frombuffer(data, np.uint8)
    pos = np.flatnonzero(arr > 32)  # every non-whitespace byte must be a hex digit
    digits = arr[pos].tobytes()
    cut = None
    if len(digits) % 2:
        cut = (int(pos[-1]), "an odd number of hex digits (the last byte is incomplete)")
        digits, pos = digits[:-1], pos[:-1]
    try:
        out = binascii.unhexlify(digits)
    except (binascii.Error, ValueError):
        bad = next((i for i, c in enumerate(data) if c not in _HEXCHARS and not chr(c).isspace()), 0)
        raise _BadRecord(data.count(b"\n", 0, bad) + 1, bad, "expected pairs of hexadecimal digits") from None
    return Converted(out, "hex", pos[0::2].astype(np.int64), cut, len(data))


def _records_mapped(data: bytes, kind: str) -> Converted:
    import numpy as np

    recs, bases, cut = scan_records(data, kind)
    offs = [base + 2 * np.arange(len(rec), dtype=np.int64) for rec, base in zip(recs, bases)]
    text_off = np.concatenate(offs) if offs else np.zeros(0, np.int64)
    return Converted(b"".join(recs), kind, text_off, cut, len(data))


def scan_records(data: bytes, kind: str) -> tuple[list[bytes], list[int], tuple[int, str] | None]:
    """An Intel HEX (``kind`` "ihex") or S-record ("srec") text's data records in order, the file
    offset of each record's first data digit, and where the text ends early ((offset, why), or None
    when an end-of-file record ends it). Raises :class:`_BadRecord` for a malformed line that is not
    the last (a last line without its line end is a cut)."""
    recs: list[bytes] = []
    bases: list[int] = []
    offset = 0
    lines = data.split(b"\n")
    for no, raw in enumerate(lines, 1):
        start = offset
        offset += len(raw) + 1
        line = raw.strip()
        if not line:
            continue
        lead = start + (len(raw) - len(raw.lstrip()))
        try:
            rec = _ihex_line(line) if kind == "ihex" else _srec_line(line)
        except _BadRecord as e:
            if no == len(lines):  # the last line has no line end: the file was cut inside it
                return recs, bases, (start, f"line {no} is an incomplete record ({e.why})")
            raise _BadRecord(no, start, e.why) from None
        if rec is None:  # end-of-file record
            return recs, bases, None
        recs.append(rec)
        bases.append(lead + (9 if kind == "ihex" else 4 + 2 * {b"1": 2, b"2": 3, b"3": 4}.get(line[1:2], 0)))
    return recs, bases, (len(data), "no end-of-file record")


class _BadRecord(Exception):
    def __init__(self, line: int, offset: int, why: str) -> None:
        super().__init__(why)
        self.line, self.offset, self.why = line, offset, why


def _plain_hex(data: bytes, partial: bool) -> bytes:
    digits = _WS.sub(b"", data)
    if partial and len(digits) % 2:
        digits = digits[:-1]
    try:
        return binascii.unhexlify(digits)
    except (binascii.Error, ValueError):
        bad = next((i for i, c in enumerate(data) if c not in _HEXCHARS and not chr(c).isspace()), 0)
        raise _BadRecord(data.count(b"\n", 0, bad) + 1, bad,
                         "expected pairs of hexadecimal digits") from None


def _records(data: bytes, kind: str, partial: bool) -> bytes:
    out: list[bytes] = []
    offset = 0
    lines = data.split(b"\n")
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        start = offset
        offset += len(raw) + 1
        if not line:
            continue
        last = no == len(lines) or (no == len(lines) - 1 and not lines[-1].strip())
        try:
            rec = _ihex_line(line) if kind == "ihex" else _srec_line(line)
        except _BadRecord as e:
            if partial and last:
                break
            raise _BadRecord(no, start, e.why) from None
        if rec is None:  # end-of-file record
            break
        out.append(rec)
    return b"".join(out)


def _hexbytes(s: bytes, what: str) -> bytes:
    try:
        return binascii.unhexlify(s)
    except (binascii.Error, ValueError):
        raise _BadRecord(0, 0, f"expected hexadecimal digits in the {what}") from None


def _ihex_line(line: bytes) -> bytes | None:
    if line[:1] != b":":
        raise _BadRecord(0, 0, "expected ':' at the start of the line")
    b = _hexbytes(line[1:], "record")
    if len(b) < 5 or len(b) != 5 + b[0]:
        raise _BadRecord(0, 0, f"expected {5 + (b[0] if b else 0)} bytes, found {len(b)}")
    if sum(b) & 0xFF:
        raise _BadRecord(0, 0, "checksum mismatch")
    rtype = b[3]
    if rtype == 0x01:
        return None
    return b[4:-1] if rtype == 0x00 else b""


def _srec_line(line: bytes) -> bytes | None:
    if line[:1] not in (b"S", b"s") or len(line) < 4:
        raise _BadRecord(0, 0, "expected 'S<type><count>'")
    rtype = line[1:2]
    b = _hexbytes(line[2:], "record")
    if not b or len(b) != 1 + b[0]:
        raise _BadRecord(0, 0, f"expected {1 + (b[0] if b else 0)} bytes, found {len(b)}")
    if (sum(b) & 0xFF) != 0xFF:
        raise _BadRecord(0, 0, "checksum mismatch")
    if rtype in (b"7", b"8", b"9"):
        return None
    alen = {b"1": 2, b"2": 3, b"3": 4}.get(rtype)
    return b[1 + alen:-1] if alen else b""


def to_ihex(data: bytes, *, width: int = 16) -> bytes:
    """Encode bytes as Intel HEX (16-bit addresses with extended linear records); for tests/tools."""
    out = []
    for off in range(0, len(data), width):
        if off % 0x10000 == 0 and off:
            up = (off >> 16).to_bytes(2, "big")
            rec = bytes([2, 0, 0, 4]) + up
            out.append(b":" + (rec + bytes([-sum(rec) & 0xFF])).hex().upper().encode())
        chunk = data[off:off + width]
        rec = bytes([len(chunk), (off >> 8) & 0xFF, off & 0xFF, 0]) + chunk
        out.append(b":" + (rec + bytes([-sum(rec) & 0xFF])).hex().upper().encode())
    out.append(b":00000001FF")
    return b"\n".join(out) + b"\n"


def to_srec(data: bytes, *, width: int = 16) -> bytes:
    """Encode bytes as S3 records (32-bit addresses) with an S7 end record; for tests/tools."""
    out = []
    for off in range(0, len(data), width):
        chunk = data[off:off + width]
        rec = bytes([len(chunk) + 5]) + off.to_bytes(4, "big") + chunk
        out.append(b"S3" + (rec + bytes([0xFF - (sum(rec) & 0xFF)])).hex().upper().encode())
    rec = bytes([5, 0, 0, 0, 0])
    out.append(b"S7" + (rec + bytes([0xFF - (sum(rec) & 0xFF)])).hex().upper().encode())
    return b"\n".join(out) + b"\n"
