"""``workload`` (``analyzers.metrics.workload``) of a recording read in chunks.

Besides the site occurrences, the FFT workload reads only a trace's ``LOG`` rows (their strings
are the result lines) and a logic capture's UART TX edges (decoded to text). A trace's LOG rows
are kept and the in-memory analyzer runs on a trace made of them alone, with the site
occurrences found in chunks. A capture's UART edges are kept by the site accumulator already (the
UART channel is named only by the final channel table); they are decoded a batch at a time
(``analyzers._uart.decode_edge_blocks``) and the analyzer is handed the text. What grows: one
event row (the model's record) per LOG row, and the decoded UART text.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from analyzers._uart import decode_edge_blocks
from trace_parsers.model import EventKind, Trace, empty_events

from .metrics import as_rows, is_logic, workload_metrics
from .sites import SiteAccumulator


class WorkloadStream:
    def __init__(self) -> None:
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
            return workload_metrics.analyze(stub, sites, options)
        found = workload_metrics.uart_channel(stub)
        if found is None:
            return workload_metrics.analyze(stub, sites, options, uart=("", 0))
        idx, init = found
        edges = ((ts, (kind == EventKind.EDGE_RISE).astype(np.int64)) for ts, kind in occ.batches_of(idx))
        data, _, errors = decode_edge_blocks(edges, init, workload_metrics.uart_baud(options))
        return workload_metrics.analyze(stub, sites, options, uart=(data.decode("latin-1"), errors))
