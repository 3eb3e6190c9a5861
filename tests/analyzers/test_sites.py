"""Site table and site occurrences in traces and logic captures."""

from pathlib import Path

import numpy as np

from analyzers import _synth as S
from analyzers.sites import (
    DEFAULT_SITES,
    TRACEX_USER_BASE,
    load_sites,
    logic_site_events,
    parse_ct_sites_h,
    reuse_site_events,
    scoped_site_events,
    site_events,
    trace_site_events,
)
from trace_parsers.model import EventKind, Trace, TraceMeta, empty_events, fill_ts

ROOT = Path(__file__).resolve().parents[2]


def test_builtin_table_equals_ct_sites_h():
    parsed = parse_ct_sites_h((ROOT / "firmware" / "include" / "ct_sites.h").read_text())
    assert parsed, "ct_sites.h has no CT_SITE_TABLE rows"
    assert parsed == DEFAULT_SITES[: len(parsed)]
    assert load_sites() == parsed


def test_run_json_sites_win():
    run = {"sites": [{"id": 7, "name": "ctx.yield", "pin": "PA1", "channel": "D0"}]}
    (s,) = load_sites(run)
    assert (s.id, s.name, s.pin, s.channel_name) == (7, "ctx.yield", "PA1", "D0")


def test_trace_and_logic_see_the_same_occurrences():
    sc = S.ctx_switch(n=20)
    tr, cap = S.to_trace(sc), S.to_capture(sc, offset_ns=0)
    a, b = trace_site_events(tr, DEFAULT_SITES), logic_site_events(cap, DEFAULT_SITES)
    assert a.counts() == b.counts() == {"ctx.yield": 20, "ctx.switch_in": 20}
    np.testing.assert_array_equal(a.times("ctx.yield"), b.times("ctx.yield"))
    # the marker value is the new pin level: it alternates, like the edges
    np.testing.assert_array_equal(a.level["ctx.yield"], b.level["ctx.yield"])
    assert a.level["ctx.yield"][:3].tolist() == [1, 0, 1]


def test_tracex_user_events_are_sites():
    ev = empty_events(3)
    ev["ts_raw"] = [10, 20, 30]
    ev["kind"] = EventKind.USER
    ev["src_id"] = [TRACEX_USER_BASE + 5, TRACEX_USER_BASE + 6, TRACEX_USER_BASE + 99]
    fill_ts(ev, 1_000_000_000)
    se = trace_site_events(Trace(ev, TraceMeta("tracex", tick_hz=1_000_000_000)), DEFAULT_SITES)
    assert se.times("isr.enter").tolist() == [10] and se.times("isr.task_wake").tolist() == [20]


def test_logic_channels_matched_by_pin_name():
    sc = S.periodic(n=5)
    cap = S.to_capture(sc)
    renamed = Trace(cap.events, cap.meta, channels=[c.__class__(c.index, "pg4", 0) for c in cap.channels])
    assert logic_site_events(renamed, DEFAULT_SITES).counts() == {"periodic.fast": 5}


def _left_after(scoped: bool) -> set[str]:
    """Sources the enclosing block still answers after an inner block found ``a`` and ``b`` and
    kept ``a`` (``x`` found before it)."""
    from contextlib import contextmanager

    from analyzers import sites as _sites

    x, a, b = (Trace(empty_events(0), TraceMeta(n)) for n in ("x", "a", "b"))

    @contextmanager
    def plain():  # a nested reuse block: keeps everything
        with reuse_site_events():
            yield lambda tr: None

    with reuse_site_events():
        sx = site_events(x, DEFAULT_SITES)
        with (scoped_site_events() if scoped else plain()) as keep:
            assert site_events(x, DEFAULT_SITES).ts.keys() == sx.ts.keys()
            site_events(a, DEFAULT_SITES), site_events(b, DEFAULT_SITES)
            keep(a)
        return {tr.meta.source_format for tr, _ in _sites._REUSE.get().values()}


def test_a_scoped_block_forgets_what_it_does_not_keep():
    assert _left_after(scoped=True) == {"x", "a"}
    assert _left_after(scoped=False) == {"x", "a", "b"}  # what the check above would see without it


def test_a_scoped_block_shares_the_enclosing_results_and_stands_alone():
    ev = empty_events(2)
    ev["kind"], ev["marker"] = EventKind.MARK, 1
    tr = Trace(ev, TraceMeta("x"))
    with reuse_site_events():
        outer = site_events(tr, DEFAULT_SITES)
        with scoped_site_events():
            inner = site_events(tr, DEFAULT_SITES)
    assert inner.ts["ctx.yield"] is outer.ts["ctx.yield"]
    with scoped_site_events() as keep:  # no enclosing block: one of its own
        a, b = site_events(tr, DEFAULT_SITES), site_events(tr, DEFAULT_SITES)
        keep(tr)
    assert a.ts["ctx.yield"] is b.ts["ctx.yield"]
