"""What ``crosstrace info`` shows of a small SystemView recording, without NumPy.

The file is read at once and decoded into raw packet columns by the Rust packet loop
(``_core.sv_decode``), scanned (``_core.sv_scan``) and converted (``_core.sv_convert``) into
51-byte ``EVENT_DTYPE`` rows, with the Python of the whole read for the metadata packets, side
tables and diagnostics (:mod:`.streams`, :mod:`.fast`). The raw columns are ``memoryview`` casts
of the decoder's buffers (no NumPy), and the rows are counted per kind and read for the
first/last ``ts`` and the OVERFLOW rows instead of becoming ``Trace.events``. The result is a
:class:`~trace_parsers.summary.TraceSummary`; ``tests/analyzers/test_info_small.py`` compares it
with the full read on every recording of the corpus and the captures.
"""

from __future__ import annotations

import ctypes
import hashlib
from collections import Counter
from pathlib import Path
from typing import Any

from .. import _core
from .._meta import Diagnostic, EventKind
from ..errors import TraceCorruptError, TraceFormatError, handle_corrupt
from .decode import RawStream, looks_like_systemview, parse_container
from .fast import (
    _stream_meta,
    _task_table,
    _texts,
    count_cores,
    decide,
    handles_bytes,
    overflow_diag,
    unknown_id_diags,
)
from .format import MODULE_EVENT_OFFSET
from .streams import assemble_meta, scan_streams

#: the converted row: 51 bytes; ``ts`` <i8 at 0, ``kind`` u1 at 16, ``value`` <i8 at 31,
#: ``src_offset`` <u8 at 43 (``fast._LAYOUT``; a test checks both agree)
ROW = 51
_TS, _KIND, _VALUE, _SRC_OFFSET = 0, 16, 31, 43
_COLUMNS = (("id", "I"), ("core", "B"), ("nv", "B"), ("ts", "Q"), ("p0", "I"), ("p1", "I"), ("p2", "I"))


def available() -> bool:
    return hasattr(_core, "sv_convert") and hasattr(_core, "sv_scan") and hasattr(_core, "sv_decode")


def summarize(paths: list[Path], *, description: Any = None, on_corrupt: str = "raise") -> Any:
    """What ``read_systemview(paths)`` gives, as a :class:`~trace_parsers.summary.TraceSummary`
    (same diagnostics and errors), each file read at once: for small files."""
    from . import _check_stop

    streams: list[RawStream] = []
    diags: list[Diagnostic] = []
    names: list[str] = []
    headers: list[list[str]] = []
    version, esp_ext = "", False
    sha = hashlib.sha256()
    for fi, p in enumerate(paths):
        data = _read(p)
        sha.update(data)
        if not looks_like_systemview(data[:4096]):
            raise TraceFormatError(
                "expected a SystemView recording (a ';' text header or 10 zero bytes followed by "
                f"TRACE_START 0x0a), found {data[:16].hex(' ') or 'an empty file'}",
                code="SV_BAD_MAGIC", path=str(p), offset=0)
        cont = parse_container(data, str(p))
        headers.append(cont.header_lines)
        version = version or cont.version
        esp_ext = esp_ext or cont.esp_extension
        for core, off in cont.lost_cores:
            handle_corrupt(TraceCorruptError(
                f"the file ends at 0x{len(data):x}, before the stream of Core{core} (declared at "
                f"stream offset {off}, file offset 0x{cont.header_end + off:x}): that core is lost, "
                "the cores before it are kept", code="TRUNCATED", path=str(p), offset=len(data)),
                on_corrupt, diags)  # type: ignore[arg-type]
        for core, start, end in cont.streams:
            c = fi if len(paths) > 1 else core
            r = decode_stream(data, c, start, end, esp_core_bit=cont.esp_extension)
            streams.append(r)
            names.append(f"Core{c}")
            _check_stop(r, end, bool(cont.header_lines), f"Core{c}", diags)
    return summarize_columns(streams, names, path=";".join(str(p) for p in paths),
                             sha256=sha.hexdigest(), version=version or "raw", header=headers,
                             esp_extension=esp_ext, description=description, on_corrupt=on_corrupt,
                             diagnostics=diags)


def _read(path: Path) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise TraceFormatError(f"cannot read the file: {e.strerror}", code="IO_ERROR",
                               path=str(path)) from None


def decode_stream(data: bytes, core: int, start: int, end: int, *, esp_core_bit: bool = False,
                  str_order: int = 0) -> RawStream:
    """:func:`.decode.decode_stream` with ``memoryview`` columns (native byte order, as NumPy's)."""
    r: dict[str, Any] = _core.sv_decode(data, start, end, esp_core_bit, str_order)
    cols = {name: memoryview(r[name]).cast(fmt) for name, fmt in _COLUMNS}
    u4 = {name: memoryview(r[name]).cast("I") for name in ("aux_row", "aux_start", "aux_str", "aux_vals")}
    return RawStream(
        core=core, start=start, id=cols["id"], pcore=cols["core"], nv=cols["nv"], ts=cols["ts"],
        off=memoryview(r["off"]).cast("I" if r["off_size"] == 4 else "Q"), p0=cols["p0"],
        p1=cols["p1"], p2=cols["p2"], aux_row=u4["aux_row"], aux_start=u4["aux_start"],
        aux_str=u4["aux_str"], aux_vals=u4["aux_vals"], strings=r["strings"],
        str_ends=memoryview(r["str_ends"]).cast("Q"), diags=list(r["diags"]),
        sync_bytes=int(r["sync_bytes"]), ts_end=int(r["ts_end"]), str_order=int(r["str_order"]))


