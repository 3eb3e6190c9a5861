"""Thread-Metric on Zephyr (firmware/thread_metric through ports/zephyr; firmware/zephyr/CMakeLists.txt builds
the upstream test from the pinned ThreadX tree into Zephyr's app): the option that turns time slicing on
reaches the kernel configuration and the image, a bad value is refused, the upstream handler runs from TIM5
through Zephyr's interrupt path in lockstep with the thread; and the committed captures
(captures/qemu_netduinoplus2/zephyr/tm_*) say what docs/thread-metric.md says: the suite's own check passes
in the published configuration, the stack guard costs time wherever threads switch.
Skips without the Zephyr and ThreadX sources (fails in CI)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import need_tool
from tests.firmware.conftest import rtos_sources
from tests.firmware.threadx._build import infos
from tests.firmware.zephyr._build import FW, build, run

ROOT = FW.parent
ZCAP = ROOT / "captures" / "qemu_netduinoplus2" / "zephyr"
TESTS = ("basic", "cooperative", "preemptive", "interrupt", "interrupt_preemption", "message",
         "synchronization", "memory")


def rate(folder: Path) -> float:
    """Counter increments per 10^9 instructions over both reporting periods (the suite's "Time Period
    Total"s over the measured periods), from a committed capture's uart.log."""
    text = (folder / "uart.log").read_text()
    inf = infos(text)
    m = re.search(r"^CT_RESULT tm\.\w+\.period n=(\d+) min=\d+ mean=([\d.]+) ", text, re.M)
    assert m and m[1] == "2", folder
    return (inf["tm.p1.total"] + inf["tm.p2.total"]) / (2 * float(m[2])) * 1e9


def test_a_bad_time_slicing_value_is_refused(tmp_path):
    """CT_ZEPHYR_TIMESLICING takes 0 or 1; anything else stops the configure step (before Zephyr loads)."""
    need_tool("cmake")
    env = {k: v for k, v in os.environ.items() if k != "BOARD"}
    p = subprocess.run(["cmake", "-S", str(FW / "zephyr"), "-B", str(tmp_path / "b"), "-DAPP=calib",
                        "-DCT_ZEPHYR_TIMESLICING=yes"], capture_output=True, text=True, env=env)
    assert p.returncode != 0
    said = " ".join(p.stderr.split())  # CMake re-wraps the message
    assert "Invalid value for CT_ZEPHYR_TIMESLICING: 'yes'. Allowed values are: 0 1" in said, p.stderr


@pytest.mark.parametrize("test", TESTS)
def test_committed_runs_pass_the_suites_check_in_the_published_configuration(test):
    """No time slicing, no guard: the suite never prints its "ERROR: Invalid counter value(s)", traced or
    not, and every counting thread counted."""
    for variant in ("", "-untraced"):
        text = (ZCAP / f"tm_{test}{variant}" / "ref" / "uart.log").read_text()
        inf = infos(text)
        assert "CT_DONE ok=1 fail=0" in text and inf["tm.determinism.errors"] == 0, (test, variant)
        assert all(inf[f"tm.p2.t{j}"] > 0 for j in range(inf["tm.threads"])), (test, variant)


# the tests whose iteration switches threads; the others run one thread (interrupt, message, synchronization,
# memory: the service never blocks) or none (basic)
SWITCHING = ("cooperative", "preemptive", "interrupt_preemption")


@pytest.mark.parametrize("test", TESTS)
def test_committed_runs_show_the_guard_costs_time_where_threads_switch(test):
    """protected / plain rate (untraced pins-only runs): the MPU stack guard is reprogrammed on every
    context switch, so the rate drops by a third or more where an iteration switches threads and stays
    within 0.1 % where it does not (published, Zephyr 4.1: message and synchronization 1.00)."""
    ratio = rate(ZCAP / f"tm_{test}-mpu-untraced" / "ref") / rate(ZCAP / f"tm_{test}-untraced" / "ref")
    meta = json.loads((ZCAP / f"tm_{test}-mpu-untraced" / "ref" / "run.json").read_text())
    assert meta["options"]["CT_ZEPHYR_MPU"] == 1
    if test in SWITCHING:
        assert ratio < 0.67, (test, ratio)
    else:
        assert abs(ratio - 1) < 0.001, (test, ratio)


@pytest.mark.qemu
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_interrupt_preemption_runs_in_lockstep_with_time_slicing_on(tmp_path):
    """One image: the upstream interrupt-preemption test, pins only, time slicing on. Kconfig has it, the
    image records it, the handler (TIM5 through _isr_wrapper) runs exactly once per thread iteration."""
    threadx = rtos_sources("threadx")["threadx"].resolve()
    out = tmp_path / "b"
    elf = build(out, "tm_interrupt_preemption", CT_TRACE=0, CT_ZEPHYR_TIMESLICING=1, CT_TM_PERIOD_MS=2,
                CT_TM_PERIODS=2, FETCHCONTENT_SOURCE_DIR_THREADX=threadx)
    kconfig = (out / "zephyr" / ".config").read_text()
    assert "CONFIG_TIMESLICING=y" in kconfig and "CONFIG_TIMESLICE_SIZE=20" in kconfig
    r = run(elf, tmp_path / "r")
    assert r.rc == 0 and r.console.passed, r.text[-2000:]
    # the configuration string in the image (the console's CT_CONFIG line is cut at its line length)
    assert b"CT_ZEPHYR_TIMESLICING=1" in elf.read_bytes() and r.console.trace is None
    inf = infos(r.text)
    assert inf["tm.determinism.errors"] == 0 and "ERROR" not in r.text
    for k in (1, 2):
        t0, t1, isr = inf[f"tm.p{k}.t0"], inf[f"tm.p{k}.t1"], inf[f"tm.p{k}.isr"]
        assert t0 > 1000 and abs(t0 - t1) <= 1 and abs(t0 - isr) <= 1
    assert "TM **** Thread-Metric Interrupt Preemption Processing Test **** Relative Time: 2" in r.text
