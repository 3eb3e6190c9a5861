"""The RIOT port (firmware/ports/riot) on QEMU netduinoplus2: an image built by `make fw-riot` runs to the
sentinel, twice with identical console and trace; its SystemView stream (made by the port: RIOT has no
SystemView support) decodes as O=RIOT with the thread names RIOT keeps, one switch-in per yield and one
mark per site call; the image carries its configuration; an unknown option stops the build.

Builds go to the default FW_BUILD (firmware/build, as `make fw-ci-riot`, which CI runs first: only the
crosstrace part is rebuilt then). Skips without RIOT sources (CT_DEPS_DIR, firmware/README.md "RIOT")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import need_tool
from tests.firmware.conftest import deps_dir, rtos_sources
from tests.firmware.zephyr._build import run, sv_file
from trace_parsers import open_trace
from trace_parsers.model import EventKind

ROOT = Path(__file__).resolve().parents[3]
FW = ROOT / "firmware"
sys.path.insert(0, str(FW / "scripts"))
from ct_elfconfig import parse_ct_config, read_ct_config  # noqa: E402

pytestmark = [pytest.mark.qemu, pytest.mark.firmware, pytest.mark.timeout(600)]


def make_riot(app: str, board: str = "qemu_netduinoplus2", variant: str = "", opts: str = "",
              fw_build: Path | None = None) -> subprocess.CompletedProcess:
    for tool in ("make", "arm-none-eabi-gcc", "flock", "patch"):
        need_tool(tool)
    rtos_sources("riot")
    cmd = ["make", "-s", "-C", str(ROOT), "fw-riot", f"APP={app}", f"BOARD={board}", f"VARIANT={variant}",
           f"OPTS={opts}", f"CT_DEPS_DIR={deps_dir().resolve()}"]
    if fw_build is not None:
        cmd.append(f"FW_BUILD={fw_build}")
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS")}
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)


def built(app: str, variant: str = "", opts: str = "") -> Path:
    fw_build = Path(os.environ.get("FW_BUILD") or FW / "build")
    fw_build = fw_build if fw_build.is_absolute() else ROOT / fw_build
    p = make_riot(app, variant=variant, opts=opts, fw_build=fw_build)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    elf = fw_build / "qemu_netduinoplus2" / "riot" / (app + (f"-{variant}" if variant else "")) / "ct.elf"
    assert elf.is_file()
    return elf


@pytest.fixture(scope="module")
def ctx2(tmp_path_factory):
    """ctx_switch with 2 tasks, 20 yields each: built once, run twice."""
    elf = built("ctx_switch", "riot-test", "-DCT_NTASKS=2 -DCT_ITERATIONS=20")
    d = tmp_path_factory.mktemp("riot_ctx2")
    return elf, run(elf, d / "a"), run(elf, d / "b"), d


def test_runs_to_the_sentinel_deterministically(ctx2):
    _, a, b, _ = ctx2
    assert a.rc == 0 and a.console.passed, a.text[-2000:]
    assert a.console.results["ctx_switch.yield"].n == 39
    assert a.text == b.text and a.files == b.files and a.files["trace.SVDat"]


def test_image_records_its_configuration(ctx2):
    cfg = parse_ct_config(read_ct_config(ctx2[0]))
    assert (cfg["rtos"], cfg["board"], cfg["app"], cfg["variant"]) == (
        "riot", "qemu_netduinoplus2", "ctx_switch", "riot-test")
    assert cfg["rtos_version"] == (deps_dir() / "RIOT" / "VERSION").read_text().split("=")[1].strip()
    assert cfg["opts"]["CT_NTASKS"] == 2 and cfg["git"].startswith("src-")
    assert f"CT_CONFIG {read_ct_config(ctx2[0])}" in ctx2[1].text


def test_systemview_stream_made_by_the_port(ctx2):
    _, a, _, d = ctx2
    t = open_trace(sv_file(d, a.files["trace.SVDat"]))
    assert t.meta.rtos == "RIOT"
    assert sorted(task.name for task in t.tasks) == ["coord", "yield0", "yield1"]  # thread_get_name()
    kinds = t.events["kind"]
    switches = int((kinds == EventKind.TASK_SWITCH_IN).sum())
    marks = int((kinds == EventKind.MARK).sum())
    assert switches >= 40  # every yield switches to the other task (+ the coordinator)
    assert marks == 2 * 40  # ctx.yield + ctx.switch_in per yield (20 per task)


def test_an_unknown_option_stops_the_build(tmp_path):
    """The option check can fail: a misspelt -D option is an error, not silently ignored."""
    p = make_riot("calib", opts="-DCT_ITERATONS=5", fw_build=tmp_path)
    assert p.returncode != 0 and "unknown option(s)" in p.stdout + p.stderr
