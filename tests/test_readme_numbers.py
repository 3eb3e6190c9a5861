"""The README's Zephyr tables quote the committed goldens (ideal analyzer, pins), rounded to whole ns;
tests/test_docs_numbers.py checks the same cells against comparison.csv and the report."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GOLD = ROOT / "tests" / "golden" / "qemu_netduinoplus2"

#: README column -> capture variant suffix, per table.
MPU_COLUMNS = {"untraced": "-untraced", "untraced + MPU guard": "-mpu-untraced", "SystemView": "",
               "SystemView + MPU guard": "-mpu", "CTF": "-ctf"}
ROWS = {"`ctx_switch.yield`, N = 2": ("ctx_switch-n2", "ctx_switch.yield"),
        "`isr.to_task.latency`": ("isr_latency", "isr.to_task.latency")}


def _pin_mean(rtos: str, capture: str, metric: str) -> float:
    doc = json.loads((GOLD / rtos / capture / "ref" / "metrics.json").read_text())
    return float(doc["metrics"][f"{metric}|logic|ideal"]["mean"])


def _table(text: str, header_start: str) -> list[list[str]]:
    lines = text.splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.startswith(header_start))
    rows = []
    for ln in lines[i:]:
        if not ln.startswith("|"):
            break
        rows.append([c.strip() for c in ln.strip("|").split("|")])
    return [rows[0]] + rows[2:]


def _num(cell: str) -> int:
    return int(re.sub(r"[^\d]", "", cell))


def zephyr_table_cells(text: str) -> list[tuple[str, str, str, str]]:
    """(where, capture folder, metric, cell) of every cell of the README's Zephyr MPU table."""
    head, *rows = _table(text, "| Zephyr 4.3 |")
    return [(f"{row[0]} / {col}", ROWS[row[0]][0] + MPU_COLUMNS[col], ROWS[row[0]][1], cell)
            for row in rows for col, cell in zip(head[1:], row[1:])]


def differs(cell: str, got: float | list[float]) -> bool:
    """Whether a README cell (whole ns) is not what ``got`` says: one figure, or every place a
    figure is shown (each must round to the cell; none at all differs too)."""
    shown = got if isinstance(got, list) else [got]
    return not shown or any(round(v) != _num(cell) for v in shown)


def check_zephyr_table(text: str, value: Callable[[str, str], float | list[float]] | None = None,
                       source: str = "golden") -> list[str]:
    """Mismatches between the README's Zephyr MPU table and ``value(capture folder, metric)`` (the
    goldens' pin mean unless given; empty when they agree)."""
    value = value or (lambda capture, metric: _pin_mean("zephyr", capture, metric))
    bad = []
    for where, capture, metric, cell in zephyr_table_cells(text):
        got = value(capture, metric)
        if differs(cell, got):
            bad.append(f"{where}: README {cell}, {source} {got}")
    return bad


def test_readme_zephyr_table_matches_goldens() -> None:
    if not (GOLD / "zephyr").is_dir():
        pytest.skip("no Zephyr goldens")
    assert check_zephyr_table((ROOT / "README.md").read_text(encoding="utf-8")) == []


def test_a_changed_number_is_caught() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8").replace("| 877 |", "| 878 |")
    assert any("SystemView + MPU guard" in m for m in check_zephyr_table(text))
