"""The firmware console contract (house style §4.5, firmware/README.md): parse result lines.

>>> line = "CT_RESULT isr.to_task.latency n=200 min=300 mean=304.50 max=310 unit=ticks ts_hz=1000000000"
>>> r = parse_results([line])
>>> r[0]["metric"], r[0]["n"], r[0]["mean_ns"]
('isr.to_task.latency', 200, 304.5)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

#: One ``CT_RESULT`` line; ``ts_hz`` is optional (older firmware).
RESULT_RE = re.compile(
    r"^CT_RESULT\s+(?P<metric>[\w.]+)\s+n=(?P<n>\d+)\s+min=(?P<min>[\d.]+)\s+mean=(?P<mean>[\d.]+)\s+"
    r"max=(?P<max>[\d.]+)\s+unit=(?P<unit>\w+)(?:\s+ts_hz=(?P<ts_hz>\d+))?\s*$"
)
FAIL_RE = re.compile(r"^CT_FAIL\s+(?P<metric>[\w.-]+)\s+(?P<reason>.*)$")
DONE_RE = re.compile(r"^CT_DONE\s+ok=(?P<ok>\d+)\s+fail=(?P<fail>\d+)\s*$")


def _to_ns(v: float, unit: str, ts_hz: int | None) -> float:
    if unit == "ns":
        return v
    if unit in ("ticks", "insn") and ts_hz:
        return v * 1e9 / ts_hz
    return float("nan")


def parse_results(lines: Iterable[str]) -> list[dict[str, Any]]:
    """``CT_RESULT`` lines as dicts with min/mean/max in the line's unit and in ns (when known)."""
    out = []
    for ln in lines:
        m = RESULT_RE.match(ln.strip())
        if not m:
            continue
        hz = int(m["ts_hz"]) if m["ts_hz"] else None
        d: dict[str, Any] = {"metric": m["metric"], "n": int(m["n"]), "unit": m["unit"], "ts_hz": hz}
        for k in ("min", "mean", "max"):
            d[k] = float(m[k])
            d[f"{k}_ns"] = _to_ns(float(m[k]), m["unit"], hz)
        out.append(d)
    return out


def parse_done(lines: Iterable[str]) -> tuple[int, int] | None:
    for ln in lines:
        m = DONE_RE.match(ln.strip())
        if m:
            return int(m["ok"]), int(m["fail"])
    return None
