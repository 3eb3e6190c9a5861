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
    ("ctx_switch.yield", "zephyr"): ("ctx_switch-n2", "ctx_switch.yield"),
    ("isr.to_task.latency", "zephyr"): ("isr_latency", "isr.to_task.latency"),
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
    """Instructions = golden mean; on the board ≥ one 180 MHz cycle each; rate 100 / that, at most. The
    short intervals (switch, ISR → task) have a row for each RTOS of the headline table."""
    bad = []
    missing = {(m, r) for m in ("ctx_switch.yield", "isr.to_task.latency")
               for r in ("freertos", "threadx", "zephyr")}
    for what, insn, board, rate in _rows(text, "| metric | QEMU (instructions)"):
        m = re.fullmatch(r"`([^`]+)`, (\w+).*", what)
        if m is None or (m.group(1), m.group(2).lower()) not in SOURCES:
            continue
        missing.discard((m.group(1), m.group(2).lower()))
        want = _golden(m.group(1), m.group(2).lower())
        us = want / 180.0
        if (_num(insn) != want or _num(board) != math.floor(us * 10) / 10
                or _num(rate) != math.floor(100 / us)):
            bad.append(f"{what}: {insn} / {board} / {rate}, golden {want}")
    return bad + [f"no row for {m}, {r}" for m, r in sorted(missing)]


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


#: the README's first table's RTOS columns
HEADLINE_COLUMNS = {"FreeRTOS + SystemView": "freertos", "ThreadX + TraceX": "threadx",
                    "Zephyr + SystemView": "zephyr", "µC/OS-III + SystemView": "ucos3",
                    "µC/OS-II + SystemView": "ucos2", "RIOT + SystemView": "riot"}
FFT_VARIANT = {"threadx": "f2", "ucos3": "f1", "ucos2": "f1", "riot": "f1"}
HEADLINE_ROWS = {"`ctx_switch.yield`": ("ctx_switch-n2", "ctx_switch.yield"),
                 "`isr.to_task.latency`": ("isr_latency", "isr.to_task.latency"),
                 "`fft.duration`": ("fft_workload", "fft.duration")}


def headline_cells(readme: str) -> list[tuple[str, str, str, str, str, str, str]]:
    """(where, RTOS, capture folder, run, metric, analyzer profile, cell) of every figure of the
    README's first table, the Zephyr N = 5 / 10 ones in its first row's label included. 1 ns/instruction
    rows: the ideal analyzer; board speed: the 100 MS/s profile the row judges at."""
    cells = []
    head = "| metric (traced builds, site to site, ns at the pins)"
    lines = readme.splitlines()
    columns = [c.strip() for c in next(ln for ln in lines if ln.startswith(head)).strip("|").split("|")]
    rtoses = [HEADLINE_COLUMNS[c] for c in columns[1:] if c in HEADLINE_COLUMNS]
    for row in _rows(readme, head):
        key = re.match(r"`([^`]+)`", row[0])
        if key is None or f"`{key.group(1)}`" not in HEADLINE_ROWS:
            continue
        folder, mid = HEADLINE_ROWS[f"`{key.group(1)}`"]
        run, prof = ("ref", "ideal") if "1 ns/instruction" in row[0] else ("board", "la100")
        for rtos, cell in zip(rtoses, row[1:1 + len(rtoses)]):
            if cell == "—":
                continue
            # the FFT test's variant per RTOS (captures/README.md): ThreadX's f2, the µC/OS and RIOT ones f1
            fft = folder == "fft_workload" and rtos in FFT_VARIANT
            folder_r = f"{folder}-{FFT_VARIANT[rtos]}" if fft else folder
            cells.append((f"{row[0][:30]} / {rtos}", rtos, folder_r, run, mid, prof, cell))
        n = re.search(r"Zephyr ([\d,]+) / ([\d,]+) at N = 5 / 10", row[0])
        if n:
            cells += [(f"{row[0][:30]} / zephyr N = {k}", "zephyr", f"ctx_switch-n{k}", run, mid, prof, c)
                      for k, c in zip((5, 10), n.groups())]
    return cells


