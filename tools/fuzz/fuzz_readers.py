"""Mutation fuzzer for every crosstrace reader (issue 15): any bytes give a Trace or a TraceError.

    python tools/fuzz/fuzz_readers.py --seconds 60               # in-process, all seven formats
    python tools/fuzz/fuzz_readers.py --inputs 2000 --isolate    # one forked child per input
    python tools/fuzz/fuzz_readers.py --replay tests/trace_parsers/fuzz_regressions

Oracle, per input (``open_trace`` with a random ``on_corrupt``): the reader returns a Trace whose
diagnostic offsets lie inside the file, or raises a ``TraceError`` whose offset does too.  Any
other exception, a run over ``--timeout`` seconds or over ``--memory`` bytes is a finding.
In-process mode bounds memory with ``RLIMIT_AS`` and time with ``SIGALRM`` (fast, ~all findings);
``--isolate`` forks a child per input, which also survives hard crashes and true hangs.

Findings are de-duplicated by (exception type, innermost crosstrace frame) and written to
``--out`` (default ``out/fuzz``); ``--save-regressions DIR`` also stores each finding of at most
64 KiB there, for ``tests/trace_parsers/test_fuzz_regressions.py`` to replay.  The summary
(executions per format and per second) is printed and written to ``<out>/stats.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import signal
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

# mutated TSDL metadata would each leave a parse in the user's cache (trace_parsers.ctf.cache)
os.environ.setdefault("CROSSTRACE_CACHE_DIR", "off")

from mutate import mutate  # noqa: E402
from seeds import FORMATS, all_seeds  # noqa: E402

from trace_parsers import TraceError, open_trace  # noqa: E402

_MODES = ("raise", "skip", "warn")


class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise _Timeout()


def check_one(path: Path, size: int, on_corrupt: str) -> tuple[str, str] | None:
    """Run the reader on ``path``; None when the contract holds, else (signature, description)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tr = open_trace(path, on_corrupt=on_corrupt)
    except TraceError as e:
        if e.offset is not None and not 0 <= e.offset <= size:
            return (f"offset:{e.code}", f"offset {e.offset} outside the {size}-byte file: {e.code} "
                    f"{e.detail[:80]}")
        return None
    for d in tr.diagnostics:
        if not 0 <= d.offset <= size:
            return (f"offset:{d.code}", f"diagnostic offset {d.offset} outside the {size}-byte file: "
                    f"{d.code} {d.message[:80]}")
    return None


def _signature(exc: BaseException) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "trace_parsers" in f.filename]
    where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "?"
    return f"{type(exc).__name__}@{where}"


def run_inproc(path: Path, data: bytes, on_corrupt: str, timeout: float) -> tuple[str, str] | None:
    path.write_bytes(data)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        return check_one(path, len(data), on_corrupt)
    except _Timeout:
        return "hang", f"over {timeout} s"
    except MemoryError:
        return "memory", "MemoryError"
    except Exception as e:  # noqa: BLE001 - the finding itself
        return _signature(e), f"{type(e).__name__}: {str(e)[:200]}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def run_isolated(path: Path, data: bytes, on_corrupt: str, timeout: float,
                 memory: int) -> tuple[str, str] | None:
    path.write_bytes(data)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: limits, run, report through the pipe
        os.close(r)
        if memory:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        res = run_inproc(path, data, on_corrupt, timeout * 2)
        os.write(w, json.dumps(res).encode())
        os._exit(0)
    os.close(w)
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(r)
            return "hang", f"over {timeout} s (killed)"
        time.sleep(0.0005)
    out = os.read(r, 1 << 16)
    os.close(r)
    if os.WIFSIGNALED(status):
        return f"signal{os.WTERMSIG(status)}", "child killed by a signal (native crash?)"
    res = json.loads(out) if out else ["nooutput", "child exited without a result"]
    return tuple(res) if res else None  # type: ignore[return-value]


def _save(out: Path, reg: Path | None, fmt: str, sig: str, detail: str, data: bytes,
          on_corrupt: str) -> str:
    h = hashlib.sha256(data).hexdigest()[:12]
    name = f"{fmt}-{h}.bin"
    (out / "findings").mkdir(parents=True, exist_ok=True)
    (out / "findings" / name).write_bytes(data)
    (out / "findings" / (name + ".txt")).write_text(f"{sig}\n{detail}\non_corrupt={on_corrupt}\n")
    if reg is not None and len(data) <= 64 << 10:
        reg.mkdir(parents=True, exist_ok=True)
        (reg / name).write_bytes(data)
    return name


