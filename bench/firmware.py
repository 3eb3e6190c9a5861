"""Firmware costs on QEMU netduinoplus2 (-icount shift=0: 1 tick = 1 instruction), traced and untraced.

Rows compare the untraced FreeRTOS figures with the QEMU lab reference (ctx switch 128, ISR->task 304,
FFT-256 35,350 instructions) and report what SystemView tracing adds. Images come from
firmware/build/qemu_netduinoplus2/<rtos>/<app>[-<variant>]/ct.elf and are built with `make fw` when
missing (FreeRTOS needs $CT_DEPS_DIR/{FreeRTOS-Kernel,segger} or network); rows that cannot be built or
run carry a note instead of a value. `python -m bench firmware`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.firmware.console import parse_console
from tests.firmware.qemu_smoke import run_image

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "firmware" / "build" / "qemu_netduinoplus2"
REFERENCE = {"ctx_switch.yield": 128, "isr.to_task.latency": 304, "fft.duration": 35_350}
# (rtos, app, variant, opts, metric)
CASES = [
    ("baremetal", "calib", "", "", "fft.duration"),
    ("baremetal", "isr_latency", "", "", "isr.to_task.latency"),
    ("freertos", "ctx_switch", "untraced", "-DCT_TRACE=0", "ctx_switch.yield"),
    ("freertos", "ctx_switch", "", "", "ctx_switch.yield"),
    ("freertos", "isr_latency", "untraced", "-DCT_TRACE=0", "isr.to_task.latency"),
    ("freertos", "isr_latency", "", "", "isr.to_task.latency"),
    ("freertos", "fft_workload", "untraced", "-DCT_TRACE=0", "fft.duration"),
    ("freertos", "fft_workload", "", "", "fft.duration"),
    ("threadx", "ctx_switch", "untraced", "-DCT_TRACE=0", "ctx_switch.yield"),
    ("threadx", "ctx_switch", "", "", "ctx_switch.yield"),
    ("threadx", "isr_latency", "untraced", "-DCT_TRACE=0", "isr.to_task.latency"),
    ("threadx", "isr_latency", "", "", "isr.to_task.latency"),
    ("threadx", "fft_workload", "untraced", "-DCT_TRACE=0 -DCT_FFT_FRAMES=2", "fft.duration"),
    ("threadx", "fft_workload", "f2", "-DCT_FFT_FRAMES=2 -DCT_TX_TRACE_FILTER=0x40", "fft.duration"),
]


def _image(rtos: str, app: str, variant: str, opts: str) -> tuple[Path | None, str]:
    folder = BUILD / rtos / (f"{app}-{variant}" if variant else app)
    elf = folder / "ct.elf"
    if shutil.which("make") is None:  # cannot (re)build: use what is there
        return (elf, "not rebuilt (no make)") if elf.is_file() else (None, "image missing and no make")
    # always `make fw`: incremental, so an image older than its sources is never measured
    p = subprocess.run(["make", "-s", "fw", f"RTOS={rtos}", "BOARD=qemu_netduinoplus2", f"APP={app}",
                        f"VARIANT={variant}", f"OPTS={opts}"], cwd=ROOT, capture_output=True, text=True,
                       env={**os.environ})
    if p.returncode != 0 or not elf.is_file():
        return None, "not built (sources unavailable?): " + (p.stderr.strip().splitlines() or ["?"])[-1][:80]
    return elf, ""


def run() -> list[dict]:
    rows: list[dict] = []
    if shutil.which("qemu-system-arm") is None:
        return [{"name": "firmware", "value": None, "unit": "", "note": "qemu-system-arm not installed"}]
    for rtos, app, variant, opts, metric in CASES:
        untraced = variant == "untraced" or rtos == "baremetal"
        name = f"{rtos}.{metric}" + (".untraced" if untraced else ".traced")
        elf, note = _image(rtos, app, variant, opts)
        if elf is None:
            rows.append({"name": name, "value": None, "unit": "insn", "note": note})
            continue
        rc, out = run_image(elf, timeout=300, cwd=elf.parent)
        con = parse_console(out)
        res = con.results.get(metric)
        if rc != 0 or not con.passed or res is None:
            rows.append({"name": name, "value": None, "unit": "insn", "note": f"run failed (rc={rc})"})
            continue
        row = {"name": name, "value": res.mean, "unit": "insn",
               "note": f"min {res.min} max {res.max} n={res.n}"}
        if rtos == "freertos" and name.endswith(".untraced"):
            row.update(ratio=res.mean / REFERENCE[metric], peer=f"QEMU lab FreeRTOS {REFERENCE[metric]} insn")
        rows.append(row)
    return rows
