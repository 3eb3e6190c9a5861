"""ports/threadx/tx_user.h without the ThreadX sources: the options each CT_* setting turns on, that the
trace time source compiles to the board counter read on both boards, and that ThreadX's assembly files
can include it (they do, through TX_INCLUDE_USER_DEFINE_FILE)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.firmware.threadx._build import FW, need_tool

TX_USER = FW / "ports" / "threadx" / "tx_user.h"
CPU = ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"]


def _incs(board: str) -> list[str]:
    return [f"-I{FW / 'boards' / board}", f"-I{FW / 'boards' / 'common'}"]


def macros(*defs: str, board: str = "qemu_netduinoplus2") -> dict[str, str]:
    cc = need_tool("arm-none-eabi-gcc")
    out = subprocess.run(
        [cc, *CPU, "-E", "-dM", "-x", "c", *defs, *_incs(board), str(TX_USER)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    found = {}
    for line in out.splitlines():
        _, name, *value = line.split(" ", 2)
        found[name] = value[0] if value else ""
    return found


def test_traced_build_enables_event_trace_only():
    m = macros("-DCT_TRACE=1")
    assert "TX_ENABLE_EVENT_TRACE" in m and m["TX_TRACE_TIME_MASK"] == "0xFFFFFFFFUL"
    assert m["TX_TIMER_TICKS_PER_SECOND"] == "1000UL"
    assert "TX_ENABLE_EXECUTION_CHANGE_NOTIFY" not in m  # the hook costs cycles: opt-in only


def test_untraced_build_has_no_trace():
    m = macros("-DCT_TRACE=0")
    assert "TX_ENABLE_EVENT_TRACE" not in m and "TX_TRACE_TIME_SOURCE" not in m
    assert "TX_DISABLE_ERROR_CHECKING" in m  # same kernel configuration otherwise


@pytest.mark.parametrize(("pin", "on"), [("-1", False), ("15", True), ("0", True)])
def test_exec_pin_enables_execution_change_notify(pin, on):
    assert ("TX_ENABLE_EXECUTION_CHANGE_NOTIFY" in macros("-DCT_TRACE=0", f"-DCT_TX_EXEC_PIN={pin}")) is on


@pytest.mark.parametrize(
    ("board", "addr"), [("qemu_netduinoplus2", 0x40000024), ("stm32f429i_disco", 0xE0001004)]
)
def test_trace_time_source_is_one_load_of_the_board_counter(tmp_path, board, addr):
    """TX_TRACE_TIME_SOURCE = ct_ts(): TIM2->CNT on QEMU, DWT CYCCNT on the F429."""
    cc = need_tool("arm-none-eabi-gcc")
    src = tmp_path / "ts.c"
    src.write_text(
        '#include "tx_user.h"\ntypedef unsigned long ULONG;\n'
        "ULONG stamp(void) { return TX_TRACE_TIME_SOURCE; }\n"
    )
    obj = tmp_path / "ts.o"
    subprocess.run(
        [
            cc,
            *CPU,
            "-O2",
            "-c",
            "-DCT_TRACE=1",
            f"-I{TX_USER.parent}",
            *_incs(board),
            str(src),
            "-o",
            str(obj),
        ],
        check=True,
    )
    dis = subprocess.run(
        [need_tool("arm-none-eabi-objdump"), "-d", str(obj)], check=True, capture_output=True, text=True
    ).stdout
    # the base comes from the literal pool or a mov immediate; then exactly one load from the counter
    bases = [int(x, 16) for x in re.findall(r"\.word\t0x([0-9a-f]+)", dis)]
    bases += [int(x) for x in re.findall(r"\tmov(?:\.w|w)?\tr\d+, #(\d+)", dis)]
    loads = re.findall(r"\tldr\tr\d+, \[r\d+(?:, #(\d+))?\]", dis)
    assert len(bases) == 1 and len(loads) == 1, dis
    assert bases[0] + int(loads[0] or 0) == addr


def test_assembly_sources_can_include_it(tmp_path: Path):
    cc = need_tool("arm-none-eabi-gcc")
    s = tmp_path / "inc.S"
    s.write_text('#include "tx_user.h"\n    .text\n    nop\n')
    for trace in ("0", "1"):
        subprocess.run(
            [
                cc,
                *CPU,
                "-c",
                f"-DCT_TRACE={trace}",
                "-DCT_TX_EXEC_PIN=15",
                f"-I{TX_USER.parent}",
                *_incs("qemu_netduinoplus2"),
                str(s),
                "-o",
                str(tmp_path / "inc.o"),
            ],
            check=True,
        )
