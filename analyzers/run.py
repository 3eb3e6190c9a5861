"""The analysis engine: every analyzer over a recording's chunks, one pass; a whole recording is
one chunk (:func:`run_analyzers`).

Each analyzer is a reducer fed every chunk and finished once (``analyzers/metrics/``): the kernel
state (``metrics.kstate``) and everything carried across chunk borders live there, the site
analyzers read the site occurrences gathered over all chunks. :func:`run_analyzers_chunked` gives
the stacked :class:`SourceResult` of a recording read in chunks (``campaign.chunked``),
:func:`run_analyzers` the same of a whole recording.

>>> from analyzers.run import ANALYZERS
>>> ANALYZERS[0]
'analyzers.metrics.context_switch'
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from trace_parsers.model import Trace, empty_events

from ._memory import release_memory
from .metrics.align import ts_aligned
from .metrics.context_switch import ContextSwitchStream
from .metrics.cpu_load import CpuLoadStream
from .metrics.isr_latency import IsrLatencyStream
from .metrics.kernel import KernelStream
from .metrics.occurrences import GapTracker, SiteAccumulator
from .metrics.sched import CausedSwitchIn
from .metrics.stats import Drop, Stats
from .metrics.user import UserStream
from .metrics.workload import WorkloadStream
from .sites import Site, SiteEvents, is_logic, reuse_site_events, scoped_site_events, seed_site_events

#: Analyzer modules (their results are stacked in this order)
ANALYZERS = (
    "analyzers.metrics.context_switch",
    "analyzers.metrics.periodicity",
    "analyzers.metrics.isr_latency",
    "analyzers.metrics.workload",
    "analyzers.metrics.cpu_load",
    "analyzers.metrics.calib",
    "analyzers.metrics.thread_metric",
    "analyzers.metrics.finegrained",
    "analyzers.metrics.rtosbench",
    "analyzers.metrics.kernel",
    "analyzers.user_config",
)
#: the analyzers, by short name
STREAMED = ("periodicity", "cpu_load", "calib", "thread_metric", "kernel", "context_switch", "isr_latency",
            "workload", "user_config", "finegrained", "rtosbench")
#: events between two ``release_memory`` calls while the chunks are read (its cost is one walk of
#: the heap: per chunk, chunks of a few events would pay it per event)
RELEASE_EVERY = 1 << 20
#: site-occurrence analyzers: module of each
_SITE_ONLY = {"periodicity": "analyzers.metrics.periodicity", "calib": "analyzers.metrics.calib",
              "thread_metric": "analyzers.metrics.thread_metric",
              "finegrained": "analyzers.metrics.finegrained", "rtosbench": "analyzers.metrics.rtosbench"}


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
    """Every analyzer on a whole recording: the one engine over one chunk. Inside
    ``reuse_site_events()`` the site occurrences it found are kept for ``trace`` (cross-validation
    reads them), and the stand-ins the engine made for itself are forgotten."""
    with scoped_site_events() as keep:
        res, got = run_analyzers_chunked(lambda: [trace], sites, options)
        if got.site_events is not None:
            seed_site_events(trace, sites, got.site_events)
            keep(trace)
    return res


def run_analyzers_chunked(open_chunks: Callable[[], Iterable[Trace]], sites: Sequence[Any],
                          options: dict[str, Any], store: Any = None) -> tuple[SourceResult, ChunkedResults]:
    """Every analyzer over the chunks ``open_chunks()`` yields: one ``SourceResult`` (tables
    stacked in ``ANALYZERS`` order, times in ticks labelled so), and the :class:`ChunkedResults`.
    ``store``: the source's spill (``metrics.spill.Spill``) every table and growing array goes to,
    or None (in memory)."""
    got = analyze_chunks(open_chunks, sites, options, store)
    last = got.last
    if last is None:  # analyze_chunks refuses an empty chunk stream already
        raise ValueError("the chunk reader yielded no chunk")
    return collect_results(last, got.results, has_events=bool(got.events)), got


@dataclass
class ChunkedResults:
    """What :func:`analyze_chunks` found: one ``Result`` per streamed analyzer."""

    results: dict[str, Any] = field(default_factory=dict)
    site_events: SiteEvents | None = None
    last: Trace | None = None  #: the last chunk (final side tables, meta)
    events: int = 0
    chunks: int = 0


def analyze_chunks(open_chunks: Callable[[], Iterable[Trace]], sites: Sequence[Any],
                   options: dict[str, Any] | None = None, store: Any = None) -> ChunkedResults:
    """Every analyzer of :data:`STREAMED` over the chunks ``open_chunks()`` yields, in one pass (the
    per-task load windows are read from the chunks' timelines the kernel stream keeps)."""
    options = options or {}
    gaps = GapTracker()
    occ = SiteAccumulator(gaps, store)
    kern, sched, work = KernelStream(store), CausedSwitchIn(store), WorkloadStream(store)
    # one running-state pass per chunk for the load and the kernel metrics
    cpu = CpuLoadStream(kern.cores, store=store)
    ctx, isr = ContextSwitchStream(sched, store), IsrLatencyStream(sched, sites, kern.isr, store)
    user = UserStream(options)
    out = ChunkedResults()
    for ch in ts_aligned(open_chunks()):
        for acc in (gaps, occ, kern, cpu, work, user):
            acc.feed(ch)
        if not is_logic(ch):
            sched.feed(ch.held(), out.events)
            ctx.feed(ch, occ.last_rows)  # the chunk's candidate site rows, found once
            isr.feed(ch.held(), out.events)
        out.last = ch
        out.events += len(ch)
        out.chunks += 1
        if out.events // RELEASE_EVERY != (out.events - len(ch)) // RELEASE_EVERY:
            release_memory()
    last = out.last
    if last is None:
        raise ValueError("the chunk reader yielded no chunk")
    out.site_events = occ.finish(last, sites)
    release_memory()
    w = options.get("CT_LOAD_WINDOW_NS")
    window = int(w) if w else None
    load = kern.load_series(last, window)
    # each analyzer's carried state is dropped once its result is made (its table is spilled
    # into the store given), the largest (kernel metrics) last: the finishing peak is
    # one analyzer's, not all of them
    _finish_switches(out, last, sites, options, occ, ctx, isr, store)
    del ctx, isr, sched
    release_memory()
    _finish_sites(out, last, sites, options, occ, work, user, store)
    del occ, work, user
    out.results["cpu_load"] = cpu.finish(last, gaps.gaps)
    del cpu
    release_memory()
    out.results["kernel"] = kern.finish(last, gaps.gaps, load)
    del kern, load
    release_memory()
    return out


def _finish_switches(out: ChunkedResults, last: Trace, sites: Sequence[Any], options: dict[str, Any],
                     occ: SiteAccumulator, ctx: ContextSwitchStream, isr: IsrLatencyStream,
                     store: Any) -> None:
    """``context_switch`` and ``isr_latency`` (a logic capture's: from its site intervals)."""
    if is_logic(last):  # a capture has site intervals only
        with reuse_site_events():
            stub = _stub(last, empty_events(0))
            seed_site_events(stub, sites, out.site_events)
            for name in ("context_switch", "isr_latency"):
                out.results[name] = importlib.import_module(f"analyzers.metrics.{name}").analyze(
                    stub, sites, options, store=store)
        return
    n, irq = options.get("CT_NTASKS"), options.get("CT_TEST_IRQ")
    out.results["context_switch"] = ctx.finish(last, sites, occ, out.site_events,
                                               int(n) if n is not None else None)
    out.results["isr_latency"] = isr.finish(out.site_events, int(irq) if irq is not None else None)


def _finish_sites(out: ChunkedResults, last: Trace, sites: Sequence[Any], options: dict[str, Any],
                  occ: SiteAccumulator, work: WorkloadStream, user: UserStream, store: Any) -> None:
    """The analyzers that read the site occurrences and the few rows kept for them."""
    stub = _stub(last, empty_events(0))
    logs = _stub(last, work.events(last))
    marks = _stub(last, user.events(occ, last))
    with reuse_site_events():
        seed_site_events(stub, sites, out.site_events)
        seed_site_events(logs, sites, out.site_events)
        seed_site_events(marks, sites, out.site_events)
        for name, module in _SITE_ONLY.items():
            out.results[name] = importlib.import_module(module).analyze(stub, sites, options, store=store)
        out.results["workload"] = work.finish(logs, sites, options, occ)
        out.results["user_config"] = user.finish(marks, sites, options, store)


def _stub(last: Trace, events: Any) -> Trace:
    """A trace of ``events`` with the recording's final side tables and meta."""
    return Trace(events, last.meta, tasks=last.tasks, isrs=last.isrs, markers=last.markers,
                 channels=last.channels, strings=last.strings)



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
