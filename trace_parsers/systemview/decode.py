"""Bytes -> raw packet columns: the container stage in Python, the packet loop in Rust.

This is the only module that imports ``trace_parsers._core`` (house style §4.1). Container rules
(systemview.md §4.1 steps 1-4): an optional ``;`` text header ending at the second line that is
exactly ``;`` (tab/space variants, optional blank line after it), an optional ``BF 88 EE AB``
5-byte prefix, ``; Offset CoreN <n>`` lines (3.60 multi-core: one stream per core),
``; ESP_Extension`` (one interleaved stream with the core bit). Raw files have no header.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - NumPy is imported by raw_stream (sniffing imports this module)
    import numpy as np

from .. import _core
from .._numbers import parse_uint
from ..errors import TraceCorruptError, TraceFormatError, handle_corrupt
from .format import PREFIX_MAGIC, SYNC

#: The header must end within this many bytes.
MAX_HEADER = 64 * 1024
_OFFSET_RE = re.compile(r"^;\s*Offset\s+Core(\d+)\s+(\d+)\s*$")


@dataclass
class Container:
    """Where the stream(s) of one file are."""

    header_lines: list[str]
    header_end: int  #: first byte of the stream data (after header, blank line and prefix)
    streams: list[tuple[int, int, int]]  #: (core, start, end) byte ranges
    esp_extension: bool = False
    version: str = ""
    prefix_skipped: int = 0
    #: (core, declared stream offset) of 3.60 cores whose stream starts past the end of the file
    lost_cores: list[tuple[int, int]] = field(default_factory=list)


def open_container(p: Any, on_corrupt: str, diags: list[Any],
                   extra: int = 64) -> tuple[bytes, int, Container]:
    """(first ``MAX_HEADER + extra`` bytes, file size, container) of the file ``p`` (a Path), for
    the readers that read the streams themselves. IO_ERROR / SV_BAD_MAGIC / SV_BAD_HEADER raise;
    a 3.60 core whose stream starts past the end is TRUNCATED damage (``on_corrupt``)."""
    try:
        with open(p, "rb") as f:
            head = f.read(MAX_HEADER + extra)
            size = os.fstat(f.fileno()).st_size
    except OSError as e:
        raise TraceFormatError(f"cannot read the file: {e.strerror}", code="IO_ERROR",
                               path=str(p)) from None
    if not looks_like_systemview(head[:4096]):
        raise TraceFormatError(
            "expected a SystemView recording (a ';' text header or 10 zero bytes followed by "
            f"TRACE_START 0x0a), found {head[:16].hex(' ') or 'an empty file'}",
            code="SV_BAD_MAGIC", path=str(p), offset=0)
    cont = parse_container(head, str(p), size=size)
    for core, off in cont.lost_cores:
        handle_corrupt(TraceCorruptError(
            f"the file ends at 0x{size:x}, before the stream of Core{core} (declared at "
            f"stream offset {off}, file offset 0x{cont.header_end + off:x}): that core is lost, "
            "the cores before it are kept", code="TRUNCATED", path=str(p), offset=size),
            on_corrupt, diags)
    return head, size, cont


def parse_container(data: bytes, path: str | None = None, size: int | None = None) -> Container:
    """Locate the stream(s). Raises ``TraceFormatError`` (SV_BAD_HEADER / SV_BAD_MAGIC).
    ``size``: the file has ``size`` bytes and ``data`` is its first ``MAX_HEADER + 16`` or more."""
    lines, line_offs, pos = _header_lines(data, path)
    prefix = 0
    if data[pos:pos + 4] == PREFIX_MAGIC:
        pos = min(pos + 5, len(data))
        prefix = 5
    version = ""
    esp = False
    offsets: list[tuple[int, int]] = []
    for ln, loff in zip(lines, line_offs):
        body = ln[1:].strip()
        if body.lower().startswith("version"):
            version = body[7:].strip()
        elif body.lower().startswith("esp_extension"):
            esp = True
        m = _OFFSET_RE.match(ln)
        if m:
            core, off = parse_uint(m.group(1), hi=255), parse_uint(m.group(2))
            if core is None or off is None:
                raise TraceFormatError(f"expected '; Offset Core<0..255> <byte offset>', found "
                                       f"{ln[:60]!r}", code="SV_BAD_HEADER", path=path, offset=loff)
            offsets.append((core, off))
    end = len(data) if size is None else size
    lost: list[tuple[int, int]] = []
    if offsets:
        offsets.sort(key=lambda t: t[1])
        # a file cut after its first core: the cores that start inside the file are kept (the
        # last of them is truncated, reported by the packet decoder); the others are lost
        lost = [(c, o) for c, o in offsets if pos + o > end]
        offsets = [(c, o) for c, o in offsets if pos + o <= end]
        streams = []
        for i, (core, off) in enumerate(offsets):
            s = pos + off
            e = pos + offsets[i + 1][1] if i + 1 < len(offsets) else end
            streams.append((core, s, e))
    else:
        streams = [(0, pos, end)]
    return Container(lines, pos, streams, esp, version, prefix, lost)


def _header_lines(data: bytes, path: str | None) -> tuple[list[str], list[int], int]:
    """The ``;`` header lines, their file offsets and the first byte after the header."""
    lines: list[str] = []
    offs: list[int] = []
    pos = 0
    if data[:1] != b";":
        return lines, offs, pos
    semis = 0
    while True:
        nl = data.find(b"\n", pos, min(len(data), MAX_HEADER))
        if nl < 0:
            raise TraceFormatError(
                f"expected the ';' text header to end with a line ';' within {MAX_HEADER} bytes, "
                f"found {'end of file' if len(data) <= MAX_HEADER else 'no such line'} after "
                f"{len(lines)} header lines", code="SV_BAD_HEADER", path=path, offset=pos)
        raw = data[pos:nl].rstrip(b"\r")
        try:
            line = raw.decode("ascii")
        except UnicodeDecodeError:
            raise TraceFormatError(f"expected a text header line, found binary bytes "
                                   f"{raw[:16].hex(' ')}", code="SV_BAD_HEADER", path=path,
                                   offset=pos) from None
        if not line.startswith(";"):
            raise TraceFormatError(f"expected a header line starting with ';', found {line[:40]!r}",
                                   code="SV_BAD_HEADER", path=path, offset=pos)
        lines.append(line)
        offs.append(pos)
        pos = nl + 1
        if line.strip() == ";":
            semis += 1
            if semis == 2:
                break
    if data[pos:pos + 1] == b"\n":
        pos += 1
    elif data[pos:pos + 2] == b"\r\n":
        pos += 2
    return lines, offs, pos


def looks_like_systemview(head: bytes) -> bool:
    """Content check used by ``sniff``: a ``;`` header naming SystemView, or a raw sync + TRACE_START."""
    if head.startswith(SYNC + b"\x0a"):
        return True
    if head[:1] == b";":
        h = head[:4096]
        if b"SystemView" in h or b"SEGGER" in h or re.search(rb"\n;\s*Offset\s+Core\d", h):
            return True
        # A ';' header of another writer: the stream must start with the sync after it.
        i = h.find(b"\n;\n")
        if i >= 0:
            rest = h[i + 3:].lstrip(b"\r\n")
            if rest[:4] == PREFIX_MAGIC:
                rest = rest[5:]
            return rest.startswith(SYNC + b"\x0a")
    return False


@dataclass
class RawStream:
    """Columns of one decoded stream (row = packet, including NOP and metadata packets)."""

    core: int
    start: int  #: file offset of the stream's first byte
    id: np.ndarray  # uint32
    pcore: np.ndarray  # uint8: core from the ESP core bit (0 otherwise)
    nv: np.ndarray  # uint8: numeric fields in the payload
    ts: np.ndarray  # uint64: cumulative ticks
    off: np.ndarray  # uint32/uint64: stream-relative packet offset
    p0: np.ndarray
    p1: np.ndarray
    p2: np.ndarray
    aux_row: np.ndarray
    aux_start: np.ndarray
    aux_str: np.ndarray
    aux_vals: np.ndarray
    strings: bytes
    str_ends: np.ndarray
    diags: list[tuple[str, int, int, bool, str]]
    sync_bytes: int
    ts_end: int
    str_order: int
    _aux_index: dict[int, int] | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return int(self.id.shape[0])

    def string(self, idx: int) -> str:
        if idx < 0 or idx >= len(self.str_ends):
            return ""
        a = int(self.str_ends[idx - 1]) if idx else 0
        return self.strings[a:int(self.str_ends[idx])].decode("utf-8", errors="replace")

    def aux(self, row: int) -> tuple[list[int], str | None]:
        """All numeric fields and the string of packet ``row`` (from p0..p2 when no aux record)."""
        if self._aux_index is None:
            self._aux_index = {int(r): i for i, r in enumerate(self.aux_row.tolist())}
        i = self._aux_index.get(row)
        if i is None:
            k = min(int(self.nv[row]), 3)
            return [int(self.p0[row]), int(self.p1[row]), int(self.p2[row])][:k], None
        a = int(self.aux_start[i])
        b = int(self.aux_start[i + 1]) if i + 1 < len(self.aux_start) else len(self.aux_vals)
        s = int(self.aux_str[i])
        return self.aux_vals[a:b].tolist(), (self.string(s) if s != 0xFFFFFFFF else None)


def decode_stream(data: bytes, core: int, start: int, end: int, *, esp_core_bit: bool = False,
                  str_order: int = 0) -> RawStream:
    """Run the Rust packet loop over ``data[start:end]``."""
    r: dict[str, Any] = _core.sv_decode(data, start, end, esp_core_bit, str_order)
    return raw_stream(r, core, start)


def raw_stream(r: dict[str, Any], core: int, start: int) -> RawStream:
    """A ``RawStream`` over the buffers of one ``sv_decode`` (or ``SvStreamDecoder.feed``) result."""
    import numpy as np

    u4 = np.dtype("=u4")
    off_dt = np.dtype("=u4") if r["off_size"] == 4 else np.dtype("=u8")
    return RawStream(
        core=core, start=start,
        id=np.frombuffer(r["id"], u4), pcore=np.frombuffer(r["core"], np.uint8),
        nv=np.frombuffer(r["nv"], np.uint8), ts=np.frombuffer(r["ts"], np.dtype("=u8")),
        off=np.frombuffer(r["off"], off_dt), p0=np.frombuffer(r["p0"], u4),
        p1=np.frombuffer(r["p1"], u4), p2=np.frombuffer(r["p2"], u4),
        aux_row=np.frombuffer(r["aux_row"], u4), aux_start=np.frombuffer(r["aux_start"], u4),
        aux_str=np.frombuffer(r["aux_str"], u4), aux_vals=np.frombuffer(r["aux_vals"], u4),
        strings=r["strings"], str_ends=np.frombuffer(r["str_ends"], np.dtype("=u8")),
        diags=list(r["diags"]), sync_bytes=int(r["sync_bytes"]), ts_end=int(r["ts_end"]),
        str_order=int(r["str_order"]))
