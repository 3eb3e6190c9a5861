"""Start-up stays light: what each short command imports (the timings are in bench/startup.py).

Each case runs in a fresh interpreter and lists the modules loaded; a regression (``--version``
configuring every subcommand, a reader imported to sniff, a top-level NumPy import) shows up here
as a module that should not be there, independently of the machine's speed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SMALL_SV = ROOT.parent / "shared" / "corpus" / "systemview" / "espidf_esp32_blink_2018_cpu0.svdat"

_PROBE = r"""
import contextlib, io, json, sys
from analyzers.cli import main
out = io.StringIO()
try:
    with contextlib.redirect_stdout(out):
        code = main(sys.argv[1:])
except SystemExit as e:
    code = e.code
print(json.dumps({"code": code, "out": out.getvalue(), "modules": sorted(sys.modules)}))
"""

#: never needed to print a version or summarise one small file
HEAVY = ("pyarrow", "pandas", "polars", "matplotlib", "analyzers.campaign", "analyzers.report",
         "analyzers.export", "analyzers.compare", "analyzers.crossval")


def _run(*argv: str) -> dict:
    r = subprocess.run([sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, cwd=ROOT,
                       timeout=120, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def _loaded(mods: list[str], prefix: str) -> bool:
    return any(m == prefix or m.startswith(prefix + ".") for m in mods)


def test_version_imports_no_numpy_and_no_command() -> None:
    r = _run("--version")
    assert r["code"] == 0 and r["out"].startswith("crosstrace ")
    assert not _loaded(r["modules"], "numpy")
    assert not [h for h in HEAVY if _loaded(r["modules"], h)]


def test_import_trace_parsers_is_lazy() -> None:
    code = "import sys, trace_parsers; print(sorted(sys.modules))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert "'numpy'" not in r.stdout
    code = ("from trace_parsers import Trace, TraceError, EventKind; "
            "print(Trace.__module__, TraceError.__module__)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert r.stdout.split() == ["trace_parsers.model", "trace_parsers.errors"]


@pytest.mark.skipif(not SMALL_SV.is_file(), reason="needs ../shared/corpus")
def test_info_imports_no_analysis_stack() -> None:
    r = _run("info", str(SMALL_SV))
    assert r["code"] == 0 and "systemview" in r["out"]
    assert not [h for h in HEAVY if _loaded(r["modules"], h)]
    assert not _loaded(r["modules"], "trace_parsers.tracex.decode")  # sniffing TraceX needs no decoder
    assert not _loaded(r["modules"], "concurrent.futures")


def test_unknown_command_still_lists_the_commands() -> None:
    r = subprocess.run([sys.executable, "-m", "analyzers.cli", "bogus"], capture_output=True, text=True,
                       cwd=ROOT)
    assert r.returncode == 2 and "invalid choice" in r.stderr and "analyze" in r.stderr
