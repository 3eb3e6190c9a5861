"""Third-party RTOS sources for the firmware tests: ``$CT_DEPS_DIR/<name>`` (the layout that
``../shared/deps/extract.sh DIR`` produces; .ci/run exports it) or the git-ignored firmware/third_party.
Missing sources skip a test on a developer's machine and fail it in CI (``CI=true``), as the corpus does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import IN_CI, missing

FW = Path(__file__).resolve().parents[2] / "firmware"
# what each RTOS build needs: FreeRTOS-Kernel + SEGGER SystemView/RTT, or ThreadX
RTOS_DEPS = {"freertos": ("FreeRTOS-Kernel", "segger"), "threadx": ("threadx",),
             "ucos3": ("uC-OS3", "uC-CPU", "uC-LIB", "segger", "segger-sysview-ucos"),
             "ucos2": ("uC-OS2", "segger", "segger-sysview-ucos"),
             "riot": ("RIOT", "RIOT-pkgs", "segger")}


def deps_dir() -> Path:
    return Path(os.environ.get("CT_DEPS_DIR") or FW / "third_party")


def rtos_sources(rtos: str) -> dict[str, Path]:
    """{name: folder} of the sources ``rtos`` needs; skips (or fails in CI) when one is missing."""
    d = deps_dir()
    found = {n: d / n for n in RTOS_DEPS[rtos]}
    absent = [n for n, p in found.items() if not p.is_dir()]
    if absent:
        missing(f"{rtos} sources {', '.join(absent)} not in {d}: set CT_DEPS_DIR to a folder extracted by "
                "../shared/deps/extract.sh (firmware/README.md)")
    return found


def fetchcontent_args(rtos: str) -> list[str]:
    """The -DFETCHCONTENT_SOURCE_DIR_<NAME>= arguments firmware.mk passes for ``rtos``."""
    var = {"FreeRTOS-Kernel": "FREERTOS_KERNEL", "segger": "SEGGER", "threadx": "THREADX", "uC-OS3": "UC_OS3",
           "uC-CPU": "UC_CPU", "uC-LIB": "UC_LIB", "segger-sysview-ucos": "SEGGER_SYSVIEW_UCOS",
           "uC-OS2": "UC_OS2"}
    return [f"-DFETCHCONTENT_SOURCE_DIR_{var[n]}={p.resolve()}" for n, p in rtos_sources(rtos).items()]
