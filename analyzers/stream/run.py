"""The analyzers over a recording read in chunks: one pass for every streamed metric, a second
one for the per-task load windows (their edges need the recording's end).

Every analyzer of ``analyzers.run.ANALYZERS`` is streamed, with results equal to the in-memory
ones (tests/analyzers/test_stream_analysis.py): ``cpu_load`` and ``kernel`` (:mod:`.cpu`,
:mod:`.kernel`), ``context_switch`` (:mod:`.ctxswitch`) and ``isr_latency`` (:mod:`.isrlat`)
carry event state across borders; ``periodicity``, ``calib`` and ``thread_metric`` read nothing but
the site occurrences (:mod:`.sites`); ``workload`` and ``user_config`` (:mod:`.workload`,
:mod:`.user`) keep the few rows they read. :func:`run_analyzers_chunked` is
``analyzers.run.run_analyzers`` over chunks. :class:`ChunkedUnsupported` is raised where the
chunked result would differ (tasks sharing a name, user intervals on task/ISR selectors): the
caller then reads the recording whole.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from trace_parsers.model import Trace, empty_events

from .align import ts_aligned
from .cpu import CpuLoadStream
from .ctxswitch import ContextSwitchStream
from .isrlat import IsrLatencyStream
from .kernel import ChunkedUnsupported, KernelStream
from .memory import release_memory
from .metrics import SiteEvents, is_logic, reuse_site_events, seed_site_events
from .sched import CausedSwitchIn
from .sites import GapTracker, SiteAccumulator
from .user import UserStream
from .workload import WorkloadStream

#: analyzers computed here, by ``analyzers.run`` short name
STREAMED = ("periodicity", "cpu_load", "calib", "thread_metric", "kernel", "context_switch", "isr_latency",
            "workload", "user_config")
#: analyzers of ``analyzers.run.ANALYZERS`` that read more of the events than the site occurrences
NOT_STREAMED: tuple[str, ...] = ()
#: events between two ``release_memory`` calls while the chunks are read (its cost is one walk of
#: the heap: per chunk, chunks of a few events would pay it per event)
RELEASE_EVERY = 1 << 20
#: site-occurrence analyzers: module of each
_SITE_ONLY = {"periodicity": "analyzers.metrics.periodicity", "calib": "analyzers.metrics.calib",
              "thread_metric": "analyzers.metrics.thread_metric"}

__all__ = ["STREAMED", "NOT_STREAMED", "ChunkedResults", "analyze_chunks", "ChunkedUnsupported",
           "run_analyzers_chunked"]


@dataclass
class ChunkedResults:
    """What :func:`analyze_chunks` found: one ``Result`` per streamed analyzer."""

    results: dict[str, Any] = field(default_factory=dict)
    site_events: SiteEvents | None = None
    last: Trace | None = None  #: the last chunk (final side tables, meta)
    events: int = 0
    chunks: int = 0


def analyze_chunks(open_chunks: Callable[[], Iterable[Trace]], sites: Sequence[Any],
                   options: dict[str, Any] | None = None) -> ChunkedResults:
    """Every analyzer of :data:`STREAMED` over the chunks ``open_chunks()`` yields (called twice
    when the recording has tasks: the load windows' pass)."""
    options = options or {}
    gaps = GapTracker()
    occ = SiteAccumulator(gaps)
    kern, sched, work = KernelStream(), CausedSwitchIn(), WorkloadStream()
    cpu = CpuLoadStream(kern.cores)  # one running-state pass per chunk for the load and the kernel metrics
    ctx, isr, user = ContextSwitchStream(sched), IsrLatencyStream(sched, sites), UserStream(options)
    out = ChunkedResults()
    for ch in ts_aligned(open_chunks()):
        for acc in (gaps, occ, kern, cpu, work, user):
            acc.feed(ch)
        if not is_logic(ch):
            sched.feed(ch.events, out.events)
            ctx.feed(ch)
            isr.feed(ch.events, out.events)
        out.last = ch
        out.events += len(ch)
        out.chunks += 1
        if out.events // RELEASE_EVERY != (out.events - len(ch)) // RELEASE_EVERY:
            release_memory()
    last = out.last
    if last is None:
        raise ValueError("the chunk reader yielded no chunk")
    del acc
    out.site_events = occ.finish(last, sites)
    release_memory()
    w = options.get("CT_LOAD_WINDOW_NS")
    window = int(w) if w else None
    load = kern.load_pass(ts_aligned(open_chunks()), last, window) if kern.switched_in else []
    release_memory()  # the second pass's chunks (measured: 534 MB resident, 24 MB of it live)
    # each analyzer's carried state is dropped once its result is made (its table is spilled
    # inside metrics.spill.spilling), the largest (kernel metrics) last: the finishing peak is
    # one analyzer's, not all of them
    _finish_switches(out, last, sites, options, occ, ctx, isr)
    del ctx, isr, sched
    release_memory()
    _finish_sites(out, last, sites, options, occ, work, user)
    del occ, work, user
    out.results["cpu_load"] = cpu.finish(last, gaps.gaps)
    del cpu
    release_memory()
    out.results["kernel"] = kern.finish(last, gaps.gaps, load)
    del kern, load
    release_memory()
    return out


def _finish_switches(out: ChunkedResults, last: Trace, sites: Sequence[Any], options: dict[str, Any],
                     occ: SiteAccumulator, ctx: ContextSwitchStream, isr: IsrLatencyStream) -> None:
    """``context_switch`` and ``isr_latency`` (a logic capture's: from its site intervals)."""
    if is_logic(last):  # a capture has site intervals only
        with reuse_site_events():
            stub = _stub(last, empty_events(0))
            seed_site_events(stub, sites, out.site_events)
            for name in ("context_switch", "isr_latency"):
                out.results[name] = importlib.import_module(f"analyzers.metrics.{name}").analyze(
                    stub, sites, options)
        return
    n, irq = options.get("CT_NTASKS"), options.get("CT_TEST_IRQ")
    out.results["context_switch"] = ctx.finish(last, sites, occ, out.site_events,
                                               int(n) if n is not None else None)
    out.results["isr_latency"] = isr.finish(out.site_events, int(irq) if irq is not None else None)


def _finish_sites(out: ChunkedResults, last: Trace, sites: Sequence[Any], options: dict[str, Any],
                  occ: SiteAccumulator, work: WorkloadStream, user: UserStream) -> None:
    """The analyzers that read the site occurrences and the few rows kept for them."""
    stub = _stub(last, empty_events(0))
    logs = _stub(last, work.events(last))
    marks = _stub(last, user.events(occ, last))
    with reuse_site_events():
        seed_site_events(stub, sites, out.site_events)
        seed_site_events(logs, sites, out.site_events)
        seed_site_events(marks, sites, out.site_events)
        for name, module in _SITE_ONLY.items():
            out.results[name] = importlib.import_module(module).analyze(stub, sites, options)
        out.results["workload"] = work.finish(logs, sites, options, occ)
        out.results["user_config"] = user.finish(marks, sites, options)


def _stub(last: Trace, events: Any) -> Trace:
    """A trace of ``events`` with the recording's final side tables and meta."""
    return Trace(events, last.meta, tasks=last.tasks, isrs=last.isrs, markers=last.markers,
                 channels=last.channels, strings=last.strings)


def run_analyzers_chunked(open_chunks: Callable[[], Iterable[Trace]], sites: Sequence[Any],
                          options: dict[str, Any]) -> tuple[Any, ChunkedResults]:
    """``analyzers.run.run_analyzers`` over chunks: the same ``SourceResult`` (tables stacked in
    ``ANALYZERS`` order, times in ticks labelled so), and the :class:`ChunkedResults`."""
    from analyzers.run import collect_results

    got = analyze_chunks(open_chunks, sites, options)
    last = got.last
    if last is None:  # analyze_chunks refuses an empty chunk stream already
        raise ValueError("the chunk reader yielded no chunk")
    out = collect_results(last, got.results, has_events=bool(got.events))
    return out, got
