"""Every pin the tests use is an output on the real board: the STM32F429I-DISCO board code
(firmware/boards/stm32f429i_disco/board.c), compiled for the host with its registers in a simulated
register file, leaves GPIOG's mode register with every site pin of ct_sites.h (the Thread-Metric PG15/PG0/PG1
included) and both status pins in output mode, and drives them low."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FW = ROOT / "firmware"
CC = shutil.which("gcc") or shutil.which("cc")
sys.path.insert(0, str(FW / "tools"))
from vla.sites import read_sites, status_pins  # noqa: E402

pytestmark = pytest.mark.skipif(CC is None, reason="no host C compiler (gcc/cc)")
GPIOG_BASE = 0x40021800

# Host register file: every CT_REG access lands in a cell per address. The clock start-up loops wait for
# ready flags, which the simulated RCC/PWR report as set from the start.
HARNESS = r"""
#include <stdint.h>
#include <stdio.h>
void ct_board_init(void);
static uintptr_t addr[256];
static uint32_t cell[256];
volatile uint32_t *ct_host_reg(uintptr_t a)
{
    unsigned i = 0;
    for (; i < 256 && addr[i] && addr[i] != a; ++i) {}
    if (!addr[i]) {
        addr[i] = a;
        if (a == 0x40023800u) cell[i] = (1u << 17) | (1u << 25);       /* RCC_CR: HSERDY, PLLRDY */
        if (a == 0x40007004u) cell[i] = (1u << 16) | (1u << 17);       /* PWR_CSR: ODRDY, ODSWRDY */
        if (a == 0x40023808u) cell[i] = 2u << 2;                       /* RCC_CFGR: SWS = PLL */
    }
    return &cell[i];
}
int main(void)
{
    ct_board_init();
    printf("MODER=%u BSRR=%u\n", (unsigned)*ct_host_reg(0x40021800u), (unsigned)*ct_host_reg(0x40021818u));
    return 0;
}
"""


BOARD_C = FW / "boards" / "stm32f429i_disco" / "board.c"


def board_gpiog(tmp_path: Path, board_c: Path = BOARD_C) -> tuple[int, int]:
    """GPIOG MODER and the last BSRR store after ct_board_init() of the board code, run on the host."""
    shim = tmp_path / "shim"
    shim.mkdir()
    regs = (FW / "boards" / "common" / "stm32f4_regs.h").read_text()
    regs, n = re.subn(r"#define CT_REG\(addr\) .*", "volatile uint32_t *ct_host_reg(uintptr_t a);\n"
                      "#define CT_REG(addr) (*ct_host_reg((uintptr_t)(addr)))", regs)
    assert n == 1, "stm32f4_regs.h: CT_REG definition not found"
    (shim / "stm32f4_regs.h").write_text(regs)
    (tmp_path / "harness.c").write_text(HARNESS)
    exe = tmp_path / "board"
    cmd = [CC, "-std=gnu11", "-O1", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter",
           f"-I{shim}", f"-I{BOARD_C.parent}", f"-I{FW / 'include'}",
           "-include", str(shim / "stm32f4_regs.h"),
           str(tmp_path / "harness.c"), str(board_c), "-o", str(exe)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True, timeout=30).stdout
    m = re.fullmatch(r"MODER=(\d+) BSRR=(\d+)\n", out)
    assert m, out
    return int(m[1]), int(m[2])


def used_pins() -> set[int]:
    return {s.pin for s in read_sites()} | set(status_pins())


def test_every_site_and_status_pin_is_an_output_and_starts_low(tmp_path):
    moder, bsrr = board_gpiog(tmp_path)
    pins = used_pins()
    assert {0, 1, 15} <= pins  # tm.isr, tm.report, tm.count
    not_out = sorted(p for p in pins if (moder >> (2 * p)) & 3 != 1)
    assert not not_out, f"GPIOG pins used by the tests but not outputs on the F429 board: {not_out}"
    reset = bsrr >> 16
    assert all(reset >> p & 1 for p in pins), f"BSRR reset mask {reset:#06x} misses a used pin"


def test_the_check_sees_a_missing_output(tmp_path):
    """The same check on board code that leaves PG15 out (as it was before issue 34) fails."""
    src = BOARD_C.read_text()
    bad = tmp_path / "bad" / "board.c"
    bad.parent.mkdir()
    bad.write_text(src.replace("CT_GPIOG_OUTPUTS 0xFFFFu", "CT_GPIOG_OUTPUTS 0x7FFFu"))
    assert bad.read_text() != src
    moder, _ = board_gpiog(tmp_path, bad)
    assert (moder >> 30) & 3 != 1
