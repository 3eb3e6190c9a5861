"""SEGGER SystemView recordings (``.SVDat``) -> :class:`~trace_parsers.model.Trace`.

Accepts raw streams, OpenOCD/ESP-IDF ``;`` text headers (tab or space separated, optional blank
line, optional ``BF 88 EE AB`` prefix), SystemView 3.60 ``; Offset CoreN`` multi-core files,
``; ESP_Extension`` single files with the ESP core bit, and ESP32 per-core file pairs opened
together (``read_systemview([cpu0, cpu1])``). See ``docs/formats.md`` ("SystemView").

Example::

    >>> tr = read_systemview("run.SVDat")                      # doctest: +SKIP
    >>> tr.meta.tick_hz, tr.counts_by_kind()["TASK_SWITCH_IN"]  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from .._meta import Diagnostic  # NumPy-free: sniffing imports this module
from ..errors import TraceCorruptError, TraceFormatError, diagnostic, handle_corrupt, validate_on_corrupt
from .decode import looks_like_systemview, parse_container
from .format import EvtId, ExSubId

if TYPE_CHECKING:  # pragma: no cover
    from ..model import Trace

__all__ = ["read_systemview", "sniff", "EvtId", "ExSubId"]

PathLike = Union[str, Path]


def sniff(head: bytes, path: Any = None) -> bool:
    """True when ``head`` (the first bytes of a file) is a SystemView recording."""
    return looks_like_systemview(head)


def _read(path: PathLike) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise TraceFormatError(f"cannot read the file: {e.strerror}", code="IO_ERROR",
                               path=str(path)) from None


def read_systemview(path: PathLike | Sequence[PathLike], *, description: Any = None,
                    on_corrupt: str = "raise") -> Trace:
    """Read a SystemView recording (or a list of ESP32 per-core files, core = list position).

    Parameters
    ----------
    path : path or list of paths
        One ``.SVDat`` file, or per-core files recorded together (OpenOCD ``file://a file://b``).
    description : None, ``"freertos_segger"``, ``"freertos_espidf"``, path or OsTable
        Names for OS event ids >= 32. ``None`` picks a bundled FreeRTOS table from SYSDESC.
    on_corrupt : ``"raise"`` | ``"recover"`` | ``"warn"`` | ``"skip"``
        Structural damage raises ``TraceCorruptError`` (with file offset), or is recorded as a
        DATA_LOSS diagnostic while every decodable event before and after it (resync on the next
        10-zero sync) is kept. ``"recover"``: a file that ends inside its final packet (a
        recording stopped or copied while being written) is a ``TRUNCATED`` DATA_LOSS diagnostic
        at that offset, every event before it kept; any other damage raises.

    Not SystemView content raises ``TraceFormatError`` with code ``SV_BAD_MAGIC``.
    """
    validate_on_corrupt(on_corrupt)
    paths = [Path(p) for p in path] if isinstance(path, (list, tuple)) else [Path(path)]  # type: ignore[arg-type]
    if not paths:
        raise ValueError("read_systemview needs at least one path")
    # CROSSTRACE_SV_BLOCKS=1: by blocks (chunks.read_whole: the scan pass, then the events
    # converted in place; raw columns of one block at a time). Not the default: on the 100 MB
    # bench stream it measured slower than one decode of the whole file (the second decode pass
    # costs more than the raw columns' page faults it saves), see docs/formats.md.
    if os.environ.get("CROSSTRACE_SV_BLOCKS", "0") == "1":
        from . import chunks  # (imported only here: ~40 ms of every other read)

        tr = chunks.read_whole(paths, description=description, on_corrupt=on_corrupt) \
            if chunks.available() else None
        if tr is not None:
            return tr
    # the default for streams over 1 MiB: one fused Rust pass per stream, bytes -> event columns
    # (fused.py); for smaller ones or with CROSSTRACE_SV_FUSED=0 the raw columns of each whole
    # stream, then the conversion
    from . import fused

    if fused.available() and os.environ.get("CROSSTRACE_SV_FUSED", "1") != "0":
        tr = fused.read_fused(paths, description=description, on_corrupt=on_corrupt)
        if tr is not None:  # None: a small file, read faster from the raw columns
            return tr
    return read_columns(paths, description=description, on_corrupt=on_corrupt)


def read_columns(paths: list[Path], *, description: Any = None, on_corrupt: str = "raise",
                 summary: bool = False) -> Trace:
    """``read_systemview`` from the raw columns of each whole stream (the file read at once):
    converted in Rust (``fast``), or with NumPy when ``CROSSTRACE_SV_FAST=0``. ``summary=True``:
    the same passes without NumPy, giving what ``crosstrace info`` shows (``summary.py``)."""
    if summary:
        from .summary import decode_stream, summarize_columns
    else:
        from .decode import decode_stream

    streams = []
    diags: list[Diagnostic] = []
    names: list[str] = []
    headers: list[list[str]] = []
    version = ""
    esp_ext = False
    sha = hashlib.sha256()
    multi_file = len(paths) > 1
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
            c = fi if multi_file else core
            r = decode_stream(data, c, start, end, esp_core_bit=cont.esp_extension)
            streams.append(r)
            names.append(f"Core{c}")
            _check_stop(r, end, bool(cont.header_lines), f"Core{c}", diags)
        del data  # the columns do not reference the file bytes
    # the Rust conversion (fast.py) when the compiled core has it, else NumPy (convert.py); the
    # Rust one gives the raw columns' memory back as it goes: nothing reads `streams` after it
    if summary:
        build: Any = summarize_columns
    else:
        from . import fast
        from .convert import build_trace

        build = fast.build_trace_fast if fast.available() else build_trace
    return build(streams, names, path=";".join(str(p) for p in paths), sha256=sha.hexdigest(),
                 version=version or "raw", header=headers, esp_extension=esp_ext,
                 description=description, on_corrupt=on_corrupt, diagnostics=diags)


def _check_stop(r: Any, end: int, has_header: bool, name: str, diags: list[Diagnostic]) -> None:
    """A stream that ends on a whole packet other than TRACE_STOP may have been cut there.

    Recorders that write a ``;`` text header (OpenOCD, ESP-IDF, SystemView itself) end every
    stream with TRACE_STOP, so its absence is reported as DATA_LOSS.  Raw RAM-buffer dumps never
    have one and a cut on a packet boundary cannot be told from their normal end: no diagnostic.
    Streams that end inside a packet, in zero padding or after damage have their own diagnostic.
    """
    if not has_header or (len(r) and int(r.id[-1]) == EvtId.TRACE_STOP):
        return
    if any(d[0] in ("TRUNCATED", "TRAILING_PADDING", "SV_RESYNC", "CORRUPT_REGION") for d in r.diags):
        return
    diags.append(diagnostic("SV_NO_TRACE_STOP", end, f"stream {name} ends after a whole packet "
                            "without TRACE_STOP: recorders that write a ';' header end every stream "
                            "with it, so the file was probably cut on a packet boundary"))
