"""Build and run the Zephyr firmware images for the tests (firmware/zephyr/CMakeLists.txt).

Zephyr is third-party code, never committed: the tests use the west-style workspace given by
``CT_ZEPHYR_WS``, ``$CT_DEPS_DIR/zephyrproject`` or ``firmware/third_party/zephyrproject`` (the layout of
``../shared/deps/extract.sh DIR``; firmware/README.md, "Zephyr"). Without one they skip (fail in CI).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import IN_CI, need_tool
from tests.firmware.console import Console, parse_console
from tests.firmware.qemu_smoke import qemu_command

ROOT = Path(__file__).resolve().parents[3]
FW = ROOT / "firmware"
MODULES = ("hal/cmsis_6", "hal/stm32", "debug/segger")
TRACE_FILES = ("trace.SVDat", "trace.ctf", "vla.edges")


def zephyr_ws() -> Path:
    """The Zephyr workspace (``zephyr/`` + ``modules/``); skips, or fails in CI, when there is none."""
    candidates = [os.environ.get("CT_ZEPHYR_WS", "")]
    if os.environ.get("CT_DEPS_DIR"):
        candidates.append(str(Path(os.environ["CT_DEPS_DIR"]) / "zephyrproject"))
    candidates.append(str(FW / "third_party" / "zephyrproject"))
    for c in candidates:
        if c and (Path(c) / "zephyr" / "VERSION").is_file():
            return Path(c)
    msg = ("Zephyr sources not found: set CT_DEPS_DIR to a folder extracted by ../shared/deps/extract.sh "
           "(firmware/README.md, Zephyr)")
    if IN_CI:
        pytest.fail(msg + " — required in CI", pytrace=False)
    pytest.skip(msg)


def build(out: Path, app: str, board: str = "qemu_netduinoplus2", *, fw: Path = FW, ws: Path | None = None,
          **opts: object) -> Path:
    """Configure and build one image into ``out``; returns the ELF. ``opts``: -D<name>=<value>
    (ct options such as CT_NTASKS, CT_ZEPHYR_TRACE, CT_ZEPHYR_MPU, or CONFIG_* Kconfig overrides);
    ``fw``: the firmware folder (or a copy elsewhere), ``ws``: the Zephyr workspace (:func:`zephyr_ws`)."""
    for tool in ("cmake", "ninja", "arm-none-eabi-gcc", "dtc"):
        need_tool(tool)
    ws = ws or zephyr_ws()
    env = {k: v for k, v in os.environ.items() if k != "BOARD"}
    env.update(ZEPHYR_BASE=str(ws / "zephyr"), ZEPHYR_TOOLCHAIN_VARIANT="gnuarmemb",
               GNUARMEMB_TOOLCHAIN_PATH=env.get("GNUARMEMB_TOOLCHAIN_PATH", "/usr"))
    cmd = ["nice", "cmake", "-S", str(fw / "zephyr"), "-B", str(out), "-G", "Ninja", f"-DCT_BOARD={board}",
           f"-DAPP={app}", "-DZEPHYR_MODULES=" + ";".join(str(ws / "modules" / m) for m in MODULES),
           "-DBUILD_VERSION=v4.3.0", f"-DPython3_EXECUTABLE={sys.executable}", "-Wno-dev",
           "--log-level=WARNING"]
    cmd += [f"-D{k}={v}" for k, v in sorted(opts.items())]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    p = subprocess.run(["nice", "ninja", "-j2", "-C", str(out)], env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return out / "zephyr" / "zephyr.elf"


@dataclass
class Run:
    rc: int
    text: str
    console: Console
    files: dict[str, bytes]
    edges: Path | None


def run(elf: Path, work: Path, plugin: Path | None = None, timeout: float = 120.0) -> Run:
    """Run an image under QEMU (icount shift=0) in ``work``; optionally with the VLA plugin."""
    need_tool("qemu-system-arm")
    work.mkdir(parents=True, exist_ok=True)
    for f in TRACE_FILES:
        (work / f).unlink(missing_ok=True)
    cmd = qemu_command(elf)
    if plugin is not None:
        cmd += ["-plugin", f"{plugin},out=vla.edges"]
    p = subprocess.run(cmd, cwd=work, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    text = p.stdout.decode("utf-8", "replace")
    files = {f: (work / f).read_bytes() for f in TRACE_FILES[:2] if (work / f).exists()}
    edges = work / "vla.edges"
    return Run(p.returncode, text, parse_console(text), files, edges if edges.exists() else None)


def build_plugin(out: Path) -> Path:
    gcc = need_tool(os.environ.get("CC", "gcc"))
    subprocess.run([gcc, "-O2", "-shared", "-fPIC", "-fvisibility=hidden", "-o", str(out),
                    str(FW / "tools" / "vla" / "vla.c")], check=True)
    return out


def sv_file(folder: Path, data: bytes) -> Path:
    """The raw SystemView stream with the ';' text header capture.py prepends, as an .SVDat file."""
    p = folder / "trace.SVDat"
    p.write_bytes(b";\n; Version     SEGGER SystemViewer V3.58\n;\n" + data)
    return p