def _address(mv: memoryview, keep: list[Any]) -> int:
    if not len(mv):
        return 0
    obj = mv.obj
    if isinstance(obj, bytearray):
        ref: Any = ctypes.c_char.from_buffer(obj)
        keep.append(ref)
        return ctypes.addressof(ref)
    return int(ctypes.cast(ctypes.c_char_p(bytes(obj)), ctypes.c_void_p).value or 0)  # pragma: no cover


def _cols(r: RawStream, keep: list[Any]) -> dict[str, Any]:
    """:func:`.fast._cols` of memoryview columns (``keep`` holds the buffers' exports alive)."""
    out: dict[str, Any] = {"off_size": r.off.itemsize}
    for name in ("id", "core", "nv", "ts", "p0", "p1", "p2", "off"):
        a = getattr(r, "pcore" if name == "core" else name)
        out[name] = (_address(a, keep), len(a))
    return out


def _scan(r: RawStream) -> dict[str, Any]:
    keep: list[Any] = []  # the buffers' exports, alive while the core reads them
    return _core.sv_scan(_cols(r, keep))


def summarize_columns(streams: list[RawStream], names: list[str], *, path: str, sha256: str,
                      version: str, header: list[list[str]], esp_extension: bool, description: Any,
                      on_corrupt: str, diagnostics: list[Diagnostic] | None = None) -> Any:
    """The whole read's conversion of ``streams`` (raw columns of whole streams), as a
    TraceSummary."""
    from ..summary import TraceSummary

    diags: list[Diagnostic] = list(diagnostics or [])
    infos, scans = scan_streams(streams, names, path, on_corrupt, diags, _scan)
    d = decide(infos, description, diags)
    tasks = _task_table(infos, scans, d.ram_base, d.shift)
    mins = [int(s["min_ts"]) for s in scans if s["min_ts"] is not None]
    origin = min(mins) if mins else 0
    strings: list[str] = []
    markers: dict[int, str] = {}
    parts: list[bytearray] = []
    stream_meta: dict[str, Any] = {}
    api_ids: set[int] = set()
    for si, info in enumerate(infos):
        r, sc = streams[si], scans[si]
        stream_meta[info.name] = _stream_meta(r, info, sc, esp_extension)
        log_base = len(strings)
        _texts(r, sc["text_rows"], strings, markers)
        mod_first = min([m["evt_off"] for m in info.modules] + [MODULE_EVENT_OFFSET])
        keep = []
        buf, api, _sorted = _core.sv_convert(
            _cols(r, keep), int(sc["events"]), start=int(r.start), stream_core=int(r.core),
            esp=bool(esp_extension), ram_base=d.ram_base, shift=d.shift, handles=handles_bytes(tasks),
            named=d.named, mod_first=int(min(mod_first, 0xFFFFFFFF)), tick_hz=d.tick_hz or 0,
            origin=origin, log_base=log_base)
        del keep
        api_ids.update(api)
        parts.append(buf)
    n = sum(len(b) // ROW for b in parts)
    diags.extend(unknown_id_diags(infos, stream_meta, d.table))
    if any(s["ovf_values"] for s in scans):
        diags.append(_overflow(parts))
    cores_n = count_cores(scans, stream_meta, esp_extension, len(streams)) if n else len(streams)
    meta, isrs, mk = assemble_meta(
        isr_names=d.isr_names, markers=markers, table=d.table, api_ids=api_ids, stream_meta=stream_meta,
        init=d.init, sysdesc=d.sysdesc, sysdesc_texts=d.sysdesc_texts, infos=infos, header=header,
        esp_extension=esp_extension, version=version, path=path, sha256=sha256, tick_hz=d.tick_hz,
        origin=origin, cores_n=cores_n)
    kinds: Counter[int] = Counter()
    for b in parts:
        kinds.update(b[_KIND::ROW])
    return TraceSummary(meta=meta, events=n, duration=_duration(parts),
                        kind_counts={EventKind(k).name: kinds[k] for k in sorted(kinds)},
                        tasks=tasks, isrs=isrs, markers=mk, diagnostics=diags)


def _i64(b: bytearray, row: int, off: int, signed: bool = True) -> int:
    return int.from_bytes(b[row * ROW + off:row * ROW + off + 8], "little", signed=signed)


def _duration(parts: list[bytearray]) -> int:
    """Last minus first ``ts`` of the events table: one stream's rows as converted, several streams'
    rows sorted by ``ts`` (the whole read sorts only several)."""
    if len(parts) == 1:
        k = len(parts[0]) // ROW
        return _i64(parts[0], k - 1, _TS) - _i64(parts[0], 0, _TS) if k else 0
    ts = [_i64(b, i, _TS) for b in parts for i in range(len(b) // ROW)]
    return max(ts) - min(ts) if ts else 0


def _overflow(parts: list[bytearray]) -> Diagnostic:
    """:func:`.fast.overflow_diag` of the OVERFLOW rows: the first in the table's order (stable by
    ``ts`` for several streams), their number and the largest drop count."""
    rows = []
    for pi, b in enumerate(parts):
        kinds = b[_KIND::ROW]
        i = kinds.find(EventKind.OVERFLOW)
        while i >= 0:
            rows.append((_i64(b, i, _TS) if len(parts) > 1 else 0, pi, i, _i64(b, i, _SRC_OFFSET, False),
                         _i64(b, i, _VALUE)))
            i = kinds.find(EventKind.OVERFLOW, i + 1)
    first = min(rows)
    return overflow_diag(first[3], len(rows), max(r[4] for r in rows))
