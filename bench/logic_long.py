"""A 10 G-sample synthetic `.sr` capture: generation, then time and peak memory of each way to read it.

Part of the ``logic`` area (see the docstring of ``bench/logic.py``).  Every figure comes from its
own fresh process; peak memory is the process's ``VmHWM`` (reset by exec; ``ru_maxrss`` would
include the parent's), read by a small wrapper around the command.  Each process runs under
``RLIMIT_AS`` = ``AS_LIMIT_MB`` (as ``prlimit --as`` would set) and a timeout.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = int(os.environ.get("CROSSTRACE_BENCH_LOGIC_SAMPLES", str(10_000_000_000)))
RATE = 100_000_000
MEMBER = 4 << 20  #: samples (= bytes, unitsize 1) per logic-1-N entry, as libsigrok writes
PAYLOADS = 16
EDGE_EVERY = 1000  #: average samples per edge
RSS_TARGET_MB = 512
AS_LIMIT_MB = 4096
TIMEOUT_S = 1800
NAMES = ["tm.count", "tm.report", "status.done", "uart.tx", "D4", "D5", "D6", "D7"]

#: wrapper: run a snippet or the crosstrace CLI, then print the process's own peak RSS and wall time
_WRAP = r"""
import json, sys, time
t = time.perf_counter()
res = {}
try:
    if sys.argv[1] == "cli":
        from analyzers.cli import main
        res["exit"] = main(sys.argv[2:])
    else:
        exec(sys.argv[2], {"res": res, "argv": sys.argv[3:]})
except BaseException as e:  # reported, not raised: the figures still count
    res["error"] = f"{type(e).__name__}: {str(e)[:300]}"
