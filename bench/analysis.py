"""Batch analysis benchmark: `crosstrace analyze` over the reference campaign.

For the reference campaign (``captures/``, or ``CROSSTRACE_BENCH_CAPTURES``), the same campaign
copied four times (start-up amortised), and a CPU-bound synthetic campaign: wall time with 1 worker
(in-process), with 2 workers (process pool running the task graph) and on a local Dask cluster with
2 workers; the speed-up of 2 workers over 1 (target >= 1.8x); whether the pool and Dask runs
produced the serial run's campaign table. Every run ignores the cache (``force``).

Where the 2-worker time goes, from the pool's own schedule: the start-up before the first task
runs (the fork server importing numpy, pyarrow, pandas and the readers), the busy time per worker,
and the work inflation (busy time of both workers over the serial run's analysis time: what two
processes sharing this machine's memory bandwidth cost). The machine's load average is reported:
other jobs on the same cores cap the speed-up.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _campaigns(tmp: Path) -> list[tuple[Path, str]]:
    """The reference campaign (or CROSSTRACE_BENCH_CAPTURES) and a synthetic CPU-bound campaign."""
    from analyzers import _synth as S
    from analyzers.batch import discover

    out = []
    env = os.environ.get("CROSSTRACE_BENCH_CAPTURES")
    caps = Path(env) if env else ROOT / "captures"
    if caps.is_dir() and discover([caps]):
        # a snapshot, so a capture being rewritten meanwhile cannot make the runs differ
        snap = tmp / "reference"
        shutil.copytree(caps, snap, ignore=shutil.ignore_patterns(".*"))
        out.append((snap, "reference campaign" if not env else str(caps)))
    for i in range(8):
        for rtos in ("freertos", "threadx"):
            sc = S.ctx_switch(n=100_000, spread_ns=300, seed=i)
            S.write_capture_folder(
                tmp / "synth" / rtos / "ctx_switch" / f"r{i}",
                sc,
                rtos=rtos,
                trace=S.to_trace(sc),
                capture=S.to_capture(sc, ppm=20),
            )
    if out:  # the reference campaign four times over: fixed start-up costs amortised
        rep = tmp / "reference-x4"
        for i in range(4):
            shutil.copytree(out[0][0], rep / f"copy{i}")
        out.append((rep, f"{out[0][1]} x4"))
    out.append((tmp / "synth", "synthetic campaign"))
    return out


def _table(out: Path):
    from analyzers.batch import load_campaign

    df = load_campaign(out)["campaign"]
    return df.sort_values(["capture", "metric", "source", "profile"]).reset_index(drop=True)


def _bench(src: Path, what: str, tmp: Path) -> list[dict]:
    from analyzers.batch import analyze_dirs

    times = {}
    n = 0
    for name, workers, sched in (
        ("serial", 1, "serial"),
        ("pool2", 2, "processes"),
        ("dask2", 2, "dask-local"),
    ):
        t0 = time.perf_counter()
        man = analyze_dirs([src], tmp / name, workers=workers, scheduler=sched, force=True, quiet=True)
        times[name] = time.perf_counter() - t0
        n = len(man["captures"])
        if name == "pool2":
            sched = [t for t in man.get("schedule", []) if t.get("ran")]
            first = min((t["ran"][0] for t in sched), default=float("nan"))
            busy: dict[int, float] = {}
            for t in sched:
                busy[t["pid"]] = busy.get(t["pid"], 0.0) + t["ran"][1] - t["ran"][0]
        if name == "serial":
            secs = [c.get("seconds") or 0.0 for c in man["captures"]]
            longest = max(man["captures"], key=lambda c: c.get("seconds") or 0.0)["capture"] if secs else ""
    rows = [
        {
            "name": f"{what}: 1 worker",
            "value": round(times["serial"], 2),
            "unit": "s",
            "note": f"{n} captures",
        },
        {
            "name": f"{what}: 2 workers (process pool)",
            "value": round(times["pool2"], 2),
            "unit": "s",
            "note": (
                f"first task ran {first:.2f} s after the pool started (worker start-up); busy per "
                f"worker {', '.join(f'{b:.2f}' for b in sorted(busy.values()))} s; work inflation "
                f"{sum(busy.values()) / sum(secs):.2f}x the serial analysis time"
                if busy and sum(secs)
                else ""
            ),
        },
        {
            "name": f"{what}: speed-up 2 workers over 1",
            "value": round(times["serial"] / times["pool2"], 2),
            "unit": "x",
            "ratio": times["serial"] / times["pool2"],
            "peer": "1 worker",
            "note": (
                f"target >= 1.8x; serial: {sum(secs):.2f} s in captures, longest "
                f"{max(secs, default=0):.2f} s ({longest}; its recordings decode in parallel)"
            ),
        },
        {
            "name": f"{what}: local Dask cluster, 2 workers",
            "value": round(times["dask2"], 2),
            "unit": "s",
            "note": "includes cluster start-up",
        },
    ]
    try:
        import pandas as pd

        pd.testing.assert_frame_equal(_table(tmp / "serial"), _table(tmp / "dask2"))
        pd.testing.assert_frame_equal(_table(tmp / "serial"), _table(tmp / "pool2"))
        same = "yes"
    except AssertionError as e:
        same = f"no: {str(e).splitlines()[0]}"
    rows.append({"name": f"{what}: pool and Dask results identical to serial", "value": same, "unit": ""})
    return rows


def _burn(n: int) -> int:
    s = 0
    for i in range(n):
        s += i * i
    return s


def machine_ceiling(n: int = 10_000_000) -> float:
    """Speed-up of two processes over one on a pure-Python CPU loop: what this machine can give
    right now (other jobs on the same cores lower it), the ceiling for the batch speed-up."""
    import multiprocessing as mp

    t0 = time.perf_counter()
    _burn(n)
    _burn(n)
    t1 = time.perf_counter()
    with mp.get_context("forkserver").Pool(2) as pool:
        pool.map(_burn, [n, n])
    t2 = time.perf_counter()
    with mp.get_context("forkserver").Pool(2) as pool:  # second time: workers' start-up excluded
        t3 = time.perf_counter()
        pool.map(_burn, [n, n])
        t4 = time.perf_counter()
    del t2
    return (t1 - t0) / (t4 - t3)


def run() -> list[dict]:
    rows: list[dict] = []
    ceiling = machine_ceiling()
    rows.append(
        {
            "name": "machine: 2 processes over 1 on a CPU loop",
            "value": round(ceiling, 2),
            "unit": "x",
            "note": "ceiling for any 2-worker speed-up right now (2 CPUs shared with other jobs)",
        }
    )
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        for k, (src, what) in enumerate(_campaigns(tmp)):
            rows += _bench(src, what, tmp / f"out{k}")
    try:
        load = os.getloadavg()[0]
        rows.append(
            {
                "name": "load average during the run",
                "value": round(load, 2),
                "unit": "",
                "note": f"{os.cpu_count()} CPUs; a busy machine caps the speed-up",
            }
        )
    except OSError:  # pragma: no cover
        pass
    return rows


if __name__ == "__main__":  # pragma: no cover
    for r in run():
        print(r)
