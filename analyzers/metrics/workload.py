"""FFT workload: FFT duration, sample-to-UART latency, frames produced and lost, UART results.

Metrics:

- ``fft.duration`` — site ``fft.start`` to the next ``fft.stop`` (ns). Both sources; cross-validated.
- ``fft.sample_to_uart`` — the last ``fft.sample`` at or before a frame's ``fft.start`` to the first
  ``fft.uart_send`` after that frame's ``fft.stop`` (ns). Both sources; cross-validated.
- scalars ``fft.frames`` (frames whose FFT completed), ``fft.frames_lost`` (frames started but never
  completed or never sent), and, when UART text is available, ``fft.uart.lines`` (result lines
  decoded from the capture's ``uart.tx`` channel) and ``fft.uart.matched`` (of those, lines also
  found in the reference text: the trace's LOG messages, else ``uart.log``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trace_parsers.model import EventKind, Trace, empty_events

from .._uart import decode_edge_blocks, decode_edges
from ..sites import Site, channel_index, is_logic, load_sites, site_events
from .base import Result, Series, Summary, as_rows, make_table, pair_next, site_interval, summary_fields
from .occurrences import SiteAccumulator
from .stats import DropLog, drop_gap_instances

DURATION = "fft.duration"
SAMPLE_TO_UART = "fft.sample_to_uart"
UART_CHANNELS = ("uart.tx", "uart_tx", "tx", "usart1_tx")


@dataclass(frozen=True)
class WorkloadSummary(Summary):
    uart_lines: tuple[str, ...] = field(default_factory=tuple)


def uart_text(capture: Trace, baud: int = 115200, channels: Sequence[str] = UART_CHANNELS) -> tuple[str, int]:
    """Text sent on the capture's UART TX channel (latin-1) and the number of framing errors."""
    found = uart_channel(capture, channels)
    if found is None:
        return "", 0
    idx, init = found
    ev = capture.columns
    sel = ((ev["kind"] == EventKind.EDGE_RISE) | (ev["kind"] == EventKind.EDGE_FALL)) & (ev["marker"] == idx)
    data, _, errors = decode_edges(
        ev["ts"][sel], (ev["kind"][sel] == EventKind.EDGE_RISE).astype(np.int64), init, baud
    )
    return data.decode("latin-1"), errors


def uart_channel(capture: Trace, channels: Sequence[str] = UART_CHANNELS) -> tuple[int, int] | None:
    """The index and initial level (1 when unknown) of the capture's UART TX channel, or None."""
    idx = channel_index(capture, channels)
    if idx is None:
        return None
    return idx, next((c.initial_level for c in capture.channels if c.index == idx), 1)


def result_lines(text: str) -> list[str]:
    """Non-empty stripped lines of ``text``."""
    return [ln.strip() for ln in text.replace("\r", "\n").split("\n") if ln.strip()]


def match_lines(decoded: Sequence[str], reference: Sequence[str]) -> int:
    """How many decoded lines also occur in the reference (as a multiset)."""
    ref = Counter(reference)
    n = 0
    for ln in decoded:
        if ref[ln] > 0:
            ref[ln] -= 1
            n += 1
    return n


def trace_log_lines(trace: Trace) -> list[str]:
    ev = trace.columns
    sel = ev["kind"] == EventKind.LOG
    out = []
    for v in ev["value"][sel].tolist():
        if 0 <= v < len(trace.strings):
            out.extend(result_lines(trace.strings[v]))
    return out


