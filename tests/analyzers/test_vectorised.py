"""The vectorised analyzer internals agree with straightforward loop versions on random input.

Each reference below is the per-event loop the vectorised code replaced (kept here as the
specification); random event sequences exercise nesting, unmatched exits, OVERFLOW resets,
unknown ids, windows and duplicate keys.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from analyzers._uart import decode_edge_blocks, decode_edges
from analyzers.crossval import _match_pairs
from analyzers.crossval.align import Alignment, _pair_nearest
from analyzers.metrics.base import Series, make_table
from analyzers.metrics.cpu_load import IDLE_NAMES, cpu_load
from analyzers.sites import DEFAULT_SITES, reuse_site_events, site_events
from trace_parsers.model import EventKind, Isr, Task, Trace, TraceMeta, empty_events

K = EventKind


def _busy_loop(trace: Trace, w0: int, w1: int) -> dict[str, int]:
    """cpu_load's attribution, one event at a time (docs/methodology.md "Kernel state")."""
    names = {t.ctx_id: t.name for t in trace.tasks}
    isr_names = {i.number: i.name for i in trace.isrs}
    idle_ids = {cid for cid, n in names.items() if n.strip().lower() in IDLE_NAMES}
    busy: dict[str, int] = {}
    cur, stack, last = "unknown", [], w0
    ev = trace.events
    for i, (k, cid, t) in enumerate(zip(ev["kind"].tolist(), ev["ctx_id"].tolist(), ev["ts"].tolist())):
        t_c = min(max(t, w0), w1)
        # the time up to a data loss or a restart is unknown, whatever ran
        lost = k == K.OVERFLOW or (k == K.TRACE_START and i > 0)
        owner = "unknown" if lost else stack[-1] if stack else cur
        if t_c > last:
            busy[owner] = busy.get(owner, 0) + (t_c - last)
        last = max(last, t_c)
        if k == K.TASK_SWITCH_IN:
            stack = []  # closes the ISRs still open
            cur = "idle" if cid in idle_ids else f"task.{names.get(cid, f'task#{cid}')}"
        elif k == K.IDLE:
            cur = "idle"
        elif k == K.TASK_SWITCH_OUT:
            cur = "idle" if not stack else cur
        elif k == K.ISR_ENTER:
            stack.append(f"isr.{isr_names.get(cid, f'irq{cid}')}")
        elif k in (K.ISR_EXIT, K.ISR_TO_SCHED):
            if stack:
                stack.pop()
        elif lost:
            cur, stack = "unknown", []
    if w1 > last:
        owner = stack[-1] if stack else cur
        busy[owner] = busy.get(owner, 0) + (w1 - last)
    return busy


def _random_trace(rng: np.random.Generator, n: int) -> Trace:
    kinds = [K.TASK_SWITCH_IN, K.TASK_SWITCH_OUT, K.ISR_ENTER, K.ISR_EXIT, K.ISR_TO_SCHED, K.IDLE,
             K.OVERFLOW, K.TRACE_START, K.MARK, K.API_CALL]
    ev = empty_events(n)
    ev["kind"] = rng.choice(kinds, n, p=rng.dirichlet(np.ones(len(kinds))))
    ev["ctx_id"] = rng.integers(-1, 5, n)
    ev["ts"] = np.sort(rng.integers(0, 1000, n))
    tasks = [Task(0, "a"), Task(1, "IDLE"), Task(2, "Tmr Svc")][: int(rng.integers(0, 4))]
    isrs = [Isr(3, "T"), Isr(0, "S")][: int(rng.integers(0, 3))]
    return Trace(ev, TraceMeta("systemview"), tasks=tasks, isrs=isrs)


@pytest.mark.parametrize("seed", range(4))
def test_cpu_load_matches_the_event_loop(seed):
    rng = np.random.default_rng(seed)
    for _ in range(250):
        tr = _random_trace(rng, int(rng.integers(1, 60)))
        window = None
        if rng.random() < 0.3:
            window = tuple(sorted(rng.integers(-100, 1100, 2).tolist()))
        got = cpu_load(tr, window=window).summary
        if not got.busy_ns and not got.window_ns:
            continue  # no scheduling events: nothing attributed
        ts = tr.events["ts"]
        w0, w1 = window or (int(ts[0]), int(ts[-1]))
        want = _busy_loop(tr, w0, w1)
        assert got.busy_ns == want


