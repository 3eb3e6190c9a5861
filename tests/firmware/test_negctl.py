"""Negative-control build options of include/ct_mark.h (CT_NEGCTL_*): the logic on the host (which trace
records are dropped, pins untouched) and, with the cross compiler, the code they add to a real site: exactly
n `nop`s between the pin store and the trace call, nothing else changed, nothing at all when off."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FW = ROOT / "firmware"
HOST = Path(__file__).resolve().parent / "host"
CC = shutil.which("gcc") or shutil.which("cc")
ARM_CC = shutil.which("arm-none-eabi-gcc")
ARM_OBJDUMP = shutil.which("arm-none-eabi-objdump")
TASK_WAKE = 6  # ct_sites.h: isr.task_wake


def harness(tmp: Path, *defs: str) -> Path:
    out = tmp / ("harness" + "".join(d.replace("=", "_") for d in defs))
    cmd = [CC, "-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", "-DCT_TRACE=1", *(f"-D{d}" for d in defs),
           f"-I{HOST}", f"-I{FW / 'include'}", str(HOST / "harness.c"), str(FW / "common" / "ct_fmt.c"),
           str(FW / "common" / "ct_fft.c"), "-lm", "-o", str(out)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return out


def toggles(exe: Path, site: int, k: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    out = subprocess.run([str(exe), "toggle", str(site), str(k)], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    pins = [tuple(map(int, ln.split()[1:])) for ln in out if ln.startswith("pin ")]
    marks = [tuple(map(int, ln.split()[1:])) for ln in out if ln.startswith("mark ")]
    return pins, marks


@pytest.mark.skipif(CC is None, reason="no host C compiler (gcc/cc)")
@pytest.mark.parametrize("every", [1, 3, 4])
def test_drop_every_nth_trace_record_of_one_site(tmp_path, every):
    exe = harness(tmp_path, f"CT_NEGCTL_DROP_SITE={TASK_WAKE}", f"CT_NEGCTL_DROP_EVERY={every}")
    k = 13
    pins, marks = toggles(exe, TASK_WAKE, k)
    assert len(pins) == k  # every pin edge is still there
    kept = [lvl for j, (_, lvl) in enumerate(pins) if (j + 1) % every]  # occurrence j+1 = N, 2N, ... dropped
    assert marks == [(TASK_WAKE, lvl) for lvl in kept]
    assert len(marks) == k - k // every
    other_pins, other_marks = toggles(exe, TASK_WAKE - 1, k)  # another site keeps all its records
    assert len(other_marks) == len(other_pins) == k


@pytest.mark.skipif(CC is None, reason="no host C compiler (gcc/cc)")
def test_delay_keeps_every_record_and_off_is_the_default(tmp_path):
    base = toggles(harness(tmp_path), TASK_WAKE, 9)
    delayed = toggles(harness(tmp_path, f"CT_NEGCTL_DELAY_SITE={TASK_WAKE}", "CT_NEGCTL_DELAY_INSNS=5"),
                      TASK_WAKE, 9)
    assert base == delayed and len(base[1]) == 9


@pytest.mark.skipif(CC is None, reason="no host C compiler (gcc/cc)")
@pytest.mark.parametrize("defs", [("CT_NEGCTL_DELAY_SITE=6",), ("CT_NEGCTL_DROP_EVERY=4",),
                                  ("CT_NEGCTL_DROP_SITE=99", "CT_NEGCTL_DROP_EVERY=4")])
def test_incomplete_or_unknown_site_options_do_not_compile(tmp_path, defs):
    with pytest.raises(AssertionError):
        harness(tmp_path, *defs)


SITE_C = """#include "ct_mark.h"
volatile uint8_t ct_site_level[CT_SITE_COUNT];
void site_under_test(void) { ct_site(CT_SITE_ISR_TASK_WAKE); ct_site(CT_SITE_ISR_ENTER); }
"""


def arm_disassembly(tmp: Path, *defs: str) -> list[str]:
    src = tmp / "site.c"
    src.write_text(SITE_C)
    obj = tmp / ("site" + "".join(d.replace("=", "_") for d in defs) + ".o")
    inc = [f"-I{FW / d}" for d in ("include", "boards/qemu_netduinoplus2", "boards/common")]
    subprocess.run([ARM_CC, "-mcpu=cortex-m4", "-mthumb", "-O2", "-std=gnu11", "-Wall", "-Werror",
                    "-DCT_TRACE=1", *(f"-D{d}" for d in defs), *inc, "-c", str(src), "-o", str(obj)],
                   check=True, capture_output=True)
    dis = subprocess.run([ARM_OBJDUMP, "-d", "--no-show-raw-insn", str(obj)], capture_output=True,
                         text=True, check=True).stdout
    insns = [re.sub(r"^\s*[0-9a-f]+:\s*", "", ln).split("@")[0].strip()
             for ln in dis.split("<site_under_test>:", 1)[1].splitlines() if re.match(r"^\s*[0-9a-f]+:", ln)]
    # code addresses move by the inserted nops: literal-pool offsets and branch targets are normalised, and
    # the alignment padding before the literal pool (a nop after the return) is not code
    target = re.compile(r"\b[0-9a-f]+ <site_under_test\+0x[0-9a-f]+>")
    insns = [re.sub(r"\[pc, #\d+\]", "[pc, #.]", target.sub("<.>", x)) for x in insns]
    ret = max(j for j, x in enumerate(insns) if re.match(r"pop\s.*pc|bx\s+lr", x))
    return insns[: ret + 1] + [x for x in insns[ret + 1 :] if x != "nop"]


@pytest.mark.skipif(not (ARM_CC and ARM_OBJDUMP), reason="no arm-none-eabi-gcc/objdump")
@pytest.mark.parametrize("n", [1, 20, 64])
def test_delay_is_exactly_n_nops_between_pin_store_and_trace_call(tmp_path, n):
    base = arm_disassembly(tmp_path)
    delayed = arm_disassembly(tmp_path, f"CT_NEGCTL_DELAY_SITE={TASK_WAKE}", f"CT_NEGCTL_DELAY_INSNS={n}")
    assert "nop" not in base
    assert delayed.count("nop") == n
    i = delayed.index("nop")
    assert delayed[i : i + n] == ["nop"] * n
    assert delayed[:i] + delayed[i + n :] == base  # same code otherwise (no other instruction moved)
    store = max(j for j in range(i) if delayed[j].startswith("str"))  # the pin store right before them
    assert all(not x.startswith(("bl", "b.", "b ")) for x in delayed[store:i])
    call = next(j for j in range(i + n, len(delayed)) if delayed[j].startswith("bl"))
    assert "ct_port_trace_mark" in delayed[call]
