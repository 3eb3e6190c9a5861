"""Run every analyzer on one source (trace or logic capture) and stack the results.

>>> from analyzers.run import ANALYZERS
>>> ANALYZERS[0]
'analyzers.metrics.context_switch'
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from trace_parsers.model import Trace

from .metrics.stats import Drop, Stats
from .sites import Site, is_logic, reuse_site_events

#: Analyzer modules; each provides ``analyze(trace, sites, options) -> Result``.
ANALYZERS = (
    "analyzers.metrics.context_switch",
    "analyzers.metrics.periodicity",
    "analyzers.metrics.isr_latency",
    "analyzers.metrics.workload",
    "analyzers.metrics.cpu_load",
    "analyzers.metrics.calib",
    "analyzers.metrics.thread_metric",
    "analyzers.metrics.kernel",
    "analyzers.user_config",
)


@dataclass
class SourceResult:
    """Every analyzer's output for one source."""

    source: str
    table: Any  #: stacked per-instance pyarrow Table
    stats: dict[str, Stats] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    scalars: dict[str, tuple[float, str]] = field(default_factory=dict)
    drop_log: list[Drop] = field(default_factory=list)
    summaries: dict[str, Any] = field(default_factory=dict)
    excluded: int = 0
    unmatched: int = 0


def run_analyzers(trace: Trace, sites: Sequence[Site], options: dict[str, Any]) -> SourceResult:
    results = {}
    with reuse_site_events():  # every analyzer starts from the same site occurrences
        for modname in ANALYZERS:
            mod = importlib.import_module(modname)
            results[modname.rsplit(".", 1)[1]] = mod.analyze(trace, sites, options)
    return collect_results(trace, results, has_events=len(trace) > 0)


def collect_results(trace: Trace, results: dict[str, Any], *, has_events: bool) -> SourceResult:
    """One :class:`SourceResult` from every analyzer's ``(table, summary)``, in :data:`ANALYZERS`
    order; ``trace`` (or the last chunk of it) supplies the source kind and the tick rate."""
    source = "logic" if is_logic(trace) else "trace"
    out = SourceResult(source, None)
    tables = []
    for modname in ANALYZERS:
        name = modname.rsplit(".", 1)[1]
        table, summary = results[name]
        tables.append(table)
        out.summaries[name] = summary
        out.stats.update(summary.stats)
        out.units.update(summary.units)
        out.scalars.update(summary.scalars)
        out.drop_log.extend(summary.drop_log)
        out.excluded += summary.excluded
        out.unmatched += summary.unmatched
    out.table = _stacked(tables)
    if source == "trace" and not trace.meta.tick_hz and has_events:
        _times_in_ticks(out)
    return out


def _stacked(tables: list[Any]) -> Any:
    """The analyzers' tables stacked: one Arrow table, or one ``SpilledTable`` when they were
    spilled (``metrics.spill``: a recording analyzed in chunks)."""
    import pyarrow as pa

    from .metrics.spill import SpilledTable, is_spilled

    if any(is_spilled(t) for t in tables):
        if not all(is_spilled(t) for t in tables):
            raise TypeError("some analyzers' tables were spilled and some were not")
        return SpilledTable.concat(tables)
    return pa.concat_tables(tables)


def _times_in_ticks(out: SourceResult) -> None:
    """A trace without a tick rate (TraceX without ``tick_hz``) has its times in ticks: every
    duration the analyzers computed is in ticks too, and is labelled so (never ``ns``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from .metrics.spill import is_spilled

    out.units = {m: ("ticks" if u == "ns" else u) for m, u in out.units.items()}
    if is_spilled(out.table):  # relabelled as it is read back
        out.table.ticks = True
        return
    i = out.table.schema.get_field_index("unit")
    col = pc.if_else(pc.equal(out.table["unit"], "ns"), pa.scalar("ticks"), out.table["unit"])
    out.table = out.table.set_column(i, out.table.schema.field(i), col)
