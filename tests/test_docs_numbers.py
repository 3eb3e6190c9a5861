"""The numbers methodology.md and capture-guide.md quote come from the committed goldens (ideal
analyzer, pins), as the README's do (issue 33 item 10): a re-recorded campaign that changes them
fails here until the docs follow."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GOLD = ROOT / "tests" / "golden" / "qemu_netduinoplus2"
DOCS = ROOT / "docs"

#: (metric as the docs name it, RTOS) -> (golden capture folder, metric id)
SOURCES = {
    ("ctx_switch.yield", "threadx"): ("ctx_switch-n2", "ctx_switch.yield"),
    ("ctx_switch.yield", "freertos"): ("ctx_switch-n2", "ctx_switch.yield"),
    ("isr.to_task.latency", "threadx"): ("isr_latency", "isr.to_task.latency"),
    ("isr.to_task.latency", "freertos"): ("isr_latency", "isr.to_task.latency"),
    ("fft.duration", "freertos"): ("fft_workload", "fft.duration"),
}


def _golden(metric: str, rtos: str) -> int:
    folder, mid = SOURCES[(metric, rtos)]
    doc = json.loads((GOLD / rtos / folder / "ref" / "metrics.json").read_text())
    return round(float(doc["metrics"][f"{mid}|logic|ideal"]["mean"]))


def _num(cell: str) -> float:
    return float(re.sub(r"[^\d.]", "", cell))


def _rows(text: str, header_start: str) -> list[list[str]]:
    lines = text.splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.startswith(header_start))
    out = []
    for ln in lines[i + 2:]:
        if not ln.startswith("|"):
            break
        out.append([c.strip() for c in ln.strip("|").split("|")])
    return out


def check_methodology(text: str) -> list[str]:
    """The sampling-resolution table: interval = golden mean, rate = 100 / interval."""
    bad = []
    for metric, rtos, interval, rate, *_ in _rows(text, "| metric | RTOS | shortest interval"):
        key = (metric.strip("`"), rtos.lower())
        if key not in SOURCES:
            continue
        want = _golden(*key)
        r = 100e3 / want  # MS/s
        want_rate = round(r) if r >= 10 else round(r, 1)
        if _num(interval) != want or _num(rate) != want_rate:
            bad.append(f"{key}: {interval} / {rate}, golden {want} ns / {want_rate} MS/s")
    return bad


def check_capture_guide(text: str) -> list[str]:
    """Instructions = golden mean; on the board ≥ one 180 MHz cycle each; rate 100 / that, at most."""
    bad = []
    for what, insn, board, rate in _rows(text, "| metric | QEMU (instructions)"):
        m = re.fullmatch(r"`([^`]+)`, (\w+).*", what)
        if m is None or (m.group(1), m.group(2).lower()) not in SOURCES:
            continue
        want = _golden(m.group(1), m.group(2).lower())
        us = want / 180.0
        if (_num(insn) != want or _num(board) != math.floor(us * 10) / 10
                or _num(rate) != math.floor(100 / us)):
            bad.append(f"{what}: {insn} / {board} / {rate}, golden {want}")
    return bad


@pytest.fixture(scope="module")
def texts() -> dict[str, str]:
    if not GOLD.is_dir():
        pytest.skip("no goldens")
    return {n: (DOCS / n).read_text(encoding="utf-8") for n in ("methodology.md", "capture-guide.md")}


def test_methodology_quotes_the_goldens(texts):
    assert check_methodology(texts["methodology.md"]) == []
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    n = re.search(r"(\d+) reference runs at `-icount shift=0`", readme)
    assert n and f"the {n.group(1)} reference runs" in texts["methodology.md"]
    assert not re.search(r"\b(416|184|383) (ns|instructions|insn)", texts["methodology.md"])


def test_capture_guide_quotes_the_goldens(texts):
    assert check_capture_guide(texts["capture-guide.md"]) == []


def test_a_changed_number_is_caught(texts):
    assert check_methodology(texts["methodology.md"].replace("| 419 ns |", "| 416 ns |"))
    assert check_capture_guide(texts["capture-guide.md"].replace("| 188 |", "| 184 |"))


def test_docs_link_only_files_that_exist():
    """Relative markdown links in docs/ and the README point at files of this repository."""
    missing = []
    for md in [ROOT / "README.md", *DOCS.glob("*.md")]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", md.read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (md.parent / target).exists():
                missing.append(f"{md.name}: {target}")
    assert missing == []


def test_readme_headline_table_quotes_the_goldens():
    """The README's first table, 1 ns/instruction rows: FreeRTOS, ThreadX and Zephyr at N = 2, the
    figures the report's first sentence gives (one variant, one time scale, pins, ideal analyzer)."""
    if not (GOLD / "zephyr").is_dir():
        pytest.skip("no Zephyr goldens")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = _rows(readme, "| metric (traced builds, site to site, ns at the pins)")
    wanted = {"`ctx_switch.yield`": ("ctx_switch-n2", "ctx_switch.yield"),
              "`isr.to_task.latency`": ("isr_latency", "isr.to_task.latency"),
              "`fft.duration`": ("fft_workload", "fft.duration")}
    seen = 0
    for row in rows:
        key = re.match(r"`([^`]+)`", row[0])
        if key is None or f"`{key.group(1)}`" not in wanted:
            continue
        folder, mid = wanted[f"`{key.group(1)}`"]
        # 1 ns/instruction: the ideal analyzer; board speed: the 100 MS/s profile the row judges at
        run, prof = ("ref", "ideal") if "1 ns/instruction" in row[0] else ("board", "la100")
        for rtos, cell in zip(("freertos", "threadx", "zephyr"), row[1:4]):
            if cell == "—":
                continue
            where = GOLD / rtos / folder / run
            if not where.is_dir():  # ThreadX's FFT test is the f2 variant (captures/README.md)
                where = GOLD / rtos / f"{folder}-f2" / run
            doc = json.loads((where / "metrics.json").read_text())
            assert _num(cell) == round(float(doc["metrics"][f"{mid}|logic|{prof}"]["mean"])), (row[0], rtos)
        seen += 1
    assert seen == 5
