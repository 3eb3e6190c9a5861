"""The conversion decisions of a SystemView read, shared by the whole read (:mod:`.fused`), the
chunk reader (:mod:`.chunks`) and ``crosstrace info``'s summary (:mod:`.summary`).

What the metadata packets decide before any event is converted (INIT, SYSDESC, the OS table:
:func:`decide`; the task table: :func:`_task_table`), the messages and marker names
(:func:`_texts`), and the trace-level diagnostics and metadata once the events are converted
(:func:`_finish`). The per-event work is in the Rust core (``sv_model.rs``); no per-event Python
objects.
"""

from __future__ import annotations

import array
import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._meta import Diagnostic, EventKind, Severity, Task
from ..errors import diagnostic
from .decode import RawStream
from .streams import StreamInfo, _sysdesc_items, stream_facts

if TYPE_CHECKING:  # pragma: no cover - NumPy is imported where the events table is built (the
    # side tables and metadata below serve `crosstrace info`'s NumPy-free summary too)
    import numpy as np

    from ..model import Trace
from .description import OsTable, bundled_table, choose_table, load_description
from .format import EvtId, ExSubId

__all__ = ["decide", "Decided"]

#: The packed row layout ``sv_model.rs`` writes (name, byte offset, dtype).
_LAYOUT = (("ts", 0, "<i8"), ("ts_raw", 8, "<u8"), ("kind", 16, "u1"), ("core", 17, "u1"),
           ("ctx_type", 18, "u1"), ("ctx_id", 19, "<i4"), ("target_id", 23, "<i4"),
           ("marker", 27, "<u4"), ("value", 31, "<i8"), ("src_id", 39, "<u4"),
           ("src_offset", 43, "<u8"))


@functools.lru_cache(maxsize=1)
def _layout_ok() -> bool:
    import numpy as np

    from ..model import EVENT_DTYPE

    if EVENT_DTYPE.itemsize != 51 or len(EVENT_DTYPE.names or ()) != len(_LAYOUT):
        return False
    fields = EVENT_DTYPE.fields
    return np.little_endian and all(fields[n][1] == off and fields[n][0] == np.dtype(dt)
                                    for n, off, dt in _LAYOUT)


def _cols(r: RawStream) -> dict[str, Any]:
    """The raw columns by address (C-contiguous, native dtypes), for the Rust passes."""
    import numpy as np

    out: dict[str, Any] = {"off_size": r.off.dtype.itemsize}
    for name, dt in (("id", "=u4"), ("core", "u1"), ("nv", "u1"), ("ts", "=u8"), ("p0", "=u4"),
                     ("p1", "=u4"), ("p2", "=u4"), ("off", r.off.dtype.str)):
        a = getattr(r, "pcore" if name == "core" else name)
        if a.dtype != np.dtype(dt) or not a.flags.c_contiguous:
            raise TypeError(f"raw column {name} is {a.dtype}, expected contiguous {dt}")
        out[name] = (int(a.ctypes.data) if a.shape[0] else 0, int(a.shape[0]))
    if out["off_size"] not in (4, 8):
        raise TypeError(f"raw column off has {out['off_size']}-byte items")
    return out


_U64 = (1 << 64) - 1


def _task_table(infos: list[StreamInfo], scans: list[dict[str, Any]], ram_base: int,
                shift: int) -> list[Task]:
    """TASK_INFO handles first (in order of appearance), then handles only seen in events."""
    handles: dict[int, tuple[str, int]] = {}
    for info in infos:
        for sid, (nm, prio) in info.task_info.items():
            h = ram_base + (sid << shift)
            if h not in handles or not handles[h][0]:
                handles[h] = (nm, prio)
    # ram_base + (id << shift) in uint64 arithmetic (wrapping), as the Rust conversion computes it
    extra_h = sorted({(ram_base + (int(h) << shift)) & _U64 for s in scans for h in s["handles"]})
    for h in extra_h:
        if h not in handles:
            handles[int(h)] = (f"task@0x{int(h):x}", -1)
    return [Task(i, nm, prio, h) for i, (h, (nm, prio)) in enumerate(handles.items())]


