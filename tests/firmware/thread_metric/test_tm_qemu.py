"""Thread-Metric on QEMU netduinoplus2 (firmware/thread_metric, apps/tm_*): the upstream tests, built from the
pinned ThreadX sources through the one ct porting layer, run on FreeRTOS and ThreadX; their counters are
deterministic where the suite says they must be, and the suite's own check does fail where a configuration
breaks it (FreeRTOS with time slicing: the tick preempts the cooperative threads).
Skips without the RTOS sources ($CT_DEPS_DIR, tests/firmware/conftest.py)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import need_tool
from tests.firmware.conftest import fetchcontent_args, rtos_sources
from tests.firmware.qemu_smoke import qemu_command
from tests.firmware.threadx._build import infos

FW = Path(__file__).resolve().parents[3] / "firmware"
SHORT = {"CT_TM_PERIOD_MS": 2, "CT_TM_PERIODS": 2}


def build_run(tmp: Path, rtos: str, app: str, **opts) -> tuple[str, dict[str, int]]:
    """Configure, build and run one image; returns the console text and its CT_INFO values."""
    for tool in ("cmake", "ninja", "arm-none-eabi-gcc", "qemu-system-arm"):
        need_tool(tool)
    args = fetchcontent_args(rtos)
    if rtos != "threadx":  # the Thread-Metric test sources come from the ThreadX tree
        args.append(f"-DFETCHCONTENT_SOURCE_DIR_THREADX={rtos_sources('threadx')['threadx'].resolve()}")
    out = tmp / f"{rtos}-{app}"
    cmd = [
        "cmake",
        "-S",
        str(FW),
        "-B",
        str(out),
        "-G",
        "Ninja",
        f"-DRTOS={rtos}",
        f"-DAPP={app}",
        "-Wno-dev",
        "--log-level=WARNING",
        *args,
        *(f"-D{k}={v}" for k, v in sorted(opts.items())),
    ]
    subprocess.run(cmd, check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(out), "-j2"], check=True, capture_output=True)
    p = subprocess.run(
        qemu_command(out / "ct.elf"), cwd=out, stdin=subprocess.DEVNULL, capture_output=True, timeout=300
    )
    text = p.stdout.decode("utf-8", "replace")
    assert p.returncode == 0 and "CT_DONE ok=1 fail=0" in text, text[-2000:]
    return text, infos(text)


def test_thread_metric_commit_is_the_kernel_commit():
    """The test sources are taken from the same pinned ThreadX commit as the ThreadX kernel."""
    kernel = re.search(r"set\(CT_THREADX_COMMIT (\w+)\)", (FW / "ports/threadx/threadx.cmake").read_text())
    tm = re.search(r"GIT_TAG (\w+)", (FW / "thread_metric/thread_metric.cmake").read_text())
    assert kernel and tm and kernel[1] == tm[1]


@pytest.mark.qemu
@pytest.mark.parametrize("rtos", ["freertos", "threadx"])
def test_interrupt_preemption_counters_move_in_lockstep(tmp_path, rtos):
    """The upstream handler runs from TIM5 (TM_CAUSE_INTERRUPT) exactly once per thread iteration."""
    text, inf = build_run(tmp_path, rtos, "tm_interrupt_preemption", CT_TRACE=0, **SHORT)
    assert inf["tm.determinism.errors"] == 0 and "ERROR" not in text
    for k in (1, 2):
        t0, t1, isr = inf[f"tm.p{k}.t0"], inf[f"tm.p{k}.t1"], inf[f"tm.p{k}.isr"]
        assert t0 > 1000 and abs(t0 - t1) <= 1 and abs(t0 - isr) <= 1
    assert "TM **** Thread-Metric Interrupt Preemption Processing Test **** Relative Time: 4" in text


@pytest.mark.qemu
@pytest.mark.slow
def test_time_slicing_breaks_the_cooperative_check_and_tuning_restores_it(tmp_path):
    """FreeRTOS as CubeIDE generates it (time slicing on) lets the tick preempt the cooperative threads,
    and the suite's own check reports it; the tuned configuration (no time slicing) keeps it."""
    opts = {"CT_TRACE": 0, "CT_TM_SITES": 0, "CT_TM_PERIOD_MS": 20, "CT_TM_PERIODS": 3}
    _, cube = build_run(tmp_path, "freertos", "tm_cooperative", CT_FREERTOS_CFG=1, **opts)
    _, tuned = build_run(tmp_path / "t", "freertos", "tm_cooperative", CT_FREERTOS_CFG=2, **opts)
    assert cube["tm.determinism.errors"] > 0
    assert tuned["tm.determinism.errors"] == 0


@pytest.mark.qemu
@pytest.mark.slow
@pytest.mark.parametrize("rtos", ["freertos", "threadx"])
def test_sites_cost_and_basic_processing_counts(tmp_path, rtos):
    """basic processing counts (its store survives -O2), and the untraced sites cost something but little."""
    _, bare = build_run(tmp_path, rtos, "tm_basic", CT_TRACE=0, CT_TM_SITES=0, **SHORT)
    _, pins = build_run(tmp_path / "p", rtos, "tm_basic", CT_TRACE=0, CT_TM_SITES=1, **SHORT)
    assert bare["tm.p2.total"] > 100 and bare["tm.determinism.errors"] == 0
    assert 0.9 * bare["tm.p2.total"] <= pins["tm.p2.total"] <= bare["tm.p2.total"]
