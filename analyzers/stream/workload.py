"""``workload`` (``analyzers.metrics.workload``) of a recording read in chunks.

Besides the site occurrences, the FFT workload reads only a trace's ``LOG`` rows (their strings
are the result lines) and a logic capture's UART TX edges (decoded to text). Those rows are kept
(the UART channel is named only by the final channel table: every edge is kept by the site
accumulator already) and the in-memory analyzer runs on a trace made of them alone, with the
site occurrences found in chunks. What grows: one event row (the model's record) per LOG row.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trace_parsers.model import EventKind, Trace, empty_events

from .metrics import channel_index, is_logic, workload_metrics
from .sites import SiteAccumulator


class WorkloadStream:
    def __init__(self) -> None:
        self.logs: list[np.ndarray] = []

    def feed(self, trace: Trace) -> None:
        if not is_logic(trace):
            ev = trace.events
            self.logs.append(ev.take(np.flatnonzero(ev["kind"] == EventKind.LOG)))

    def events(self, last: Trace, occ: SiteAccumulator) -> np.ndarray:
        """The rows the in-memory analyzer reads besides the sites, in recording order."""
        if not is_logic(last):
            return np.concatenate(self.logs) if self.logs else empty_events(0)
        idx = channel_index(last, workload_metrics.UART_CHANNELS)
        if idx is None:
            return empty_events(0)
        ts, kind = occ.rows_of(idx)
        ev = empty_events(ts.size)
        ev["ts"], ev["kind"], ev["marker"] = ts, kind, idx
        return ev

    def finish(self, stub: Any, sites: Any, options: dict[str, Any]) -> Any:
        """Inside ``reuse_site_events()`` with ``stub``'s site occurrences seeded."""
        return workload_metrics.analyze(stub, sites, options)
