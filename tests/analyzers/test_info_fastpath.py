"""`crosstrace info`'s lean start-up path prints exactly what a full read of the file gives.

The lean path is a fresh ``crosstrace info`` process: lazy sniffers (no reader imported to
recognise a file), single-threaded BLAS, nothing of the analysis stack. The reference is the full
read in this process: every reader module imported, the format's reader called by name (no
sniffing) and :func:`analyzers.cli.summarize` / :func:`print_summary` applied to its Trace.
Both the ``--json`` document and the text must be identical, for several files of each format
(SystemView, TraceX, sigrok, VCD, CTF; Saleae exports and saves), damaged files included. The
fault tests show that the comparison reports a difference in any field, and a fast path whose
output is altered.
"""

from __future__ import annotations

import copy
import importlib
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from analyzers.cli import _run_json_tick_hz, print_summary, summarize
from tests.conftest import corpus_dir
from trace_parsers import FORMATS, TraceError

ROOT = Path(__file__).resolve().parents[2]
CAPTURES = ROOT / "captures" / "qemu_netduinoplus2"

#: (format, corpus folder or None for captures/, file names or capture-relative paths)
_FILES: tuple[tuple[str, str | None, tuple[str, ...]], ...] = (
    ("systemview", "systemview", ("espidf_esp32_blink_2018_cpu0.svdat",
                                  "abdo454_stm32f412_freertos_v350_raw.SVDat",
                                  "espidf_esp32_heaplog_mcore_espext_2024.svdat",
                                  "lilu_esp32_freertos_corrupt_appcpu.SVDat")),
    ("systemview", None, ("freertos/tm_basic-cubeide/ref/trace.SVDat", "zephyr/calib/ref/trace.SVDat")),
    ("tracex", "tracex", ("tracex-sample_demo_filex.trx", "tracex-sample_demo_netx_tcp.trx",
                          "tracex-sample_demo_threadx.trx")),
    ("tracex", None, ("threadx/ctx_switch-n10/ref/trace.trx",)),
    ("sigrok", "logic", ("uart_glitches_2mhz.sr", "no_samplerate_v1.sr", "mixed_100khz_logic_analog_12mhz.sr",
                         "swd_stm32f429_8mhz.sr")),
    ("sigrok", None, ("freertos/ctx_switch-n2/board/logic-la24.sr",)),
    ("vcd", "logic", ("vcd_chronovu_la8_spi.vcd",)),
    ("saleae_csv", "logic", ("saleae_logic2_csv_iso8601_74hc595.csv",)),  # sniffers moved out of the readers
    ("saleae_project", "logic", ("saleae_logic2_mdfu_uart.sal", "saleae_logic1_can_500k.logicdata")),
    ("ctf", None, ("zephyr/calib-ctf/ref/trace.ctf", "zephyr/ctx_switch-n2-ctf/ref",
                   "zephyr/periodic-ctf/ref/trace.ctf")),
)

#: small hand-written VCDs (the corpus holds one): other timescales, with and without $dumpvars
_VCDS = {
    "two_wires_1us.vcd": "$timescale 1 us $end\n$scope module top $end\n$var wire 1 ! clk $end\n"
                         "$var wire 1 \" data $end\n$upscope $end\n$enddefinitions $end\n"
                         "$dumpvars\n0!\n1\"\n$end\n#5\n1!\n#10\n0!\n0\"\n#15\n1!\n#20\n0!\n1\"\n",
    "no_dumpvars_100ps.vcd": "$timescale 100 ps $end\n$var wire 1 a sig_a $end\n$var wire 1 b sig_b $end\n"
                             "$enddefinitions $end\n#0\n0a\n1b\n#3\n1a\n#7\n0b\n#9\n0a\n#12\n1b\n",
}


def _cases(tmp: Path) -> list[tuple[str, Path]]:
    out: list[tuple[str, Path]] = []
    for fmt, folder, names in _FILES:
        base = corpus_dir(folder) if folder else CAPTURES
        out += [(fmt, base / n) for n in names if (base / n).exists()]
    for name, text in _VCDS.items():
        (tmp / name).write_text(text)
        out.append(("vcd", tmp / name))
    return out


#: the formats `--samplerate` applies to (the only option besides --on-corrupt and --tick-hz)
LOGIC = ("sigrok", "vcd", "saleae_csv", "saleae_binary", "dsl")


