"""Boot firmware images on QEMU netduinoplus2 and check the CT_DONE sentinel (`make qemu-smoke`).

    python -m tests.firmware.qemu_smoke [--repeat N] <dir-or-elf> [...]

Every ``ct.elf`` under the given directories runs in its own folder (semihosting trace files land there),
with the deterministic flags from firmware/README.md; the console goes to ``uart.log`` beside the ELF.
Exit status 0 only if every image ended with ``CT_DONE ok=<n> fail=0`` and QEMU exited 0. With
``--repeat N`` each image runs N times and its console output and trace files must be identical.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.firmware.console import parse_console

QEMU = os.environ.get("QEMU", "qemu-system-arm")
SHIFT = os.environ.get("QEMU_SHIFT", "0")


def qemu_command(elf: Path, shift: str = SHIFT) -> list[str]:
    return [QEMU, "-M", "netduinoplus2", "-nographic", "-monitor", "none", "-serial", "stdio",
            "-semihosting-config", "enable=on,target=native",
            "-icount", f"shift={shift},sleep=off,align=off", "-kernel", str(elf.resolve())]


def run_image(elf: Path, timeout: float = 120.0, cwd: Path | None = None) -> tuple[int, str]:
    """Run one image to its exit; returns (QEMU exit status, console text). -1 on timeout."""
    try:
        p = subprocess.run(qemu_command(elf), cwd=cwd or elf.parent, stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout or b""
        return -1, out.decode("utf-8", "replace")
    return p.returncode, p.stdout.decode("utf-8", "replace")


TRACE_FILES = ("trace.SVDat", "trace.trx")


def _trace_bytes(folder: Path) -> dict[str, bytes]:
    return {n: (folder / n).read_bytes() for n in TRACE_FILES if (folder / n).is_file()}


def main(argv: list[str]) -> int:
    repeat = 1
    if argv[:1] == ["--repeat"]:
        repeat, argv = int(argv[1]), argv[2:]
    elves: list[Path] = []
    for arg in argv or ["firmware/build/qemu_netduinoplus2"]:
        p = Path(arg)
        elves += [p] if p.is_file() else sorted(p.rglob("ct.elf"))
    if not elves:
        print(f"qemu-smoke: no ct.elf found under {argv}", file=sys.stderr)
        return 1
    bad = 0
    for elf in elves:
        rc, text = run_image(elf)
        (elf.parent / "uart.log").write_text(text)
        con = parse_console(text)
        ok = rc == 0 and con.passed
        first = _trace_bytes(elf.parent)
        for _ in range(repeat - 1):
            rc2, text2 = run_image(elf)
            if (rc2, text2) != (rc, text) or _trace_bytes(elf.parent) != first:
                print(f"      {elf.parent}: a repeated run differed (console or trace file)")
                ok = False
                break
        bad += not ok
        status = "ok  " if ok else "FAIL"
        done = f"ok={con.done[0]} fail={con.done[1]}" if con.done else "no CT_DONE"
        print(f"{status} {elf.parent}  rc={rc} {done} results={len(con.results)}")
        if not ok:
            print("      " + "\n      ".join(text.splitlines()[-8:]))
    print(f"qemu-smoke: {len(elves) - bad} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