def check_headline_table(readme: str, value, source: str = "golden") -> list[str]:
    """Mismatches between the README's first table and ``value(rtos, folder, run, metric, profile)``."""
    from .test_readme_numbers import differs

    bad = []
    for where, rtos, folder, run, mid, prof, cell in headline_cells(readme):
        got = value(rtos, folder, run, mid, prof)
        if differs(cell, got):
            bad.append(f"{where}: README {cell}, {source} {got}")
    return bad


def _golden_mean(rtos: str, folder: str, run: str, metric: str, profile: str) -> float:
    doc = json.loads((GOLD / rtos / folder / run / "metrics.json").read_text())
    return float(doc["metrics"][f"{metric}|logic|{profile}"]["mean"])


def test_readme_headline_table_quotes_the_goldens():
    """The README's first table: the six RTOSes, the figures the report's first sentence and charts
    give (one variant, one time scale, pins; ideal analyzer at 1 ns/instruction)."""
    if not (GOLD / "zephyr").is_dir():
        pytest.skip("no Zephyr goldens")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len({c[0].split(" / ")[0] for c in headline_cells(readme)}) == 5
    assert {c[1] for c in headline_cells(readme)} == set(HEADLINE_COLUMNS.values())
    assert check_headline_table(readme, _golden_mean) == []
    assert check_headline_table(readme.replace("| 3,358 |", "| 3,359 |"), _golden_mean)
    assert check_headline_table(readme.replace("| 7,248 |", "| 7,249 |"), _golden_mean)  # µC/OS-II


# ---- the README, comparison.csv and the report give one figure per question (issue 33 item 3) ----

CAPS = ROOT / "captures" / "qemu_netduinoplus2"


def _readme_captures(readme: str) -> set[tuple[str, str, str]]:
    from .test_readme_numbers import zephyr_table_cells

    return ({(rtos, folder, run) for _, rtos, folder, run, *_ in headline_cells(readme)}
            | {("zephyr", folder, "ref") for _, folder, _, _ in zephyr_table_cells(readme)})


@pytest.fixture(scope="module")
def bundled(tmp_path_factory):
    """The bundled captures the README quotes, analyzed and reported as `make demo` does."""
    import shutil

    from analyzers.campaign import analyze_dirs
    from analyzers.report import render

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    wanted = _readme_captures(readme)
    if not all((CAPS / r / f / run).is_dir() for r, f, run in wanted):
        pytest.skip("bundled captures missing")
    root = tmp_path_factory.mktemp("bundled")
    for rtos, folder, run in wanted:
        shutil.copytree(CAPS / rtos / folder / run, root / "captures" / CAPS.name / rtos / folder / run)
    man = analyze_dirs([root / "captures"], root / "out", scheduler="serial", quiet=True)
    assert man["failed"] == 0
    return readme, root / "out", render(root / "out")


def _display(s: str) -> float:
    return float(s.replace(",", ""))


def report_figures(text: str) -> dict[tuple[str, str], list[float]]:
    """(chart title of the test, RTOS) -> every figure the report shows for it, in ns: the bar of the
    first-screen chart, the first sentence and the panel beside the charts (headline test), the
    number-of-tasks table and chart. The chart's measurement goes in as the key ``(title, "")``."""
    import html as h

    out: dict[tuple[str, str], list[float]] = {}
    for svg in re.finditer(r"<svg class='chart'[^>]*aria-label='([^']*)'.*?</svg>", text, re.S):
        title, body = h.unescape(svg.group(1)), svg.group(0)
        sub = re.search(r"y='29' class='tk'>([^<]*)<", body)
        if sub:
            out.setdefault((title, ""), []).append(h.unescape(sub.group(1)))
        for label, mean in re.findall(r"data-tip='([^:']+): mean ([\d,.]+) ns", body):
            out.setdefault((title, label), []).append(_display(mean))
        ts = re.fullmatch(r"ctx_switch\.yield by number of tasks, (.+)", title)
        tips = re.findall(r"data-tip='([^,']+), tasks (\d+): ([\d,.]+) ns'", body) if ts else []
        for label, n, mean in tips:
            out.setdefault((f"ctx_switch n{n} · {ts.group(1)}", label), []).append(_display(mean))
    first = text[text.index("<section id='answer'>"):text.index("</section>")]
    here = re.search(r"comparison\.csv row <code>app=([^,]+), (?:variant=([^,]+), )?time_scale=([^,]+),",
                     first)
    if here:
        title = " · ".join((f"{here.group(1)} {here.group(2) or ''}".strip(), here.group(3)))
        best = re.search(r"<b>([^<]+)</b> is fastest at <code>[^<]+</code>: <b>([\d,.]+) ns</b>", first)
        rest = re.findall(r"; <b>([^<]+)</b> ([\d,.]+) ns \(", first)
        panel = re.findall(r"<li><b>([^<]+)</b>: trace [\d,.]+ ns, pins ([\d,.]+) ns", first)
        for label, mean in ([best.groups()] if best else []) + rest + panel:
            out.setdefault((title, label), []).append(_display(mean))
    nt = text[text.index("id='ntasks'"):text.index("id='comparison'")] if "id='ntasks'" in text else ""
    rows = re.findall(r"<tr>(.*?)</tr>", nt)
    head = re.findall(r"<th[^>]*>([^<]*)</th>", rows[0]) if rows else []
    for row in rows[1:]:
        cells = re.findall(r"<td[^>]*?(?: data-v='([^']*)')?>([^<]*)</td>", row)
        ts, rtos, build = (h.unescape(c[1]) for c in cells[:3])
        for col, (v, _) in zip(head, cells):
            if col.startswith("N=") and v:
                variant = "-".join([f"n{col[2:]}"] + ([] if build == "default" else build.split()))
                out.setdefault((f"ctx_switch {variant} · {ts}", rtos), []).append(float(v))
    return out