def _stream_meta(r: RawStream, info: StreamInfo, sc: dict[str, Any], esp: bool) -> dict[str, Any]:
    n = len(r)
    return stream_facts(
        info, core=r.core, packets=n, counts_by_id={str(k): c for k, c in sc["counts"]},
        sync_bytes=r.sync_bytes, overflow_values=list(sc["ovf_values"]),
        first=int(r.ts[0]) if n else None, last=int(r.ts[-1]) if n else None, str_order=r.str_order,
        core_counts={str(k): c for k, c in sc["core_counts"]} if esp else None)


def _texts(r: RawStream, rows: list[int], strings: list[str], markers: dict[int, str]) -> None:
    """PRINT_FORMATTED messages (appended to ``strings`` in row order) and EX NAME_MARKER names."""
    prints = [j for j in rows if int(r.id[j]) == EvtId.PRINT_FORMATTED]
    for j in prints:
        strings.append(r.aux(j)[1] or "")
    for j in rows:
        if int(r.id[j]) == EvtId.EX and int(r.p0[j]) == ExSubId.NAME_MARKER:
            vals, s = r.aux(j)
            if len(vals) >= 2:
                markers[int(vals[1])] = s or ""


def _table(description: Any, sysdesc: dict[str, str],
           cache: dict[Any, OsTable | None] | None = None) -> OsTable | None:
    """The OS table (``cache``: tables already loaded by a previous ``decide`` of this read)."""
    key = (id(description), tuple(sorted(sysdesc.items())))
    if cache is not None and key in cache:
        return cache[key]
    if description is not None:
        table = load_description(description)
    else:
        pick = choose_table(sysdesc)
        table = bundled_table(pick) if pick else None
    if cache is not None:
        cache[key] = table
    return table


@dataclass
class Decided:
    """What the metadata packets of every stream decide before any event is converted."""

    init: dict[str, Any] | None
    ram_base: int
    shift: int
    tick_hz: int | None
    sysdesc_texts: list[str]
    sysdesc: dict[str, str]
    isr_names: dict[int, str]
    table: OsTable | None
    named: bytes  #: lookup of the OS table's ids (index = id), for ``sv_convert``


def decide(infos: list[StreamInfo], description: Any, diags: list[Diagnostic],
           table_cache: dict[Any, OsTable | None] | None = None) -> Decided:
    """INIT (tick rate, task id expansion), SYSDESC and the OS table; appends SV_NO_INIT and the
    IdShift notice to ``diags``."""
    init = next((i.init for i in infos if i.init), None)
    if init is None:
        diags.append(diagnostic("SV_NO_INIT", 0, "no INIT packet: tick rate unknown, ts is in ticks"))
    ram_base = int(init["ram_base"]) if init else 0
    shift = int(init["id_shift"]) if init else 0
    if not 0 <= shift <= 32:  # u32 ids << shift + a u32 base must fit the uint64 handles
        diags.append(diagnostic("CORRUPT_REGION", 0, f"INIT IdShift={shift} is outside 0..32; task "
                                "handles are kept unshifted", severity=Severity.NOTICE))
        shift = 0
    tick_hz = int(init["sys_freq"]) if init and init["sys_freq"] > 0 else None
    sysdesc_texts = [t for i in infos for t in i.sysdesc]
    sysdesc, isr_names = _sysdesc_items(sysdesc_texts)
    table = _table(description, sysdesc, table_cache)
    named = b""
    if table is not None and table.events:
        lut = bytearray(max(table.events) + 2)
        for e in table.events:
            lut[e] = 1
        named = bytes(lut)
    return Decided(init, ram_base, shift, tick_hz, sysdesc_texts, sysdesc, isr_names, table, named)


def handles_bytes(tasks: list[Task]) -> bytes:
    return array.array("Q", [t.native_handle for t in tasks]).tobytes()  # native uint64