def fuzz(args: argparse.Namespace) -> dict:
    rnd = random.Random(args.seed)
    seeds = all_seeds(ROOT, args.max_seed_bytes, corpus=not args.no_corpus)
    fmts = [f for f in (args.formats or FORMATS) if seeds.get(f)]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    reg = Path(args.save_regressions) if args.save_regressions else None
    if not args.isolate:
        if args.memory:
            resource.setrlimit(resource.RLIMIT_AS, (args.memory, resource.getrlimit(resource.RLIMIT_AS)[1]))
        signal.signal(signal.SIGALRM, _alarm)
    stats = {f: {"seeds": len(seeds[f]), "inputs": 0, "seconds": 0.0, "mutate_seconds": 0.0, "findings": 0}
             for f in fmts}
    findings: dict[str, dict] = {}
    t_end = time.monotonic() + args.seconds if args.seconds else float("inf")
    total = 0
    stop = []
    old_term = signal.signal(signal.SIGTERM, lambda *_: stop.append(1))  # end cleanly, keep stats
    tmpdir = Path(tempfile.mkdtemp(prefix="ctfuzz-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None))
    try:
        while total < (args.inputs or float("inf")) and time.monotonic() < t_end and not stop:
            fmt = fmts[total % len(fmts)]
            pool = seeds[fmt]
            t0 = time.perf_counter()
            data = mutate(rnd.choice(pool), rnd, splice=rnd.choice(pool))
            stats[fmt]["mutate_seconds"] += time.perf_counter() - t0
            on_corrupt = rnd.choice(_MODES)
            path = tmpdir / ("digital_0.bin" if fmt == "saleae_binary" else f"input-{fmt}")
            t0 = time.perf_counter()
            res = (run_isolated(path, data, on_corrupt, args.timeout, args.memory) if args.isolate
                   else run_inproc(path, data, on_corrupt, args.timeout))
            st = stats[fmt]
            st["seconds"] += time.perf_counter() - t0
            st["inputs"] += 1
            total += 1
            if res is not None:
                sig, detail = res
                st["findings"] += 1
                if sig not in findings:
                    name = _save(out, reg, fmt, sig, detail, data, on_corrupt)
                    findings[sig] = {"format": fmt, "detail": detail, "file": name, "count": 0,
                                     "on_corrupt": on_corrupt}
                    print(f"FINDING {sig}: {detail[:160]} -> {name}", flush=True)
                findings[sig]["count"] += 1
            if args.progress and total % args.progress == 0:
                print(f"{total} inputs, {len(findings)} distinct findings", flush=True)
                _write_stats(out, args, total, stats, findings)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, old_term)
        for p in tmpdir.iterdir():
            p.unlink()
        tmpdir.rmdir()
    return _write_stats(out, args, total, stats, findings)


def _write_stats(out: Path, args: argparse.Namespace, total: int, stats: dict, findings: dict) -> dict:
    per = {}
    for fmt, st in stats.items():
        spent = st["seconds"] + st["mutate_seconds"]
        per[fmt] = dict(st, seconds=round(st["seconds"], 2), mutate_seconds=round(st["mutate_seconds"], 2),
                        per_second=round(st["inputs"] / st["seconds"], 1) if st["seconds"] else None,
                        per_second_with_mutation=round(st["inputs"] / spent, 1) if spent else None)
    summary = {"inputs": total, "mode": "isolate" if args.isolate else "inproc", "seed": args.seed,
               "per_format": per, "findings": findings}
    (out / "stats.json").write_text(json.dumps(summary, indent=1))
    return summary


def replay(directory: Path) -> int:
    """Run every file of ``directory`` through every on_corrupt mode; print and count findings."""
    bad = 0
    signal.signal(signal.SIGALRM, _alarm)
    with tempfile.TemporaryDirectory() as td:
        for f in sorted(directory.glob("*.bin")):
            data = f.read_bytes()
            name = "digital_0.bin" if f.name.startswith("saleae_binary") else f.stem
            for mode in _MODES:
                res = run_inproc(Path(td) / name, data, mode, 20.0)
                if res is not None:
                    bad += 1
                    print(f"{f.name} on_corrupt={mode}: {res[0]}: {res[1][:160]}")
    return bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=0, help="time budget (0: until --inputs)")
    ap.add_argument("--inputs", type=int, default=0, help="input budget (0: until --seconds)")
    ap.add_argument("--formats", nargs="*", choices=FORMATS, help="default: all seven")
    ap.add_argument("--seed", type=int, default=1, help="random seed (runs are reproducible)")
    ap.add_argument("--isolate", action="store_true", help="fork one child per input")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds per input")
    ap.add_argument("--memory", type=int, default=2 << 30, help="address-space limit in bytes (0: none)")
    ap.add_argument("--max-seed-bytes", type=int, default=256 << 10)
    ap.add_argument("--no-corpus", action="store_true", help="synthetic seeds and captures/ only")
    ap.add_argument("--out", default=str(ROOT / "out" / "fuzz"))
    ap.add_argument("--save-regressions", metavar="DIR", help="also store small findings here")
    ap.add_argument("--progress", type=int, default=0, help="print a line every N inputs")
    ap.add_argument("--replay", metavar="DIR", help="replay stored inputs instead of fuzzing")
    args = ap.parse_args(argv)
    if args.replay:
        return 1 if replay(Path(args.replay)) else 0
    if not args.seconds and not args.inputs:
        ap.error("give --seconds and/or --inputs")
    s = fuzz(args)
    print(json.dumps({k: v for k, v in s.items() if k != "findings"}, indent=1))
    names = ", ".join(s["findings"])
    print(f"{len(s['findings'])} distinct findings" + (f": {names}" if names else ""))
    return 1 if s["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
