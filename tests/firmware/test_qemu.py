"""Build firmware images with CMake and boot them on QEMU netduinoplus2 (deterministic -icount).

Bare-metal images need no third-party code and run in the fast suite when the cross toolchain, cmake,
ninja and qemu-system-arm are present. FreeRTOS images (slow) also need FreeRTOS-Kernel and the SEGGER
sources, taken from $CT_DEPS_DIR/{FreeRTOS-Kernel,segger} (or firmware/third_party)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.firmware.conftest import rtos_sources
from tests.firmware.console import parse_console
from tests.firmware.qemu_smoke import run_image

ROOT = Path(__file__).resolve().parents[2]
FW = ROOT / "firmware"
TOOLS = ["arm-none-eabi-gcc", "cmake", "ninja", "qemu-system-arm"]
DEPS = Path(os.environ.get("CT_DEPS_DIR", FW / "third_party"))

pytestmark = [pytest.mark.firmware, pytest.mark.qemu,
              pytest.mark.skipif(any(shutil.which(t) is None for t in TOOLS),
                                 reason="needs " + ", ".join(TOOLS))]


def build(out: Path, rtos: str, app: str, *opts: str, board: str = "qemu_netduinoplus2") -> Path:
    args = ["cmake", "-S", str(FW), "-B", str(out), "-G", "Ninja", f"-DRTOS={rtos}", f"-DBOARD={board}",
            f"-DAPP={app}", "-Wno-dev", "--log-level=WARNING", *opts]
    for name, var in (("FreeRTOS-Kernel", "FREERTOS_KERNEL"), ("segger", "SEGGER")):
        if (DEPS / name).is_dir():
            args.append(f"-DFETCHCONTENT_SOURCE_DIR_{var}={(DEPS / name).resolve()}")
    subprocess.run(args, check=True, capture_output=True, text=True)
    p = subprocess.run(["cmake", "--build", str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return out / "ct.elf"


@pytest.fixture(scope="module")
def baremetal_images(tmp_path_factory):
    base = tmp_path_factory.mktemp("bm")
    return {app: build(base / app, "baremetal", app) for app in ("calib", "isr_latency")}


def test_baremetal_calib_runs_to_sentinel_deterministically(baremetal_images, tmp_path):
    elf = baremetal_images["calib"]
    rc1, out1 = run_image(elf, timeout=60, cwd=tmp_path)
    rc2, out2 = run_image(elf, timeout=60, cwd=tmp_path)
    assert rc1 == rc2 == 0, out1
    assert out1 == out2, "QEMU -icount runs must be bit-identical"
    con = parse_console(out1)
    assert con.passed and not con.fails
    assert set(con.results) == {"calib.ts_read", "calib.site", "calib.loop", "fft.duration"}
    assert all(r.ts_hz == 1_000_000_000 and r.unit == "ticks" for r in con.results.values())
    loop = con.results["calib.loop"]
    assert loop.min == loop.max and 2000 <= loop.min <= 2100  # 2 insn per iteration of a 1000-loop
    fft = con.results["fft.duration"]
    assert 20_000 <= fft.min <= 60_000  # QEMU reference for a radix-2 FFT-256: 35,350 insn
    assert con.config and "rtos=baremetal" in con.config and "app=calib" in con.config


def test_baremetal_isr_latency(baremetal_images, tmp_path):
    rc, out = run_image(baremetal_images["isr_latency"], timeout=60, cwd=tmp_path)
    con = parse_console(out)
    assert rc == 0 and con.passed, out
    r = con.results["isr.to_task.latency"]
    assert r.n == 200 and 0 < r.min <= r.max < 1000


def test_stm32f429_image_builds_with_config(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("ct_elfconfig", FW / "scripts" / "ct_elfconfig.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    elf = build(tmp_path / "disco", "baremetal", "isr_latency", "-DCT_ITERATIONS=50",
                board="stm32f429i_disco")
    cfg = mod.parse_ct_config(mod.read_ct_config(elf))
    assert cfg["board"] == "stm32f429i_disco" and cfg["rtos"] == "baremetal"
    assert cfg["opts"]["CT_ITERATIONS"] == 50


def test_failure_sentinel_on_unsupported_call(tmp_path):
    """A port call that fails ends the run with CT_FAIL + CT_DONE fail=1 and QEMU exit status 1."""
    elf = build(tmp_path / "b", "baremetal", "isr_latency", "-DCT_ISR_PERIOD_US=200000")
    rc, out = run_image(elf, timeout=60, cwd=tmp_path)  # 200 ms period > the 100-tick take timeout
    con = parse_console(out)
    assert rc == 1, out
    assert con.done == (0, 1)
    assert con.fails and con.fails[0][0] == "isr.to_task.latency" and "err=-2" in con.fails[0][1]


def test_invalid_app_is_rejected(tmp_path):
    p = subprocess.run(["cmake", "-S", str(FW), "-B", str(tmp_path / "x"), "-G", "Ninja", "-DRTOS=baremetal",
                        "-DAPP=ctx_switch"], capture_output=True, text=True)
    assert p.returncode != 0 and "needs an RTOS" in p.stderr


@pytest.fixture
def freertos_sources():
    return rtos_sources("freertos")  # skips, or fails in CI, without them


@pytest.mark.slow
@pytest.mark.parametrize("app", ["ctx_switch", "periodic", "isr_latency", "fft_workload"])
def test_freertos_apps_traced_and_untraced(app, tmp_path, freertos_sources):
    traced = build(tmp_path / "t", "freertos", app)
    rc, out = run_image(traced, timeout=120, cwd=tmp_path)
    con = parse_console(out)
    assert rc == 0 and con.passed, out
    assert con.trace and con.trace["file"] == "trace.SVDat" and con.trace["dropped"] == "0"
    sv = (tmp_path / "trace.SVDat").read_bytes()
    assert sv[:10] == bytes(10) and len(sv) == int(con.trace["bytes"])
    rc2, out2 = run_image(traced, timeout=120, cwd=tmp_path)
    assert out2 == out and (tmp_path / "trace.SVDat").read_bytes() == sv, "runs must be identical"
    untraced = build(tmp_path / "u", "freertos", app, "-DCT_TRACE=0")
    rc, out = run_image(untraced, timeout=120, cwd=tmp_path / "u")
    con_u = parse_console(out)
    assert rc == 0 and con_u.passed and con_u.trace is None, out
    for metric, r in con_u.results.items():
        if metric in ("ctx_switch.yield", "isr.to_task.latency", "fft.duration"):
            assert r.mean <= con.results[metric].mean, "tracing cannot make a metric cheaper"


@pytest.mark.slow
def test_freertos_trace_overflow_is_counted_and_fails_the_run(tmp_path, freertos_sources):
    """A SystemView buffer too small for the yield bursts drops packets: counted, reported, failed run."""
    elf = build(tmp_path / "b", "freertos", "ctx_switch", "-DCT_SV_BUFFER_SIZE=256")
    rc, out = run_image(elf, timeout=120, cwd=tmp_path)
    con = parse_console(out)
    assert rc == 1 and con.done is not None and con.done[1] == 1, out
    assert con.trace is not None and int(con.trace["dropped"]) > 0
    assert ("trace.overflow", f"dropped={con.trace['dropped']}") in con.fails
    assert "ctx_switch.yield" in con.results  # the measurement itself still completed
    sv = (tmp_path / "trace.SVDat").read_bytes()
    assert len(sv) == int(con.trace["bytes"])