def _title(folder: str, ts: str) -> str:
    app, _, variant = folder.partition("-")
    return f"{app} {variant}".strip() + f" · {ts}"


def _getters(out: Path, text: str):
    """value(rtos, folder, run, metric, profile) from comparison.csv and from the report."""
    import pandas as pd

    from analyzers.campaign.tables import time_scale_label

    comp = pd.read_csv(out / "comparison.csv", keep_default_na=False)
    man = {c["capture"]: c for c in json.loads((out / "manifest.json").read_text())["captures"]}
    fig = report_figures(text)

    def scale(rtos, folder, run):
        return time_scale_label(man[f"{CAPS.name}/{rtos}/{folder}/{run}"]["time_scale"])

    def csv(rtos, folder, run, metric, profile):
        app, _, variant = folder.partition("-")
        r = comp[(comp["app"] == app) & (comp["variant"] == variant) & (comp["rtos"] == rtos)
                 & (comp["time_scale"] == scale(rtos, folder, run)) & (comp["metric"] == metric)
                 & (comp["source"] == "logic") & (comp["profile"] == profile)]
        return [float(v) for v in r["mean_ns"]]

    def report(rtos, folder, run, metric, profile):
        title = _title(folder, scale(rtos, folder, run))
        if fig.get((title, "")) != [f"{metric} (at the pins, {profile})"]:
            return []  # not this measurement
        return fig.get((title, rtos), [])

    return csv, report, fig


def test_readme_report_and_csvs_give_one_figure(bundled):
    """Every figure of the README's tables is the comparison.csv row of its test (app, variant,
    time scale, pins, profile) and what the report shows for it in every place it does: the chart
    bar, the first sentence and its panel, the number-of-tasks table and chart."""
    from .test_readme_numbers import check_zephyr_table

    readme, out, text = bundled
    csv, report, fig = _getters(out, text)
    assert check_headline_table(readme, csv, "comparison.csv") == []
    assert check_headline_table(readme, report, "report") == []
    for value, name in ((csv, "comparison.csv"), (report, "report")):
        assert check_zephyr_table(readme, lambda c, m, v=value: v("zephyr", c, "ref", m, "ideal"), name) == []
    # the headline figure is shown in five places, the CTF one (its trace is +0.5 % off the pins) in two
    assert len(fig[("ctx_switch n2 · 1 ns/insn", "zephyr")]) == 5
    assert len(fig[("ctx_switch n2-ctf · 1 ns/insn", "zephyr")]) == 2


def test_a_second_figure_for_one_question_is_caught(bundled):
    readme, out, text = bundled
    bad = text.replace("pins 760 ns", "pins 761 ns", 1)  # the panel beside the charts disagrees
    assert bad != text
    _, report, _ = _getters(out, bad)
    assert any("zephyr" in m for m in check_headline_table(readme, report, "report"))