def test_match_pairs_is_the_dict_lookup():
    rng = np.random.default_rng(0)
    for _ in range(500):
        n, m = int(rng.integers(0, 30)), int(rng.integers(0, 30))
        start, end = rng.integers(-1, 6, m), rng.integers(-1, 6, m)
        qs, qe, ok = rng.integers(-1, 8, n), rng.integers(-1, 8, n), rng.random(n) < 0.8
        table = {(a, b): i for i, (a, b) in enumerate(zip(start.tolist(), end.tolist()))}
        want = [(i, table[(a, b)]) for i, (a, b, y) in enumerate(zip(qs.tolist(), qe.tolist(), ok)) if y
                and (a, b) in table]
        qi, ri = _match_pairs(qs, qe, ok, start, end)
        assert list(zip(qi.tolist(), ri.tolist())) == want


def test_map_indices_is_map_index():
    rng = np.random.default_rng(1)
    for _ in range(200):
        it = rng.integers(0, 20, int(rng.integers(0, 15)))
        if rng.random() < 0.5:
            it = np.unique(it)
        il = rng.integers(0, 50, it.size)
        al = Alignment(0.0, 1.0, it.size, pairs={"s": (it, il)})
        idx = rng.integers(-1, 22, 30)
        d = al.map_index("s")
        got, ok = al.map_indices("s", idx)
        assert ok.tolist() == [i in d for i in idx.tolist()]
        assert got[ok].tolist() == [d[i] for i in idx[ok].tolist()]


def _pair_nearest_loop(t, e, pred, q):
    """_pair_nearest's one-to-one and monotonic steps, without the fast path."""
    j = np.clip(np.searchsorted(e, pred), 1, e.size - 1)
    j = np.where(np.abs(e[j - 1] - pred) <= np.abs(e[j] - pred), j - 1, j)
    gap = np.diff(e)
    spacing = np.minimum(np.append(gap, np.inf)[j], np.insert(gap, 0, np.inf)[j])
    res = e[j] - pred
    ok = np.abs(res) <= np.maximum(0.45 * spacing, 3 * q)
    it, jl = np.flatnonzero(ok), j[ok]
    best: dict[int, tuple[float, int]] = {}
    for i, jj, r in zip(it.tolist(), jl.tolist(), np.abs(res[ok]).tolist()):
        if jj not in best or r < best[jj][0]:
            best[jj] = (r, i)
    pairs = sorted((i, jj) for jj, (_, i) in best.items())
    # monotonic: drop a pair whose edge is not after the previous pair's (dropped or not)
    out = [p for k, p in enumerate(pairs) if k == 0 or p[1] > pairs[k - 1][1]]
    return [p[0] for p in out], [p[1] for p in out]


def test_pair_nearest_one_to_one_and_monotonic():
    rng = np.random.default_rng(2)
    for _ in range(1000):
        e = np.sort(rng.random(int(rng.integers(2, 30))) * 100)
        t = np.sort(rng.random(int(rng.integers(1, 30))) * 100)
        pred = t + rng.normal(0, float(rng.choice([0.1, 3.0, 20.0])), t.size)
        q = float(rng.choice([0.01, 1.0, 5.0]))
        it, jl = _pair_nearest(t, e, pred, q)
        assert (it.tolist(), jl.tolist()) == _pair_nearest_loop(t, e, pred, q)


def _uart_loop(ts, lv, initial_level, baud, data_bits=8):
    bit = 1e9 / baud
    out, starts, errors = bytearray(), [], 0
    if ts.size == 0:
        return b"", [], 0

    def level_at(t):
        i = int(np.searchsorted(ts, t, side="right")) - 1
        return int(initial_level) if i < 0 else int(lv[i])

    falls = np.flatnonzero(lv == 0)
    k = 0
    while k < falls.size:
        t0 = float(ts[falls[k]])
        byte = sum(1 << b for b in range(data_bits) if level_at(t0 + (b + 1.5) * bit))
        errors += not level_at(t0 + (data_bits + 1.5) * bit)
        out.append(byte)
        starts.append(int(t0))
        k = int(np.searchsorted(ts[falls], t0 + (data_bits + 1.5) * bit, side="right"))
    return bytes(out), starts, errors


def test_uart_decode_matches_the_byte_loop():
    rng = np.random.default_rng(3)
    for _ in range(500):
        n = int(rng.integers(0, 80))
        baud = int(rng.choice([9600, 115200]))
        bit = int(1e9 / baud)
        ts = np.cumsum(rng.integers(1, 4, n) * bit + rng.integers(-50, 50, n)).astype(np.int64)
        lv = (np.arange(n) + int(rng.integers(0, 2))) % 2 if rng.random() < 0.7 else rng.integers(0, 2, n)
        init, db = int(rng.integers(0, 2)), int(rng.choice([7, 8]))
        data, starts, errors = decode_edges(ts, lv, init, baud, db)
        assert (data, starts.tolist(), errors) == _uart_loop(ts, lv, init, baud, db)


