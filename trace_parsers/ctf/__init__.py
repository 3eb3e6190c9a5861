"""Common Trace Format 1.8 (Zephyr's ``ctf`` tracing) -> :class:`~trace_parsers.model.Trace`.

The layout comes from the trace's own TSDL ``metadata`` file, never from hard-coded structures:
Zephyr's single headerless stream (32-bit ns timestamps, 8-bit ids), per-CPU packetized streams
(packet header and context, 64-bit clock-mapped timestamps), LTTng-style compact/extended headers.
A trace is a folder holding ``metadata`` and stream files, or one stream file with ``metadata``
beside it (or given with ``metadata=``). See ``docs/formats.md`` ("CTF").

Example::

    >>> tr = read_ctf("ctf_trace/")                  # doctest: +SKIP
    >>> tr.meta.tick_hz, tr.counts_by_kind()         # doctest: +SKIP
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from .._meta import Diagnostic  # NumPy-free: sniffing (and a small `info`) import this module
from ..errors import TraceError, TraceFormatError, diagnostic, validate_on_corrupt
from . import cache
from .decode import Compiled
from .packets import RawEvent, StreamDecoder
from .tsdl import looks_like_metadata, parse_metadata

if TYPE_CHECKING:  # pragma: no cover
    from ..model import Trace

__all__ = ["read_ctf", "read_raw", "sniff", "RawCtf", "RawEvent", "find_files", "default_metadata"]

PathLike = Union[str, Path]
METADATA = "metadata"
#: files in a trace folder that are never streams (capture-folder companions)
_NOT_STREAMS = (".json", ".md", ".txt", ".log", ".elf", ".sr", ".csv", ".yaml", ".yml", ".svdat",
                ".trx", ".vcd", ".py", ".sh")


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise TraceFormatError(f"cannot read the file: {e.strerror}", code="IO_ERROR",
                               path=str(path)) from None


def _is_metadata_file(p: Path) -> bool:
    try:
        with open(p, "rb") as f:
            return looks_like_metadata(f.read(64))
    except OSError:
        return False


#: Zephyr's TSDL metadata inside a Zephyr tree
ZEPHYR_TSDL = "subsys/tracing/ctf/tsdl/metadata"


def default_metadata() -> Path | None:
    """Metadata for a stream recorded without one beside it (Zephyr's RAM/semihosting dumps; the
    metadata is Zephyr's own file, not stored with captures): ``$CROSSTRACE_CTF_METADATA``, else
    ``$ZEPHYR_BASE/subsys/tracing/ctf/tsdl/metadata``, else the same file under
    ``$CT_DEPS_DIR/zephyrproject/zephyr``; None when none of them is a TSDL file."""
    env = os.environ
    cands = [Path(env["CROSSTRACE_CTF_METADATA"])] if env.get("CROSSTRACE_CTF_METADATA") else []
    if env.get("ZEPHYR_BASE"):
        cands.append(Path(env["ZEPHYR_BASE"]) / ZEPHYR_TSDL)
    if env.get("CT_DEPS_DIR"):
        cands.append(Path(env["CT_DEPS_DIR"]) / "zephyrproject" / "zephyr" / ZEPHYR_TSDL)
    return next((c for c in cands if _is_metadata_file(c)), None)


def find_files(path: PathLike, metadata: PathLike | None = None) -> tuple[Path, list[Path]]:
    """(metadata file, stream files) for a trace folder, its metadata file, or one stream file
    (metadata beside it, else :func:`default_metadata`)."""
    p = Path(path)
    meta: Path | None
    if p.is_dir():
        meta = Path(metadata) if metadata is not None else p / METADATA
        streams = sorted(q for q in p.iterdir() if q.is_file() and q.name != METADATA
                         and q != meta and not q.name.startswith(".")
                         and not q.name.lower().endswith(_NOT_STREAMS) and q.stat().st_size > 0)
    elif metadata is None and _is_metadata_file(p):
        return find_files(p.parent, p)
    else:
        meta = Path(metadata) if metadata is not None else p.parent / METADATA
        if metadata is None and not meta.is_file():
            meta = default_metadata() or meta
        streams = [p]
    if not meta.is_file():
        raise TraceFormatError(f"no CTF metadata file at {meta}: a CTF trace is a folder with a "
                               "'metadata' file and stream files (or pass metadata=, or set "
                               "CROSSTRACE_CTF_METADATA / ZEPHYR_BASE for Zephyr streams)",
                               code="CTF_NO_METADATA", path=str(p))
    return meta, streams


def sniff(head: bytes, path: Any = None) -> bool:
    """True for a CTF trace folder, its TSDL metadata file, a stream with metadata beside it, or a
    stream *named as one* (``*.ctf``, ``channel<N>_<M>``) whose first bytes (``head``, 4 KiB) decode
    cleanly with :func:`default_metadata`: any other file without metadata is never claimed, since
    almost any bytes decode as a few events of Zephyr's 5-byte headers."""
    if path is None:
        return looks_like_metadata(head)
    p = Path(path)
    if p.is_dir():
        return _is_metadata_file(p / METADATA)
    if looks_like_metadata(head):
        return True
    if p.name == METADATA:
        return False
    side = p.parent / METADATA
    named_stream = p.suffix.lower() == ".ctf" or re.fullmatch(r"channel\d+_\d+", p.name) is not None
    meta = side if _is_metadata_file(side) else default_metadata() if named_stream else None
    if meta is None or not head:
        return False
    try:
        comp = _compiled(meta.read_bytes())
        diags: list[Diagnostic] = []
        out: list[RawEvent] = []
        StreamDecoder(comp, head, 0, str(p), "recover", diags, out).run()  # head: cut at 4 KiB
    except (TraceError, OSError):
        return False
    return bool(out)  # damage raised: the head decoded cleanly (a cut last event is fine)


@functools.lru_cache(maxsize=8)
def _compiled(mdata: bytes) -> Compiled:
    """Parsed and compiled metadata, cached by content (Zephyr's 2200-line file takes ~0.1 s):
    in this process, and the parse across processes (:mod:`.cache`)."""
    try:
        meta = cache.load(mdata)
        if meta is None:
            meta = parse_metadata(mdata)
            cache.store(mdata, meta)
        return Compiled(meta)
    except RecursionError:
        raise TraceFormatError("the TSDL metadata nests types too deeply", code="CTF_BAD_METADATA",
                               offset=0) from None


class RawCtf:
    """Decoded records of a CTF trace before the model mapping."""

    def __init__(self, compiled: Compiled, paths: list[Path], records: list[RawEvent],
                 diagnostics: list[Diagnostic], streams: list[Any], sha256: str) -> None:
        self.compiled, self.meta = compiled, compiled.meta
        self.paths, self.records = paths, records
        self.diagnostics, self.streams, self.sha256 = diagnostics, streams, sha256


def read_raw(path: PathLike, *, metadata: PathLike | None = None, on_corrupt: str = "raise") -> RawCtf:
    """Decode every event record (header, contexts, fields as dicts) of a CTF trace."""
    validate_on_corrupt(on_corrupt)
    meta_path, stream_paths = find_files(path, metadata)
    mdata = _read(meta_path)
    try:
        comp = _compiled(mdata)
    except TraceFormatError as e:
        raise e.with_path(str(meta_path)) from None
    sha = hashlib.sha256(mdata)
    diags: list[Diagnostic] = []
    records: list[RawEvent] = []
    infos = []
    if not stream_paths:
        diags.append(diagnostic("CTF_NO_STREAMS", 0, f"no stream files beside {meta_path}"))
    for i, sp in enumerate(stream_paths):
        data = _read(sp)
        sha.update(data)
        infos.append(StreamDecoder(comp, data, i, str(sp), on_corrupt, diags, records).run())
    return RawCtf(comp, stream_paths, records, diags, infos, sha.hexdigest())


def read_ctf(path: PathLike, *, metadata: PathLike | None = None, on_corrupt: str = "raise") -> Trace:
    """Read a CTF trace (folder, metadata file, or one stream file) into a Trace.

    Parameters
    ----------
    path : a trace folder (``metadata`` + stream files), its ``metadata`` file, or one stream file
        with ``metadata`` in the same folder.
    metadata : the TSDL metadata file, when it is not beside the streams (e.g. Zephyr's
        ``subsys/tracing/ctf/tsdl/metadata`` for a RAM-buffer dump).
    on_corrupt : ``"raise"`` | ``"recover"`` | ``"warn"`` | ``"skip"``. A file cut inside an event
        is ``TRUNCATED`` (raised under ``"raise"``). An impossible event (unknown id, bad tag)
        raises ``TraceCorruptError`` with the file offset, or is recorded as a DATA_LOSS diagnostic
        with an OVERFLOW row while decoding resumes at the next cleanly decodable event.
    """
    from .convert import build_trace

    raw, clock, diags, extra = prepare(path, metadata=metadata, on_corrupt=on_corrupt)
    return build_trace(raw.meta, raw.records, clock=clock, path=str(path), sha256=raw.sha256,
                       diags=diags, extra=extra)


def prepare(path: PathLike, *, metadata: PathLike | None = None, on_corrupt: str = "raise"
            ) -> tuple[RawCtf, Any, list[Diagnostic], dict[str, Any]]:
    """What :func:`read_ctf` gives its model mapping: the raw records, the clock, the diagnostics
    and ``meta.extra`` (``crosstrace info`` summarises the same without NumPy: trace_parsers.summary)."""
    raw = read_raw(path, metadata=metadata, on_corrupt=on_corrupt)
    clock_names = [c for c in raw.meta.clocks]
    sids = {r.sid for r in raw.records}
    comp_clock = {raw.compiled.default_clock[s] for s in sids} if sids else set()
    diags = raw.diagnostics
    if len(comp_clock) > 1:
        diags.append(diagnostic("CTF_NO_CLOCK", 0, f"streams use different clocks {sorted(comp_clock)}"
                                "; ts_raw is the event number"))
    name = next(iter(comp_clock)) if len(comp_clock) == 1 else None
    clock = raw.meta.clocks.get(name) if name else None
    if clock is not None and clock.implicit:
        diags.append(diagnostic("CTF_IMPLICIT_CLOCK", 0, "the timestamp field maps to no clock: "
                                "a 1 GHz clock is assumed (babeltrace2's rule; Zephyr records ns)"))
    wraps = sum(s.clock_wraps for s in raw.streams)
    if wraps:
        diags.append(diagnostic("CTF_CLOCK_WRAPS", 0, f"narrow timestamps wrapped {wraps} times; "
                                "unrolled by the CTF clock-update rule", count=wraps))
    counts: dict[str, int] = {}
    for r in raw.records:
        if r.eid >= 0:
            counts[r.name] = counts.get(r.name, 0) + 1
    extra = {
        "metadata": {"major": raw.meta.major, "minor": raw.meta.minor, "uuid": raw.meta.uuid,
                     "byte_order": raw.meta.byte_order, "path": str(find_files(path, metadata)[0])},
        "clocks": {c: vars(raw.meta.clocks[c]).copy() for c in clock_names},
        "env": dict(raw.meta.env),
        "streams": {s.path: {"size": s.size, "packets": s.packets, "events": s.events,
                             "discarded": s.discarded, "clock_wraps": s.clock_wraps,
                             "cpus": sorted(s.cpus)} for s in raw.streams},
        "counts_by_name": dict(sorted(counts.items())),
        "event_names": {str(e.id): e.name for e in raw.meta.events.values()
                        if e.name in counts},
    }
    return raw, clock, diags, extra
