"""Bytes -> raw TraceX records: header, registry, chronological event slots, unrolled time.

Everything is vectorised NumPy over structured views of the file (``np.frombuffer``; no per-event
Python loop).  The result, :class:`RawTrace`, is the reader's raw-record API: the eight words of
every event in chronological (TraceX) order, the registry objects, the header and the layout facts.
:mod:`.convert` maps it onto the common event model and :mod:`.stats` derives TraceX's view.

Layout rules (``specs/tracex.md`` §1-§7):

- the magic ``TX_TRACE_VALID`` in either byte order gives the endianness; anything else is tried as
  Intel HEX / S-record / hex text (:mod:`.hexfmt`), then rejected (``TRX_BAD_MAGIC``);
- header pointers become file offsets ``pointer - trace_base_address`` and are validated
  (``TRX_BAD_HEADER`` names the field, what was expected and the header offset);
- slots are read from 0 up to the first slot whose ``thread_pointer`` is 0 (``k``); if the
  current pointer's slot ``cur < k`` the order is ``[cur, k) + [0, cur)`` (wrapped), else
  ``[0, k)``.  Non-zero slots after ``k`` are stale data from an earlier enable (``TRX_STALE_SLOTS``);
- timestamps are masked with ``timer_valid_mask``; the counting direction is TraceX's majority
  vote (or the ``timer`` option); each backwards step is one wrap of ``mask + 1`` ticks.  Where
  TraceX's vote is a tie (it then assumes a down-counter, e.g. for traces of 1-3 events) crosstrace
  votes over every chronological pair and, if still tied, assumes an up-counter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import check_option, validate_on_corrupt
from ..model import Diagnostic
from . import format as fmt
from . import hexfmt
from ._common import (
    decode_image,
    object_name,
    read_header,
    slot_diagnostics,
    stale_diagnostic,
    vote_drops,
)


@dataclass(frozen=True)
class TrxObject:
    """One used registry slot (``type != 0``, as TraceX keeps it)."""

    slot: int
    type: int
    type_name: str
    name: str
    address: int
    param_1: int
    param_2: int
    available: int
    reserved1: int
    reserved2: int

    @property
    def registry_priority(self) -> int | None:
        """Thread priority stored by newer ThreadX (``reserved1 & 0x80``); TraceX decodes 2 bits."""
        if self.type == fmt.TX_TRACE_OBJECT_TYPE_THREAD and self.reserved1 & 0x80:
            return ((self.reserved1 & 0x3) << 8) | self.reserved2
        return None


@dataclass
class RawTrace:
    """Raw records of one ``.trx`` buffer in chronological order (the reader's raw-record API).

    ``slots`` holds every event slot present in the file (``(n_slots, 8)`` ULONG view in the
    file's byte order); the chronological events are ``slots[index]`` where ``index`` is the slot
    number of each event (use :meth:`column` to gather one word cheaply).
    """

    path: str
    byteorder: str  #: '<' little-endian ('BTXT'), '>' big-endian ('TXTB')
    header: dict[str, int]
    objects: list[TrxObject]
    slots: np.ndarray
    buffer_offset: int  #: file offset of slot 0
    event_slots: int  #: slots declared by the header
    current_index: int  #: slot of buffer_current_pointer
    first_null_slot: int | None
    wrapped: bool
    stale_slots: int
    direction: str  #: "up" or "down"
    timer_wraps: int
    ts_masked: np.ndarray  #: uint32, masked timestamps, chronological
    relative_ticks: np.ndarray  #: int64, TraceX "relative time" (0 at the first event)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    encoding: str = "binary"  #: "binary", "ihex", "srec" or "hex"
    file_size: int = 0
    _ranges: tuple[tuple[int, int], ...] = ()
    #: text encodings: file offset of every converted byte (None for binary files)
    text_offset: np.ndarray | None = None

    # -- chronological access ---------------------------------------------------------------------
    def __len__(self) -> int:
        return int(self.ts_masked.shape[0])

    def column(self, word: int) -> np.ndarray:
        """Word ``word`` (0..7, :data:`format.EVENT_FIELDS`) of every event, chronological, uint32."""
        col = self.slots[:, word]
        parts = [col[a:b] for a, b in self._ranges]
        if len(parts) == 1:
            return np.array(parts[0], dtype=np.uint32)
        return np.concatenate(parts).astype(np.uint32, copy=False)

    def parts(self, start: int, stop: int) -> list[tuple[int, int, int]]:
        """The events at chronological positions ``start..stop`` as ``(position, first slot, end
        slot)`` runs of consecutive slots (at most two: a wrapped buffer)."""
        out, pos = [], 0
        for a, b in self._ranges:
            lo, hi = max(start - pos, 0), min(stop - pos, b - a)
            if lo < hi:
                out.append((pos + lo - start, a + lo, a + hi))
            pos += b - a
        return out

    def chunk(self, start: int, stop: int) -> np.ndarray:
        """Events ``start..stop`` (chronological positions) as a native ``(stop - start, 8)`` uint32
        array: a read-only view of the file's bytes when they are in native order and contiguous."""
        parts = [self.slots[a:b] for _, a, b in self.parts(start, stop)]
        if not parts:
            return np.zeros((0, 8), np.uint32)
        out = parts[0] if len(parts) == 1 else np.concatenate(parts)
        return out.astype(np.uint32, copy=False)

    def slot_of(self, start: int, stop: int) -> np.ndarray:
        """Slot numbers of the events at chronological positions ``start..stop`` (int64)."""
        parts = [np.arange(a, b, dtype=np.int64) for _, a, b in self.parts(start, stop)]
        if not parts:
            return np.zeros(0, np.int64)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    @property
    def index(self) -> np.ndarray:
        """Slot number of every event (chronological order)."""
        parts = [np.arange(a, b, dtype=np.int64) for a, b in self._ranges]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    @property
    def src_offset(self) -> np.ndarray:
        """File offset of every event's 32-byte record (of its first hex digits in a text encoding)."""
        off = self.index.astype(np.uint64) * np.uint64(32) + np.uint64(self.buffer_offset)
        if self.text_offset is not None and len(self.text_offset):
            pos = np.minimum(off, len(self.text_offset) - 1).astype(np.int64)
            return self.text_offset[pos].astype(np.uint64)
        return off

    @property
    def context(self) -> np.ndarray:
        return self.column(0)

    @property
    def raw_priority(self) -> np.ndarray:
        return self.column(1)

    @property
    def raw_event_id(self) -> np.ndarray:
        return self.column(2)

    @property
    def event_id(self) -> np.ndarray:
        """Event id as TraceX shows it (low 16 bits; SMP builds put the core in bits 24..31)."""
        return self.column(2) & np.uint32(0xFFFF)

    @property
    def core(self) -> np.ndarray:
        return (self.column(2) >> np.uint32(24)).astype(np.uint8)

    def info(self, n: int) -> np.ndarray:
        """``information_field_n`` (n = 1..4)."""
        if n not in (1, 2, 3, 4):
            raise ValueError(f"info field number must be 1..4, got {n!r}")
        return self.column(3 + n)

    def priority(self) -> tuple[np.ndarray, np.ndarray]:
        """TraceX's (priority, preemption threshold) per event; threshold 0xFFFFFFFF when absent.

        In thread context priority = ``raw & 0x3FF`` and the threshold is ``(raw >> 16) & 0x3FF``
        when bit 31 is set; ISR events keep the raw word (the interrupted thread pointer).
        """
        raw = self.raw_priority
        ctx = self.context
        thread = (ctx != fmt.CTX_ISR) & (ctx != fmt.CTX_INIT)
        prio = np.where(thread, raw & np.uint32(0x3FF), raw)
        pt = np.where(thread & ((raw & np.uint32(fmt.PRIORITY_PT_FLAG)) != 0),
                      (raw >> np.uint32(16)) & np.uint32(0x3FF), np.uint32(0xFFFFFFFF))
        return prio.astype(np.uint32), pt.astype(np.uint32)

    def records(self) -> np.ndarray:
        """All eight words as a native structured array (``format.EVENT_FIELDS``), chronological."""
        out = np.empty(len(self), dtype=fmt.event_dtype("="))
        for i, name in enumerate(fmt.EVENT_FIELDS):
            out[name] = self.column(i)
        return out

    def threads(self) -> list[TrxObject]:
        return [o for o in self.objects if o.type == fmt.TX_TRACE_OBJECT_TYPE_THREAD]

    def object_at(self, address: int) -> TrxObject | None:
        """The first registry object with this address (TraceX's lookup rule)."""
        return next((o for o in self.objects if o.address == address), None)

    def layout(self) -> dict[str, Any]:
        """Layout facts (as in the corpus ``facts.json``)."""
        return {
            "endianness": "little" if self.byteorder == "<" else "big", "encoding": self.encoding,
            "registry_slots": (self.header["registry_end_pointer"] - self.header["registry_start_pointer"])
            // (16 + self.header["object_name_size"]),
            "event_slots": self.event_slots, "slots_in_file": int(self.slots.shape[0]),
            "current_index": self.current_index, "first_null_slot": self.first_null_slot,
            "buffer_wrapped": self.wrapped, "stale_slots": self.stale_slots,
            "bytes_after_buffer_end": max(0, self.file_size - self.buffer_offset - 32 * self.event_slots),
            "timer_valid_mask": self.header["timer_valid_mask"], "timestamp_direction": self.direction,
            "timestamp_wraps": self.timer_wraps,
        }


# ------------------------------------------------------------------------------------------------


def is_magic(head: bytes) -> bool:
    return head[:4] in (fmt.MAGIC_LE, fmt.MAGIC_BE)


def decode_bytes(data: bytes, path: str | None = None, *, timer: str = "auto",
                 on_corrupt: str = "raise") -> RawTrace:
    """Decode a ``.trx`` image (binary or text-encoded) into a :class:`RawTrace`."""
    check_option("timer", timer, ("auto", "up", "down"))
    validate_on_corrupt(on_corrupt)
    raw, conv = decode_image(data, path, convert=lambda d: hexfmt.convert(d, path),
                             decode_binary=lambda b, enc: _decode_binary(b, path, timer, on_corrupt, enc),
                             file_offset=lambda c, o: c.file_offset(o))
    if conv is None:
        return raw
    raw.text_offset = conv.text_offset
    raw.file_size = len(data)
    return raw


def _decode_binary(data: bytes, path: str | None, timer: str, on_corrupt: str,
                   encoding: str = "binary") -> RawTrace:
    diags: list[Diagnostic] = []
    size = len(data)
    bo, hdr = read_header(data, path, diags)

    base = hdr["trace_base_address"]
    ns = hdr["object_name_size"]
    reg_off = hdr["registry_start_pointer"] - base
    n_reg = (hdr["registry_end_pointer"] - hdr["registry_start_pointer"]) // (16 + ns)
    reg = np.frombuffer(data, dtype=fmt.registry_dtype(bo, ns), count=n_reg, offset=reg_off)
    objects = _objects(reg)

    buf_off = hdr["buffer_start_pointer"] - base
    m = (hdr["buffer_end_pointer"] - hdr["buffer_start_pointer"]) // fmt.EVENT_SIZE
    avail = min(m, (size - buf_off) // fmt.EVENT_SIZE)
    slots = np.frombuffer(data, dtype=bo + "u4", count=avail * 8, offset=buf_off).reshape(avail, 8)
    cur = (hdr["buffer_current_pointer"] - hdr["buffer_start_pointer"]) // fmt.EVENT_SIZE

    tp = slots[:, 0]
    null = np.flatnonzero(tp == 0)
    k = int(null[0]) if null.size else avail
    wrapped, ranges = slot_diagnostics(diags, path, on_corrupt, buf_off=buf_off, m=m, avail=avail, k=k,
                                       cur=cur, size=size)
    # after a disable + re-enable only word 0 of each slot is cleared: slots past the first unused
    # one that still hold data are stale (validity is decided on thread_pointer, never event_id)
    stale = int(np.count_nonzero(slots[k + 1:].any(axis=1))) if k + 1 < avail else 0
    if stale:
        diags.append(stale_diagnostic(stale, buf_off, k))

    raw = RawTrace(path=path or "", byteorder=bo, header=hdr, objects=objects, slots=slots,
                   buffer_offset=buf_off, event_slots=m, current_index=cur,
                   first_null_slot=k if k < avail else None, wrapped=wrapped, stale_slots=stale,
                   direction="up", timer_wraps=0, ts_masked=np.zeros(0, np.uint32),
                   relative_ticks=np.zeros(0, np.int64), diagnostics=diags, encoding=encoding,
                   file_size=size, _ranges=ranges)
    gap = (k - cur, m - avail) if wrapped and cur > 0 and avail < m and k == avail else None
    _timestamps(raw, k, timer, gap)
    return raw


def _bridge_gap(raw: RawTrace, d: np.ndarray, p: int, lost: int, period: int) -> None:
    """Time across ``lost`` cut-out slots (step ``d[p]``): the whole timer periods that fit the
    typical time of ``lost + 1`` steps are added, so a long cut does not shift later events by a
    period (the wrap count is an estimate; the TRX_TRUNCATED diagnostic says so)."""
    others = np.delete(d, p)
    others = others[others > 0]
    if not others.size:
        return
    expect = float(np.median(others)) * (lost + 1)
    extra = max(0, round((expect - int(d[p])) / period))
    if extra:
        d[p] += np.int64(extra * period)
        raw.timer_wraps += extra


def _objects(reg: np.ndarray) -> list[TrxObject]:
    out = []
    used = np.flatnonzero(reg["type"] != 0) if reg.size else np.zeros(0, np.int64)
    for i in used.tolist():
        r = reg[i]
        name_b = bytes(r["name"]).split(b"\0", 1)[0] if reg.dtype["name"].itemsize else b""
        name = object_name(name_b)
        t = int(r["type"])
        out.append(TrxObject(slot=i, type=t, type_name=fmt.object_type_name(t), name=name,
                             address=int(r["thread_pointer"]), param_1=int(r["param_1"]),
                             param_2=int(r["param_2"]), available=int(r["available"]),
                             reserved1=int(r["reserved1"]), reserved2=int(r["reserved2"])))
    return out


def _timestamps(raw: RawTrace, k: int, timer: str, gap: tuple[int, int] | None = None) -> None:
    """Unroll the masked timestamps; ``gap = (position, lost)``: ``lost`` slots were cut out of the
    file just before chronological ``position`` (a wrapped buffer cut short)."""
    mask = np.uint32(raw.header["timer_valid_mask"])
    ts = raw.column(3)
    ts &= mask
    raw.ts_masked = ts
    n = ts.shape[0]
    t = ts.astype(np.int64)
    d = np.diff(t)  # d[p] = t[p + 1] - t[p], chronological
    if timer == "auto":
        # TraceX's majority vote, bug for bug: consecutive slots in *slot* order, skipping the first
        # two entries of each portion it reads (index j <= 1: slots 0 and 1, and cur and cur + 1).
        # In chronological order that drops the pairs ending at slots 1 and cur + 1 and the pair
        # from slot k - 1 to slot 0 (not adjacent in slot order).
        keep = np.ones(d.shape[0], dtype=bool)
        first = raw.current_index if raw.wrapped else 0  # slot at chronological position 0
        for p in vote_drops(first, k, n, raw.wrapped):
            keep[p] = False
        inc = int(np.count_nonzero((d > 0) & keep))
        dec = int(np.count_nonzero((d < 0) & keep))
        if inc == dec:  # TraceX would say "down"; break the tie on every chronological pair, then "up"
            inc = int(np.count_nonzero(d > 0))
            dec = int(np.count_nonzero(d < 0))
            inc += inc == dec
        raw.direction = "up" if inc > dec else "down"
    else:
        raw.direction = timer
    if n == 0:
        raw.relative_ticks = np.zeros(0, np.int64)
        return
    if raw.direction == "down":
        np.negative(d, out=d)
    back = d < 0
    raw.timer_wraps = int(np.count_nonzero(back))
    if raw.timer_wraps:
        d[back] += np.int64(int(mask) + 1)
    if gap is not None and 1 <= gap[0] <= d.shape[0]:
        _bridge_gap(raw, d, gap[0] - 1, gap[1], int(mask) + 1)
    rel = t  # reuse the buffer: rel[0] = 0, rel[1:] = cumsum(d)
    rel[0] = 0
    np.cumsum(d, out=rel[1:])
    raw.relative_ticks = rel
