"""The fast conversion (:func:`trace_parsers.tracex.convert.to_trace`: steps of ``CHUNK`` rows,
lookups per run of equal contexts, one gather for kind and flags, each column written once into
an uninitialised array) equals a plain per-event conversion written from the mapping table of the
module docstring, at every step size, on random traces that hit every special row."""

from __future__ import annotations

import numpy as np
import pytest

from trace_parsers.model import CtxType, EventKind, ticks_to_ns
from trace_parsers.tracex import convert
from trace_parsers.tracex import format as fmt
from trace_parsers.tracex.decode import RawTrace, decode_bytes

from .helpers import build_trx, swap_endianness

U = fmt.TX_TRACE_USER_EVENT_START
THREADS = [0x20001000, 0x20002000, 0x20003000]
UNKNOWN = [0x30000000, 0x30000100]  # thread pointers missing from the registry
SITE = min(fmt.CT_SITES)


KNOWN = frozenset(fmt.known_event_ids().tolist())


def _plain_kind(eid: int) -> int:
    special = {fmt.TX_TRACE_THREAD_RESUME: EventKind.TASK_READY,
               fmt.TX_TRACE_THREAD_SUSPEND: EventKind.TASK_BLOCK, fmt.TX_TRACE_ISR_ENTER: EventKind.ISR_ENTER,
               fmt.TX_TRACE_ISR_EXIT: EventKind.ISR_EXIT,
               fmt.TX_TRACE_TIME_SLICE: EventKind.OTHER, fmt.TX_TRACE_RUNNING: EventKind.TRACE_START}
    if eid in special:
        return special[eid]
    if eid >= U:
        return EventKind.MARK if eid - U in fmt.CT_SITES else EventKind.USER
    return EventKind.API_CALL if eid in KNOWN else EventKind.OTHER


def plain(raw: RawTrace, tick_hz: int | None) -> dict:
    """Every column and side-table fact, one event at a time."""
    rec = raw.records()
    first: dict[int, object] = {}
    for o in raw.objects:
        first.setdefault(o.address, o)
    addrs = [o.address for o in raw.threads() if first[o.address] is o]
    prios = [o.registry_priority for o in raw.threads() if first[o.address] is o]
    for a in rec["thread_pointer"].tolist():  # unknown pointers in order of first appearance
        if a not in (fmt.CTX_ISR, fmt.CTX_INIT, 0) and a not in addrs:
            addrs.append(a)
            prios.append(None)
    index: dict[int, int] = {}
    for i, a in enumerate(addrs):
        index.setdefault(a, i)
    cols: dict[str, list[int]] = {k: [] for k in ("kind", "core", "ctx_type", "ctx_id", "target_id",
                                                  "marker", "value", "src_id")}
    first_prio: dict[int, int] = {}
    cores: dict[int, set[int]] = {}
    isrs: set[int] = set()
    unknown: list[int] = []
    for i, r in enumerate(rec.tolist()):
        ctx, prio, rid, _, i1, i2 = r[:6]
        eid, core = rid & 0xFFFF, rid >> 24
        ctype = {fmt.CTX_ISR: CtxType.ISR, fmt.CTX_INIT: CtxType.INIT, 0: CtxType.NONE}.get(ctx, CtxType.TASK)
        cid = index[ctx] if ctype == CtxType.TASK else -1
        if ctype == CtxType.ISR and eid in (fmt.TX_TRACE_ISR_ENTER, fmt.TX_TRACE_ISR_EXIT) and i2 < 1 << 16:
            cid = i2
            isrs.add(i2)
        if ctype == CtxType.TASK:
            first_prio.setdefault(cid, prio & 0x3FF)
            cores.setdefault(cid, set()).add(core)
        kind = _plain_kind(eid)
        if kind == EventKind.OTHER and eid != fmt.TX_TRACE_TIME_SLICE:
            unknown.append(i)
        sched = eid in (fmt.TX_TRACE_THREAD_RESUME, fmt.TX_TRACE_THREAD_SUSPEND)
        for k, v in (("kind", kind), ("core", core), ("ctx_type", ctype), ("ctx_id", cid),
                     ("target_id", index.get(i1, -1) if sched else -1),
                     ("marker", eid - U if kind == EventKind.MARK else 0), ("value", i1), ("src_id", eid)):
            cols[k].append(int(v))
    rel = raw.relative_ticks
    mask = raw.header["timer_valid_mask"]
    origin = int(raw.ts_masked[0]) if raw.direction == "up" else mask - int(raw.ts_masked[0])
    cols["ts_raw"] = (rel + origin).tolist()
    cols["ts"] = (ticks_to_ns(rel, tick_hz) if tick_hz else rel).tolist()
    cols["src_offset"] = (raw.index * 32 + raw.buffer_offset).tolist()
    tasks = [(i, a, p if p is not None else first_prio.get(i, -1),
              next(iter(cores[i])) if len(cores.get(i, ())) == 1 else -1)
             for i, (a, p) in enumerate(zip(addrs, prios))]
    return {"cols": cols, "tasks": tasks, "isrs": sorted(isrs), "unknown": unknown,
            "cores": max((max(c) for c in cores.values()), default=0) + 1}


