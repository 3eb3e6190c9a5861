"""Logic-capture benchmarks: `.sr` edge extraction against `sigrok-cli -i FILE -O vcd`.

Target (issue 6): at least 2x faster than sigrok-cli on the 30-minute DCF77 capture
(`dcf77_1800s_1mhz_v1.sr`, 1.8 G samples, 1.76 MB zip -> 1.8 GB inflated) at <= 256 MB peak RSS.
Every figure comes from its own fresh interpreter (one read per process, best of `REPEAT`
processes): the read call's time, the whole process's wall time (compared with sigrok-cli's whole
process) and the peak RSS as `VmHWM` (``ru_maxrss`` would report the parent's peak: a forked child
inherits it across exec, which made every file show the same figure).  The corpus is
`../shared/corpus/logic` beside the repository (or `$CROSSTRACE_CORPUS/logic`).

Long capture (issue 18): a synthetic 10 G-sample `.sr` (`$CROSSTRACE_BENCH_LOGIC_SAMPLES` changes the
size) is generated in a temporary folder, never committed: 8 channels at 100 MS/s, bursts of edges on
4 of them averaging one edge per ~1,000 samples (a UART/SPI-like density between the corpus's SPI and
UART captures), written member by member (4 MiB `logic-1-N` entries; 16 distinct payloads compressed
once and cycled, so generating it costs seconds).  Each of these runs in its own fresh process, under
an address-space limit (`RLIMIT_AS`, like `prlimit --as`) and a timeout: inflating only (the floor of
any reader), the chunked reader (`trace_parsers.sigrok.chunks.iter_chunks`, target <= 512 MB peak),
the whole reader (`read_sigrok`; refuses beyond its edge limit), `crosstrace events FILE -o
OUT.parquet` and `crosstrace analyze` on a capture folder holding it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPEAT = 2
RSS_LIMIT_MB = 256
#: (file, compare with sigrok-cli?)
CAPTURES = (
    ("dcf77_1800s_1mhz_v1.sr", True),
    ("spi_enc28j60_1ghz.sr", True),
    ("uart_amulet_bootup_10mhz.sr", True),
    ("usb_stm32_dfu_50mhz.sr", False),
)

_CHILD = r"""
import json, sys, time
def hwm_mb():  # this process's own peak (VmHWM is per address space, reset by exec)
    for line in open('/proc/self/status'):
        if line.startswith('VmHWM'):
            return int(line.split()[1]) / 1024
from trace_parsers import open_trace
t = time.perf_counter()
tr = open_trace(sys.argv[1])
dt = time.perf_counter() - t
print(json.dumps({"s": dt, "edges": len(tr), "samples": tr.meta.extra["total_samples"],
                  "rss_mb": hwm_mb()}))
"""

_WRITE_CHILD = r"""
import json, sys, time
import numpy as np
from trace_parsers.sigrok import write_sr
e = np.arange(1000, 400_000_000, 2_000_000)
t = time.perf_counter()
write_sr(sys.argv[1], samplerate=40_000_000, channels=["rx", "gpio"], edges=[e, e[::3] + 7],
         total_samples=400_000_000)
print(json.dumps({"s": time.perf_counter() - t,
                  "rss_mb": [int(x.split()[1]) for x in open("/proc/self/status")
                             if x.startswith("VmHWM")][0] / 1024}))
"""


def _corpus() -> Path | None:
    env = os.environ.get("CROSSTRACE_CORPUS")
    d = Path(env) / "logic" if env else ROOT.parent / "shared" / "corpus" / "logic"
    return d if d.is_dir() else None


def _child(code: str, *args: str) -> dict:
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, check=True,
                         cwd=ROOT, timeout=1800)
    r = json.loads(out.stdout.decode().strip().splitlines()[-1])
    r["process_s"] = time.perf_counter() - t
    return r


def _best_of(code: str, *args: str, repeat: int = REPEAT) -> dict:
    """``_child`` in ``repeat`` fresh processes; the lowest of each figure."""
    runs = [_child(code, *args) for _ in range(repeat)]
    return {k: min(r[k] for r in runs) for k in runs[0]}


def _sigrok_vcd_seconds(path: Path) -> float | None:
    from trace_parsers.sigrok.protocol import sigrok_cli

    exe = sigrok_cli()
    if exe is None:
        return None
    best = None
    for _ in range(REPEAT):
        t = time.perf_counter()
        subprocess.run([exe, "-i", str(path), "-O", "vcd"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True, timeout=1800)
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    return best


def run() -> list[dict]:
    from bench.logic_long import run_long

    return _run_corpus() + run_long()


def _run_corpus() -> list[dict]:
    corpus = _corpus()
    if corpus is None:
        return [{"name": "logic corpus", "value": "missing", "unit": "",
                 "note": "place ../shared/corpus beside the repository or set $CROSSTRACE_CORPUS"}]
    rows: list[dict] = []
    for name, compare in CAPTURES:
        p = corpus / name
        if not p.is_file():
            continue
        r = _best_of(_CHILD, str(p))
        gsps = r["samples"] / r["s"] / 1e9
        row = {"name": f"read {name} (whole process)", "value": round(r["process_s"], 3), "unit": "s",
               "note": f"{r['samples']:,} samples, {r['edges']:,} edges; read call {r['s']:.3f} s "
                       f"({gsps:.2f} Gsample/s); best of {REPEAT} fresh processes, shared machine"}
        if compare:
            peer = _sigrok_vcd_seconds(p)
            if peer is not None:
                row["ratio"] = peer / r["process_s"]
                row["peer"] = f"sigrok-cli -O vcd {peer:.2f} s (whole process)"
                if name.startswith("dcf77"):
                    row["note"] += " (target >= 2x)"
            else:
                row["peer"] = "sigrok-cli not installed"
        rows.append(row)
        rss = {"name": f"peak RSS {name}", "value": round(r["rss_mb"], 1), "unit": "MB"}
        if name.startswith("dcf77"):
            rss["ratio"] = RSS_LIMIT_MB / r["rss_mb"]
            rss["note"] = f"target <= {RSS_LIMIT_MB} MB (ratio = headroom)"
        rows.append(rss)
    with tempfile.TemporaryDirectory(prefix="crosstrace-bench-") as td:
        w = _child(_WRITE_CHILD, str(Path(td) / "w.sr"))
        size = (Path(td) / "w.sr").stat().st_size
    rows.append({"name": "write_sr 400 M samples, 2 ch (sparse edges)", "value": round(w["s"], 3),
                 "unit": "s", "note": f"{size:,} bytes, peak RSS {w['rss_mb']:.0f} MB"})
    return rows


if __name__ == "__main__":  # pragma: no cover - manual run
    for r in run():
        print(r)