def fft_workload(
    trace: Trace,
    *,
    sites: Sequence[Site] | None = None,
    baud: int = 115200,
    reference_text: str | None = None,
    uart: tuple[str, int] | None = None,
    store: Any = None,
) -> Result:
    """FFT workload metrics of a trace or a logic capture (whose UART text and framing errors are
    ``uart`` when given: decoded elsewhere, e.g. a block of edges at a time; ``store``: the source's
    spill the table goes to, or None: in memory)."""
    sites = tuple(sites) if sites is not None else load_sites()
    se = site_events(trace, sites)
    drop_log = DropLog()
    series: list[Series] = []
    dur, _ = site_interval(DURATION, se, "fft.start", "fft.stop", drop_log)
    series.append(dur)
    scalars: dict[str, tuple[float, str]] = {}
    start, stop = se.times("fft.start"), se.times("fft.stop")
    sample, send = se.times("fft.sample"), se.times("fft.uart_send")
    if sample.size and send.size and stop.size:
        # frame i: fft.start[ia] .. fft.stop[jb]; latency from the last sample before the start
        ia, jb, _ = pair_next(start, stop)
        si = np.searchsorted(sample, start[ia], side="right") - 1
        ok = si >= 0
        ia, jb, si = ia[ok], jb[ok], si[ok]
        stop_t = stop[jb]
        ui, uj, unmatched = pair_next(stop_t, send)
        drop_log.add(SAMPLE_TO_UART, "no_end_event", count=unmatched)
        s0, s1 = sample[si[ui]], send[uj]
        keep = drop_gap_instances(SAMPLE_TO_UART, s0, s1, se.gaps, drop_log)
        series.append(
            Series(
                SAMPLE_TO_UART,
                "ns",
                s0[keep],
                s1[keep],
                (s1 - s0)[keep].astype(np.float64),
                "fft.sample",
                si[ui][keep],
                "fft.uart_send",
                uj[keep],
            )
        )
    if start.size or stop.size:
        ia, jb, not_done = pair_next(start, stop)
        frames = int(ia.size)
        lost = not_done
        if send.size:
            _, _, not_sent = pair_next(stop[jb], send)
            lost += not_sent
        scalars["fft.frames"] = (float(frames), "count")
        scalars["fft.frames_lost"] = (float(lost), "count")
    lines: list[str] = []
    if is_logic(trace):
        text, errors = uart if uart is not None else uart_text(trace, baud)
        if text:
            lines = result_lines(text)
            scalars["fft.uart.lines"] = (float(len(lines)), "count")
            scalars["fft.uart.framing_errors"] = (float(errors), "count")
            if reference_text is not None:
                scalars["fft.uart.matched"] = (
                    float(match_lines(lines, result_lines(reference_text))),
                    "count",
                )
    else:
        lines = trace_log_lines(trace)
    series = [s for s in series if len(s)]
    source = "logic" if is_logic(trace) else "trace"
    summary = WorkloadSummary(
        source=source, scalars=scalars, uart_lines=tuple(lines), **summary_fields(series, drop_log)
    )
    return Result(make_table(series, source, store), summary)


def analyze(trace: Trace, sites: Sequence[Site], options: dict[str, Any],
            uart: tuple[str, int] | None = None, store: Any = None) -> Result:
    return fft_workload(
        trace,
        sites=sites,
        baud=uart_baud(options),
        reference_text=options.get("_uart_reference"),
        uart=uart,
        store=store,
    )


def uart_baud(options: dict[str, Any]) -> int:
    """The capture's UART baud rate from the analyzer options (``_uart_baud``, 115200 unset)."""
    return int(options.get("_uart_baud", 115200))


class WorkloadStream:
    """Over chunks: besides the site occurrences the FFT workload reads only a trace's ``LOG`` rows
    (their strings are the result lines; kept, one event row each) and a logic capture's UART TX
    edges (kept by the site accumulator, decoded a batch at a time at the end)."""

    def __init__(self, store: Any = None) -> None:
        self.store = store  #: the source's spill (:class:`.spill.Spill`), or None: in memory
        self.logs: list[np.ndarray] = []

    def feed(self, trace: Trace) -> None:
        if not is_logic(trace):
            ev = trace.held()  # rows or columns, whichever the chunk holds
            self.logs.append(as_rows(ev.take(np.flatnonzero(ev["kind"] == EventKind.LOG))))

    def events(self, last: Trace) -> np.ndarray:
        """The rows the in-memory analyzer reads besides the sites, in recording order."""
        if not is_logic(last):
            return np.concatenate(self.logs) if self.logs else empty_events(0)
        return empty_events(0)  # a capture's UART edges: read back by finish

    def finish(self, stub: Any, sites: Any, options: dict[str, Any], occ: SiteAccumulator) -> Any:
        """Inside ``reuse_site_events()`` with ``stub``'s site occurrences seeded."""
        if not is_logic(stub):
            return analyze(stub, sites, options, store=self.store)
        found = uart_channel(stub)
        if found is None:
            return analyze(stub, sites, options, uart=("", 0), store=self.store)
        idx, init = found
        edges = ((ts, (kind == EventKind.EDGE_RISE).astype(np.int64)) for ts, kind in occ.batches_of(idx))
        data, _, errors = decode_edge_blocks(edges, init, uart_baud(options))
        return analyze(stub, sites, options, uart=(data.decode("latin-1"), errors), store=self.store)
