"""Start-up benchmark: whole-process wall time of short commands, each run a fresh process.

Rows: the bare interpreter; ``import numpy`` as is and with ``OPENBLAS_NUM_THREADS=1`` (how
``info`` imports it for a large file, see ``analyzers.cli._setup_info``); ``import trace_parsers``;
``crosstrace --version``; and ``crosstrace info`` on a small file of each format (SystemView,
TraceX, sigrok ``.sr``, VCD, CTF: the smallest of the corpus or the captures), these against the
issue-18 target of <= 150 ms as the ratio target / median (>= 1 meets it).

``import numpy`` costs most of that budget alone, so ``info`` on a small file of a format with a
NumPy-free summary (``trace_parsers.summary.SMALL_FORMATS``: all five) never imports it: the
floor of those rows is ``import trace_parsers`` (``tests/analyzers/test_info_startup.py`` checks
which modules each row loads).

Every figure is the median of ``CROSSTRACE_BENCH_REPEAT`` (default 9) runs, each a fresh process,
after one warm-up run per command; the rounds are interleaved (one run of every command per round)
so that a load change on a shared machine touches every row alike. The note gives the spread, the
median CPU time of the child (user + system, less disturbed by other processes than the wall time)
and the load average before and after the measurement.

Bytecode caching is on, as in an installed package: ``PYTHONDONTWRITEBYTECODE`` is removed and
``PYTHONPYCACHEPREFIX`` points to a temporary folder (nothing is written beside the sources), which
the warm-up run fills.  Without a cache every run compiles the sources (about 90 ms more).
Likewise ``CROSSTRACE_CACHE_DIR`` points to a folder in it, so the warm-up run parses a CTF
trace's TSDL metadata and the measured runs read the parse back (``trace_parsers.ctf.cache``); the
row "no metadata cache" turns that off, as for the first ``info`` on a new metadata file.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
CAPTURES = ROOT / "captures"
TARGET_S = 0.150
REPEAT = int(os.environ.get("CROSSTRACE_BENCH_REPEAT", "9"))


def _crosstrace() -> list[str]:
    exe = Path(sys.executable).with_name("crosstrace")
    return [str(exe)] if exe.is_file() else [sys.executable, "-m", "analyzers.cli"]


def _smallest(*patterns: tuple[Path, str]) -> Path | None:
    found = [p for folder, pat in patterns if folder.is_dir() for p in folder.glob(pat) if p.is_file()]
    return min(found, key=lambda p: (p.stat().st_size, str(p))) if found else None


def small_files() -> dict[str, Path]:
    """format -> the smallest file of that format in the corpus and the captures (absent ones left out)."""
    picks = {
        "systemview": _smallest((CORPUS / "systemview", "*.[sS][vV][dD]at"), (CAPTURES, "**/*.SVDat")),
        "tracex": _smallest((CORPUS / "tracex", "*.trx"), (CAPTURES, "**/*.trx")),
        "sigrok": _smallest((CORPUS / "logic", "*.sr"), (CAPTURES, "**/*.sr")),
        "vcd": _smallest((CORPUS / "logic", "*.vcd"), (CAPTURES, "**/*.vcd")),
        "ctf": _smallest((CAPTURES, "**/*-ctf/*/trace.ctf")),  # a stream beside its metadata
    }
    return {k: v for k, v in picks.items() if v is not None}


def _cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _once(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one fresh process running ``cmd``; raises on failure."""
    c0 = _cpu_children()
    t0 = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT, timeout=120,
                       env=env)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"{cmd} failed: {r.stderr[-500:]!r}")
    return dt, _cpu_children() - c0  # subprocess.run waited: the difference is this child alone


def measure(cases: list[tuple[str, list[str]]], repeat: int, env: dict[str, str]) -> dict[str, dict]:
    """name -> {wall: [...], cpu: [...]}: one warm-up run per case, then ``repeat`` interleaved rounds."""
    for _, cmd in cases:
        _once(cmd, env)  # fills the bytecode cache
    out: dict[str, dict] = {name: {"wall": [], "cpu": []} for name, _ in cases}
    for _ in range(repeat):
        for name, cmd in cases:
            wall, cpu = _once(cmd, env)
            out[name]["wall"].append(wall)
            out[name]["cpu"].append(cpu)
    return out


def _load() -> str:
    try:
        return "/".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover - no load average on this platform
        return "?"


def row(name: str, m: dict, *, target: bool, load: str) -> dict:
    """One bench row from the runs of one case: median wall (ms), ratio to the target when it has one."""
    med = statistics.median(m["wall"])
    r = {"name": name, "value": round(med * 1000, 1), "unit": "ms",
         "note": (f"median of {len(m['wall'])} fresh processes (min {min(m['wall']) * 1000:.0f}, max "
                  f"{max(m['wall']) * 1000:.0f} ms); CPU {statistics.median(m['cpu']) * 1000:.0f} ms; "
                  f"load {load} on {os.cpu_count()} cores")}
    if target:
        r["ratio"] = round(TARGET_S / med, 2)
        r["peer"] = f"target <= {TARGET_S * 1000:.0f} ms"
    return r


def cases() -> list[tuple[str, list[str], str]]:
    """(row name, command, note prefix); rows whose note prefix names a file have the target."""
    ct = _crosstrace()
    out: list[tuple[str, list[str], str]] = [
        ("python -c pass (interpreter alone)", [sys.executable, "-c", "pass"], ""),
        ("import numpy", [sys.executable, "-c", "import numpy"], ""),
        # NumPy as `info` imports it for a large file (no OpenBLAS thread pool)
        ("import numpy, OPENBLAS_NUM_THREADS=1",
         ["env", "OPENBLAS_NUM_THREADS=1", sys.executable, "-c", "import numpy"], ""),
        ("import trace_parsers", [sys.executable, "-c", "import trace_parsers"], ""),
        ("crosstrace --version", [*ct, "--version"], "imports no NumPy"),
    ]
    for fmt, p in small_files().items():
        out.append((f"crosstrace info {fmt} ({p.stat().st_size} B)", [*ct, "info", str(p)], _shown(p)))
        if fmt == "ctf":  # the same without the parsed-metadata cache (a first run, or a new file)
            out.append((f"crosstrace info ctf ({p.stat().st_size} B), no metadata cache",
                        ["env", "CROSSTRACE_CACHE_DIR=off", *ct, "info", str(p)],
                        f"{_shown(p)}; TSDL parsed every run"))
    return out


def _shown(p: Path) -> str:
    """``p`` relative to the repository or the shared corpus (no machine paths in the output)."""
    for base, label in ((ROOT, ""), (CORPUS, "../shared/corpus/")):
        if p.is_relative_to(base):
            return label + str(p.relative_to(base))
    return p.name


def run(repeat: int = REPEAT) -> list[dict]:
    todo = cases()
    with tempfile.TemporaryDirectory(prefix="crosstrace-pyc-") as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = cache
        env["CROSSTRACE_CACHE_DIR"] = str(Path(cache) / "crosstrace")  # parsed CTF metadata
        before = _load()
        runs = measure([(n, c) for n, c, _ in todo], repeat, env)
        load = f"{before} -> {_load()}"
    rows = []
    for name, _, what in todo:
        r = row(name, runs[name], target=bool(what), load=load)
        if what:
            r["note"] = f"{what}; {r['note']}"
        rows.append(r)
    return rows


if __name__ == "__main__":  # pragma: no cover
    for r in run():
        print(r)
