"""ISR metrics of ``analyzers.metrics.kernel`` (``isr.<name>.duration``, ``.to_task``, ``.rate``,
``.nested``) over chunks, rows numbered across the whole recording.

Carried per core: the nesting walk (its sum and running minimum) and the entries still waiting
for their own exit (at most the nesting depth); across cores: the entries waiting for the first
ready from interrupt context, and those readies waiting for their task's switch-in. Per entry
8 int64 columns (64 bytes), per ISR-context ready 5 (40 bytes).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trace_parsers.model import CtxType, EventKind, Trace

from .metrics import Series, _isr_exit_rows, drop_gap_instances

K = EventKind


def _cat(parts: list[np.ndarray], width: int) -> np.ndarray:
    return np.concatenate(parts, axis=1) if parts else np.zeros((width, 0), np.int64)


def _lookup(keys: np.ndarray, pairs: np.ndarray, default: int = -1) -> np.ndarray:
    """``pairs[1]`` where ``pairs[0] == keys`` (unique keys), ``default`` where absent."""
    keys = np.asarray(keys, dtype=np.int64)
    if not pairs.shape[1]:
        return np.full(keys.size, default, np.int64)
    order = np.argsort(pairs[0], kind="stable")
    k, v = pairs[0][order], pairs[1][order]
    i = np.minimum(np.searchsorted(k, keys), k.size - 1)
    return np.where(k[i] == keys, v[i], default)


class IsrStream:
    def __init__(self) -> None:
        self.walk: dict[int, list[int]] = {}  #: core -> [sum, running minimum of min(sum, 0)]
        self.pending: dict[int, np.ndarray] = {}  #: core -> global rows of entries without exit yet
        self.entries: list[np.ndarray] = []  #: rows: row, ts, core, irq, floored depth
        self.exits: list[np.ndarray] = []  #: rows: entry row, exit row, exit ts
        self.awaiting = np.zeros(0, np.int64)  #: entry rows waiting for the first ISR-context ready
        self.first_ready: list[np.ndarray] = []  #: rows: entry row, ready row
        self.readies: list[np.ndarray] = []  #: rows: ready row, core, target
        self.unswitched = np.zeros((2, 0), np.int64)  #: ready row, target: waiting for a switch-in
        self.ready_sw: list[np.ndarray] = []  #: rows: ready row, switch-in ts
        self.any_switch_in = False

    def feed(self, ev: np.ndarray, kind: np.ndarray, ts: np.ndarray, row0: int) -> None:
        cores = ev["core"]
        isr = (kind == K.ISR_ENTER) | (kind == K.ISR_EXIT) | (kind == K.ISR_TO_SCHED)
        new_entries = []
        for c in np.unique(cores[isr]).tolist():
            rows = np.flatnonzero(isr & (cores == c))
            new_entries.append(self._core(c, kind, ts, rows, ev["ctx_id"], row0))
        ent = np.sort(np.concatenate(new_entries)) if new_entries else np.zeros(0, np.int64)
        self._to_task(ev, kind, ts, row0, ent)

    def _core(self, c: int, kind: np.ndarray, ts: np.ndarray, rows: np.ndarray, cid: np.ndarray,
              row0: int) -> np.ndarray:
        enter = kind[rows] == K.ISR_ENTER
        s0, m0 = self.walk.get(c, [0, 0])
        s = s0 + np.cumsum(np.where(enter, 1, -1))
        m = np.minimum(m0, np.minimum.accumulate(np.minimum(s, 0)))
        depth = s - m  # nesting depth, never below 0 (the whole-trace walk)
        self.walk[c] = [int(s[-1]), int(m[-1])]
        g = rows[enter] + row0
        irq = cid[rows[enter]].astype(np.int64)
        cols = [g, ts[rows[enter]], np.full(g.size, c), irq, depth[enter]]
        self.entries.append(np.stack(cols).astype(np.int64))
        # own exits: the waiting entries replayed as entries in front of the chunk's rows
        pend = self.pending.get(c, np.zeros(0, np.int64))
        kk = np.concatenate((np.full(pend.size, K.ISR_ENTER, np.uint8), kind[rows]))
        hit = _isr_exit_rows(kk, np.arange(kk.size))
        all_entries = np.concatenate((pend, g))
        found = hit >= 0
        ex_rows = rows[np.maximum(hit[found] - pend.size, 0)]
        self.exits.append(np.stack([all_entries[found], ex_rows + row0, ts[ex_rows]]).astype(np.int64))
        self.pending[c] = all_entries[~found]
        return g

    def _to_task(self, ev: np.ndarray, kind: np.ndarray, ts: np.ndarray, row0: int, ent: np.ndarray) -> None:
        sw_rows = np.flatnonzero(kind == K.TASK_SWITCH_IN)
        self.any_switch_in |= bool(sw_rows.size)
        sw_id = ev["ctx_id"][sw_rows]
        r = np.flatnonzero((kind == K.TASK_READY) & (ev["ctx_type"] == CtxType.ISR))
        target = ev["target_id"][r].astype(np.int64)
        self.readies.append(np.stack([r + row0, ev["core"][r].astype(np.int64), target]))
        waiting = np.concatenate((self.awaiting, ent))
        rg = r + row0
        k = np.searchsorted(rg, waiting, side="right")
        got = k < rg.size
        if got.any():
            self.first_ready.append(np.stack([waiting[got], rg[k[got]]]))
        self.awaiting = waiting[~got]
        # readies (earlier ones waiting, then this chunk's) to their task's next switch-in
        wait = np.concatenate((self.unswitched, np.stack([rg, target])), axis=1)
        left = np.ones(wait.shape[1], bool)
        for t in np.unique(wait[1]).tolist():
            own = sw_rows[sw_id == t] + row0
            sel = np.flatnonzero(wait[1] == t)
            j = np.searchsorted(own, wait[0][sel], side="right")
            ok = j < own.size
            self.ready_sw.append(np.stack([wait[0][sel[ok]], ts[own[j[ok]] - row0]]))
            left[sel[ok]] = False
        self.unswitched = wait[:, left]

    def finish(self, last: Trace, gaps: Any, drop_log: Any, span: int) -> tuple[list[Series], dict[str, Any]]:
        """``_isr_series``' series and scalars."""
        entries, self.entries = _cat(self.entries, 5), []  # finished: the parts go
        if not entries.shape[1]:
            return [], {}
        entries = entries[:, np.argsort(entries[0], kind="stable")]
        row, ets, core, irq, dep = entries
        exits, self.exits = _cat(self.exits, 3), []
        x_row = _lookup(row, exits[[0, 1]])
        x_ts = _lookup(row, exits[[0, 2]])
        del exits
        tables = (_cat(self.readies, 3), _cat(self.first_ready, 2), _cat(self.ready_sw, 2))
        self.readies, self.first_ready, self.ready_sw = [], [], []
        names = {i.number: i.name for i in last.isrs}
        series: list[Series] = []
        scalars: dict[str, tuple[float, str]] = {}
        irqs = np.unique(irq).tolist()
        for n in irqs:
            if len(irqs) == 1:  # one interrupt: its columns as they are (no copies)
                e, x, xt, d, ec, et = row, x_row, x_ts, dep, core, ets
            else:
                sel = irq == n
                e, x, xt, d, ec, et = row[sel], x_row[sel], x_ts[sel], dep[sel], core[sel], ets[sel]
            m = f"isr.{names.get(n, f'irq{n}')}"
            if span > 0:
                scale = 1e9 if last.meta.tick_hz else 1.0
                scalars[f"{m}.rate"] = (e.size * scale / span, "per_s" if last.meta.tick_hz else "per_tick")
            scalars[f"{m}.nested"] = (float(np.count_nonzero(d > 1)), "count")
            ok = x >= 0
            drop_log.add(f"{m}.duration", "no_end_event", count=int(np.count_nonzero(~ok)))
            st, en = et[ok], xt[ok]
            keep = drop_gap_instances(f"{m}.duration", st, en, gaps, drop_log)
            series.append(Series(f"{m}.duration", "ns", st[keep], en[keep], (en - st)[keep].astype(float),
                                 core=ec[ok][keep]))
            series += self._isr_to_task(m, e[ok], x[ok], et[ok], ec[ok], gaps, drop_log, tables)
        return series, scalars

    def _isr_to_task(self, m: str, e: np.ndarray, x: np.ndarray, et: np.ndarray, ec: np.ndarray, gaps: Any,
                     drop_log: Any, tables: tuple[np.ndarray, np.ndarray, np.ndarray]) -> list[Series]:
        readies, first_ready, ready_sw = tables
        if not readies.shape[1] or not self.any_switch_in:
            return []
        r = _lookup(e, first_ready)
        r_core = _lookup(r, readies[[0, 1]], default=-2)
        has = (r >= 0) & (r < x) & (r_core == ec)
        if not has.any():
            return []
        et, ec, r = et[has], ec[has], r[has]
        end = _lookup(r, ready_sw)
        ok = end >= 0
        drop_log.add(f"{m}.to_task", "no_end_event", count=int(np.count_nonzero(~ok)))
        st, en = et[ok], end[ok]
        keep = drop_gap_instances(f"{m}.to_task", st, en, gaps, drop_log)
        return [Series(f"{m}.to_task", "ns", st[keep], en[keep], (en - st)[keep].astype(float),
                       core=ec[ok][keep])]