def _finish(events: np.ndarray, infos: list[StreamInfo], scans: list[dict[str, Any]],
            stream_meta: dict[str, Any], diags: list[Diagnostic], table: OsTable | None,
            api_ids: set[int], strings: list[str], markers: dict[int, str], tasks: list[Task],
            isr_names: dict[int, str], sysdesc: dict[str, str], sysdesc_texts: list[str],
            init: dict[str, Any] | None, tick_hz: int | None, origin: int, *, path: str,
            sha256: str, version: str, header: list[list[str]], esp_extension: bool,
            n_streams: int) -> Trace:
    """Trace-level diagnostics and metadata, and the Trace of ``events``."""
    from .convert import assemble_trace

    diags.extend(unknown_id_diags(infos, stream_meta, table))
    drops = [v for s in scans for v in s["ovf_values"]]  # one per OVERFLOW row, its value
    if drops:
        # the first OVERFLOW row's offset from that one row (a whole column would be widened)
        first = first_row(events["kind"], EventKind.OVERFLOW)
        at = int(events[first:first + 1]["src_offset"][0]) if first >= 0 else 0
        diags.append(overflow_diag(at, len(drops), max(drops)))
    cores_n = count_cores(scans, stream_meta, esp_extension, n_streams) if len(events) else n_streams
    return assemble_trace(
        events, tasks=tasks, diags=diags, strings=strings, isr_names=isr_names, markers=markers,
        table=table, api_ids=api_ids, stream_meta=stream_meta, init=init, sysdesc=sysdesc,
        sysdesc_texts=sysdesc_texts, infos=infos, header=header, esp_extension=esp_extension,
        version=version, path=path, sha256=sha256, tick_hz=tick_hz, origin=origin, cores_n=cores_n)


def first_row(column: Any, value: int, block: int = 1 << 16) -> int:
    """Index of the first row of ``column`` equal to ``value`` (-1: none), block by block: no
    temporary the size of the column, and the first OVERFLOW is usually early."""
    import numpy as np  # (loaded with the columns already)

    for a in range(0, len(column), block):
        hit = np.flatnonzero(column[a:a + block] == value)
        if len(hit):
            return a + int(hit[0])
    return -1


def unknown_id_diags(infos: list[StreamInfo], stream_meta: dict[str, Any],
                     table: OsTable | None) -> list[Diagnostic]:
    """SV_UNKNOWN_ID per event id that no table or module names (from the per-id counts)."""
    mod_offs = [m["evt_off"] for i in infos for m in i.modules]
    first_mod = min(mod_offs) if mod_offs else None
    unknown: dict[int, int] = {}
    for sm in stream_meta.values():
        for k, c in sm["counts_by_id"].items():
            i = int(k)
            known = i < 24 or i in (24, 25, 26, 27, 28, 29, 31) or \
                (table is not None and i in table.events) or (first_mod is not None and i >= first_mod)
            if not known:
                unknown[i] = unknown.get(i, 0) + c
    return [diagnostic("SV_UNKNOWN_ID", 0, f"event id {i} has no name in "
                       f"{table.name if table else 'any description'}; kept as src_id {i}", count=c)
            for i, c in sorted(unknown.items())]


def overflow_diag(first_offset: int, packets: int, max_drops: int) -> Diagnostic:
    return diagnostic("SV_OVERFLOW", first_offset, f"{packets} OVERFLOW packets (target drop counter "
                      f"up to {max_drops}): intervals spanning them are unreliable", count=packets)


def count_cores(scans: list[dict[str, Any]], stream_meta: dict[str, Any], esp_extension: bool,
                n_streams: int) -> int:
    """Cores with events (the ESP core bits, or the streams with events)."""
    cores = {int(c) for s in scans for c in s["event_cores"]} if esp_extension else \
        {int(r["core"]) for s, r in zip(scans, stream_meta.values()) if s["events"]}
    return len(cores)