def full_read(fmt: str, path: Path, opts: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """(JSON-normalised summary or error entry, text) from the format's reader called by name.
    ``opts``: ``on_corrupt`` and optionally ``tick_hz`` (TraceX) and ``samplerate`` (logic)."""
    for _, module, _, _ in FORMATS:  # every reader loaded, as in a long-lived process
        importlib.import_module(module)
    module, reader = next((m, r) for n, m, _, r in FORMATS if n == fmt)
    kw: dict[str, Any] = {"on_corrupt": opts["on_corrupt"]}
    tick_hz = opts.get("tick_hz") or _run_json_tick_hz(path)
    if fmt == "tracex" and tick_hz:
        kw["tick_hz"] = tick_hz
    if fmt in LOGIC and opts.get("samplerate"):
        kw["samplerate"] = opts["samplerate"]
    try:
        tr = getattr(importlib.import_module(module), reader)(path, **kw)
    except TraceError as e:
        return {"path": str(path), "error": str(e), "code": e.code}, ""
    s = json.loads(json.dumps(summarize(tr)))
    out = io.StringIO()
    print_summary(s, out)
    return s, out.getvalue()


def lean_info(paths: list[Path], opts: dict[str, Any], prelude: str = "") -> tuple[list[dict], str]:
    """(``--json`` documents, text) of fresh `crosstrace info` processes; ``prelude`` is Python run
    before ``main`` (the fault tests use it to alter the fast path)."""
    code = f"import sys\n{prelude}\nfrom analyzers.cli import main\nsys.exit(main())"
    base = [sys.executable, "-c", code, "info"]
    for k, v in opts.items():
        base += [f"--{k.replace('_', '-')}", str(v)]
    js = subprocess.run([*base, "--json", *map(str, paths)], capture_output=True, text=True, cwd=ROOT,
                        timeout=300)
    txt = subprocess.run([*base, *map(str, paths)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert js.returncode in (0, 1) and txt.returncode == js.returncode, (js.stderr, txt.stderr)
    docs = json.loads(js.stdout)
    return (docs if isinstance(docs, list) else [docs]), txt.stdout


def diff_info(lean: Any, full: Any, where: str = "") -> list[str]:
    """Every place where two info documents differ (``[]`` when identical, types included)."""
    if type(lean) is not type(full):
        return [f"{where or '/'}: {type(lean).__name__} {lean!r} != {type(full).__name__} {full!r}"]
    if isinstance(lean, dict):
        out = [f"{where}/{k}: only in {'lean' if k in lean else 'full'}"
               for k in sorted(set(lean) ^ set(full))]
        for k in lean.keys() & full.keys():
            out += diff_info(lean[k], full[k], f"{where}/{k}")
        if not out and list(lean) != list(full):
            out.append(f"{where or '/'}: key order {list(lean)} != {list(full)}")
        return out
    if isinstance(lean, list):
        out = [f"{where}: {len(lean)} items != {len(full)}"] if len(lean) != len(full) else []
        for i, (a, b) in enumerate(zip(lean, full)):
            out += diff_info(a, b, f"{where}[{i}]")
        return out
    return [] if lean == full else [f"{where or '/'}: {lean!r} != {full!r}"]


def _compare(cases: list[tuple[str, Path]], opts: dict[str, Any], prelude: str = "") -> list[str]:
    docs, text = lean_info([p for _, p in cases], opts, prelude)
    fulls = [full_read(fmt, p, opts) for fmt, p in cases]
    problems = [f"{p.name}{d}" for (_, p), doc, (full, _) in zip(cases, docs, fulls)
                for d in diff_info(doc, full)]
    if len(docs) != len(cases):
        problems.append(f"{len(docs)} documents for {len(cases)} files")
    if text != "".join(t for _, t in fulls):
        problems.append("the text output differs from print_summary of the full reads")
    return problems


@pytest.mark.parametrize("opts", [{"on_corrupt": "raise"}, {"on_corrupt": "skip"},
                                  {"on_corrupt": "raise", "samplerate": 1_000_000, "tick_hz": 1000}],
                         ids=["raise", "skip", "rates"])
def test_lean_info_equals_full_read(tmp_path: Path, opts: dict[str, Any]) -> None:
    cases = _cases(tmp_path)
    assert {f for f, _ in cases} >= {"systemview", "tracex", "sigrok", "vcd", "ctf"}
    assert _compare(cases, opts) == []


def test_every_field_difference_is_reported() -> None:
    d = corpus_dir("systemview") / "lilu_esp32_freertos_corrupt_appcpu.SVDat"
    full, _ = full_read("systemview", d, {"on_corrupt": "skip"})
    assert full["diagnostics"] and full["tasks"] and full["counts_by_kind"]
    faults = {
        "/events": lambda s: s.update(events=s["events"] + 1),
        "/counts_by_kind/": lambda s: s["counts_by_kind"].update({k: v - 1 for k, v in
                                                                  list(s["counts_by_kind"].items())[:1]}),
        "/diagnostics: ": lambda s: s["diagnostics"].pop(),
        "/diagnostics[0]/offset": lambda s: s["diagnostics"][0].update(offset=s["diagnostics"][0]["offset"]
                                                                       + 1),
        "/tasks[0]/name": lambda s: s["tasks"][0].update(name=s["tasks"][0]["name"] + "x"),
        "/duration": lambda s: s.update(duration=float(s["duration"])),  # same value, other type
        "/sha256": lambda s: s.pop("sha256"),
        "/: key order": lambda s: s.update({"path": s.pop("path")}),
    }
    for where, fault in faults.items():
        bad = copy.deepcopy(full)
        fault(bad)
        problems = diff_info(bad, full)
        assert problems and any(p.startswith(where) or where in p for p in problems), (where, problems)
    assert diff_info(copy.deepcopy(full), full) == []


def test_an_altered_fast_path_fails_the_comparison(tmp_path: Path) -> None:
    cases = [c for c in _cases(tmp_path) if c[0] in ("sigrok", "vcd")][:2]
    assert _compare(cases, {"on_corrupt": "raise"}) == []
    drop_edge = ("import analyzers.cli as c\n_s = c.summarize\n"
                 "def summarize(t):\n    s = _s(t)\n    s['channels'][-1]['edges'] += 1\n    return s\n"
                 "c.summarize = summarize")
    problems = _compare(cases, {"on_corrupt": "raise"}, drop_edge)
    assert any("/channels[" in p and "/edges" in p for p in problems), problems
    assert "the text output differs from print_summary of the full reads" in problems
