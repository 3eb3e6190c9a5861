"""`crosstrace report` on a campaign with ~2 M instance rows: the instances are read once.

The campaign: ``CROSSTRACE_BENCH_REPORT_CAPTURES`` (7) synthetic context-switch captures of 100,000
switches each (trace and pins; ~300,000 instance rows each), analyzed once. Then ``crosstrace
report`` of it, each run its own fresh process (best of ``CROSSTRACE_BENCH_REPEAT``, 3): wall time,
CPU time and peak RSS of the whole process (targets: <= 3 s, <= 400 MB).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.gaps import _fresh

ROOT = Path(__file__).resolve().parents[1]
CAPTURES = int(os.environ.get("CROSSTRACE_BENCH_REPORT_CAPTURES", "7"))
SWITCHES = 100_000


def campaign(tmp: Path) -> tuple[Path, int]:
    """The analyzed campaign folder and its number of instance rows."""
    import pyarrow.parquet as pq

    from analyzers import _synth as S

    for i in range(CAPTURES):
        sc = S.ctx_switch(n=SWITCHES, spread_ns=300, seed=i)
        S.write_capture_folder(tmp / "in" / "freertos" / "ctx_switch" / f"r{i}", sc, rtos="freertos",
                               trace=S.to_trace(sc), capture=S.to_capture(sc, ppm=20))
    out = tmp / "out"
    subprocess.run([sys.executable, "-m", "analyzers.cli", "analyze", str(tmp / "in"), "-o", str(out), "-q",
                    "--force"], check=True, cwd=ROOT)
    rows = sum(pq.ParquetFile(p).metadata.num_rows for p in out.rglob("instances.parquet"))
    return out, rows


def run() -> list[dict]:
    with tempfile.TemporaryDirectory() as td:
        out, rows = campaign(Path(td))
        html = str(Path(td) / "r.html")
        got = _fresh([sys.executable, "-m", "analyzers.cli", "report", str(out), "-o", html])
    note = f"{rows:,} instance rows in {CAPTURES} captures; load {os.getloadavg()[0]:.1f}"
    return [
        {"name": "report: wall time (target <= 3 s)", "value": round(got["dt"], 2), "unit": "s",
         "note": note},
        {"name": "report: CPU time", "value": round(got["cpu"], 2), "unit": "s"},
        {"name": "report: peak RSS (target <= 400 MB)", "value": round(got["peak_kb"] / 1024), "unit": "MB"},
    ]


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
