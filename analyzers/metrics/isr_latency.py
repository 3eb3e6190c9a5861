"""Interrupt latency: ISR entry until the woken task runs, and ISR duration.

Metrics:

- ``isr.to_task.latency`` — site ``isr.enter`` (first instruction of the test ISR) to the next site
  ``isr.task_wake`` (the woken task's first instruction after its wait). Both sources;
  cross-validated.
- ``isr.to_task.switch_in`` — trace only: kernel ``ISR_ENTER`` of the test IRQ to the
  ``TASK_SWITCH_IN`` its exit into the scheduler (``ISR_TO_SCHED``) caused on the same core.
- ``isr.duration`` — trace only: ``ISR_ENTER`` to the next ``ISR_EXIT``/``ISR_TO_SCHED`` of the test
  IRQ (``irq``; by default the IRQ that was running when the ``isr.enter`` site fired, or the
  trace's only IRQ). Without a test IRQ there is none: every interrupt's own duration is a kernel metric
  (``isr.<name>.duration``, :mod:`analyzers.metrics.kernel`), never all of them pooled.

One reducer (:class:`IsrLatencyStream`) over a recording's chunks, a whole recording being one chunk
(:func:`isr_to_task_latency`). The test IRQ is known only at the end; every ISR entry's own exit (or
what closed it without one) comes from the kernel metrics' ISR entries (:class:`.isr.IsrStream`, the
kernel-state rules of :mod:`.kstate`: per core, an OVERFLOW or a switch-in closes the open ISRs), read
here, never paired a second way. A logic capture has only its site intervals (:func:`analyze`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from trace_parsers.model import CtxType, EventKind, Trace

from ..sites import SiteEvents, is_logic, load_sites, site_by_name, site_events
from .base import (
    Result,
    Series,
    Summary,
    TableParts,
    make_table,
    site_interval,
    site_interval_batches,
    summary_fields,
)
from .isr import IsrStream
from .kstate import CLOSED_REASONS
from .occurrences import GapTracker, SiteAccumulator
from .sched import NONE, CausedSwitchIn
from .spill import SortedLookup
from .stats import DropLog, GapDrops

LATENCY = "isr.to_task.latency"
SWITCH_IN = "isr.to_task.switch_in"
DURATION = "isr.duration"
METRICS = (LATENCY, SWITCH_IN, DURATION)


@dataclass(frozen=True)
class IsrSummary(Summary):
    irq: int | None = None


def isr_to_task_latency(
    trace: Trace, *, sites: Sequence[Any] | None = None, irq: int | None = None
) -> Result:
    """ISR-to-task latency and ISR duration of a whole trace or logic capture."""
    sites = tuple(sites) if sites is not None else load_sites()
    if is_logic(trace):
        return analyze(trace, sites, {})
    gaps = GapTracker()
    occ, sched, entries = SiteAccumulator(gaps), CausedSwitchIn(), IsrStream()
    isr = IsrLatencyStream(sched, sites, entries)
    gaps.feed(trace)
    occ.feed(trace)
    ev = trace.held()
    sched.feed(ev, 0)
    if len(ev):
        entries.feed(ev, ev["kind"], ev["ts"].astype(np.int64, copy=False), 0)
    isr.feed(ev, 0)
    return isr.finish(occ.finish(trace, sites), irq)


def analyze(trace: Trace, sites: Sequence[Any], options: dict[str, Any], store: Any = None) -> Result:
    """A logic capture's ISR latency: its site intervals (a trace's: :class:`IsrLatencyStream`);
    ``store``: the source's spill, or None (in memory)."""
    if not is_logic(trace):
        raise ValueError("a trace's ISR latency comes from IsrLatencyStream (isr_to_task_latency)")
    drop_log = DropLog()
    s, _ = site_interval(LATENCY, site_events(trace, sites), "isr.enter", "isr.task_wake", drop_log)
    series = [s] if len(s) else []
    return Result(make_table(series, "logic", store),
                  IsrSummary(source="logic", **summary_fields(series, drop_log)))


K = EventKind


