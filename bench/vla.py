"""Virtual logic analyzer: plugin overhead on QEMU wall time (target <= 10 %), QEMU peak memory with and
without the plugin, and the host converter's speed (edge log -> .sr).

The workload is the most store-heavy image available: a built fft_workload / ctx_switch image in
``$FW_BUILD`` or firmware/build[/capture] (any RTOS), else the bare-metal isr_latency image, else the
tests' bare-metal probe built on the fly. Each configuration runs ``VLA_BENCH_REPS`` times (default 5);
the median wall time is reported.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "firmware" / "tools"))

import capture as cap  # noqa: E402
from vla.convert import channels_from_log, write_profile  # noqa: E402
from vla.edgelog import read_edge_log  # noqa: E402
from vla.profiles import PROFILES  # noqa: E402

REPS = int(os.environ.get("VLA_BENCH_REPS", "5"))
CANDIDATES = [
    ("freertos", "fft_workload"),
    ("threadx", "fft_workload"),
    ("freertos", "ctx_switch-n2"),
    ("threadx", "ctx_switch-n2"),
    ("baremetal", "isr_latency"),
]


def _workload(tmp: Path) -> tuple[Path, str]:
    fw = Path(os.environ.get("FW_BUILD", ROOT / "firmware" / "build"))
    builds = [fw if fw.is_absolute() else ROOT / fw, ROOT / "firmware" / "build" / "capture"]
    for rtos, app in CANDIDATES:
        for build in builds:
            elf = build / cap.BOARD / rtos / app / "ct.elf"
            if elf.exists():
                return elf, f"{rtos}/{app}"
    probe = ROOT / "tests" / "firmware" / "vla_probe" / "probe.S"
    elf = tmp / "probe.elf"
    subprocess.run(
        [
            "arm-none-eabi-gcc",
            "-mcpu=cortex-m4",
            "-mthumb",
            "-nostdlib",
            "-DSPIN=200",
            "-x",
            "assembler-with-cpp",
            str(probe),
            "-Wl,-Ttext=0x08000000",
            "-Wl,-ereset",
            "-o",
            str(elf),
        ],
        check=True,
    )
    return elf, "vla_probe (tests/firmware)"


def _run(elf: Path, work: Path, plugin: Path | None) -> tuple[float, int]:
    """(wall s, peak RSS KiB) of one QEMU run."""
    cmd = [cap.QEMU, *cap.qemu_flags(0), "-kernel", str(elf)]
    if plugin:
        cmd += ["-plugin", f"{plugin},out=vla.edges"]
    t0 = time.perf_counter()
    p = subprocess.Popen(
        cmd, cwd=work, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - t0, int(ru.ru_maxrss)


def run() -> list[dict]:
    if not shutil.which(cap.QEMU):
        return [{"name": "vla (skipped)", "value": 0, "unit": "-", "note": f"{cap.QEMU} not installed"}]
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        plugin = cap.build_plugin()
        elf, what = _workload(tmp)
        base, plug, rss0, rss1 = [], [], [], []
        for _ in range(REPS):  # interleave so machine load drifts affect both alike
            w, r = _run(elf, tmp, None)
            base.append(w)
            rss0.append(r)
            w, r = _run(elf, tmp, plugin)
            plug.append(w)
            rss1.append(r)
        b, p = statistics.median(base), statistics.median(plug)
        log = read_edge_log(tmp / "vla.edges")
        rows += [
            {"name": "qemu wall, no plugin (median)", "value": round(b, 3), "unit": "s", "note": what},
            {
                "name": "qemu wall, with VLA plugin (median)",
                "value": round(p, 3),
                "unit": "s",
                "note": f"{len(log.records)} stores logged, {REPS} reps",
            },
            {
                "name": "plugin overhead",
                "value": round(100 * (p - b) / b, 1),
                "unit": "%",
                "note": "target <= 10 %",
            },
            {
                "name": "qemu peak RSS with plugin",
                "value": max(rss1) // 1024,
                "unit": "MiB",
                "ratio": max(rss1) / max(rss0),
                "peer": f"without plugin {max(rss0) // 1024} MiB",
            },
        ]
        t0 = time.perf_counter()
        c = channels_from_log(log)
        t1 = time.perf_counter()
        info = write_profile(c, PROFILES["ideal"], tmp / "logic.sr")
        t2 = time.perf_counter()
        edges = sum(len(ch.edges_ns) for ch in c.channels)
        rows += [
            {
                "name": "edge log -> channels",
                "value": round(len(log.records) / max(t1 - t0, 1e-9)),
                "unit": "stores/s",
            },
            {
                "name": ".sr write, ideal 1 GHz",
                "value": round(info["samples"] * info["unitsize"] / max(t2 - t1, 1e-9) / 1e6, 1),
                "unit": "MB/s",
                "note": f"{info['samples']:,} samples, {edges} edges -> "
                f"{(tmp / 'logic.sr').stat().st_size:,} B",
            },
        ]
        # converter on a dense synthetic log: 1 M edges on 4 channels over 1 s at 1 GHz
        rng = np.random.default_rng(0)
        dense = [np.sort(rng.choice(10**9, 250_000, replace=False)).astype(np.int64) for _ in range(4)]
        from vla.srzip import write_sr

        t0 = time.perf_counter()
        write_sr(tmp / "dense.sr", ["a", "b", "c", "d"], [0] * 4, dense, 10**9 + 1, 10**9)
        dt = time.perf_counter() - t0
        rows.append(
            {
                "name": ".sr write, 1 M edges / 1e9 samples",
                "value": round(1e6 / dt),
                "unit": "edges/s",
                "note": f"{dt:.2f} s, {(tmp / 'dense.sr').stat().st_size:,} B",
            }
        )
    return rows


if __name__ == "__main__":
    for r in run():
        print(r)
