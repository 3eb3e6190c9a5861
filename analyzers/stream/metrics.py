"""The one place this package imports the in-memory metric modules it wraps (if they move again,
only this file needs new import lines)."""

from __future__ import annotations

from typing import Any

import numpy as np

from analyzers import user_config as user_metrics
from analyzers.metrics import context_switch as cs_metrics
from analyzers.metrics import isr_latency as isr_metrics
from analyzers.metrics import workload as workload_metrics
from analyzers.metrics.base import (
    Result,
    Series,
    TableParts,
    join_series,
    make_table,
    pair_next,
    site_interval_batches,
    summary_fields,
    with_next,
)
from analyzers.metrics.context_switch import ContextSwitchSummary
from analyzers.metrics.cpu_load import (
    _RELEVANT,
    CpuLoadSummary,
    _charge,
    _load_scalars,
    _owners,
    assemble_load,
    cpu_load,
    is_idle_name,
    state_events,
)
from analyzers.metrics.cpu_load import _series as busy_series
from analyzers.metrics.isr_latency import _first_exit_at_depth
from analyzers.metrics.kernel import (
    DEFAULT_WINDOWS,
    INSTANCE_SERIES,
    PAIR_SERIES,
    CoreTimeline,
    Instances,
    KernelSummary,
    _one_per_metric,
    _without_gaps,
    instance_series,
    kernel_metrics,
    log_closed,
    tracex_scalars,
)
from analyzers.metrics.kstate import (
    BY_LOSS,
    BY_SWITCH_IN,
    CLOSED_REASONS,
    OPEN,
    closed_by,
    count_switches,
    first_exit_at_depth,
    is_loss,
    is_reset,
    isr_entries,
    isr_rows,
    isr_walk,
)
from analyzers.metrics.sched import _BOOKKEEPING
from analyzers.metrics.stats import DropLog, GapDrops, drop_gap_instances, overflow_gaps
from analyzers.sites import (
    TRACEX_USER_BASE,
    SiteEvents,
    _norm,
    channel_index,
    is_logic,
    reuse_site_events,
    site_by_name,
    site_events,
    tick_ns,
)


def as_rows(events: Any) -> np.ndarray:
    """A few kept events as a row table (a chunk holds rows or columns: ``Trace.held()``)."""
    return events if isinstance(events, np.ndarray) else events.to_records()


def seed_site_events(trace: Any, sites: Any, se: SiteEvents) -> None:
    """Inside ``reuse_site_events()``: have ``site_events(trace, sites)`` answer ``se`` (the
    occurrences found in chunks) instead of searching ``trace``'s events."""
    from analyzers import sites as _sites

    memo = _sites._REUSE.get()
    if memo is None:
        raise RuntimeError("seed_site_events needs an enclosing reuse_site_events()")
    memo[(id(trace), tuple(sites))] = (trace, se)

__all__ = [
    "user_metrics", "cs_metrics", "isr_metrics", "workload_metrics", "channel_index",
    "pair_next", "site_interval_batches", "with_next", "TableParts", "ContextSwitchSummary",
    "site_by_name",
    "Result", "Series", "make_table", "summary_fields", "_RELEVANT", "CpuLoadSummary", "_charge",
    "_load_scalars", "_owners", "state_events", "cpu_load", "is_idle_name", "busy_series", "assemble_load",
    "_first_exit_at_depth",
    "closed_by",
    "first_exit_at_depth",
    "is_loss",
    "is_reset",
    "isr_walk", "count_switches", "isr_entries", "isr_rows", "BY_LOSS", "BY_SWITCH_IN", "CLOSED_REASONS",
    "OPEN", "log_closed",
    "DEFAULT_WINDOWS", "CoreTimeline", "KernelSummary", "_without_gaps", "_one_per_metric", "join_series",
    "kernel_metrics",
    "tracex_scalars", "_BOOKKEEPING", "DropLog", "GapDrops", "drop_gap_instances", "overflow_gaps",
    "TRACEX_USER_BASE",
    "SiteEvents", "instance_series", "INSTANCE_SERIES", "PAIR_SERIES", "Instances",
    "_norm", "as_rows", "is_logic", "site_events", "tick_ns", "reuse_site_events", "seed_site_events",
]
