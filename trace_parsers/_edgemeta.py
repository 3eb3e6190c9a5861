"""The NumPy-free half of the logic-capture model: edge limits, the rate check, the file hash and
the :class:`~trace_parsers.model.TraceMeta` of a logic capture.

:mod:`trace_parsers._edges` re-exports every name here. ``crosstrace info`` on a small capture
(:mod:`trace_parsers.summary`) builds its summary from these without importing NumPy.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._meta import Diagnostic, TraceMeta, int_ticks_to_ns
from ._numbers import MAX_RATE_HZ, parse_uint
from .errors import TraceFormatError

#: bounds on the edges of one capture (each costs up to ~150 bytes at the peak of building the
#: trace): a file must not be able to demand unbounded memory (a 2 KB ``.sr`` can inflate to 2 MiB
#: of samples with 8 edges each; a stored 2.5 MB one holds 16 M edges).  The limit is
#: ``EDGES_PER_FILE_BYTE`` per byte of the file (real captures stay below 30; deflate's best ratio
#: is ~1000 samples per byte), at least ``MIN_MAX_EDGES`` and at most ``DEFAULT_MAX_EDGES`` (≈1.2 GB
#: peak; the largest capture of the corpus has 3.4 M edges); ``$CROSSTRACE_MAX_EDGES`` replaces it.
DEFAULT_MAX_EDGES = 8_000_000
MIN_MAX_EDGES = 1_000_000
EDGES_PER_FILE_BYTE = 1024
MAX_EDGES_ENV = "CROSSTRACE_MAX_EDGES"


def _no_edges() -> Any:
    import numpy as np

    return np.zeros(0, np.int64)


@dataclass
class ChannelEdges:
    """One channel's edges: ``edges`` are sorted tick indices (an int64 array; a list of ints in the
    NumPy-free summary, :mod:`trace_parsers._pyedges`); levels alternate from ``initial``."""

    index: int
    name: str
    initial: int
    edges: Any = field(default_factory=_no_edges)
    enabled: bool = True

    @property
    def rising(self) -> int:
        n = len(self.edges)
        return (n + 1) // 2 if self.initial == 0 else n // 2

    @property
    def falling(self) -> int:
        return len(self.edges) - self.rising


def max_edges(path: str | Path | None = None) -> int:
    """The edge limit for the file ``path`` (see :data:`DEFAULT_MAX_EDGES`)."""
    v = parse_uint(os.environ.get(MAX_EDGES_ENV, ""))
    if v is not None:
        return v
    try:
        size = os.path.getsize(path) if path is not None else None
    except OSError:
        size = None
    if size is None:
        return DEFAULT_MAX_EDGES
    return min(DEFAULT_MAX_EDGES, max(MIN_MAX_EDGES, EDGES_PER_FILE_BYTE * size))


#: formats with a chunked reader (``trace_parsers.<format>.chunks.iter_chunks``, bounded memory)
CHUNKED_FORMATS = frozenset({"sigrok", "vcd"})


def check_edge_limit(count: int, path: str | Path | None, offset: int = 0, *,
                     source_format: str | None = None) -> None:
    """Raise ``LIMIT_EXCEEDED`` when ``count`` edges exceed :func:`max_edges`.

    The limit protects the whole-file read only; formats in :data:`CHUNKED_FORMATS` can be read in
    bounded memory whatever their size, and the message says how.
    """
    limit = max_edges(path)
    if count > limit:
        if source_format in CHUNKED_FORMATS:
            how = (f"Read it in chunks instead, in bounded memory: `crosstrace events FILE -o "
                   f"OUT.parquet` streams it, as does trace_parsers.{source_format}.chunks."
                   f"iter_chunks(path) in Python; or raise the whole-read limit with the environment "
                   f"variable {MAX_EDGES_ENV}=<edges>")
        else:
            how = (f"If this is a real capture, raise the limit with the environment variable "
                   f"{MAX_EDGES_ENV}=<edges>")
        raise TraceFormatError(
            f"the capture holds more than {limit:,} edges (the limit for a file of this size; "
            f"building the whole trace in memory would need ≈{150 * count / 2**30:.2f} GiB): refused "
            f"to protect memory. {how}", code="LIMIT_EXCEEDED",
            path=None if path is None else str(path), offset=offset)


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def check_rate_option(tick_hz: int | None, path: str | Path) -> None:
    """``BAD_OPTION`` for a caller's out-of-range ``samplerate=`` (file rates are checked where parsed)."""
    if tick_hz is not None and not 0 <= int(tick_hz) <= MAX_RATE_HZ:
        raise TraceFormatError(f"samplerate={tick_hz!r}: expected 1 Hz .. {MAX_RATE_HZ} Hz",
                               code="BAD_OPTION", path=str(path), offset=0)


def edge_trace_meta(channel_stats: Sequence[dict[str, Any]], *, source_format: str, path: str | Path,
                    tick_hz: int | None, total_ticks: int | None, source_version: str = "",
                    origin_raw: int = 0, extra: dict[str, Any] | None = None,
                    sha256: str = "") -> TraceMeta:
    """The :class:`TraceMeta` of a logic capture; ``channel_stats`` are ``meta.extra["channels"]``."""
    meta_extra: dict[str, Any] = {}
    if tick_hz:
        meta_extra["samplerate"] = int(tick_hz)
        meta_extra["sample_period_ns"] = 1e9 / tick_hz
    else:
        meta_extra["samplerate"] = None
        meta_extra["sample_period_ns"] = None
    meta_extra["total_samples"] = None if total_ticks is None else int(total_ticks)
    if total_ticks is not None and tick_hz and total_ticks >= 0:
        meta_extra["duration_ns"] = int_ticks_to_ns(int(total_ticks), tick_hz)
    else:
        meta_extra["duration_ns"] = None
    meta_extra["channels"] = [dict(c) for c in channel_stats]
    if extra:
        meta_extra.update(extra)
    return TraceMeta(source_format=source_format, source_version=str(source_version),
                     source_path=str(path), source_sha256=sha256,
                     tick_hz=int(tick_hz) if tick_hz else None, clock_domain="la_samples",
                     origin_raw=int(origin_raw), source_kind="logic", extra=meta_extra)


def duplicate_names(channels: Sequence[Any]) -> list[Diagnostic]:
    """A ``DUPLICATE_CHANNEL`` NOTICE per channel name that more than one channel carries (the
    channels keep their indices; edges are told apart by ``marker``, the channel index)."""
    from .errors import diagnostic

    by: dict[str, list[int]] = {}
    for c in channels:
        by.setdefault(str(c.name), []).append(int(c.index))
    return [diagnostic("DUPLICATE_CHANNEL", 0, f"channels {', '.join(map(str, idx))} are all named "
                       f"{name!r}: their edges are counted by channel index, not by name",
                       count=len(idx)) for name, idx in by.items() if len(idx) > 1]
