"""The NumPy-free part of the SystemView conversion: per-stream facts, metadata packets, damage
records as diagnostics, and the trace's metadata and side tables.

The whole read (:mod:`.fused`), the chunk reader (:mod:`.chunks`) and the NumPy-free summary of
``crosstrace info`` (:mod:`.summary`) build these the same way from here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._meta import Diagnostic, Isr, Marker, TraceMeta
from ..errors import TraceCorruptError, TraceFormatError, diagnostic, handle_corrupt
from .description import OsTable

if TYPE_CHECKING:  # pragma: no cover
    from .decode import RawStream


@dataclass
class StreamInfo:
    """Per-stream facts collected while converting (ends up in ``meta.extra["streams"]``)."""

    name: str
    core: int
    init: dict[str, Any] | None = None
    inits: int = 0
    sysdesc: list[str] = field(default_factory=list)
    task_info: dict[int, tuple[str, int]] = field(default_factory=dict)  # shrunk id -> (name, prio)
    modules: list[dict[str, Any]] = field(default_factory=list)
    resources: dict[int, str] = field(default_factory=dict)
    stack_info: dict[int, dict[str, int]] = field(default_factory=dict)
    systime: list[tuple[str, int]] = field(default_factory=list)


_STRING_ORDER = {0: None, 1: "lo-hi", 2: "hi-lo"}


def stream_facts(info: StreamInfo, *, core: int, packets: int, counts_by_id: dict[str, int], sync_bytes: int,
                 overflow_values: list[int], first: int | None, last: int | None, str_order: int,
                 core_counts: dict[str, int] | None) -> dict[str, Any]:
    """``meta.extra["streams"][name]``: one stream's facts, built the same way by every reading path
    (whole read, chunked, summary)."""
    return {
        "core": core, "packets": packets, "counts_by_id": counts_by_id, "sync_zero_bytes": sync_bytes,
        "init": info.init, "inits": info.inits, "sysdesc_count": len(info.sysdesc), "sysdesc": info.sysdesc,
        "task_info": {f"0x{k:x}": {"prio": p, "name": nm} for k, (nm, p) in info.task_info.items()},
        "name_resource": {f"0x{k:x}": v for k, v in info.resources.items()},
        "stack_info": {f"0x{k:x}": v for k, v in info.stack_info.items()},
        "modules": info.modules, "systime": info.systime,
        "overflow_packets": len(overflow_values), "overflow_values": overflow_values,
        "first_ts_ticks": first, "last_ts_ticks": last,
        "string_order": _STRING_ORDER[str_order], "esp_core_bit_counts": core_counts,
    }


def _sysdesc_items(texts: list[str]) -> tuple[dict[str, str], dict[int, str]]:
    desc: dict[str, str] = {}
    isrs: dict[int, str] = {}
    for t in texts:
        for item in t.split(","):
            k, sep, v = item.partition("=")
            k = k.strip()
            if not sep:
                continue
            if k.startswith("I#"):
                try:
                    irq = int(k[2:], 0) if len(k) <= 24 else -1
                except ValueError:
                    continue
                if 0 <= irq < 1 << 32:  # IRQ ids are u32 on the wire
                    isrs[irq] = v.strip()
            else:
                desc.setdefault(k, v.strip())
    return desc, isrs


def _stream_diags(r: RawStream, si: int, name: str, path: str, on_corrupt: str,
                  diags: list[Diagnostic]) -> None:
    """The decoder's damage records of one stream as diagnostics (or errors, per ``on_corrupt``)."""
    for code, off, count, fatal, detail in r.diags:
        foff = r.start + int(off)
        if code == "SV_BAD_MAGIC" and si == 0:
            raise TraceFormatError(f"{detail} in stream {name}", code="SV_BAD_MAGIC", path=path,
                                   offset=r.start)
        if code == "SV_BAD_MAGIC":  # a later core's stream (3.60 multi-core) cut or damaged
            handle_corrupt(TraceCorruptError(f"{detail} in stream {name}: that core is lost, the "
                                             "cores before it are kept", code="CORRUPT_REGION",
                                             path=path, offset=r.start), on_corrupt, diags)  # type: ignore[arg-type]
            continue
        if fatal or code == "TRUNCATED":  # a cut loses data: on_corrupt decides, as elsewhere
            handle_corrupt(TraceCorruptError(f"{detail} (stream {name})", code=code, path=path,
                                             offset=foff), on_corrupt, diags)  # type: ignore[arg-type]
        else:
            diags.append(diagnostic(code, foff, f"{detail} (stream {name})", count=int(count)))


