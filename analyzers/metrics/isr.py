"""ISR metrics of ``analyzers.metrics.kernel`` (``isr.<name>.duration``, ``.to_task.<task>``, ``.rate``,
``.nested``) over chunks, rows numbered across the whole recording.

Carried per core: the entries still waiting for their own exit (one per open nesting level: the
ISR stack of ``analyzers.metrics.kstate``, replayed in front of the next chunk, where a reset closes
them); across cores: the entries waiting for the first
ready from interrupt context, and those readies waiting for their task's switch-in. What grows:
per entry 11 int64 columns (88 bytes: the entry, its exit and its kind, its first ISR-context ready and
its task), per ISR-context ready switched to 2 (16 bytes); on disk while spilling (:mod:`.spill`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from trace_parsers.model import CtxType, EventKind, Trace

from .base import (
    Series,
    TableParts,
)
from .kstate import (
    BY_LOSS,
    BY_SWITCH_IN,
    CLOSED_REASONS,
    OPEN,
    isr_entries,
    isr_rows,
)
from .spill import Parts, SortedLookup, append_before
from .stats import DropLog, GapDrops

K = EventKind
_ISR = np.zeros(256, dtype=bool)
_ISR[[K.ISR_ENTER, K.ISR_EXIT, K.ISR_TO_SCHED]] = True


def log_closed(m: str, end: np.ndarray, st: np.ndarray, closed_ts: np.ndarray, core: np.ndarray,
               drop_log: DropLog) -> None:
    """Log the entries closed without their exit (:mod:`.kstate`): one row per entry a switch-in
    closed (the ISR, its entry and the switch-in's time, the core), a count of those a data loss
    closed."""
    why = CLOSED_REASONS[BY_SWITCH_IN]
    for i in np.flatnonzero(end == BY_SWITCH_IN).tolist():
        drop_log.add(f"{m}.duration", why, int(st[i]), int(closed_ts[i]), 1, int(core[i]))
    drop_log.add(f"{m}.duration", CLOSED_REASONS[BY_LOSS], count=int(np.count_nonzero(end == BY_LOSS)))


#: columns of an ISR entry (``IsrStream.entries``); -1 where not known (yet)
_ROW, _TS, _CORE, _IRQ, _DEPTH, _XROW, _XTS, _READY, _RCORE, _RTASK, _XSCHED = range(11)
_W = 11


class IsrStream:
    """Each ISR entry is one column of :attr:`entries`, in row order, with its exit and its first
    ISR-context ready filled in as soon as they are read: in the entry's own chunk, or patched in
    from a later one (:meth:`.spill.Parts.patch`)."""

    def __init__(self, store: Any = None) -> None:
        #: core -> (2, k): global row, column in ``entries`` (-1 until appended) of the entries
        #: without an exit yet
        self.pending: dict[int, np.ndarray] = {}
        #: (2, k): global row, column of the entries waiting for the first ISR-context ready
        self.awaiting = np.zeros((2, 0), np.int64)
        self.unswitched = np.zeros((2, 0), np.int64)  #: ready row, target: waiting for a switch-in
        # what grows (on disk while spilling: .spill.Parts)
        self.entries = Parts(width=_W, store=store)  #: the columns above, 88 bytes per entry
        self.ready_sw = Parts(width=2, store=store)  #: rows: ready row, switch-in ts; in ready-row order
        self.ready_held = np.zeros((2, 0), np.int64)  #: found after a ready still unswitched
        self.readies = 0  #: ISR-context readies
        self.any_switch_in = False

    def feed(self, ev: np.ndarray, kind: np.ndarray, ts: np.ndarray, row0: int) -> None:
        cores = ev["core"]
        isr = _ISR[kind]
        # the cores with ISR events here, and those with entries still open (a reset here closes them)
        single = not cores.any()  # every row on core 0
        here = ({0} if isr.any() else set()) if single else set(np.unique(cores[isr]).tolist())
        todo = here | {c for c, p in self.pending.items() if p.shape[1]}
        blocks = [np.zeros((_W, 0), np.int64)]
        for c in sorted(todo):
            rows = isr_rows(kind, None if single and c == 0 else cores, c)
            blocks.append(self._core(c, kind, ts, rows, ev["ctx_id"], row0))
        block = np.concatenate(blocks, axis=1)
        block = block[:, np.argsort(block[_ROW], kind="stable")]
        self._to_task(ev, kind, ts, row0, block)
        first = self.entries.append(block)
        # the columns of this chunk's entries that still wait, now that they have one
        for arr in [*self.pending.values(), self.awaiting]:
            new = arr[1] < 0
            if new.any():
                arr[1, new] = first + np.searchsorted(block[_ROW], arr[0, new])

    def _core(self, c: int, kind: np.ndarray, ts: np.ndarray, rows: np.ndarray, cid: np.ndarray,
              row0: int) -> np.ndarray:
        """Core ``c``'s new entries (their exits, or what closed them, filled in when in this
        chunk); the carried entries' exits (or closings) found here are patched in. The carried
        entries are replayed as entries in front of the chunk's rows (the ISR stack: one open
        entry per nesting level)."""
        pend = self.pending.get(c, np.zeros((2, 0), np.int64))
        p = pend.shape[1]
        kk = np.concatenate((np.full(p, K.ISR_ENTER, np.uint8), kind[rows]))
        got = isr_entries(kk)
        at = np.concatenate((np.full(p, -1, np.int64), rows))  # chunk row of each replayed index
        end_row = np.where(got.end >= 0, at[np.maximum(got.end, 0)], got.end)
        end_ts = np.where(got.end >= 0, ts[np.maximum(end_row, 0)], -1)
        # 1: the exit went into the scheduler (ISR_TO_SCHED), 0: back to the interrupted context
        to_sched = np.where(got.end >= 0, kk[np.maximum(got.end, 0)] == K.ISR_TO_SCHED, -1).astype(np.int64)
        closed = got.closer >= 0
        end_ts[closed] = ts[at[got.closer[closed]]]  # a closed entry keeps the closing time
        end_row = np.where(end_row >= 0, end_row + row0, end_row)
        old, new = slice(0, p), slice(p, None)
        done = got.end != OPEN
        if done[old].any():
            cols = pend[1, done[old]]
            self.entries.patch(cols, end_row[old][done[old]], row=_XROW)
            self.entries.patch(cols, end_ts[old][done[old]], row=_XTS)
            self.entries.patch(cols, to_sched[old][done[old]], row=_XSCHED)
        ent = rows[got.idx[new] - p]
        g = ent + row0
        block = np.full((_W, g.size), -1, np.int64)
        block[_ROW], block[_TS], block[_CORE] = g, ts[ent], c
        block[_IRQ], block[_DEPTH] = cid[ent], got.depth[new]
        block[_XROW], block[_XTS], block[_XSCHED] = end_row[new], end_ts[new], to_sched[new]
        waiting = np.stack([g[~done[new]], np.full(int(np.count_nonzero(~done[new])), -1, np.int64)])
        self.pending[c] = np.concatenate((pend[:, ~done[old]], waiting), axis=1)
        return block

    def _to_task(self, ev: np.ndarray, kind: np.ndarray, ts: np.ndarray, row0: int,
                 block: np.ndarray) -> None:
        sw_rows = np.flatnonzero(kind == K.TASK_SWITCH_IN)
        self.any_switch_in |= bool(sw_rows.size)
        sw_id = ev["ctx_id"][sw_rows]
        r = np.flatnonzero((kind == K.TASK_READY) & (ev["ctx_type"] == CtxType.ISR))
        self.readies += r.size
        target = ev["target_id"][r].astype(np.int64)
        r_core = ev["core"][r].astype(np.int64)
        rg = r + row0
        # each waiting entry's first ISR-context ready (carried ones patched, new ones filled in)
        aw = self.awaiting
        k = np.searchsorted(rg, aw[0], side="right")
        got = k < rg.size
        if got.any():
            self.entries.patch(aw[1, got], rg[k[got]], row=_READY)
            self.entries.patch(aw[1, got], r_core[k[got]], row=_RCORE)
            self.entries.patch(aw[1, got], target[k[got]], row=_RTASK)
        k = np.searchsorted(rg, block[_ROW], side="right")
        new = k < rg.size
        block[_READY, new], block[_RCORE, new] = rg[k[new]], r_core[k[new]]
        block[_RTASK, new] = target[k[new]]
        waiting = np.stack([block[_ROW, ~new], np.full(int(np.count_nonzero(~new)), -1, np.int64)])
        self.awaiting = np.concatenate((aw[:, ~got], waiting), axis=1)
        # readies (earlier ones waiting, then this chunk's) to their task's next switch-in
        wait = np.concatenate((self.unswitched, np.stack([rg, target])), axis=1)
        left = np.ones(wait.shape[1], bool)
        found = [self.ready_held]
        for t in np.unique(wait[1]).tolist():
            own = sw_rows[sw_id == t] + row0
            sel = np.flatnonzero(wait[1] == t)
            j = np.searchsorted(own, wait[0][sel], side="right")
            ok = j < own.size
            found.append(np.stack([wait[0][sel[ok]], ts[own[j[ok]] - row0]]).astype(np.int64))
            left[sel[ok]] = False
        self.unswitched = wait[:, left]
        self._ready_switch_ins(np.concatenate(found, axis=1))

    def _ready_switch_ins(self, rows: np.ndarray, last: bool = False) -> None:
        """Append to :attr:`ready_sw`, sorted, the readies no still unswitched one precedes."""
        wait = None if last or not self.unswitched.size else int(self.unswitched[0].min())
        self.ready_held = append_before(self.ready_sw, rows, wait)

    def finish(self, last: Trace, gaps: Any, drop_log: Any, span: int, parts: TableParts) -> dict[str, Any]:
        """``_isr_series``' series, handed to ``parts`` one at a time in their order, each made
        batch by batch from the columns it needs (:meth:`_batches`: never whole in memory while
        spilling), and its scalars."""
        n_entries = len(self.entries)
        if not n_entries:
            self.entries.clear()
            return {}
        self._ready_switch_ins(self.ready_held, last=True)
        ready_sw = SortedLookup(self.ready_sw)
        names = {i.number: i.name for i in last.isrs}
        scalars: dict[str, tuple[float, str]] = {}
        irqs = sorted(set().union(*(np.unique(b[0]).tolist() for b in self.irq_batches([_IRQ], None))))
        for n in irqs:
            m = f"isr.{names.get(n, f'irq{n}')}"
            one = None if len(irqs) == 1 else n
            seen = [0, 0]  # entries, nested ones
            parts.add_batches(self._durations(m, one, gaps, drop_log, seen))
            if span > 0:
                scale, unit = (1e9, "per_s") if last.meta.tick_hz else (1.0, "per_tick")
                scalars[f"{m}.rate"] = (seen[0] * scale / span, unit)
            scalars[f"{m}.nested"] = (float(seen[1]), "count")
            if self.readies and self.any_switch_in:
                for task, ids in self._woken(one, last):  # one series per task the ISR woke
                    parts.add_batches(self._isr_to_task(f"{m}.to_task.{task}", one, ids, gaps, drop_log,
                                                        ready_sw))
        self.entries.clear()
        self.ready_sw.clear()
        return scalars

    def exits(self, irq: int) -> Iterator[np.ndarray]:
        """Interrupt ``irq``'s entries a batch at a time, as rows: entry time, its exit's global row
        (else OPEN, BY_SWITCH_IN or BY_LOSS), the exit's (or closing) time, and whether the exit went
        into the scheduler (1, ``ISR_TO_SCHED``; 0 back to the interrupted context, -1 no exit)."""
        return self.irq_batches([_TS, _XROW, _XTS, _XSCHED], irq)

    def irq_batches(self, which: list[int], irq: int | None) -> Iterator[np.ndarray]:
        """Rows ``which`` of the entries (of interrupt ``irq`` only, unless None), a batch of
        columns at a time (:meth:`.spill.Parts.batches`)."""
        for got in self.entries.batches(which + ([] if irq is None else [_IRQ])):
            yield got if irq is None else got[:-1, got[-1] == irq]

    def _durations(self, m: str, irq: int | None, gaps: Any, drop_log: Any,
                   seen: list[int]) -> Iterator[Series]:
        """``.duration``: each entry to its exit; counts the entries and nested ones in ``seen``."""
        no_end, drops = 0, GapDrops(f"{m}.duration", gaps)
        closed = DropLog()  # entries closed without their exit, logged as the whole-trace series does
        by_loss = 0
        for dep, ts, x_row, x_ts, core in self.irq_batches([_DEPTH, _TS, _XROW, _XTS, _CORE], irq):
            seen[0] += ts.size
            seen[1] += int(np.count_nonzero(dep > 1))
            ok = x_row >= 0
            no_end += int(np.count_nonzero(x_row == OPEN))
            by_loss += int(np.count_nonzero(x_row == BY_LOSS))
            log_closed(m, np.where(x_row == BY_LOSS, OPEN, x_row), ts, x_ts, core, closed)  # switch-ins
            st, en, ec = (ts, x_ts, core) if ok.all() else (ts[ok], x_ts[ok], core[ok])
            keep = drops.keep(st, en)
            yield Series(f"{m}.duration", "ns", st[keep], en[keep], (en - st)[keep].astype(float),
                         core=ec[keep])
        drop_log.entries += closed.entries
        drop_log.add(f"{m}.duration", CLOSED_REASONS[BY_LOSS], count=by_loss)
        drop_log.add(f"{m}.duration", "no_end_event", count=no_end)
        drops.log(drop_log)

    def _woken(self, irq: int | None, last: Trace) -> list[tuple[str, np.ndarray]]:
        """The tasks ``irq``'s entries readied (their first ISR-context ready, before the exit, on
        the entry's core): ``(name, task ids)`` in name order (tasks sharing a name: one entry)."""
        ids: set[int] = set()
        for x, r, rc, ec, t in self.irq_batches([_XROW, _READY, _RCORE, _CORE, _RTASK], irq):
            ids.update(np.unique(t[(x >= 0) & (r >= 0) & (r < x) & (rc == ec)]).tolist())
        names = {t.ctx_id: t.name for t in last.tasks}
        by: dict[str, list[int]] = {}
        for i in sorted(ids):
            by.setdefault(names.get(i, f"task#{i}"), []).append(i)
        return [(n, np.array(by[n], np.int64)) for n in sorted(by)]

    def _isr_to_task(self, m: str, irq: int | None, tasks: np.ndarray, gaps: Any, drop_log: Any,
                     ready_sw: SortedLookup) -> Iterator[Series]:
        """``m`` = ``isr.<name>.to_task.<task>``: the entries with an exit whose first ISR-context
        ready (before the exit, on the entry's core) readied one of ``tasks``, to that task's next
        switch-in (``ready_sw``: sorted by row)."""
        no_end, drops = 0, GapDrops(m, gaps)
        for et, ec, x, r, rc, t in self.irq_batches([_TS, _CORE, _XROW, _READY, _RCORE, _RTASK], irq):
            has = (x >= 0) & (r >= 0) & (r < x) & (rc == ec) & np.isin(t, tasks)
            if not has.any():
                continue
            et, ec, r = et[has], ec[has], r[has]
            end = ready_sw(r)
            ok = end >= 0
            no_end += int(np.count_nonzero(~ok))
            st, en = et[ok], end[ok]
            keep = drops.keep(st, en)
            yield Series(m, "ns", st[keep], en[keep], (en - st)[keep].astype(float), core=ec[ok][keep])
        drop_log.add(m, "no_end_event", count=no_end)
        drops.log(drop_log)
