"""VCD (IEEE 1364 value change dump) of a :class:`~.timeline.Timeline` for PulseView and GTKWave.

Signals, 1 bit each, timescale 1 ns on the timeline's axis (the trace clock when there is a trace):
scope ``pins`` (every logic channel, mapped onto the trace clock by the alignment), and per core a
scope ``core<N>`` with ``task_<name>`` (1 while the task runs) and ``isr_<name>`` (1 while the ISR
is active).
Times before 0 (pins seen before the trace started) are folded into the initial value.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from .timeline import Timeline


def _ident(n: int) -> str:
    chars = []
    n += 1
    while n:
        n, r = divmod(n - 1, 94)
        chars.append(chr(33 + r))
    return "".join(chars)


def _clean(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.]+", "_", name).strip("_") or "x"


def signals(tl: Timeline) -> list[tuple[str, int, np.ndarray, np.ndarray]]:
    """``(name, initial, ts, level)`` per signal, changes only, ``ts`` sorted."""
    out = []
    for c in tl.channels:
        out.append((f"pins.{_clean(c.name)}", c.initial, c.ts, c.level.astype(np.int64)))
    groups: dict[str, list[tuple[int, int]]] = {}
    for iv in tl.intervals:
        kind, _, label = iv.track.partition(":")
        if (kind == "task" and iv.name == "running") or kind == "isr":
            groups.setdefault(f"core{iv.core}.{kind}.{_clean(label)}", []).append((iv.start, iv.end))
    for name, ivs in sorted(groups.items()):
        st = np.array([s for s, _ in ivs] + [e for _, e in ivs], dtype=np.int64)
        d = np.array([1] * len(ivs) + [-1] * len(ivs), dtype=np.int64)
        order = np.lexsort((d, st))  # ends before starts at the same time: back-to-back stays 1
        st, d = st[order], d[order]
        level = (np.cumsum(d) > 0).astype(np.int64)
        keep = np.r_[True, st[1:] != st[:-1]]  # last value per timestamp
        keep = np.r_[keep[1:], True]
        st, level = st[keep], level[keep]
        ch = np.r_[True, level[1:] != level[:-1]]
        out.append((name, 0, st[ch], level[ch]))
    return out


def write(tl: Timeline, path: Path, *, date: str = "") -> int:
    """Write the VCD; returns the number of value changes."""
    sigs = signals(tl)
    head = ["$date " + (date or "crosstrace export") + " $end", "$version crosstrace export $end",
            "$timescale 1ns $end", "$scope module crosstrace $end"]
    ids = [_ident(i) for i in range(len(sigs))]
    scopes: dict[str, list[str]] = {}
    for (name, *_), i in zip(sigs, ids):
        scope, _, var = name.partition(".")
        scopes.setdefault(scope, []).append(f"$var wire 1 {i} {var.replace('.', '_')} $end")
    for scope, vars_ in scopes.items():
        head += [f"$scope module {scope} $end", *vars_, "$upscope $end"]
    head += ["$upscope $end", "$enddefinitions $end"]
    changes: list[tuple[int, int, str]] = []
    init = []
    for (_, initial, ts, lv), i in zip(sigs, ids):
        neg = ts < 0
        if neg.any():
            initial = int(lv[neg][-1])
        init.append(f"{int(initial)}{i}")
        changes += [(t, k, f"{v}{i}") for k, (t, v) in enumerate(zip(ts[~neg].tolist(), lv[~neg].tolist()))]
    changes.sort(key=lambda c: (c[0], c[1]))
    lines = head + ["#0", "$dumpvars", *init, "$end"]
    last = 0
    for t, _, text in changes:
        if t != last:
            lines.append(f"#{t}")
            last = t
        lines.append(text)
    Path(path).write_text("\n".join(lines) + "\n", encoding="ascii", errors="replace")
    return len(changes)