def _collect(r: RawStream, info: StreamInfo, rows: Sequence[int] | None = None) -> None:
    """Parse the rare metadata packets of one stream (a Python loop over a few rows only):
    ``rows``, or every row with a metadata id."""
    ids = r.id
    if rows is None:
        import numpy as np

        rows = np.flatnonzero(np.isin(ids, (9, 12, 13, 14, 21, 22, 24, 25))).tolist()
    for row in rows:
        i = int(ids[row])
        vals, s = r.aux(row)
        if i == 24:
            info.inits += 1
            if info.init is None:
                v = (vals + [0, 0, 0, 0])[:4]
                info.init = {"sys_freq": v[0], "cpu_freq": v[1], "ram_base": v[2], "id_shift": v[3],
                             "raw": vals}
        elif i == 9 and len(vals) >= 2:
            info.task_info[vals[0]] = (s or "", vals[1])
        elif i == 21 and len(vals) >= 4:
            info.stack_info[vals[0]] = {"base": vals[1], "size": vals[2], "usage": vals[3]}
        elif i == 14 and s is not None:
            info.sysdesc.append(s)
        elif i == 22 and len(vals) >= 2:
            info.modules.append({"id": vals[0], "evt_off": vals[1], "desc": s or ""})
        elif i == 25 and vals:
            info.resources[vals[0]] = s or ""
        elif i == 12:
            info.systime.append(("cycles", int(r.p0[row])))
        elif i == 13:
            info.systime.append(("us", int(r.p0[row]) | (int(r.p1[row]) << 32)))


def assemble_meta(*, isr_names: dict[int, str], markers: dict[int, str], table: OsTable | None,
                  api_ids: Any, stream_meta: Any, init: Any, sysdesc: dict[str, str],
                  sysdesc_texts: Any, infos: list[StreamInfo], header: Any, esp_extension: bool,
                  version: Any, path: Any, sha256: Any, tick_hz: Any, origin: int,
                  cores_n: int) -> tuple[TraceMeta, list[Isr], list[Marker]]:
    """The metadata, ISRs and markers of the Trace every path returns (``convert.assemble_trace``):
    the description's API names and arguments, the streams' facts."""
    api_names = {str(i): table.label(i) for i in sorted(api_ids)} if table else {}
    api_args = {str(i): [a for a, _ in table.events[i].args] for i in sorted(api_ids)
                if table and i in table.events}
    extra: dict[str, Any] = {
        "streams": stream_meta, "init": init, "sysdesc": sysdesc, "sysdesc_raw": sysdesc_texts,
        "modules": [m for i in infos for m in i.modules], "header": header,
        "esp_extension": esp_extension, "description": table.name if table else None,
        "api_names": api_names, "api_args": api_args,
    }
    meta = TraceMeta(
        source_format="systemview", source_version=version, source_path=path, source_sha256=sha256,
        tick_hz=tick_hz, clock_domain="target_cycles", rtos=sysdesc.get("O", ""),
        app=sysdesc.get("N", ""), cores=max(cores_n, 1), origin_raw=origin, source_kind="trace",
        extra=extra)
    isrs = [Isr(k, v) for k, v in sorted(isr_names.items())]
    mk = [Marker(k, v) for k, v in sorted(markers.items())]
    return meta, isrs, mk


def scan_streams(streams: Sequence[RawStream], names: Sequence[str], path: str, on_corrupt: str,
                 diags: list[Diagnostic], scan: Callable[[RawStream], dict[str, Any]]
                 ) -> tuple[list[StreamInfo], list[dict[str, Any]]]:
    """Each stream's diagnostics, its ``scan(r)`` (the Rust ``sv_scan`` of its columns) and the
    :class:`StreamInfo` collected from the scan's metadata rows: the first step of the NumPy-free
    summary (``summary.summarize_columns``)."""
    infos: list[StreamInfo] = []
    scans: list[dict[str, Any]] = []
    for si, (r, name) in enumerate(zip(streams, names)):
        _stream_diags(r, si, name, path, on_corrupt, diags)
        sc = scan(r)
        info = StreamInfo(name=name, core=r.core)
        _collect(r, info, sc["meta_rows"])
        infos.append(info)
        scans.append(sc)
    return infos, scans
