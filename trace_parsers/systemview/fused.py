"""``read_systemview``: one fused Rust pass per stream, bytes -> event columns, for every file.

The file is read window by window (``WINDOW`` bytes, one reused buffer) into ``_core.SvFused``,
which decodes each packet and converts it straight into the columns that become
``Trace.columns`` (:mod:`trace_parsers.columns`): ``ts`` and ``ts_raw`` as int64/uint64 arrays,
every other column at the narrowest width that holds its values, as one constant (``core`` of a
single-core stream) or, for ``value`` and ``target_id``, as the few rows that are not null / -1.
No raw packet columns, no row table, no copy of the events, no whole-array NumPy pass. The few
metadata and message packets come back as a small ``RawStream`` for the Python side tables.

The conversion parameters (tick rate and IdShift from INIT, the task handle order, the OS table
and module offsets, the time origin) are first decided from the start of every stream
(``PREFIX`` bytes, where recorders put INIT, SYSDESC, TASK_INFO and MODULEDESC). After the pass
they are decided again from the metadata of the whole recording (:func:`.fast.decide`); when
anything differs (a task named late, INIT after the start, ...) every stream is converted again
with the final parameters.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from .. import _core
from ..columns import concat, from_specs, sort_by_ts
from ..model import Diagnostic, Trace
from . import fast
from .decode import Container, decode_stream, open_container, raw_stream
from .format import MODULE_EVENT_OFFSET
from .streams import StreamInfo, _collect, _stream_diags, stream_facts

__all__ = ["read_fused"]

#: Bytes read (and decoded) per window; a packet cut by the window end starts the next one.
WINDOW = 8 << 20
#: Bytes at the start of every stream that decide the provisional conversion parameters.
PREFIX = 1 << 20


@dataclass
class _Stream:
    file: _File
    name: str
    core: int
    start: int
    end: int
    esp: bool


@dataclass
class _File:
    path: Path
    size: int
    cont: Container
    head: bytes
    diags: list[Diagnostic] = field(default_factory=list)  #: lost cores, then streams without STOP


class _Tail:
    """What ``_check_stop`` reads of a stream: its packet count, last id and damage codes."""

    def __init__(self, res: dict[str, Any]) -> None:
        self.n, self.id, self.diags = int(res["packets"]), [int(res["last_id"])], res["diags"]

    def __len__(self) -> int:
        return self.n


def _open(p: Path, on_corrupt: str) -> _File:
    diags: list[Diagnostic] = []
    head, size, cont = open_container(p, on_corrupt, diags, extra=16)
    return _File(p, size, cont, head, diags)


@dataclass
class _Params:
    """The conversion parameters every stream is converted with."""

    ram_base: int
    shift: int
    tick_hz: int
    named: bytes
    handles: list[int]
    origin: int
    mod_first: list[int]

    @classmethod
    def decide(cls, infos: list[StreamInfo], scans: list[dict[str, Any]], description: Any,
               diags: list[Diagnostic], tables: dict[Any, Any]) -> tuple[_Params, fast.Decided,
                                                                        list[Any]]:
        d = fast.decide(infos, description, diags, tables)
        tasks = fast._task_table(infos, scans, d.ram_base, d.shift)
        mins = [int(s["min_ts"]) for s in scans if s["min_ts"] is not None]
        mod_first = [int(min(min([m["evt_off"] for m in i.modules] + [MODULE_EVENT_OFFSET]),
                             0xFFFFFFFF)) for i in infos]
        return cls(d.ram_base, d.shift, d.tick_hz or 0, d.named, [t.native_handle for t in tasks],
                   min(mins) if mins else 0, mod_first), d, tasks


@dataclass
class _Decision:
    """What the metadata of every stream decided: the parameters, the facts, the decision."""

    params: _Params
    infos: list[StreamInfo]
    decided: fast.Decided
    tasks: list[Any]
    diags: list[Diagnostic]  #: SV_NO_INIT and the IdShift notice


def _provisional(streams: list[_Stream], description: Any, tables: dict[Any, Any]) -> _Decision:
    """The decision of the first ``PREFIX`` bytes of every stream (final when every stream fits)."""
    infos, scans = [], []
    for s in streams:
        with open(s.file.path, "rb") as f:
            f.seek(s.start)
            b = f.read(min(PREFIX, s.end - s.start))
        r = decode_stream(b, s.core, 0, len(b), esp_core_bit=s.esp)
        sc = _core.sv_scan(fast._cols(r))
        info = StreamInfo(name=s.name, core=s.core)
        _collect(r, info, sc["meta_rows"])
        infos.append(info)
        scans.append(sc)
    diags: list[Diagnostic] = []
    params, d, tasks = _Params.decide(infos, scans, description, diags, tables)
    return _Decision(params, infos, d, tasks, diags)


class _Hash:
    """SHA-256 of the files, fed with the windows as they are read; any byte range not seen in
    order is read again at the end."""

    def __init__(self) -> None:
        self.sha = hashlib.sha256()
        self.at: dict[Path, int] = {}
        self.ok = True

    def head(self, fl: _File) -> None:
        n = min(fl.cont.header_end, len(fl.head))
        self.sha.update(fl.head[:n])
        self.at[fl.path] = n

    def update(self, fl: _File, offset: int, view: memoryview) -> None:
        if fl.path not in self.at:  # the first window of the next file: its header first
            self.head(fl)
        if self.ok and self.at.get(fl.path) == offset:
            self.sha.update(view)
            self.at[fl.path] = offset + len(view)
        elif len(view):
            self.ok = False

    def digest(self, files: list[_File]) -> str:
        if self.ok and all(self.at.get(fl.path) == fl.size for fl in files):
            return self.sha.hexdigest()
        sha = hashlib.sha256()
        for fl in files:
            with open(fl.path, "rb") as f:
                while b := f.read(WINDOW):
                    sha.update(b)
        return sha.hexdigest()


def _convert_stream(s: _Stream, p: _Params, si: int, esp: bool, log_base: int, buf: bytearray,
                    hasher: _Hash | None) -> dict[str, Any]:
    """One fused pass over stream ``s`` (``esp``: any file has the ESP core bit, as the
    conversion of ``fast`` takes it); returns ``SvFused.finish()``."""
    fz = _core.SvFused(s.end - s.start, start=s.start, stream_core=s.core, esp=esp,
                       esp_core_bit=s.esp, ram_base=p.ram_base, shift=p.shift,
                       handles=np.array(p.handles, dtype=np.uint64).tobytes(), named=p.named,
                       mod_first=p.mod_first[si], tick_hz=p.tick_hz, origin=p.origin,
                       log_base=log_base, columns=True)
    with open(s.file.path, "rb") as f:
        f.seek(s.start)
        _feed(f, fz, s, buf, hasher)
    return fz.finish()


def _feed(f: BinaryIO, fz: Any, s: _Stream, buf: bytearray, hasher: _Hash | None) -> None:
    have, pos = 0, s.start  # bytes kept from the previous window; file offset read up to
    while True:
        if have == len(buf):  # one packet longer than the window: grow it
            buf.extend(bytes(len(buf)))
        mv = memoryview(buf)
        want = min(len(buf) - have, s.end - pos)
        n = f.readinto(mv[have:have + want]) if want else 0
        if hasher is not None:
            hasher.update(s.file, pos, mv[have:have + n])
        pos += n
        last = pos >= s.end or n == 0
        arr = np.frombuffer(buf, dtype=np.uint8)
        used = fz.feed(int(arr.ctypes.data), have + n, last)
        del arr
        if last:
            mv.release()
            return
        rest = have + n - used
        mv[:rest] = mv[used:have + n]
        mv.release()
        have = rest


def _streams(files: list[_File]) -> list[_Stream]:
    multi = len(files) > 1
    return [_Stream(fl, f"Core{fi if multi else core}", fi if multi else core, start, end,
                    fl.cont.esp_extension)
            for fi, fl in enumerate(files) for core, start, end in fl.cont.streams]


def _pass(files: list[_File], streams: list[_Stream], p: _Params, hasher: _Hash | None
          ) -> tuple[list[dict[str, Any]], list[Any], list[str], dict[int, str]]:
    """Every stream converted with ``p``: the ``finish()`` results, the small RawStreams of their
    kept packets, the PRINT_FORMATTED messages and marker names."""
    buf = bytearray(min(WINDOW, max([s.end - s.start for s in streams], default=0) + 16))
    esp = any(fl.cont.esp_extension for fl in files)
    results, smalls, strings, markers = [], [], [], {}  # type: ignore[var-annotated]
    for si, s in enumerate(streams):
        res = _convert_stream(s, p, si, esp, len(strings), buf, hasher)
        small = raw_stream(res, s.core, s.start)
        fast._texts(small, res["text_rows"], strings, markers)
        results.append(res)
        smalls.append(small)
    return results, smalls, strings, markers


def read_fused(paths: list[Path], *, description: Any = None, on_corrupt: str = "raise") -> Trace:
    """The Trace of ``read_systemview(paths)`` (its arguments checked there)."""
    from . import _check_stop

    files = [_open(p, on_corrupt) for p in paths]
    streams = _streams(files)
    hasher = _Hash()
    tables: dict[Any, Any] = {}  # OS tables loaded by the provisional decision, reused
    prov = _provisional(streams, description, tables)
    # every stream within PREFIX: the provisional decision saw the whole recording
    whole = all(s.end - s.start <= PREFIX for s in streams)
    results, smalls, strings, markers = _pass(files, streams, prov.params, hasher)
    sha = hasher.digest(files)
    diags: list[Diagnostic] = []
    for fl in files:  # lost cores, then each stream's missing TRACE_STOP
        diags.extend(fl.diags)
        for s, res in zip(streams, results):
            if s.file is fl:
                _check_stop(_Tail(res), s.end, bool(fl.cont.header_lines), s.name, diags)
    path = ";".join(str(p) for p in paths)
    infos, scans = [], []
    for si, (s, res, small) in enumerate(zip(streams, results, smalls)):
        _stream_diags(small, si, s.name, path, on_corrupt, diags)
        if not whole:
            info = StreamInfo(name=s.name, core=s.core)
            _collect(small, info, res["meta_rows"])
            infos.append(info)
        scans.append({k: res[k] for k in ("counts", "handles", "ovf_values", "min_ts", "core_counts",
                                          "event_cores")} | {"events": res["events_n"]})
    if whole:
        final, d, tasks, infos = prov.params, prov.decided, prov.tasks, prov.infos
        diags.extend(prov.diags)
    else:
        final, d, tasks = _Params.decide(infos, scans, description, diags, tables)
    if final != prov.params:  # the start of the streams did not decide everything: convert again
        del results
        results, smalls, strings, markers = _pass(files, streams, final, None)
    return _assemble(files, streams, results, infos, scans, d, tasks, strings, markers, diags,
                     path=path, sha256=sha, origin=final.origin, description=description)


def _assemble(files: list[_File], streams: list[_Stream], results: list[dict[str, Any]],
              infos: list[StreamInfo], scans: list[dict[str, Any]], d: fast.Decided,
              tasks: list[Any], strings: list[str], markers: dict[int, str],
              diags: list[Diagnostic], *, path: str, sha256: str, origin: int,
              description: Any) -> Trace:
    esp = any(fl.cont.esp_extension for fl in files)
    stream_meta: dict[str, Any] = {}
    api_ids: set[int] = set()
    parts = []
    for s, info, res in zip(streams, infos, results):
        n = int(res["packets"])
        stream_meta[info.name] = stream_facts(
            info, core=s.core, packets=n, counts_by_id={str(k): c for k, c in res["counts"]},
            sync_bytes=int(res["sync_bytes"]), overflow_values=list(res["ovf_values"]),
            first=int(res["first_ts"]) if n else None, last=int(res["last_ts"]) if n else None,
            str_order=int(res["str_order"]),
            core_counts={str(k): c for k, c in res["core_counts"]} if esp else None)
        api_ids.update(res["api_ids"])
        parts.append(from_specs(res.pop("columns"), int(res["rows"])))
    events = parts[0] if len(parts) == 1 else sort_by_ts(concat(parts))
    del parts
    version = next((fl.cont.version for fl in files if fl.cont.version), "") or "raw"
    return fast._finish(events, infos, scans, stream_meta, diags, d.table, api_ids, strings,
                        markers, tasks, d.isr_names, d.sysdesc, d.sysdesc_texts, d.init,
                        d.tick_hz, origin, path=path, sha256=sha256, version=version,
                        header=[fl.cont.header_lines for fl in files], esp_extension=esp,
                        n_streams=len(streams))
