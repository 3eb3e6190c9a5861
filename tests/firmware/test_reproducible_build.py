"""Images are reproducible from any path (firmware/CMakeLists.txt: -ffile-prefix-map for the checkout, the
build folder and the third-party folders; the source revision is a hash of the image's sources, not a git
commit): the same sources at two different checkout paths, with the dependencies at two different paths
and build folders at two different paths, give byte-identical ELFs (so the same elf_sha256 in run.json)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import need_tool
from tests.firmware.conftest import rtos_sources

ROOT = Path(__file__).resolve().parents[2]
FW = ROOT / "firmware"
IMAGE_DIRS = ("cmake", "include", "common", "apps", "boards", "ports")
DEP_VAR = {"FreeRTOS-Kernel": "FREERTOS_KERNEL", "segger": "SEGGER", "threadx": "THREADX"}


def copy_checkout(dest: Path) -> Path:
    """The image sources of this checkout at another path (no .git: the revision must not need one)."""
    fw = dest / "firmware"
    fw.mkdir(parents=True)
    shutil.copy2(FW / "CMakeLists.txt", fw)
    for d in IMAGE_DIRS:
        shutil.copytree(FW / d, fw / d, ignore=shutil.ignore_patterns("__pycache__"))
    return fw


def build(fw: Path, out: Path, rtos: str, app: str, deps: dict[str, Path]) -> bytes:
    cmd = ["cmake", "-S", str(fw), "-B", str(out), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=", f"-DRTOS={rtos}",
           "-DBOARD=qemu_netduinoplus2", f"-DAPP={app}", "-Wno-dev", "--log-level=WARNING",
           *(f"-DFETCHCONTENT_SOURCE_DIR_{DEP_VAR[n]}={p}" for n, p in deps.items())]
    subprocess.run(cmd, check=True, capture_output=True)
    p = subprocess.run(["cmake", "--build", str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return (out / "ct.elf").read_bytes()


@pytest.mark.timeout(900)  # two full RTOS builds
@pytest.mark.slow
@pytest.mark.parametrize("rtos", ["freertos", "threadx"])
def test_same_elf_from_two_checkout_and_dependency_paths(rtos, tmp_path):
    for tool in ("cmake", "ninja", "arm-none-eabi-gcc"):
        need_tool(tool)
    deps = rtos_sources(rtos)
    elves = []
    for where in ("a", "some/much/longer/other/checkout-path"):
        base = tmp_path / where
        fw = copy_checkout(base / "repo")
        local = {}
        for name, src in deps.items():  # the dependencies copied to a path of their own per checkout
            local[name] = base / "deps-elsewhere" / name
            shutil.copytree(src, local[name], symlinks=True, ignore=shutil.ignore_patterns(".git"))
        elf = build(fw, base / "bld", rtos, "isr_latency", local)
        for p in (base, tmp_path):
            assert str(p).encode() not in elf, f"the image embeds a build-machine path ({p})"
        elves.append(elf)
    assert elves[0] == elves[1], "the image depends on the checkout or dependency path"
