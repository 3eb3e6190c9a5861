"""The NumPy-free rules of the TraceX reader, shared by the decoder and the small-file summary.

:mod:`.decode` and :mod:`.convert` (NumPy) and :mod:`.summary` (pure Python, for
``crosstrace info`` on a small file) take the header checks, the layout and conversion
diagnostics, TraceX's direction-vote exceptions and the registry name rule from here, so both
paths state the same facts in the same words.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from .._meta import Diagnostic, Severity
from ..errors import TraceCorruptError, TraceError, TraceFormatError, diagnostic, handle_corrupt
from . import format as fmt
from . import hexfmt

_PRINTABLE = frozenset(range(0x20, 0x7F))  #: TraceX: a name must start with 0x20..0x7E


def object_name(name_b: bytes) -> str:
    """A registry name as TraceX shows it (``name_b``: the name field up to its first NUL)."""
    name_b = name_b[:fmt.MAX_NAME_SIZE - 1]
    if not name_b or name_b[0] not in _PRINTABLE:
        return "Non-ASCII Name"
    return name_b.decode("latin-1")


def validate_header(h: dict[str, int], size: int, path: str | None, diags: list[Diagnostic]) -> None:
    def bad(field_: str, off: int, expected: str) -> TraceFormatError:
        return TraceFormatError(f"invalid control header: {field_} = 0x{h[field_]:08X} at header offset "
                                f"{off}; expected {expected}", code="TRX_BAD_HEADER", path=path, offset=off)

    base = h["trace_base_address"]
    if h["object_name_size"] >= fmt.MAX_NAME_SIZE:
        raise bad("object_name_size", 18, f"a registry name size below {fmt.MAX_NAME_SIZE}")
    if h["registry_start_pointer"] - base != fmt.HEADER_SIZE:
        raise bad("registry_start_pointer", 12, f"trace_base_address + 48 = 0x{base + 48:08X}")
    esize = 16 + h["object_name_size"]
    span = h["registry_end_pointer"] - h["registry_start_pointer"]
    if span <= 0 or span % esize:
        raise bad("registry_end_pointer", 20, f"registry start + a positive multiple of {esize} bytes")
    if h["registry_end_pointer"] - base > size:
        raise bad("registry_end_pointer", 20, f"a registry that ends inside the {size}-byte file")
    if h["buffer_start_pointer"] != h["registry_end_pointer"]:
        raise bad("buffer_start_pointer", 24, f"= registry_end_pointer 0x{h['registry_end_pointer']:08X}")
    span = h["buffer_end_pointer"] - h["buffer_start_pointer"]
    if span <= 0 or span % fmt.EVENT_SIZE:
        raise bad("buffer_end_pointer", 28, "buffer start + a positive multiple of 32 bytes")
    cur = h["buffer_current_pointer"]
    start = h["buffer_start_pointer"]
    if not (start <= cur < h["buffer_end_pointer"]) or (cur - start) % 32:
        raise bad("buffer_current_pointer", 32, f"a 32-byte slot in [0x{h['buffer_start_pointer']:08X}, "
                  f"0x{h['buffer_end_pointer']:08X})")
    if h["buffer_start_pointer"] - base > size:
        raise bad("buffer_start_pointer", 24, f"an event buffer that starts inside the {size}-byte file")
    found = (h["reserved2"], h["reserved3"], h["reserved4"])
    if found != fmt.RESERVED:
        shown = "/".join(f"0x{x:08X}" for x in found)
        diags.append(diagnostic("TRX_BAD_RESERVED", 36, f"reserved2..4 are {shown}, expected "
                                "0xAAAAAAAA/0xBBBBBBBB/0xCCCCCCCC (TraceX does not check them)"))


def lost_time_note(cur: int, avail: int, m: int) -> str:
    """What a cut does to the times of a buffer that wrapped (its lost slots are not the newest)."""
    if cur >= avail and cur > 0:
        return (f"; the buffer wrapped and its oldest events (from slot {cur}) are lost, so relative "
                f"times start at slot 0 and timer wraps inside the lost slots {avail}..{m - 1} cannot "
                "be counted: absolute timer values may differ from the intact recording by a "
                "multiple of the timer period")
    if cur > 0:
        return (f"; the buffer wrapped: the lost slots {avail}..{m - 1} lie between slot {avail - 1} "
                "and slot 0 in time; the timer wraps across them are estimated from the typical "
                "time per event")
    return ""


def slot_diagnostics(diags: list[Diagnostic], path: str | None, on_corrupt: str, *, buf_off: int, m: int,
                     avail: int, k: int, cur: int, size: int) -> tuple[bool, tuple[tuple[int, int], ...]]:
    """Diagnose a truncated or wrapped event buffer (``m`` slots declared, ``avail`` in the file,
    ``k`` = first unused slot, ``cur`` = current slot); returns ``(wrapped, chronological slot ranges)``."""
    if avail < m:
        end = buf_off + avail * fmt.EVENT_SIZE
        if k == avail:
            handle_corrupt(TraceCorruptError(
                f"the event buffer is truncated: the header declares {m} slots up to offset "
                f"0x{buf_off + m * 32:x} but the file ends at 0x{size:x} after {avail} complete "
                f"slots (every complete event is kept){lost_time_note(cur, avail, m)}",
                code="TRX_TRUNCATED", path=path, offset=end), on_corrupt, diags)  # type: ignore[arg-type]
        else:
            diags.append(diagnostic("TRX_TRUNCATED", end, f"the file ends after {avail} of {m} slots, "
                                    f"past the last written slot {k - 1}: no event is missing",
                                    severity=Severity.INFO))
    wrapped = cur < k
    ranges = ((cur, k), (0, cur)) if wrapped and cur > 0 else ((0, k),)
    if wrapped:
        diags.append(diagnostic("TRX_WRAPPED", buf_off + cur * 32,
                                f"the circular buffer wrapped: oldest event in slot {cur} of {m}"))
    return wrapped, ranges


def stale_diagnostic(stale: int, buf_off: int, k: int) -> Diagnostic:
    return diagnostic("TRX_STALE_SLOTS", buf_off + (k + 1) * 32,
                      f"{stale} slots after the first unused slot {k} hold stale data from an "
                      "earlier trace enable; skipped, as TraceX does", count=stale)


def vote_drops(first: int, k: int, n: int, wrapped: bool) -> set[int]:
    """The chronological step indices TraceX's direction vote skips (``first`` = slot at position 0):
    it skips the first two entries of each portion it reads (slots 0 and 1, cur and cur + 1), so the
    steps ending at slots 1 and cur + 1 and the step from slot k - 1 to slot 0 are not counted."""
    def pair_ending_at_slot(slot: int) -> int:  # chronological index into the steps, or -1
        p = slot - first if slot >= first else slot + (k - first)
        return p - 1 if 1 <= p < n else -1

    drops = {pair_ending_at_slot(1), pair_ending_at_slot(first + 1)}
    if wrapped and first > 0:
        drops.add(pair_ending_at_slot(0))
    return drops - {-1}


def text_diagnostics(diags: list[Diagnostic], file_offset: Callable[[int], int], cut: tuple[int, str] | None,
                     encoding: str) -> list[Diagnostic]:
    """A text-encoded buffer's diagnostics: offsets into the text file, plus an INFO when the text
    ends early but every slot was read."""
    out = [replace(d, offset=file_offset(d.offset)) for d in diags]
    if cut is not None and not any(d.code == "TRX_TRUNCATED" for d in out):
        out.append(diagnostic("TRX_TRUNCATED", cut[0], f"the {encoding} text ends early ({cut[1]}) but "
                              "every slot was read", severity=Severity.INFO))
    return out


def conversion_diagnostics(*, mask: int, timer_wraps: int, direction: str, buffer_offset: int,
                           unknown_ids: dict[int, int], first_unknown: int, tick_hz: int | None,
                           file_offset: Callable[[int], int] | None = None) -> list[Diagnostic]:
    """The diagnostics of the conversion to the event model (after the decoder's). Offsets are in
    the buffer; ``file_offset`` maps them into the user's file (a hex-text export: the offset of
    the byte's hex digits); ``first_unknown`` is a file offset already."""
    at = file_offset or (lambda o: o)
    diags: list[Diagnostic] = []
    if unknown_ids:
        total = sum(unknown_ids.values())
        diags.append(diagnostic("TRX_UNKNOWN_ID", first_unknown,
                                f"{total} events with ids that have no name in the ThreadX/FileX/NetX Duo/"
                                f"USBX tables: {', '.join(map(str, sorted(unknown_ids)[:10]))} "
                                "(decoded as OTHER, named UNKNOWN_<id>)", count=total))
    if timer_wraps:
        diags.append(diagnostic("TRX_TIMER_WRAPS", at(buffer_offset),
                                f"the {direction}-counting timer (mask 0x{mask:X}) wrapped "
                                f"{timer_wraps} times; unrolled by 0x{mask + 1:X} ticks per wrap",
                                count=timer_wraps))
    if mask + 1 <= 1 << 24:
        where = f" = {(mask + 1) * 1_000_000 // tick_hz} us" if tick_hz else ""
        diags.append(diagnostic("TRX_SHORT_TIMER", at(4),
                                f"timer_valid_mask 0x{mask:X}: the timestamp wraps every {mask + 1} "
                                f"ticks{where}; a gap longer than that between two events hides a wrap"))
    if not tick_hz:
        diags.append(diagnostic("TRX_NO_TICK_HZ", at(0), "no tick rate given (tick_hz / --tick-hz / "
                                "run.json): ts is in timer ticks"))
    return diags


def decode_image(data: bytes, path: str | None, *, decode_binary: Callable[[bytes, str], Any],
                 convert: Callable[[bytes], Any], file_offset: Callable[[Any, int], int]) -> tuple[Any, Any]:
    """A TraceX buffer, or an Intel HEX / S-record / hex-text image of one, decoded by
    ``decode_binary(buffer, encoding)``: ``(raw, None)`` for a buffer, ``(raw, conv)`` for an image
    (``conv = convert(data)``: ``.data``, ``.kind``, ``.cut``), whose error and diagnostic offsets
    are mapped into the text file by ``file_offset(conv, offset)``. Shared by the reader
    (:mod:`.decode`) and the NumPy-free summary (:mod:`.summary`)."""
    magic = (fmt.MAGIC_LE, fmt.MAGIC_BE)
    if data[:4] in magic:
        return decode_binary(data, "binary"), None
    conv = convert(data) if hexfmt.detect(data) else None
    if conv is None or conv.data[:4] not in magic:
        raise TraceFormatError(
            f"not a TraceX buffer: expected the TX_TRACE_VALID id 'BTXT' (little-endian) or "
            f"'TXTB' (big-endian) at offset 0, or an Intel HEX/S-record/hex-text image of one, "
            f"found {data[:4]!r}", code="TRX_BAD_MAGIC", path=path, offset=0)
    try:
        raw = decode_binary(conv.data, conv.kind)
    except TraceError as e:  # offsets into the converted bytes -> offsets into the text file
        if e.offset is not None:
            e.offset = file_offset(conv, e.offset)
            e.args = (e._render(),)
        raise
    at = lambda o: file_offset(conv, o)  # noqa: E731
    raw.diagnostics[:] = text_diagnostics(raw.diagnostics, at, conv.cut, conv.kind)
    return raw, conv


#: ``struct`` format of the control header: format.HEADER_FIELDS in order (``I`` ULONG, ``H`` USHORT)
HEADER_STRUCT = "IIIIHHIIIIIII"


def read_header(data: bytes, path: str | None, diags: list[Diagnostic]) -> tuple[str, dict[str, int]]:
    """(byte order, control header fields) of a TraceX buffer, the header validated
    (``validate_header``: TRX_BAD_HEADER raised, notes added to ``diags``)."""
    bo = "<" if data[:4] == fmt.MAGIC_LE else ">"
    size = len(data)
    if size < fmt.HEADER_SIZE:
        raise TraceFormatError(f"the control header needs {fmt.HEADER_SIZE} bytes, the buffer has {size}",
                               code="TRX_BAD_HEADER", path=path, offset=size)
    hdr = dict(zip((n for n, _ in fmt.HEADER_FIELDS), struct.unpack_from(bo + HEADER_STRUCT, data)))
    validate_header(hdr, size, path, diags)
    return bo, hdr