def test_make_table_stacks_series_in_order():
    s1 = Series("a", "ns", np.array([1, 2]), np.array([3, 4]), np.array([2.0, 2.0]), "x", np.array([0, 1]))
    s0 = Series("empty", "ns", np.zeros(0), np.zeros(0), np.zeros(0))
    s2 = Series("b", "pct", np.array([5]), np.array([6]), np.array([1.5]), end_site="y",
                end_idx=np.array([7]))
    t = make_table([s1, s0, s2], "logic")
    assert t.column("metric").to_pylist() == ["a", "a", "b"]
    assert t.column("source").to_pylist() == ["logic"] * 3
    assert t.column("instance").to_pylist() == [0, 1, 0]
    assert t.column("start_site").to_pylist() == ["x", "x", ""]
    assert t.column("start_idx").to_pylist() == [0, 1, -1]
    assert t.column("end_idx").to_pylist() == [-1, -1, 7]
    assert make_table([], "trace").num_rows == 0
    assert make_table([], "trace").schema == t.schema


def test_reused_site_events_are_shared_and_read_only():
    ev = empty_events(3)
    ev["kind"] = [K.MARK, K.MARK, K.USER]
    ev["marker"] = [1, 2, 0]
    ev["src_id"] = [0, 0, 4096 + 1]
    ev["ts"] = [10, 20, 30]
    tr = Trace(ev, TraceMeta("x"))
    fresh = site_events(tr, DEFAULT_SITES)
    with reuse_site_events():
        a = site_events(tr, DEFAULT_SITES)
        b = site_events(tr, DEFAULT_SITES)
    assert a.ts["ctx.yield"] is b.ts["ctx.yield"] and not a.ts["ctx.yield"].flags.writeable
    assert a.ts.keys() == fresh.ts.keys()
    assert all(np.array_equal(a.ts[k], fresh.ts[k]) for k in fresh.ts)
    assert dataclasses.replace(a, ts={}, level={}) == dataclasses.replace(fresh, ts={}, level={})
    assert site_events(tr, DEFAULT_SITES).ts["ctx.yield"].flags.writeable  # outside: fresh again


def _random_line(rng: np.random.Generator, n: int, baud: int) -> tuple[np.ndarray, np.ndarray]:
    bit = int(1e9 / baud)
    ts = np.cumsum(rng.integers(1, 4, n) * bit + rng.integers(-50, 50, n)).astype(np.int64)
    lv = (np.arange(n) + int(rng.integers(0, 2))) % 2 if rng.random() < 0.7 else rng.integers(0, 2, n)
    return ts, lv


def _split(rng: np.random.Generator, ts: np.ndarray, lv: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    cuts = np.sort(rng.integers(0, ts.size + 1, int(rng.integers(0, 6))))
    return list(zip(np.split(ts, cuts), np.split(lv, cuts)))


def test_uart_decode_in_blocks_equals_the_whole_decode():
    """Blocks cut anywhere (inside a byte, between a byte's edges and its stop bit, empty blocks)
    decode to what the whole edge list does: bytes, start times and framing errors."""
    rng = np.random.default_rng(11)
    for _ in range(800):
        baud = int(rng.choice([9600, 115200]))
        ts, lv = _random_line(rng, int(rng.integers(0, 120)), baud)
        init, db = int(rng.integers(0, 2)), int(rng.choice([7, 8]))
        want = decode_edges(ts, lv, init, baud, db)
        for _ in range(3):
            got = decode_edge_blocks(_split(rng, ts, lv), init, baud, db)
            assert (got[0], got[1].tolist(), got[2]) == (want[0], want[1].tolist(), want[2])


def test_uart_blocks_decoded_alone_differ():
    """The fault the carry prevents: each block decoded on its own (a byte cut by a block border,
    a block starting inside a byte) does not give the whole decode's bytes."""
    rng = np.random.default_rng(12)
    differ = 0
    for _ in range(200):
        ts, lv = _random_line(rng, 100, 115200)
        want = decode_edges(ts, lv, 1, 115200)
        alone = b"".join(decode_edges(t, v, 1, 115200)[0] for t, v in _split(rng, ts, lv))
        differ += alone != want[0]
        got = decode_edge_blocks(_split(rng, ts, lv), 1, 115200)
        assert got[0] == want[0]
    assert differ > 50
