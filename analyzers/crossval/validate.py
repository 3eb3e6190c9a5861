"""Cross-validation of one trace against one logic capture: align, pair, judge, check completeness."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trace_parsers.errors import AnalysisError
from trace_parsers.model import Trace

from ..sites import Site, SiteEvents, load_sites, reuse_site_events, site_events
from .align import Alignment, align
from .calibration import Calibration
from .completeness import edge_count_problems, missing_sites, site_rows
from .kernel_timing import kernel_vs_pin
from .verdict import TOLERANCE, Agreement, combine, compare_counts, compare_metrics

MAX_PLAUSIBLE_PPM = 1000.0  #: beyond this the trace's tick rate is wrong, not its crystal


@dataclass(frozen=True)
class CrossValidation:
    """Result of :func:`cross_validate`."""

    alignment: Alignment | None
    agreements: tuple[Agreement, ...] = ()
    counts: tuple[dict[str, Any], ...] = ()  #: count scalars: metric, trace, logic, verdict
    pairs: Any = None  #: pyarrow Table of paired instances (metric, instance ids, values, rel diff)
    note: str = ""
    tolerance: float = TOLERANCE
    sites: tuple[dict[str, Any], ...] = ()  #: per-site completeness (and sites seen on one side)
    problems: tuple[str, ...] = ()  #: what makes the result INCOMPLETE besides the metrics
    calibration: Calibration = field(default_factory=Calibration.none)
    kernel_timing: tuple[dict[str, Any], ...] = ()  #: kernel events against the pins

    @property
    def verdict(self) -> str:
        """The worst of the metrics' verdicts, the count checks and the completeness checks (see
        :func:`~analyzers.crossval.verdict.combine`); ``N/A`` when nothing was compared."""
        v = [a.verdict for a in self.agreements] + [c["verdict"] for c in self.counts]
        if self.problems:
            v.append("INCOMPLETE")
        return combine(v)

    def table(self) -> Any:
        import pyarrow as pa

        rows = [a.as_row() for a in self.agreements]
        return pa.Table.from_pylist(rows) if rows else pa.table({"metric": pa.array([], pa.string())})

    def alignment_rows(self) -> list[dict[str, Any]]:
        return list(self.sites)


def _site_problems(rows: list[dict[str, Any]]) -> list[str]:
    return [r["problem"] for r in rows if r.get("problem")]


def cross_validate(
    trace: Trace | None,
    capture: Trace | None,
    *,
    sites: Sequence[Site] | None = None,
    trace_table: Any = None,
    logic_table: Any = None,
    trace_scalars: dict[str, tuple[float, str]] | None = None,
    logic_scalars: dict[str, tuple[float, str]] | None = None,
    tolerance: float = TOLERANCE,
    calibration: Calibration | None = None,
    declared_edges: Mapping[str, int] | None = None,
    capture_edges: Mapping[str, int] | None = None,
) -> CrossValidation:
    """Align, pair and judge. With either side missing the result is empty (not an error).

    ``trace_table``/``logic_table`` are the stacked per-instance tables of the analyzers; when not
    given they are computed here with every analyzer of :mod:`analyzers.run`. ``calibration`` is
    the declared per-site calibration (none by default); ``declared_edges`` the edge count per
    channel that the capture's run.json states; ``capture_edges`` the edges per channel when they
    were counted while reading the capture in chunks (``capture`` then holds only the gathered rows,
    its site occurrences seeded in the enclosing ``reuse_site_events()``).
    """
    sites = tuple(sites) if sites is not None else load_sites()
    cal = calibration or Calibration.none()
    if trace is None or capture is None:
        return CrossValidation(None, note="trace-only capture" if capture is None else "capture-only")
    with reuse_site_events():  # the analyzers' site occurrences are also the alignment's
        if trace_table is None or logic_table is None:
            from ..run import run_analyzers

            tr = run_analyzers(trace, sites, {})
            lg = run_analyzers(capture, sites, {})
            trace_table, logic_table = tr.table, lg.table
            trace_scalars, logic_scalars = tr.scalars, lg.scalars
        tse: SiteEvents = site_events(trace, sites)
        lse: SiteEvents = site_events(capture, sites)
    problems = edge_count_problems(capture, declared_edges, capture_edges)
    missing = missing_sites(tse, lse)
    try:
        al = align(tse, lse)
    except AnalysisError as e:
        problems += _site_problems(missing)
        return CrossValidation(
            None, note=str(e), sites=tuple(missing), problems=tuple(problems), calibration=cal
        )
    agreements, pairs = compare_metrics(trace_table, logic_table, al, tolerance, cal, (tse, lse))
    counts = compare_counts(trace_scalars or {}, logic_scalars or {})
    rows = site_rows(al, tse, lse) + missing
    problems += _site_problems(rows)
    note = ""
    if abs(al.drift_ppm) > MAX_PLAUSIBLE_PPM:
        note = (
            f"the trace clock runs {al.drift_ppm:+.0f} ppm against the analyzer: more than any crystal "
            "explains — check the trace's tick rate (tick_hz)"
        )
    return CrossValidation(
        al,
        tuple(agreements),
        tuple(counts),
        pairs,
        note=note,
        tolerance=tolerance,
        sites=tuple(rows),
        problems=tuple(problems),
        calibration=cal,
        kernel_timing=tuple(kernel_vs_pin(trace, al, tse, lse, sites)),
    )