def _random_trace(seed: int, n: int, *, smp: bool, wrapped: bool, byteorder: str) -> bytes:
    rng = np.random.default_rng(seed)
    ctx_pool = np.array(THREADS + UNKNOWN + [fmt.CTX_ISR, fmt.CTX_INIT], np.uint32)
    runs = rng.integers(1, 12, n)  # contexts in runs of 1..11 events, some steps per event
    ctx = np.repeat(rng.choice(ctx_pool, n, p=[.2, .2, .2, .1, .1, .15, .05]), runs)[:n]
    ids = np.array([69, 68, 1, 2, 3, 4, 5, 6, 77, 3000, U + SITE, U + 500], np.uint32)
    eid = rng.choice(ids, n, p=[.3, .2, .08, .08, .08, .08, .04, .02, .04, .02, .04, .02])
    if smp:
        eid |= rng.integers(0, 3, n).astype(np.uint32) << np.uint32(24)
    i1 = rng.choice(np.array(THREADS + UNKNOWN + [0x40000000], np.uint32), n)  # targets
    i2 = np.where(rng.random(n) < .8, rng.integers(0, 40, n), rng.integers(1 << 16, 1 << 20, n))
    words = np.stack([ctx, rng.integers(0, 1 << 12, n), eid,
                      np.cumsum(rng.integers(1, 900, n)) & 0xFFFFFFFF, i1, i2,
                      rng.integers(0, 1 << 32, n), rng.integers(0, 1 << 32, n)], axis=1).astype(np.uint32)
    objects = [(1, a, f"thread {k}", 0, 0) for k, a in enumerate(THREADS)]
    objects.insert(1, (3, THREADS[2], "queue shadowing thread 2", 0, 0))  # first object wins: unnamed
    objects.append((1, THREADS[0], "duplicate", 0, 0, 0x80, 7))
    data = build_trx(words, objects=objects, cur=n // 3 if wrapped else None)
    return swap_endianness(data) if byteorder == ">" else data


_PLAIN: dict[tuple[int, int | None], dict] = {}  #: plain conversions, shared by the step sizes
CASES = [dict(smp=False, wrapped=False, byteorder="<"), dict(smp=True, wrapped=True, byteorder="<"),
         dict(smp=False, wrapped=True, byteorder=">"), dict(smp=True, wrapped=False, byteorder=">")]


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 1000, convert.CHUNK])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_fast_conversion_equals_plain(monkeypatch: pytest.MonkeyPatch, chunk: int, case: int) -> None:
    raw = decode_bytes(_random_trace(case, 1000, **CASES[case]), "random.trx")
    monkeypatch.setattr(convert, "CHUNK", chunk)
    for tick_hz in (None, 1_000_000, 7_372_800):
        tr = convert.to_trace(raw, tick_hz=tick_hz)
        key = (case, tick_hz)
        want = _PLAIN[key] if key in _PLAIN else _PLAIN.setdefault(key, plain(raw, tick_hz))
        for name, values in want["cols"].items():
            assert tr.events[name].tolist() == values, (name, chunk, tick_hz)
        assert [(t.ctx_id, t.native_handle, t.priority, t.core) for t in tr.tasks] == want["tasks"]
        assert [i.number for i in tr.isrs] == want["isrs"]
        assert tr.meta.cores == want["cores"]
        unk = [d for d in tr.diagnostics if d.code == "TRX_UNKNOWN_ID"]
        assert len(unk) == 1 and unk[0].count == len(want["unknown"])
        assert unk[0].offset == want["cols"]["src_offset"][want["unknown"][0]]
    names = [t.name for t in tr.tasks]
    assert names[1] == "thread 1" and names[2].startswith("Un-named Thread") and names[3:] == [
        f"Un-named Thread 0x{a:08X}" for a in [t.native_handle for t in tr.tasks[3:]]]


def test_plain_reference_sees_a_broken_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison can fail: targets resolved only against the threads known so far (no
    re-lookup once later steps name more threads) differ from the plain conversion."""
    raw = decode_bytes(_random_trace(1, 1000, **CASES[1]), "random.trx")
    monkeypatch.setattr(convert, "CHUNK", 7)
    monkeypatch.setattr(convert._Acc, "resolve", lambda self, ev, threads: None)
    tr = convert.to_trace(raw)
    assert tr.events["target_id"].tolist() != plain(raw, None)["cols"]["target_id"]
