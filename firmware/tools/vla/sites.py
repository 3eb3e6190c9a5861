"""The instrumentation site table, read from firmware/include/ct_sites.h (the single source)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

SITES_H = Path(__file__).resolve().parents[2] / "include" / "ct_sites.h"
_ROW = re.compile(r'X\(\s*(\d+)\s*,\s*(\w+)\s*,\s*"([^"]+)"\s*,\s*(\d+)\s*\)')
_PIN = re.compile(r"#define\s+CT_PIN_(DONE|FAIL)\s+(\d+)")


@dataclass(frozen=True)
class Site:
    id: int
    cname: str
    name: str
    pin: int


def read_sites(path: str | Path = SITES_H) -> list[Site]:
    text = Path(path).read_text()
    sites = [Site(int(i), c, n, int(p)) for i, c, n, p in _ROW.findall(text)]
    if not sites:
        raise ValueError(f'{path}: expected CT_SITE_TABLE rows X(id, CNAME, "name", pin), found none')
    return sites


def status_pins(path: str | Path = SITES_H) -> dict[int, str]:
    """GPIOG pin -> channel name of the status pins (``status.done``, ``status.fail``)."""
    return {int(p): f"status.{k.lower()}" for k, p in _PIN.findall(Path(path).read_text())}
