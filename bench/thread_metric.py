"""Thread-Metric on QEMU netduinoplus2 (-icount shift=0: 1 ns = 1 instruction): every test on FreeRTOS
(CubeIDE-like and tuned configurations) and ThreadX, each built three ways — pristine (``CT_TM_SITES=0``:
the upstream suite through the ct porting layer, nothing added), pins (``CT_TRACE=0``: a site every
``CT_TM_SITE_EVERY`` iterations, GPIO only) and traced (``CT_TRACE=1``: sites + the RTOS recorder) — and
the tables of docs/thread-metric.md: the published style (each RTOS as a multiple of the slowest per test)
and the cost of the sites and of tracing per iteration.

    python -m bench.thread_metric [--out DIR] [--only frtuned/tm_cooperative] [--period-ms 20 --periods 3]
    python -m bench.thread_metric --from DIR      # tables from the uart.log files of an earlier run

Needs $CT_DEPS_DIR with FreeRTOS-Kernel, segger and threadx (firmware/README.md); ~25 min on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ("basic", "cooperative", "preemptive", "interrupt", "interrupt_preemption", "message",
         "synchronization", "memory")  # fmt: skip
CONFIGS = {  # name -> (rtos, options, label)
    "threadx": ("threadx", {}, "ThreadX 6.4.2"),
    "frcube": ("freertos", {"CT_FREERTOS_CFG": 1}, "FreeRTOS V11.1 CubeIDE-like"),
    "frtuned": ("freertos", {"CT_FREERTOS_CFG": 2}, "FreeRTOS V11.1 tuned"),
}
VARIANTS = {
    "bare": {"CT_TRACE": 0, "CT_TM_SITES": 0},
    "untraced": {"CT_TRACE": 0, "CT_TM_SITES": 1},
    "traced": {"CT_TRACE": 1, "CT_TM_SITES": 1},
}
#: 2024 RTOS Performance Report (B-L475E-IOT01A, 80 MHz, 30 s per test): multiple of the slowest RTOS
PUBLISHED = {  # test -> (ThreadX 6.1.1, FreeRTOS CubeIDE default, heap_4)
    "basic": (1.0, 1.0),
    "cooperative": (2.7, 2.6),
    "preemptive": (2.2, 1.4),
    "message": (2.5, 1.0),
    "synchronization": (2.4, 1.0),
    "memory": (5.6, 1.3),
}
TOTAL_RE = re.compile(r"^TM Time Period Total:\s+(\d+)", re.M)
INFO_RE = re.compile(r"^CT_INFO (\S+)=(\d+)", re.M)
PERIOD_RE = re.compile(r"^CT_RESULT tm\.\S+\.period n=(\d+) min=\d+ mean=([\d.]+)", re.M)


def options(cfg: str, variant: str, period_ms: int, periods: int) -> dict[str, object]:
    rtos, opts, _ = CONFIGS[cfg]
    o = {**opts, **VARIANTS[variant], "CT_TM_PERIOD_MS": period_ms, "CT_TM_PERIODS": periods}
    if variant == "traced" and rtos == "threadx":
        # TraceX keeps its events in RAM (~5,500 slots): at millions of services per second the
        # kernel's own events are filtered (still compiled in and checked), the sites are kept
        o["CT_TX_TRACE_FILTER"] = "0x7FF"
    return o


def build_and_run(out: Path, cfg: str, test: str, variant: str, period_ms: int, periods: int) -> Path:
    """One image into ``out/<cfg>/tm_<test>-<variant>``; returns its uart.log."""
    rtos = CONFIGS[cfg][0]
    deps = Path(os.environ.get("CT_DEPS_DIR", ROOT / "firmware" / "third_party"))
    d = out / cfg / f"tm_{test}-{variant}"
    src = {"FREERTOS_KERNEL": "FreeRTOS-Kernel", "SEGGER": "segger", "THREADX": "threadx"}
    cmd = ["cmake", "--fresh", "-S", str(ROOT / "firmware"), "-B", str(d), "-G", "Ninja", f"-DRTOS={rtos}",
           f"-DAPP=tm_{test}", f"-DVARIANT={variant}", "-Wno-dev", "--log-level=WARNING"]  # fmt: skip
    cmd += [f"-DFETCHCONTENT_SOURCE_DIR_{k}={deps / v}" for k, v in src.items() if (deps / v).is_dir()]
    cmd += [f"-D{k}={v}" for k, v in options(cfg, variant, period_ms, periods).items()]
    subprocess.run(cmd, check=True, capture_output=True)
    subprocess.run(["nice", "ninja", "-j2", "-C", str(d)], check=True, capture_output=True)
    from tests.firmware.qemu_smoke import qemu_command

    p = subprocess.run(["nice", *qemu_command(d / "ct.elf")], cwd=d, capture_output=True, timeout=1800)
    log = d / "uart.log"
    log.write_bytes(p.stdout + f"exit={p.returncode}\n".encode())
    return log


def parse(log: Path) -> dict[str, float] | None:
    """Per-second rate of the suite's own "Time Period Total" (periods 2.. : period 1 includes the start),
    ns per iteration of all counting threads (drain of the trace buffer excluded), determinism errors."""
    if not log.exists():
        return None
    text = log.read_text(errors="replace")
    info = {k: int(v) for k, v in INFO_RE.findall(text)}
    totals = [int(x) for x in TOTAL_RE.findall(text)]
    per = PERIOD_RE.search(text)
    if len(totals) < 2 or per is None or "tm.period_ms" not in info:
        return None
    period_s = info["tm.period_ms"] / 1000.0
    n, mean = int(per[1]), float(per[2])
    iters = sum(info.get(f"tm.p{k}.total", 0) for k in range(1, n + 1))
    busy = n * mean - info.get("tm.drain_ticks", 0)
    return {
        "rate": sum(totals[1:]) / (len(totals) - 1) / period_s,
        "ns_per_iter": busy / iters if iters else float("nan"),
        "errors": info.get("tm.determinism.errors", -1),
        "drain_ns": info.get("tm.drain_ticks", 0),
    }


def tables(out: Path) -> str:
    res = {
        (c, t, v): parse(out / c / f"tm_{t}-{v}" / "uart.log")
        for c in CONFIGS
        for t in TESTS
        for v in VARIANTS
    }
    lines = ["| test | " + " | ".join(CONFIGS[c][2] for c in CONFIGS) + " | published ThreadX / FreeRTOS |",
             "|---|" + "---|" * (len(CONFIGS) + 1)]  # fmt: skip
    for t in TESTS:
        rates = {c: (res[c, t, "bare"] or {}).get("rate") for c in CONFIGS}
        slow = min((r for r in rates.values() if r), default=None)
        cells = [f"{r / slow:.2f}× ({r:,.0f}/s)" if r and slow else "—" for r in rates.values()]
        pub = PUBLISHED.get(t)
        lines.append(f"| {t} | " + " | ".join(cells) + f" | {f'{pub[0]}× / {pub[1]}×' if pub else '—'} |")
    lines += ["", "| test | config | ns/iter pristine | + sites (pins) | + tracing | determinism errors |",
              "|---|---|---|---|---|---|"]  # fmt: skip
    for t in TESTS:
        for c in CONFIGS:
            b, u, tr = (res[c, t, v] for v in VARIANTS)
            if not (b and u and tr):
                lines.append(f"| {t} | {c} | — | — | — | — |")
                continue
            errs = f"{b['errors']} / {u['errors']} / {tr['errors']}"
            lines.append(
                f"| {t} | {c} | {b['ns_per_iter']:.1f} | {u['ns_per_iter'] - b['ns_per_iter']:+.1f} | "
                f"{tr['ns_per_iter'] - u['ns_per_iter']:+.1f} | {errs} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "firmware" / "build" / "thread_metric")
    ap.add_argument("--from", dest="src", type=Path, help="only print the tables of an earlier --out")
    ap.add_argument("--only", action="append", default=[], help="<config>/tm_<test> (repeatable)")
    ap.add_argument("--period-ms", type=int, default=20)
    ap.add_argument("--periods", type=int, default=3)
    a = ap.parse_args(argv)
    if a.src is None:
        for c in CONFIGS:
            for t in TESTS:
                if a.only and f"{c}/tm_{t}" not in a.only:
                    continue
                for v in VARIANTS:
                    build_and_run(a.out, c, t, v, a.period_ms, a.periods)
    print(tables(a.src or a.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
