"""Test-only writers for VCD, Saleae CSV and Saleae binary exports (the .sr writer is public:
``trace_parsers.sigrok.writer.write_sr``).  Edges are given per channel as sorted tick indices where
the level toggles, plus the initial levels — the same contract as ``write_sr``."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path

import numpy as np


def _changes(initial: Sequence[int], edges: Sequence[np.ndarray]) -> list[tuple[int, list[tuple[int, int]]]]:
    """[(tick, [(channel, new_level), ...]), ...] in time order."""
    events: dict[int, list[tuple[int, int]]] = {}
    for ch, (lvl, e) in enumerate(zip(initial, edges)):
        for k, t in enumerate(np.asarray(e).tolist()):
            events.setdefault(int(t), []).append((ch, lvl ^ ((k + 1) & 1)))
    return sorted(events.items())


def write_vcd(path: Path, names: Sequence[str], initial: Sequence[int], edges: Sequence[np.ndarray],
              total: int, timescale: str = "1 ns", dumpvars: bool = True) -> None:
    ids = [chr(33 + i) if i < 94 else chr(33 + i // 94) + chr(33 + i % 94) for i in range(len(names))]
    out = ["$date today $end", "$version crosstrace test writer $end", f"$timescale {timescale} $end",
           "$scope module top $end"]
    out += [f"$var wire 1 {i} {n} $end" for i, n in zip(ids, names)]
    out += ["$upscope $end", "$enddefinitions $end"]
    if dumpvars:
        out += ["$dumpvars"] + [f"{v}{i}" for v, i in zip(initial, ids)] + ["$end"]
    out.append("#0 " + " ".join(f"{v}{i}" for v, i in zip(initial, ids)))
    for t, chg in _changes(initial, edges):
        out.append(f"#{t} " + " ".join(f"{lvl}{ids[ch]}" for ch, lvl in chg))
    out.append(f"#{total}")
    Path(path).write_text("\n".join(out) + "\n")


def _fmt_seconds(ns: int) -> str:
    sign = "-" if ns < 0 else ""
    q, r = divmod(abs(ns), 1_000_000_000)
    return f"{sign}{q}.{r:09d}"


def write_saleae_csv(path: Path, names: Sequence[str], initial: Sequence[int],
                     edges: Sequence[np.ndarray], total_ns: int, start_ns: int = 0) -> None:
    """Logic 2 digital CSV: one row per change time, first row = initial state, final repeated row."""
    lvl = list(initial)
    rows = [f"Time [s],{','.join(names)}", f"{_fmt_seconds(start_ns)},{','.join(map(str, lvl))}"]
    for t, chg in _changes(initial, edges):
        for ch, v in chg:
            lvl[ch] = v
        rows.append(f"{_fmt_seconds(start_ns + t)},{','.join(map(str, lvl))}")
    rows.append(f"{_fmt_seconds(start_ns + total_ns)},{','.join(map(str, lvl))}")
    Path(path).write_text("\n".join(rows) + "\n")


def write_saleae_binary_v0(path: Path, initial: int, times_s: np.ndarray, begin: float, end: float) -> None:
    t = np.asarray(times_s, dtype="<f8")
    hdr = b"<SALEAE>" + struct.pack("<ii", 0, 0) + struct.pack("<IddQ", initial, begin, end, t.size)
    Path(path).write_bytes(hdr + t.tobytes())


def write_saleae_binary_v1(path: Path, chunks: Sequence[tuple[int, float, float, float, np.ndarray]]) -> None:
    """chunks: (initial_state, sample_rate, begin, end, transition times)."""
    out = [b"<SALEAE>", struct.pack("<ii", 1, 0), struct.pack("<Q", len(chunks))]
    for init, rate, begin, end, t in chunks:
        t = np.asarray(t, dtype="<f8")
        out.append(struct.pack("<IdddQ", init, rate, begin, end, t.size))
        out.append(t.tobytes())
    Path(path).write_bytes(b"".join(out))
