"""Build and run ThreadX firmware images for the tests (firmware/CMakeLists.txt, RTOS=threadx).

ThreadX is third-party code fetched at a pinned commit, never committed: the tests use a local tree given
by ``CT_THREADX_SRC``, ``$CT_DEPS_DIR/threadx`` or ``firmware/third_party/threadx`` (firmware/README.md,
"ThreadX"), or let CMake download it when ``FW_ONLINE=1``. Without one of them the tests skip.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import need_tool  # noqa: F401  (re-exported for the ThreadX tests)
from tests.firmware.conftest import rtos_sources
from tests.firmware.console import Console, parse_console
from tests.firmware.qemu_smoke import qemu_command

ROOT = Path(__file__).resolve().parents[3]
FW = ROOT / "firmware"


def threadx_source() -> Path | None:
    """The local ThreadX tree, or None when CMake may download it (FW_ONLINE=1); skips otherwise."""
    candidates = [os.environ.get("CT_THREADX_SRC", "")]
    if os.environ.get("CT_DEPS_DIR"):
        candidates.append(str(Path(os.environ["CT_DEPS_DIR"]) / "threadx"))
    candidates.append(str(FW / "third_party" / "threadx"))
    for c in candidates:
        if c and (Path(c) / "ports" / "cortex_m4" / "gnu").is_dir():
            return Path(c)
    if os.environ.get("FW_ONLINE"):
        return None
    return rtos_sources("threadx")["threadx"]  # skips, or fails in CI


def build(out: Path, app: str, **opts: int) -> Path:
    """Configure and build one qemu_netduinoplus2 image into ``out``; returns the ELF."""
    for tool in ("cmake", "ninja", "arm-none-eabi-gcc"):
        need_tool(tool)
    src = threadx_source()
    cmd = [
        "cmake",
        "-S",
        str(FW),
        "-B",
        str(out),
        "-G",
        "Ninja",
        "-DCMAKE_BUILD_TYPE=",
        "-DRTOS=threadx",
        "-DBOARD=qemu_netduinoplus2",
        f"-DAPP={app}",
        "-Wno-dev",
        "--log-level=WARNING",
    ]
    cmd += [f"-D{k}={v}" for k, v in sorted(opts.items())]
    if src is not None:
        cmd.append(f"-DFETCHCONTENT_SOURCE_DIR_THREADX={src}")
    subprocess.run(cmd, check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(out)], check=True, capture_output=True)
    return out / "ct.elf"


@dataclass
class Run:
    rc: int
    text: str
    console: Console
    trace: bytes | None
    edges: Path | None


def run(elf: Path, work: Path, plugin: Path | None = None, timeout: float = 120.0) -> Run:
    """Run an image under QEMU (icount shift=0) in ``work``; optionally with the VLA plugin."""
    need_tool("qemu-system-arm")
    work.mkdir(parents=True, exist_ok=True)
    for f in ("trace.trx", "vla.edges"):
        (work / f).unlink(missing_ok=True)
    cmd = qemu_command(elf)
    if plugin is not None:
        cmd += ["-plugin", f"{plugin},out=vla.edges"]
    p = subprocess.run(cmd, cwd=work, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    text = p.stdout.decode("utf-8", "replace")
    trx = work / "trace.trx"
    edges = work / "vla.edges"
    return Run(
        p.returncode,
        text,
        parse_console(text),
        trx.read_bytes() if trx.exists() else None,
        edges if edges.exists() else None,
    )


def infos(text: str) -> dict[str, int]:
    """``CT_INFO key=value`` lines as a dict."""
    out = {}
    for line in text.splitlines():
        if line.startswith("CT_INFO "):
            k, _, v = line[8:].strip().partition("=")
            out[k] = int(v)
    return out
