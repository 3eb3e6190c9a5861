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

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from .._meta import Diagnostic  # NumPy-free: sniffing imports this module
from ..errors import diagnostic, validate_on_corrupt
from .decode import looks_like_systemview
from .format import EvtId, ExSubId

if TYPE_CHECKING:  # pragma: no cover
    from ..model import Trace

__all__ = ["read_systemview", "sniff", "EvtId", "ExSubId"]

PathLike = Union[str, Path]


def sniff(head: bytes, path: Any = None) -> bool:
    """True when ``head`` (the first bytes of a file) is a SystemView recording."""
    return looks_like_systemview(head)


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
    # one path for every file: the fused Rust pass, bytes -> event columns, window by window
    # (fused.py; imported here: sniffing imports this module without NumPy)
    from .fused import read_fused

    return read_fused(paths, description=description, on_corrupt=on_corrupt)


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
