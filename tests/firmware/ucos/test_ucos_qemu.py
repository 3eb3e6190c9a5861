"""The µC/OS ports (firmware/ports/ucos3, ucos2; their SystemView recorder in firmware/ucos) on QEMU
netduinoplus2: an image builds with no compiler warning on both boards, boots to CT_DONE, and its trace is a
SystemView stream that crosstrace recognises (O=uCOS-III / O=uCOS-II: task and ISR names, kernel event
names from the bundled ``ucos3`` / ``ucos2`` table). Third-party sources from CT_DEPS_DIR (skips without
them, fails in CI).

CI cost (2 cores) per kernel: one QEMU image (isr_latency, ~11 s to build, ~2 s to run) and one
STM32F429 image (slow); µC/OS-III also its Thread-Metric interrupt preemption image (slow, ~12 s).
The bit-exact reruns of <kernel>/isr_latency/ref are in tests/firmware/test_reproduce_lines.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import need_tool
from tests.firmware.conftest import fetchcontent_args
from tests.firmware.console import parse_console
from tests.firmware.qemu_smoke import run_image
from trace_parsers import open_trace
from trace_parsers.model import EventKind

ROOT = Path(__file__).resolve().parents[3]
FW = ROOT / "firmware"
SV_HEADER = b";\n; Version     SEGGER SystemViewer V3.58\n;\n"  # what capture.py prepends
#: rtos -> (version, SystemView O= name, bundled table, the kernel's timer task name)
KERNELS = {
    "ucos3": ("3.08.02", "uCOS-III", "ucos3", "uC/OS-III Timer Task"),
    "ucos2": ("2.93.01", "uCOS-II", "ucos2", "uC/OS-II Tmr"),
}

pytestmark = [pytest.mark.firmware, pytest.mark.qemu]


def build(out: Path, rtos: str, app: str, board: str = "qemu_netduinoplus2") -> tuple[Path, str]:
    """Configure and build one image; returns (ELF, the whole compiler output)."""
    for tool in ("cmake", "ninja", "arm-none-eabi-gcc"):
        need_tool(tool)
    cmd = [
        "cmake",
        "-S",
        str(FW),
        "-B",
        str(out),
        "-G",
        "Ninja",
        "-DCMAKE_BUILD_TYPE=",
        f"-DRTOS={rtos}",
        f"-DBOARD={board}",
        f"-DAPP={app}",
        "-Wno-dev",
        "--log-level=WARNING",
        *fetchcontent_args(rtos),
    ]
    if app.startswith("tm_"):  # the upstream Thread-Metric test comes from the ThreadX tree
        cmd += fetchcontent_args("threadx")
    subprocess.run(cmd, check=True, capture_output=True)
    p = subprocess.run(["cmake", "--build", str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return out / "ct.elf", p.stdout + p.stderr


def warnings(log: str) -> list[str]:
    return [ln for ln in log.splitlines() if "warning:" in ln]


@pytest.fixture(scope="module", params=sorted(KERNELS))
def isr(request, tmp_path_factory):
    """<kernel> isr_latency for QEMU, built and run once: (rtos, build log, rc, console text, trace path)."""
    rtos = request.param
    d = tmp_path_factory.mktemp(f"{rtos}_isr")
    elf, log = build(d / "build", rtos, "isr_latency")
    need_tool("qemu-system-arm")
    run = d / "run"
    run.mkdir()
    rc, text = run_image(elf, timeout=120, cwd=run)
    sv = run / "trace.SVDat"
    data = sv.read_bytes() if sv.is_file() else b""
    sv.write_bytes(SV_HEADER + data)
    return rtos, log, rc, text, sv


def test_builds_without_warnings(isr):
    assert warnings(isr[1]) == []


def test_boots_to_done(isr):
    rtos, _, rc, text, _ = isr
    con = parse_console(text)
    assert rc == 0 and con.passed and not con.fails, text[-2000:]
    version = KERNELS[rtos][0]
    assert f"rtos={rtos} rtos_version={version} board=qemu_netduinoplus2 app=isr_latency" in con.config
    res = con.results["isr.to_task.latency"]
    assert res.n == 200 and res.ts_hz == 1_000_000_000
    assert con.trace["file"] == "trace.SVDat" and con.trace["dropped"] == "0"


def test_trace_is_recognised(isr):
    """O=<name> picks the kernel's table: every kernel event id has a name, tasks and TIM5 are named."""
    rtos, _, _, _, sv = isr
    _, os_name, table, tmr_task = KERNELS[rtos]
    t = open_trace(sv)
    assert t.meta.rtos == os_name and t.meta.extra["description"] == table
    assert t.diagnostics == [], t.diagnostics  # no SV_UNKNOWN_ID: the table names every id recorded
    assert {"OSTimeTick", "OSSemCreate"} <= set(t.meta.extra["api_names"].values())
    assert {"isr_wait", tmr_task} <= {x.name for x in t.tasks}
    ev = t.events
    tim5 = ev[(ev["kind"] == EventKind.ISR_ENTER) & (ev["ctx_id"] == 66)]
    assert len(tim5) == 200  # one per benchmark interrupt (OSIntEnter), SysTick is 15
    marks = ev[ev["kind"] == EventKind.MARK]
    assert marks["value"][marks["marker"] == 6].tolist() == [1, 0] * 100  # isr.task_wake: one per edge
    assert np.all(np.diff(ev["ts_raw"].astype(np.int64)) >= 0)


@pytest.mark.slow
@pytest.mark.parametrize("rtos", sorted(KERNELS))
def test_f429_image_builds_without_warnings(rtos, tmp_path):
    elf, log = build(tmp_path / "b", rtos, "fft_workload", board="stm32f429i_disco")
    assert elf.is_file() and warnings(log) == []


def test_ucos2_refuses_two_tasks_at_one_priority(tmp_path):
    """µC/OS-II has one task per priority: ctx_switch (equal-priority tasks) is not among its apps."""
    need_tool("cmake")
    p = subprocess.run(
        [
            "cmake",
            "-S",
            str(FW),
            "-B",
            str(tmp_path / "b"),
            "-G",
            "Ninja",
            "-DRTOS=ucos2",
            "-DAPP=ctx_switch",
            "-Wno-dev",
            *fetchcontent_args("ucos2"),
        ],
        capture_output=True,
        text=True,
    )
    assert p.returncode != 0 and "the ucos2 port runs only" in p.stdout + p.stderr


@pytest.mark.slow
def test_ucos3_resumes_a_task_from_an_isr(tmp_path):
    """Thread-Metric's interrupt preemption test: TIM5 resumes a suspended thread. µC/OS-III refuses
    OSTaskResume in an ISR; the port releases a self-suspended task with OSTaskSemPost (ISR-safe)."""
    elf, log = build(tmp_path / "b", "ucos3", "tm_interrupt_preemption")
    rc, text = run_image(elf, timeout=120, cwd=tmp_path)
    con = parse_console(text)
    assert rc == 0 and con.passed and not con.fails, text[-2000:]
    assert "TM ERROR" not in text, text[-2000:]  # the upstream check: handler and resumed-thread counts agree
    totals = [int(ln.split()[-1]) for ln in text.splitlines() if ln.startswith("TM Time Period Total:")]
    assert len(totals) == 3 and min(totals) > 1000, totals  # thousands of ISR -> thread resumes per period
