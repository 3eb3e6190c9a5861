"""Zephyr images are reproducible from any path (firmware/zephyr/CMakeLists.txt): the revision is a hash of
the image's own sources and the pinned Zephyr version ("src-<12 hex>", as the FreeRTOS/ThreadX images),
never a git commit or a machine path; -ffile-prefix-map/-fdebug-prefix-map cover the checkout, the build
folder, ZEPHYR_BASE and the modules. The same sources at two checkout paths, with the Zephyr workspace at
two paths and two build folders, give byte-identical ELFs; a changed source file gives another revision."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.firmware.zephyr._build import FW, MODULES, build, zephyr_ws

pytestmark = [pytest.mark.firmware, pytest.mark.timeout(900)]
IMAGE_DIRS = ("zephyr", "ports", "include", "common", "apps", "boards")


def copy_checkout(dest: Path) -> Path:
    """The firmware sources at another path (no .git, no build folder: the revision must need neither)."""
    fw = dest / "firmware"
    fw.mkdir(parents=True)
    for d in IMAGE_DIRS:
        shutil.copytree(FW / d, fw / d, ignore=shutil.ignore_patterns("__pycache__", "build", "third_party"))
    return fw


def copy_workspace(ws: Path, dest: Path) -> Path:
    """The parts of the Zephyr workspace the build reads (zephyr/ and the three modules), elsewhere."""
    shutil.copytree(ws / "zephyr", dest / "zephyr", symlinks=True, ignore=shutil.ignore_patterns(".git"))
    for m in MODULES:
        shutil.copytree(ws / "modules" / m, dest / "modules" / m, symlinks=True,
                        ignore=shutil.ignore_patterns(".git"))
    return dest


def revision(build_dir: Path) -> str:
    return json.loads((build_dir / "build.json").read_text())["git_rev"]


@pytest.mark.slow
def test_same_zephyr_elf_from_two_checkout_and_workspace_paths(tmp_path):
    ws = zephyr_ws()
    elves, revs = [], []
    for where, wsp in (("a", ws), ("some/much/longer/other/checkout-path", None)):
        base = tmp_path / where
        fw = copy_checkout(base / "repo")
        wsp = wsp or copy_workspace(ws, base / "zephyr-elsewhere")
        elf = build(base / "bld", "isr_latency", fw=fw, ws=wsp, CT_ZEPHYR_TRACE="ctf")
        data = elf.read_bytes()
        for p in (base, tmp_path, wsp, ws):
            assert str(p).encode() not in data, f"the image embeds a build-machine path ({p})"
        elves.append(data)
        revs.append(revision(base / "bld"))
    assert re.fullmatch(r"src-[0-9a-f]{12}", revs[0]), revs[0]
    assert revs[0] == revs[1]
    assert elves[0] == elves[1], "the Zephyr image depends on the checkout or workspace path"
    # the check can fail: one changed source file of the image gives another revision (and image)
    port = base / "repo" / "firmware" / "ports" / "zephyr" / "ct_port_zephyr.c"
    port.write_text(port.read_text() + "\n/* changed */\n")
    changed = build(base / "bld", "isr_latency", fw=base / "repo" / "firmware", ws=wsp, CT_ZEPHYR_TRACE="ctf")
    assert revision(base / "bld") != revs[0]
    assert changed.read_bytes() != elves[0]


def test_zephyr_revision_is_a_source_hash_not_git():
    """The CMake code computes the revision from files and the Zephyr version, never from git."""
    text = (FW / "zephyr" / "CMakeLists.txt").read_text()
    code = "\n".join(ln.split("#", 1)[0] for ln in text.splitlines())
    assert "git" not in re.sub(r"CT_GIT_REV|git=|git_rev", "", code)
    assert 'set(CT_GIT_REV "src-${CT_GIT_REV}")' in code
    assert "KERNEL_VERSION_STRING" in code.split("string(SHA256 CT_GIT_REV", 1)[0]
