"""Static checks of the porting-layer contract (firmware/README.md, "Port contract"): every port defines
every function ct_port.h declares, and apps include no RTOS, SEGGER or board-private headers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

FW = Path(__file__).resolve().parents[2] / "firmware"
DECL_RE = re.compile(r"^[A-Za-z_][\w \*]*?\b(ct_\w+)\s*\(", re.M)


def _strip_comments(text: str) -> str:
    return re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S)


def declared() -> set[str]:
    text = _strip_comments((FW / "include" / "ct_port.h").read_text())
    names = {m.group(1) for m in DECL_RE.finditer(text) if not text[m.start():].startswith("typedef")}
    assert len(names) >= 20, names
    return names


def defined_in(files: list[Path]) -> set[str]:
    out = set()
    for f in files:
        text = _strip_comments(f.read_text())
        out |= set(re.findall(r"\b(ct_\w+)\s*\([^;{}]*\)\s*\{", text))
    return out


PORTS = sorted(p.name for p in (FW / "ports").iterdir() if p.is_dir() and any(p.glob("*.c")))


def test_ports_found():
    assert {"baremetal", "freertos"} <= set(PORTS)


#: code a port shares with another one, outside ports/ (the µC/OS SystemView recorder: firmware/ucos)
SHARED = {"ucos3": ("ucos",), "ucos2": ("ucos",)}


@pytest.mark.parametrize("port", PORTS)
def test_port_defines_every_contract_function(port):
    files = sorted((FW / "ports" / port).rglob("*.c"))
    files += sorted(f for d in SHARED.get(port, ()) for f in (FW / d).rglob("*.c"))
    missing = declared() - defined_in(files)
    assert not missing, f"ports/{port} does not define {sorted(missing)}"


def test_template_documents_every_function():
    missing = declared() - defined_in([FW / "ports" / "ct_port_template.c"])
    assert not missing, f"ct_port_template.c lacks {sorted(missing)}"


ALLOWED_INCLUDES = {"ct_app.h", "ct_mark.h", "ct_port.h", "ct_board.h", "ct_sites.h", "ct_fft.h",
                    "math.h", "stdint.h", "stddef.h", "string.h"}


@pytest.mark.parametrize("src", sorted((FW / "apps").rglob("*.c")), ids=lambda p: p.parent.name)
def test_apps_use_only_the_porting_layer(src):
    includes = set(re.findall(r'#include\s+[<"]([^>"]+)[>"]', src.read_text()))
    assert includes <= ALLOWED_INCLUDES, f"{src.name} includes {sorted(includes - ALLOWED_INCLUDES)}"


def test_every_app_has_options_and_readme():
    for app in (p for p in (FW / "apps").iterdir() if p.is_dir()):
        assert (app / "options.cmake").is_file() and (app / "README.md").is_file(), app.name


def test_make_targets_have_help():
    text = (FW / "firmware.mk").read_text()
    phony = re.findall(r"^\.PHONY:.*$", text, re.M)
    assert phony and all(re.match(r"^\.PHONY: [\w-]+ ## \S", line) for line in phony), phony
