"""Eclipse ThreadX event-trace buffers (TraceX ``.trx``) -> the common event model.

``read_tracex(path)`` reads a raw buffer dump in either byte order, or the same bytes saved as Intel
HEX, Motorola S-record or hex text, and returns a :class:`~trace_parsers.model.Trace`;
``read_raw(path)`` returns the raw records (:class:`~.decode.RawTrace`); :mod:`.stats` reproduces
TraceX's derived view (next context, context switches, execution profile, interrupts, priority
inversions).  ``sniff(head, path)`` recognises the content for ``open_trace``.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import TraceFormatError
from . import hexfmt

if TYPE_CHECKING:  # pragma: no cover - the decoder is imported on first use (start-up of `info`)
    from ..model import Trace  # NumPy: sniffing imports this module
    from .decode import RawTrace, TrxObject

__all__ = ["read_tracex", "read_raw", "sniff", "RawTrace", "TrxObject"]

#: TX_TRACE_VALID as stored little- and big-endian (= format.MAGIC_LE/MAGIC_BE; a test checks):
#: spelled here so that sniffing does not import the decoder and its event-id tables
_MAGICS = (b"BTXT", b"TXTB")


def __getattr__(name: str) -> Any:  # PEP 562: the decoder's names, imported on first use
    if name in ("RawTrace", "TrxObject", "decode_bytes"):
        from . import decode

        return getattr(decode, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def is_magic(head: bytes) -> bool:
    return head[:4] in _MAGICS


def sniff(head: bytes, path: Path | str | None = None) -> bool:
    """True when ``head`` (the file's first bytes) starts a TraceX buffer, binary or text-encoded."""
    if is_magic(head):
        return True
    if hexfmt.detect(head) is None:
        return False
    conv = hexfmt.to_binary(head, partial=True)
    return bool(conv) and is_magic(conv)  # type: ignore[arg-type]


def _read(path: str | Path) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise TraceFormatError(f"cannot read the file: {e.strerror}", code="IO_ERROR",
                               path=str(path)) from None


def read_raw(path: str | Path, *, timer: str = "auto", on_corrupt: str = "raise") -> RawTrace:
    """Decode ``path`` into raw records (header, registry, 8 words per event, relative ticks)."""
    from .decode import decode_bytes

    return decode_bytes(_read(path), str(path), timer=timer, on_corrupt=on_corrupt)


def read_tracex(path: str | Path, *, tick_hz: int | None = None, timer: str = "auto",
                on_corrupt: str = "raise", switches: bool = False) -> Trace:
    """Read a ThreadX trace buffer (``.trx``) into a :class:`~trace_parsers.model.Trace`.

    Parameters
    ----------
    path : the buffer dump (binary, Intel HEX, S-record or hex text; recognised by content).
    tick_hz : timestamp ticks per second (from the capture's ``run.json`` or ``--tick-hz``); the
        file does not record it.  Without it ``ts`` stays in ticks and a ``TRX_NO_TICK_HZ``
        NOTICE is added.
    timer : ``"auto"`` (TraceX's majority vote), ``"up"`` or ``"down"``: the counting direction
        of the timestamp source.
    on_corrupt : ``"raise"``, ``"recover"``, ``"warn"`` or ``"skip"`` for a truncated event area (every
        complete event is kept unless ``"raise"``).
    switches : add TraceX-style TASK_SWITCH_IN rows (one per context switch TraceX counts, from
        its next-context model: :func:`.stats.with_switch_events`).  Off by default, so the events
        map 1:1 onto the recorded records (``meta.extra["tracex_raw"]``); with it, the recorded
        rows are those whose kind is not TASK_SWITCH_IN.
    """
    if tick_hz is not None and (not isinstance(tick_hz, (int,)) or isinstance(tick_hz, bool) or tick_hz <= 0):
        raise ValueError(f"Invalid value for the 'tick_hz' parameter: expected a positive integer, "
                         f"but got {tick_hz!r} instead.")
    from .convert import to_trace
    from .decode import decode_bytes

    data = _read(path)
    digest = hashlib.sha256()
    hasher = threading.Thread(target=digest.update, args=(data,))  # hashlib releases the GIL
    hasher.start()
    try:
        raw = decode_bytes(data, str(path), timer=timer, on_corrupt=on_corrupt)
        trace = to_trace(raw, tick_hz=tick_hz)
    finally:
        hasher.join()
    trace.meta = trace.meta.replace(source_sha256=digest.hexdigest())
    if switches:
        from .stats import with_switch_events

        trace = with_switch_events(trace)
    return trace