res["s"] = time.perf_counter() - t
res["rss_mb"] = [int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM")][0] / 1024
print("BENCH " + json.dumps(res))
"""

_INFLATE = r"""
from trace_parsers.sigrok._zip import ZipArchive
with ZipArchive(argv[0], code="SR_BAD_ZIP") as z:
    n = 0
    for m in sorted((k for k in z.members if k.startswith("logic-1-")), key=lambda k: int(k[8:])):
        for b in z.iter_blocks(m, 1 << 22):
            n += len(b)
res["bytes"] = n
"""

_CHUNKED = r"""
from trace_parsers.sigrok.chunks import iter_chunks
n = k = 0
for c in iter_chunks(argv[0], chunk_events=int(argv[1])):
    n += len(c); k += 1
res.update(edges=n, chunks=k, samples=c.meta.extra["total_samples"])
"""

_WHOLE = r"""
from trace_parsers.sigrok import read_sigrok
tr = read_sigrok(argv[0])
res.update(edges=len(tr), samples=tr.meta.extra["total_samples"])
"""


def _payload(rng: np.random.Generator) -> bytes:
    """One member: bursts of edges on channels 0..3, one edge per ~EDGE_EVERY samples on average."""
    n_edges = MEMBER // EDGE_EVERY
    centers = rng.integers(0, MEMBER, 24)
    pos = np.clip(rng.choice(centers, n_edges) + rng.normal(0, MEMBER / 200, n_edges).astype(np.int64),
                  1, MEMBER - 1)
    pos = np.unique(pos)
    masks = rng.choice(np.array([1, 2, 4, 8, 8, 8, 9], np.uint8), pos.size)
    vals = np.bitwise_xor.accumulate(masks)
    vals[-1] = 0  # end every member at 0, the level each one starts with (no edge at the borders)
    seg = np.concatenate(([0], vals)).astype(np.uint8)
    bounds = np.concatenate(([0], pos, [MEMBER]))
    return np.repeat(seg, np.diff(bounds)).tobytes()


def generate(path: Path, samples: int = SAMPLES) -> dict:
    """Write the capture member by member; returns its facts."""
    from trace_parsers.sigrok.writer import _fz, _ZipWriter

    rng = np.random.default_rng(18)
    comp = []
    for _ in range(PAYLOADS):
        data = _payload(rng)
        co = _fz.compressobj(6, _fz.DEFLATED, -15)
        comp.append((co.compress(data) + co.flush(), zlib.crc32(data), data if len(comp) == 0 else b""))
    meta = ["[global]", "sigrok version=crosstrace-bench", "", "[device 1]", "capturefile=logic-1",
            f"total probes={len(NAMES)}", "samplerate=100 MHz", "total analog=0"]
    meta += [f"probe{i + 1}={n}" for i, n in enumerate(NAMES)] + ["unitsize=1", ""]
    with open(path, "wb") as f:
        zw = _ZipWriter(f, 6)
        zw.add("version", b"2", stored=True)
        zw.add("metadata", "\n".join(meta).encode())
        full, rest = divmod(samples, MEMBER)
        for k in range(full):
            c, crc, _ = comp[k % PAYLOADS]
            zw._write(f"logic-1-{k + 1}", c, crc, MEMBER, 8)
        if rest:
            zw.add(f"logic-1-{full + 1}", comp[0][2][:rest])
        zw.close()
    return {"samples": samples, "members": full + (1 if rest else 0), "bytes": path.stat().st_size}


def _limit_as() -> None:  # pragma: no cover - runs in the child
    lim = AS_LIMIT_MB << 20
    resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    os.nice(5)


def measure(args: list[str]) -> dict:
    """Run the wrapper with ``args`` in a fresh, limited process; its figures (or why it failed)."""
    t = time.perf_counter()
    try:
        r = subprocess.run([sys.executable, "-c", _WRAP, *args], capture_output=True, text=True, cwd=ROOT,
                           timeout=TIMEOUT_S, preexec_fn=_limit_as)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {TIMEOUT_S} s", "process_s": time.perf_counter() - t}
    line = next((x for x in reversed(r.stdout.splitlines()) if x.startswith("BENCH ")), None)
    if line is None:
        return {"error": f"exit {r.returncode}: {r.stderr.strip()[-300:]}",
                "process_s": time.perf_counter() - t}
    res = json.loads(line[6:])
    res["process_s"] = time.perf_counter() - t
    if res.get("exit") and "error" not in res:
        res["error"] = (r.stderr.strip() or r.stdout.strip())[-300:]
    return res


def _capture_folder(td: Path, sr: Path, samples: int) -> Path:
    """A capture folder for `analyze`: a committed capture's run.json (its logic entry pointed at the
    long capture: hash, rate, samples) and trace, and the long capture as its ``logic.sr``."""
    from trace_parsers._edges import sha256_file

    src = ROOT / "captures" / "qemu_netduinoplus2" / "threadx" / "tm_basic" / "ref"
    dst = td / "campaign" / "tm_basic" / "ref"
    dst.mkdir(parents=True)
    for name in ("trace.trx", "uart.log"):
        if (src / name).is_file():
            shutil.copy(src / name, dst / name)
    run = json.loads((src / "run.json").read_text())
    entry = next(e for e in run["logic"] if e["file"] == "logic.sr")
    entry.update(sha256=sha256_file(sr), samples=samples)
    entry["profile"]["samplerate"] = RATE
    entry.pop("edges", None)
    run["logic"] = [entry]
    (dst / "run.json").write_text(json.dumps(run, indent=1))
    os.link(sr, dst / "logic.sr")
    return td / "campaign"


def _row(name: str, r: dict, extra: str = "") -> list[dict]:
    note = f"{extra}; " if extra else ""
    if "error" in r:
        note += f"-> {r['error']}"
    elif "exit" in r:
        note += f"exit {r['exit']}"
    rows = [{"name": f"{name}: time", "value": round(r.get("s", r["process_s"]), 2), "unit": "s",
             "note": note + f" (whole process {r['process_s']:.1f} s)"}]
    if "rss_mb" in r:
        rows.append({"name": f"{name}: peak RSS", "value": round(r["rss_mb"], 1), "unit": "MB",
                     "ratio": round(RSS_TARGET_MB / r["rss_mb"], 2), "peer": f"target <= {RSS_TARGET_MB} MB"})
    return rows


def run_long() -> list[dict]:
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="crosstrace-bench-long-") as tds:
        td = Path(tds)
        sr = td / "long.sr"
        t = time.perf_counter()
        g = generate(sr)
        gs = time.perf_counter() - t
        facts = (f"{g['samples'] / 1e9:g} G samples, {g['members']} members, "
                 f"{g['bytes'] / 2**20:.1f} MiB on disk")
        rows.append({"name": "long capture: generate", "value": round(gs, 1), "unit": "s", "note": facts})
        base = measure(["py", _INFLATE, str(sr)])
        rows += _row("long capture: inflate only (floor)", base,
                     f"{base.get('bytes', 0) / max(base.get('s', 1), 1e-9) / 1e9:.2f} GB/s")
        for size in (1 << 22, 1 << 20):
            ch = measure(["py", _CHUNKED, str(sr), str(size)])
            ratio = ch["s"] / base["s"] if "s" in ch and "s" in base and "error" not in ch else None
            rows += _row(f"long capture: chunked reader, {size >> 20} Mi-event chunks", ch,
                         f"{ch.get('edges', 0):,} edges in {ch.get('chunks', 0)} chunks"
                         + (f", {ratio:.2f}x the inflate floor" if ratio else ""))
        rows += _row("long capture: read_sigrok (whole)", measure(["py", _WHOLE, str(sr)]))
        for size in (None, 1 << 20):
            out = td / f"out{size}.parquet"
            opt = ["--chunk-events", str(size)] if size else []
            rows += _row(f"long capture: crosstrace events -o .parquet{' ' if opt else ''}{' '.join(opt)}",
                         measure(["cli", "events", str(sr), "-o", str(out), *opt]),
                         f"{out.stat().st_size / 2**20:.1f} MiB written" if out.is_file() else "")
            out.unlink(missing_ok=True)
        camp = _capture_folder(td, sr, g["samples"])
        rows += _row("long capture: crosstrace analyze",
                     measure(["cli", "analyze", str(camp), "-o", str(td / "analysis"), "-j", "1",
                              "--scheduler", "serial", "--allow-fail", "-q"]))
    return rows


if __name__ == "__main__":  # pragma: no cover - manual run
    for row in run_long():
        print(row)
