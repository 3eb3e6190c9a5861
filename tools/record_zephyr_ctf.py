#!/usr/bin/env python3
"""Record a real Zephyr CTF stream: build ``samples/subsys/tracing`` (``ram-tracing`` snippet) for
``mps2/an386``, run it in QEMU and save the used part of the RAM trace buffer.

    CT_DEPS_DIR=DIR tools/record_zephyr_ctf.py [--out tests/data/ctf/zephyr_4.3_mps2_an386]

``DIR`` is a folder extracted by ``../shared/deps/extract.sh`` (it holds ``zephyrproject/``). The
Python running cmake needs Zephyr's ``scripts/requirements-base.txt`` (pass ``--python`` if it is
not this interpreter). QEMU runs with ``-icount shift=4,sleep=off``: virtual time advances by
instruction count and jumps over idle periods, so the run, and the recorded bytes, are
deterministic. The script stops the machine once the 8 KiB buffer is full (or after
``--timeout`` seconds), saves ``ram_tracing[0:pos]`` through the QEMU monitor (``pmemsave``; the
addresses of ``ram_tracing`` and the backend's ``pos`` come from the ELF symbol table) and writes it
as the stream file ``channel0_0``. Zephyr's TSDL metadata (``subsys/tracing/ctf/tsdl/metadata``)
is not copied: the tests read it from ``$CT_DEPS_DIR`` (pass ``--with-metadata`` for a
self-contained folder outside the repository).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOARD, MACHINE = "mps2/an386", "mps2-an386"


def build(deps: Path, build_dir: Path, python: str) -> Path:
    zephyr = deps / "zephyrproject" / "zephyr"
    mods = deps / "zephyrproject" / "modules"
    env = dict(os.environ, ZEPHYR_BASE=str(zephyr), ZEPHYR_TOOLCHAIN_VARIANT="gnuarmemb",
               GNUARMEMB_TOOLCHAIN_PATH="/usr")
    modules = ";".join(str(mods / m) for m in ("hal/cmsis_6", "hal/stm32", "debug/segger"))
    subprocess.run(["cmake", "-GNinja", "-S", str(zephyr / "samples/subsys/tracing"), "-B", str(build_dir),
                    f"-DBOARD={BOARD}", "-DSNIPPET=ram-tracing", f"-DZEPHYR_MODULES={modules}",
                    "-DBUILD_VERSION=v4.3.0", f"-DPython3_EXECUTABLE={python}"],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    subprocess.run(["ninja", "-C", str(build_dir)], check=True, env=env, stdout=subprocess.DEVNULL)
    return build_dir / "zephyr" / "zephyr.elf"


def symbols(elf: Path, names: tuple[str, ...]) -> dict[str, int]:
    out = subprocess.run(["arm-none-eabi-nm", str(elf)], check=True, capture_output=True, text=True).stdout
    found: dict[str, int] = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] in names:
            found[parts[2]] = int(parts[0], 16)
    missing = set(names) - set(found)
    if missing:
        sys.exit(f"symbols {sorted(missing)} not in {elf}: not a ram-tracing build?")
    return found


class Monitor:
    """The QEMU human monitor on a unix socket."""

    def __init__(self, path: Path) -> None:
        self.s = socket.socket(socket.AF_UNIX)
        for _ in range(100):
            try:
                self.s.connect(str(path))
                break
            except OSError:
                time.sleep(0.05)
        self.s.settimeout(5)
        self._until(b"(qemu) ")

    def _until(self, mark: bytes) -> bytes:
        buf = b""
        while not buf.endswith(mark):
            buf += self.s.recv(65536)
        return buf

    def cmd(self, c: str) -> str:
        self.s.sendall(c.encode() + b"\n")
        return self._until(b"(qemu) ").decode(errors="replace")

    def word(self, addr: int) -> int:
        text = self.cmd(f"xp /1wx 0x{addr:x}")
        line = next(ln for ln in text.splitlines() if ln.strip().startswith(f"{addr:016x}:"))
        return int(line.split(":")[1].split()[0], 16)


def record(elf: Path, out: Path, timeout: float, size: int) -> int:
    sym = symbols(elf, ("ram_tracing", "pos", "buffer_full"))
    with tempfile.TemporaryDirectory() as tmp:
        sock, dump = Path(tmp) / "mon.sock", Path(tmp) / "ram.bin"
        qemu = subprocess.Popen(
            ["qemu-system-arm", "-M", MACHINE, "-nographic", "-icount", "shift=4,sleep=off",
             "-monitor", f"unix:{sock},server,nowait", "-serial", f"file:{Path(tmp) / 'uart.txt'}",
             "-kernel", str(elf)], stdin=subprocess.DEVNULL)
        try:
            mon = Monitor(sock)
            t0 = time.monotonic()
            while time.monotonic() - t0 < timeout:
                if mon.word(sym["buffer_full"] & ~3) >> (8 * (sym["buffer_full"] & 3)) & 0xFF:
                    break
                time.sleep(0.2)
            mon.cmd("stop")
            pos = mon.word(sym["pos"])
            mon.cmd(f'pmemsave 0x{sym["ram_tracing"]:x} {size} "{dump}"')
            mon.s.sendall(b"quit\n")
            qemu.wait(timeout=10)
        finally:
            if qemu.poll() is None:
                qemu.kill()
        data = dump.read_bytes()
    if not 0 < pos <= len(data):
        sys.exit(f"implausible buffer position {pos}")
    out.mkdir(parents=True, exist_ok=True)
    (out / "channel0_0").write_bytes(data[:pos])
    return pos


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--deps", default=os.environ.get("CT_DEPS_DIR"), help="extracted deps (CT_DEPS_DIR)")
    ap.add_argument("--out", default=str(ROOT / "tests/data/ctf/zephyr_4.3_mps2_an386"))
    ap.add_argument("--build", default=None, help="build folder (default: a temporary one)")
    ap.add_argument("--python", default=sys.executable, help="Python with Zephyr's requirements-base")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for a full buffer")
    ap.add_argument("--with-metadata", action="store_true", help="copy Zephyr's metadata beside the stream")
    a = ap.parse_args()
    if not a.deps:
        sys.exit("set CT_DEPS_DIR (or --deps) to a folder extracted by ../shared/deps/extract.sh")
    deps = Path(a.deps)
    with tempfile.TemporaryDirectory() as tmp:
        elf = build(deps, Path(a.build or tmp) / "build", a.python)
        pos = record(elf, Path(a.out), a.timeout, 8192)
    if a.with_metadata:
        shutil.copy(deps / "zephyrproject/zephyr/subsys/tracing/ctf/tsdl/metadata", Path(a.out) / "metadata")
    print(f"{a.out}/channel0_0: {pos} bytes")


if __name__ == "__main__":
    main()
