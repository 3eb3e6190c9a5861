"""What `crosstrace info` loads for a small file of each format (the timings are in bench/startup.py).

Each case is a fresh interpreter running ``info`` on the file bench/startup.py times; it lists the
modules loaded and the BLAS thread setting. A regression (NumPy imported for a small file of a
format with a NumPy-free summary, a reader imported to sniff another format, ``np.unique`` pulling in
``numpy.ma``, OpenBLAS starting a thread per core) shows up as a violation, independently of the
machine's speed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.startup import small_files

ROOT = Path(__file__).resolve().parents[2]

_PROBE = r"""
import contextlib, io, json, os, sys
from analyzers.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "out": out.getvalue(), "modules": sorted(sys.modules),
                  "blas": os.environ.get("OPENBLAS_NUM_THREADS")}))
"""

#: never needed to summarise one small file
HEAVY = ("pyarrow", "pandas", "polars", "matplotlib", "analyzers.campaign", "analyzers.report",
         "analyzers.export", "analyzers.compare", "analyzers.crossval", "concurrent.futures")
#: readers only their own format needs (sniffing never imports them)
OWN = {"trace_parsers.saleae.binary": "saleae_binary", "trace_parsers.saleae.csv": "saleae_csv",
       "trace_parsers.saleae.project": "saleae_project", "trace_parsers.tracex.decode": "tracex",
       "trace_parsers.ctf.tsdl": "ctf", "trace_parsers.vcd.reader": "vcd",
       "trace_parsers.sigrok.reader": "sigrok"}
#: formats whose small-file `info` still imports NumPy (no NumPy-free summary in
#: trace_parsers.summary yet); remove an entry when its summary lands
NUMPY_KNOWN: frozenset[str] = frozenset()
#: formats whose reader still imports numpy.ma (~10 ms; ``np.unique`` without return_counts does);
#: remove an entry when its reader is fixed
MA_KNOWN: frozenset[str] = frozenset()


def violations(fmt: str, modules: list[str]) -> list[str]:
    """The modules ``info`` on a ``fmt`` file should not have loaded."""
    def loaded(prefix: str) -> bool:
        return any(m == prefix or m.startswith(prefix + ".") for m in modules)

    bad = [m for m in HEAVY if loaded(m)]
    if fmt not in NUMPY_KNOWN and loaded("numpy"):
        bad.append("numpy")
    bad += [m for m, owner in OWN.items() if owner != fmt and m in modules]
    if fmt not in MA_KNOWN and loaded("numpy.ma"):
        bad.append("numpy.ma")
    return bad


def _probe(path: Path, env: dict[str, str] | None = None) -> dict:
    r = subprocess.run([sys.executable, "-c", _PROBE, "info", str(path)], capture_output=True, text=True,
                       cwd=ROOT, timeout=120, check=True, env=env)
    return json.loads(r.stdout.strip().splitlines()[-1])


FILES = small_files()


@pytest.mark.skipif(len(FILES) < 5, reason="needs ../shared/corpus and captures/")
@pytest.mark.parametrize("fmt", ["systemview", "tracex", "sigrok", "vcd", "ctf"])
def test_info_loads_only_its_reader(fmt: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    r = _probe(FILES[fmt], env)
    assert r["code"] == 0 and f"format    {fmt}" in r["out"]
    assert violations(fmt, r["modules"]) == []
    assert r["blas"] == "1"  # no OpenBLAS thread pool for a command without linear algebra


@pytest.mark.skipif("sigrok" not in FILES, reason="needs ../shared/corpus")
def test_a_users_blas_setting_wins() -> None:
    r = _probe(FILES["sigrok"], {**os.environ, "OPENBLAS_NUM_THREADS": "3"})
    assert r["code"] == 0 and r["blas"] == "3"


def test_violations_are_reported() -> None:
    base = ["trace_parsers", "trace_parsers.vcd.reader"]
    assert violations("vcd", base) == []
    assert violations("vcd", [*base, "numpy", "numpy._core"]) == ["numpy"]
    assert violations("vcd", [*base, "trace_parsers.saleae.binary"]) == ["trace_parsers.saleae.binary"]
    vcd_reader = "trace_parsers.vcd.reader"
    assert violations("tracex", [*base, "numpy.ma", "numpy.ma.core"]) == ["numpy", vcd_reader, "numpy.ma"]
    assert violations("tracex", [*base, "numpy"]) == ["numpy", "trace_parsers.vcd.reader"]
    assert violations("sigrok", [*base, "pandas.core"]) == ["pandas", "trace_parsers.vcd.reader"]
    assert violations("systemview", ["numpy.ma"]) == ["numpy", "numpy.ma"]


def test_bench_rows_state_the_median_against_the_target() -> None:
    from bench.startup import TARGET_S, measure, row

    slow = row("x", {"wall": [0.31, 0.10, 0.20], "cpu": [0.2, 0.1, 0.1]}, target=True, load="0")
    assert slow["value"] == 200.0 and slow["ratio"] == round(TARGET_S / 0.2, 2) < 1
    fast = row("x", {"wall": [0.10, 0.12, 0.5], "cpu": [0.1] * 3}, target=True, load="0")
    assert fast["value"] == 120.0 and fast["ratio"] > 1
    assert "ratio" not in row("x", {"wall": [0.1], "cpu": [0.1]}, target=False, load="0")
    with pytest.raises(RuntimeError, match="failed"):  # a command that fails is no timing
        measure([("false", [sys.executable, "-c", "raise SystemExit(3)"])], 1, dict(os.environ))