class IsrLatencyStream:
    """The test IRQ's ISR metrics over chunks: :meth:`feed` counts what picks the test IRQ; the
    entries and their exits are ``entries``' (the kernel metrics' :class:`.isr.IsrStream`, fed by
    its owner before this stream, finished after it)."""

    def __init__(self, sched: CausedSwitchIn, sites: Sequence[Any], entries: IsrStream,
                 store: Any = None) -> None:
        self.sched = sched
        self.store = store  #: the source's spill (:class:`.spill.Spill`), or None: in memory
        self.entries = entries
        s = site_by_name(sites, "isr.enter")
        self.enter_site = None if s is None else s.id
        self.running_at_site: Counter[int] = Counter()  #: IRQ -> isr.enter marks while it ran
        self.irqs: set[int] = set()  #: every IRQ with an ISR_ENTER
        self.exits = 0
        self.events = 0

    def feed(self, ev: np.ndarray, row0: int) -> None:
        self.events += len(ev)
        kind = np.ascontiguousarray(ev["kind"])
        if self.enter_site is not None:
            m = (kind == K.MARK) & (ev["marker"] == self.enter_site) & (ev["ctx_type"] == CtxType.ISR)
            self.running_at_site.update(ev["ctx_id"][m].tolist())
        self.irqs.update(np.unique(ev["ctx_id"][kind == K.ISR_ENTER]).tolist())
        self.exits += int(np.count_nonzero((kind == K.ISR_EXIT) | (kind == K.ISR_TO_SCHED)))

    def _irq(self, irq: int | None) -> int | None:
        if irq is None and self.running_at_site:
            vals = sorted(self.running_at_site)
            cnt = [self.running_at_site[v] for v in vals]
            irq = int(vals[int(np.argmax(cnt))])
        if irq is None and len(self.irqs) == 1:
            irq = int(next(iter(self.irqs)))
        return irq

    def finish(self, se: SiteEvents, irq: int | None) -> Result:
        """The recording's result (each series made into its table part and statistics before
        the next is made)."""
        drop_log = DropLog()
        parts = TableParts("trace", self.store)
        parts.add_batches(site_interval_batches(LATENCY, se, "isr.enter", "isr.task_wake", drop_log))
        if self.events:
            irq = self._irq(irq)
            self._durations(parts, se, irq, drop_log)
        summary = IsrSummary(source="trace", irq=irq, **parts.summary_fields(drop_log))
        return Result(parts.table(), summary)

    def _durations(self, parts: TableParts, se: SiteEvents, irq: int | None, drop_log: DropLog) -> None:
        """``.duration`` of the test IRQ's entries, and the switch-in each exit into the
        scheduler caused: each series made batch by batch from the entries (never whole in
        memory while spilling: :meth:`.spill.Parts.batches`)."""
        if irq is not None and self.exits:
            parts.add_batches(self._duration_batches(se, irq, drop_log))
            parts.add_batches(self._switch_in_batches(se, irq, drop_log, self.sched.lookup()))

    def _mine(self, irq: int, drop_log: DropLog | None = None) -> Iterator[np.ndarray]:
        """ts, exit row, exit ts, exit is to-sched (rows) of the test IRQ's entries with an exit,
        a batch at a time; with ``drop_log``, the entries without one are logged there
        (``no_end_event``, in entry order; those a switch-in or a data loss closed, by that reason)."""
        for st, xr, xt, xs in self.entries.exits(irq):
            found = xr >= 0
            if drop_log is not None:
                for t, why in zip(st[~found].tolist(), xr[~found].tolist()):
                    drop_log.add(DURATION, CLOSED_REASONS.get(why, "no_end_event"), int(t), -1)
            yield np.stack([st, xr, xt, xs]) if found.all() else np.stack([st, xr, xt, xs])[:, found]

    def _duration_batches(self, se: SiteEvents, irq: int, drop_log: DropLog) -> Iterator[Series]:
        drops = GapDrops(DURATION, se.gaps)
        for st, _xr, en, _sched in self._mine(irq, drop_log):
            keep = drops.keep(st, en)
            yield Series(DURATION, "ns", st[keep], en[keep], (en - st)[keep].astype(np.float64))
        drops.log(drop_log)

    def _switch_in_batches(self, se: SiteEvents, irq: int, drop_log: DropLog,
                           caused: SortedLookup) -> Iterator[Series]:
        no_end, drops = 0, GapDrops(SWITCH_IN, se.gaps)
        for st, xr, _en, sched in self._mine(irq):
            sched = sched == 1
            if not sched.any():
                continue
            s0 = st[sched]
            sw = caused(xr[sched], default=NONE)
            ok = sw != NONE
            no_end += int(np.count_nonzero(~ok))
            s0, s1 = s0[ok], sw[ok]
            keep = drops.keep(s0, s1)
            yield Series(SWITCH_IN, "ns", s0[keep], s1[keep], (s1 - s0)[keep].astype(np.float64))
        drop_log.add(SWITCH_IN, "no_end_event", count=no_end)
        drops.log(drop_log)
