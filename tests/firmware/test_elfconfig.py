"""firmware/scripts/ct_elfconfig.py: reading the .ct_config section from an ELF, and its error messages."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("ct_elfconfig",
                                               ROOT / "firmware" / "scripts" / "ct_elfconfig.py")
elfconfig = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(elfconfig)

CONFIG = "rtos=freertos rtos_version=V11.1.0+ board=qemu_netduinoplus2 app=ctx_switch variant=n5 trace=1 " \
         "git=0123456789ab opts=CT_TRACE=1,CT_NTASKS=5,CT_ITERATIONS=200"


def _compile(cc: str, tmp_path: Path, extra: list[str]) -> Path:
    src = tmp_path / "cfg.c"
    src.write_text('__attribute__((section(".ct_config"), used)) static const char c[] = "CT_CONFIG ' + CONFIG
                   + '";\nint f(void) { return 1; }\n')
    obj = tmp_path / "cfg.o"
    subprocess.run([cc, "-c", *extra, str(src), "-o", str(obj)], check=True)
    return obj


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no host gcc")
def test_reads_host_elf64_object(tmp_path):
    obj = _compile("gcc", tmp_path, [])
    assert elfconfig.read_ct_config(obj) == CONFIG
    parsed = elfconfig.parse_ct_config(CONFIG)
    assert parsed["rtos"] == "freertos" and parsed["variant"] == "n5"
    assert parsed["opts"] == {"CT_TRACE": 1, "CT_NTASKS": 5, "CT_ITERATIONS": 200}


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no arm-none-eabi-gcc")
def test_reads_arm_elf32_object_like_objcopy(tmp_path):
    obj = _compile("arm-none-eabi-gcc", tmp_path, ["-mcpu=cortex-m4", "-mthumb"])
    out = tmp_path / "sec.bin"
    subprocess.run(["arm-none-eabi-objcopy", "-O", "binary", "--only-section=.ct_config", str(obj), str(out)],
                   check=True)
    assert out.read_bytes().split(b"\0")[0].decode() == "CT_CONFIG " + CONFIG
    assert elfconfig.read_ct_config(obj) == CONFIG


def test_errors_name_file_and_offset(tmp_path):
    bad = tmp_path / "not.elf"
    bad.write_bytes(b"MZ" + bytes(100))
    with pytest.raises(elfconfig.ElfConfigError, match=r"not\.elf:0x0: expected ELF magic"):
        elfconfig.read_ct_config(bad)
    trunc = tmp_path / "trunc.elf"
    trunc.write_bytes(b"\x7fELF\x01\x01\x01" + bytes(0x40) + b"\xff" * 8)
    with pytest.raises(elfconfig.ElfConfigError, match="trunc.elf"):
        elfconfig.read_ct_config(trunc)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no host gcc")
def test_missing_section(tmp_path):
    src = tmp_path / "x.c"
    src.write_text("int f(void) { return 0; }\n")
    subprocess.run(["gcc", "-c", str(src), "-o", str(tmp_path / "x.o")], check=True)
    with pytest.raises(elfconfig.ElfConfigError, match=r"no \.ct_config section"):
        elfconfig.read_ct_config(tmp_path / "x.o")
