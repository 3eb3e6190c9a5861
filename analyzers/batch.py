"""`crosstrace analyze DIR...`: every capture folder → metrics, cross-validation, campaign tables.

A capture folder holds one run (``run.json`` with the trace, logic captures and UART log it lists;
or, without run.json, any files whose content a reader recognises). Folders are analyzed in
parallel — a process pool by default, a Dask cluster with ``--scheduler tcp://host:port`` (or
``--scheduler dask-local``) — and results are cached by input hash, so a rerun skips unchanged
captures. A capture that fails is reported and the rest complete.

Parallel runs execute a task graph, not one task per capture: a capture too big to balance whole
(at least half of one worker's share of the input bytes) gets one *decode* task per recording,
which writes its ``events-<source>.ctev.parquet`` stamped with the recording's SHA-256, the code
hash and the reader options, and an *analysis* task that starts when they are done and loads
them. The ready task on the longest remaining chain (estimated from input bytes) runs first, and
no more tasks are in flight than workers, so a big capture's decodes start at once and its
analysis as soon as its last decode ends. Workers start in the background (the fork server loads
numpy, pyarrow, pandas and the readers once) and write the campaign tables at the end.

Outputs under ``-o OUT``:

- ``captures/<capture-id>/``: ``events-<source>.ctev.parquet`` (decoded events),
  ``instances.parquet`` (every metric instance), ``metrics.parquet`` (statistics per metric and
  source), ``crossval.parquet``, ``alignment.parquet``, ``pairs.parquet``, ``drop_log.parquet``,
  ``result.json`` (all of it as JSON, the input hash and provenance);
- ``campaign.parquet``/``.csv``: one row per capture, board, RTOS, app, metric and source;
- ``crossval.parquet``/``.csv``: the trace-versus-capture agreement of every capture and metric;
- ``comparison.parquet``/``.csv``: per board, app and metric, each RTOS as a multiple of the
  fastest and of the slowest, in µs and CPU cycles;
- ``overhead.csv``: traced versus untraced builds of the same test, where both exist;
- ``manifest.json``: captures, status, errors, provenance; after a parallel run also ``schedule``:
  every task with its priority and, for the process pool, when and in which worker it ran.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

#: Bumped when the outputs change shape; part of the cache key together with the code hash.
RESULT_VERSION = 1
_TRACE_FORMATS = ("systemview", "tracex")
_SKIP_NAMES = {"run.json", "README.md", "uart.log", "build.json", "index.toml"}
#: never a recording: not sniffed (sniffing loads every reader, which a parent process need not do)
_SKIP_SUFFIXES = (".md", ".toml", ".json", ".yaml", ".yml", ".html", ".py", ".ipynb", ".pdf", ".png")


def _skipped(name: str) -> bool:
    return name in _SKIP_NAMES or name.startswith(".") or name.lower().endswith(_SKIP_SUFFIXES)
#: CPU clock per board for the cycles column (QEMU at -icount shift=0: 1 insn per ns).
BOARD_CPU_HZ = {"stm32f429i_disco": 180_000_000, "qemu_netduinoplus2": 1_000_000_000}


# -- discovery -------------------------------------------------------------------------------------


def _sniff(path: Path) -> str | None:
    """Format name of ``path`` or None (own event files by suffix, everything else by content)."""
    from ._io import SUFFIX

    if path.name.endswith(SUFFIX):
        return "ctev"
    from trace_parsers import detect_format
    from trace_parsers.errors import TraceError

    try:
        return detect_format(path)
    except TraceError:
        return None


def discover(roots: Sequence[Path], exclude: Sequence[Path] = ()) -> list[tuple[str, Path]]:
    """Capture folders under ``roots`` as ``(capture_id, folder)``, sorted by id.

    A folder with ``run.json`` is a capture (its subfolders are not searched); otherwise a folder
    holding at least one recognised recording is.
    """
    found: dict[str, Path] = {}
    excl = [p.resolve() for p in exclude]
    # ids are paths relative to the roots' common ancestor, so folders from several roots never collide
    base = Path(os.path.commonpath([Path(r).resolve() for r in roots])) if roots else Path(".")
    for root in roots:
        root = Path(root)
        if not root.is_dir():
            raise FileNotFoundError(f"{root}: not a directory")
        for dirpath, dirnames, filenames in os.walk(root):
            d = Path(dirpath)
            if any(d.resolve() == e or e in d.resolve().parents for e in excl):
                dirnames[:] = []
                continue
            dirnames[:] = sorted(n for n in dirnames if not n.startswith("."))  # temp/hidden folders
            rel = d.resolve().relative_to(base).as_posix()
            cid = rel if rel != "." else d.resolve().name
            if "run.json" in filenames:
                found[cid] = d
                dirnames[:] = []
                continue
            files = [d / f for f in sorted(filenames) if not _skipped(f)]
            if any(_sniff(f) for f in files if f.is_file() and f.stat().st_size > 0):
                found[cid] = d
    return sorted(found.items())


# -- one capture -----------------------------------------------------------------------------------


_SHA_MEMO: dict[tuple[str, int, int], str] = {}


def _sha256(path: Path) -> str:
    """SHA-256 of a file, remembered per (path, size, mtime) within a process."""
    st = Path(path).stat()
    key = (str(Path(path).resolve()), st.st_size, st.st_mtime_ns)
    if key not in _SHA_MEMO:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        _SHA_MEMO[key] = h.hexdigest()
    return _SHA_MEMO[key]


_CODE_HASH: str | None = None


def code_hash() -> str:
    """Hash of the analyzers' and readers' Python sources: a code change invalidates the cache."""
    global _CODE_HASH
    if _CODE_HASH is None:
        h = hashlib.sha256(str(RESULT_VERSION).encode())
        base = Path(__file__).resolve().parents[1]
        for pkg in ("analyzers", "trace_parsers"):
            for p in sorted((base / pkg).rglob("*.py")):
                h.update(p.relative_to(base).as_posix().encode())
                h.update(p.read_bytes())
        _CODE_HASH = h.hexdigest()[:16]
    return _CODE_HASH


def plan_capture(folder: Path) -> dict[str, Any]:
    """What a folder holds: run.json (or {}), trace file, logic files with profiles, UART log."""
    folder = Path(folder)
    run: dict[str, Any] = {}
    rj = folder / "run.json"
    if rj.is_file():
        try:
            run = json.loads(rj.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            raise ValueError(f"{rj}: not valid JSON: {e}") from None
        if not isinstance(run, dict):
            raise ValueError(f"{rj}: expected a JSON object")
    plan: dict[str, Any] = {
        "run": run,
        "trace": None,
        "trace_tick_hz": None,
        "logic": [],
        "uart": None,
        "uart_baud": 115200,
    }
    if run:
        t = run.get("trace") or None
        if t and t.get("file"):
            plan["trace"] = folder / t["file"]
            plan["trace_tick_hz"] = t.get("tick_hz")
        for entry in run.get("logic") or []:
            prof = entry.get("profile") or {}
            plan["logic"].append(
                {
                    "file": folder / entry["file"],
                    "profile": prof.get("name") or "ideal",
                    "samplerate": prof.get("samplerate"),
                }
            )
        u = run.get("uart") or None
        if u and u.get("file") and (folder / u["file"]).is_file():
            plan["uart"] = folder / u["file"]
            plan["uart_baud"] = int(u.get("baud") or 115200)
    else:
        for f in sorted(folder.iterdir()):
            if not f.is_file() or _skipped(f.name) or f.stat().st_size == 0:
                continue
            fmt = _sniff(f)
            if fmt is None:
                continue
            if fmt in _TRACE_FORMATS or (fmt == "ctev" and f.name.startswith("trace")):
                plan["trace"] = plan["trace"] or f
            else:
                stem = f.name.split(".")[0]
                prof = stem.split("-", 1)[1] if "-" in stem else "ideal"
                plan["logic"].append({"file": f, "profile": prof, "samplerate": None})
        if (folder / "uart.log").is_file():
            plan["uart"] = folder / "uart.log"
    return plan


def input_hash(folder: Path, plan: dict[str, Any]) -> str:
    h = hashlib.sha256(code_hash().encode())
    files = (
        [folder / "run.json"]
        + ([plan["trace"]] if plan["trace"] else [])
        + [e["file"] for e in plan["logic"]]
        + ([plan["uart"]] if plan["uart"] else [])
    )
    for f in files:
        f = Path(f)
        if f.is_file():
            h.update(f.name.encode())
            h.update(_sha256(f).encode())
    return h.hexdigest()


def _open(
    path: Path, *, tick_hz: int | None = None, samplerate: int | None = None, on_corrupt: str = "raise"
) -> Any:
    from trace_parsers import open_trace

    from ._io import SUFFIX, load_trace

    if not Path(path).is_file():
        from trace_parsers.errors import TraceFormatError

        raise TraceFormatError("the file listed in run.json does not exist", code="IO_ERROR", path=str(path))
    if str(path).endswith(SUFFIX):
        return load_trace(path)
    from trace_parsers import detect_format
    from trace_parsers.errors import TraceError

    kw: dict[str, Any] = {}
    if detect_format(path) == "tracex":
        kw["switches"] = True  # TraceX records no switch event: derive TASK_SWITCH_IN rows as TraceX does
        if tick_hz:
            kw["tick_hz"] = int(tick_hz)
    try:
        return open_trace(path, on_corrupt=on_corrupt, **kw)
    except TraceError as e:
        # run.json's analyzer profile states the rate; use it only when the file itself does not
        if e.code == "SR_NO_SAMPLERATE" and samplerate:
            return open_trace(path, on_corrupt=on_corrupt, samplerate=int(samplerate))
        raise


def capture_sources(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """The recordings of a planned capture, each with the name of its events file
    (``events-<name>.ctev.parquet``) and the options its reader needs."""
    out = []
    if plan["trace"]:
        out.append(
            {
                "name": "trace",
                "file": Path(plan["trace"]),
                "tick_hz": plan["trace_tick_hz"],
                "samplerate": None,
            }
        )
    for e in plan["logic"]:
        out.append(
            {
                "name": f"logic-{e['profile']}",
                "file": Path(e["file"]),
                "tick_hz": None,
                "samplerate": e["samplerate"],
                "profile": e["profile"],
            }
        )
    return out


def _source_stamp(src: dict[str, Any], on_corrupt: str) -> dict[str, Any]:
    """What a decoded events file was made from: input file hash, code hash and reader options."""
    return {
        "file": src["file"].name,
        "sha256": _sha256(src["file"]),
        "code": code_hash(),
        "tick_hz": src["tick_hz"],
        "samplerate": src["samplerate"],
        "on_corrupt": on_corrupt,
    }


def _decoded(src: dict[str, Any], dest: Path, on_corrupt: str, reuse: bool) -> Any:
    """The events of one source. With ``reuse``, an events file in ``dest`` whose stamp matches the
    input file, the code and the reader options is loaded instead of decoding again (that is how
    the parallel scheduler hands decoded sources to the analysis); otherwise the source is decoded
    and its events file written (atomically: a reader never sees a half-written file)."""
    from ._io import load_trace, read_stamp, save_trace

    out = dest / f"events-{src['name']}.ctev.parquet"
    stamp = _source_stamp(src, on_corrupt) if src["file"].is_file() else None
    if reuse and stamp is not None and out.is_file() and read_stamp(out) == stamp:
        return load_trace(out)
    trace = _open(src["file"], tick_hz=src["tick_hz"], samplerate=src["samplerate"], on_corrupt=on_corrupt)
    dest.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        save_trace(trace, tmp, stamp=stamp)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return trace


def decode_source(
    src: dict[str, Any], dest: str | Path, on_corrupt: str = "raise", force: bool = False
) -> dict[str, Any]:
    """Scheduler phase 1: decode one recording into its events file in ``dest``.

    Never raises: a source that cannot be decoded is left for the capture's analysis, which decodes
    it again and reports the error with the rest of the capture's results."""
    t0 = time.perf_counter()
    try:
        _decoded(src, Path(dest), on_corrupt, reuse=not force)
        return {"source": src["name"], "ok": True, "seconds": time.perf_counter() - t0}
    except Exception as e:  # reported by the capture's own analysis
        return {"source": src["name"], "ok": False, "error": str(e), "seconds": time.perf_counter() - t0}


def _identity(folder: Path, capture_id: str, run: dict[str, Any]) -> dict[str, Any]:
    parts = capture_id.split("/")
    app = run.get("app") or ""
    app_dir = parts[-2] if len(parts) >= 2 else ""
    variant = str(run.get("variant") or "")
    if not variant and app and app_dir.startswith(app + "-"):
        variant = app_dir[len(app) + 1 :]
    return {
        "capture": capture_id,
        "board": run.get("board", ""),
        "rtos": run.get("rtos", ""),
        "app": app,
        "variant": variant,
        "run_id": run.get("run_id") or (parts[-1] if parts else ""),
    }


def _stat_rows(ident: dict[str, Any], source: str, profile: str, res: Any) -> list[dict[str, Any]]:
    rows = []
    for m, st in sorted(res.stats.items()):
        rows.append(
            {
                **ident,
                "metric": m,
                "source": source,
                "profile": profile,
                "kind": "distribution",
                "unit": res.units.get(m, "ns"),
                **st.as_dict(),
                "excluded": sum(
                    e.count for e in res.drop_log if e.metric == m and e.reason != "no_end_event"
                ),
                "unmatched": sum(
                    e.count for e in res.drop_log if e.metric == m and e.reason == "no_end_event"
                ),
            }
        )
    for m, (v, unit) in sorted(res.scalars.items()):
        rows.append(
            {
                **ident,
                "metric": m,
                "source": source,
                "profile": profile,
                "kind": "scalar",
                "unit": unit,
                "n": 1,
                "mean": v,
                "std": 0.0,
                "min": v,
                "p1": v,
                "p50": v,
                "p99": v,
                "max": v,
                "excluded": 0,
                "unmatched": 0,
            }
        )
    return rows


def _write_table(rows: list[dict[str, Any]], path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows) if rows else pa.table({"empty": pa.array([], pa.int8())}), path)


def cached_result(folder: str | Path, capture_id: str, out_dir: str | Path) -> dict[str, Any] | None:
    """The earlier result of a capture when its inputs and the code are unchanged, else None."""
    t0 = time.perf_counter()
    try:
        plan = plan_capture(Path(folder))
        ihash = input_hash(Path(folder), plan)
        prev = json.loads((Path(out_dir) / "captures" / capture_id / "result.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(prev, dict) or prev.get("input_hash") != ihash or prev.get("status") != "ok":
        return None
    prev["cached"] = True
    prev["seconds"] = time.perf_counter() - t0
    return prev


def analyze_capture(
    folder: str | Path,
    capture_id: str,
    out_dir: str | Path,
    *,
    force: bool = False,
    on_corrupt: str = "raise",
    tolerance: float = 0.02,
    reuse_events: bool | None = None,
) -> dict[str, Any]:
    """Analyze one capture folder; returns its ``result.json`` content (never raises).

    Unless ``force``, an unchanged capture returns its cached result. ``reuse_events`` (default:
    not ``force``) loads sources already decoded into the capture's output folder (stamped with
    input hash, code hash and reader options) instead of decoding them again."""
    folder, out_dir = Path(folder), Path(out_dir)
    dest = out_dir / "captures" / capture_id
    t0 = time.perf_counter()
    if not force:
        prev = cached_result(folder, capture_id, out_dir)
        if prev is not None:
            return prev
    reuse = (not force) if reuse_events is None else reuse_events
    try:
        plan = plan_capture(folder)
        ihash = input_hash(folder, plan)
        from .sites import reuse_site_events

        with reuse_site_events():  # each source's site occurrences found once for all analyzers
            result = _analyze(folder, capture_id, dest, plan, on_corrupt, tolerance, reuse)
        result["input_hash"] = ihash
    except Exception as e:  # a bad capture never stops the batch
        code = getattr(e, "code", type(e).__name__)
        result = {
            "capture": capture_id,
            "folder": str(folder),
            "status": "failed",
            "error": str(e),
            "code": code,
            "traceback": traceback.format_exc(limit=6),
        }
    result["cached"] = False
    result["seconds"] = time.perf_counter() - t0
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "result.json").write_text(json.dumps(result, indent=1, default=_json_default))
    return result


def _json_default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, Path):
        return str(o)
    return str(o)


def _analyze(
    folder: Path,
    capture_id: str,
    dest: Path,
    plan: dict[str, Any],
    on_corrupt: str,
    tolerance: float,
    reuse: bool = False,
) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .console import parse_done, parse_results
    from .crossval import cross_validate
    from .run import run_analyzers
    from .sites import load_sites

    run = plan["run"]
    sites = load_sites(run)
    options = dict(run.get("options") or {})
    ident = _identity(folder, capture_id, run)
    dest.mkdir(parents=True, exist_ok=True)
    uart_text = None
    if plan["uart"]:
        uart_text = Path(plan["uart"]).read_text(encoding="latin-1")
    options["_uart_baud"] = plan["uart_baud"]
    if uart_text is not None:
        options["_uart_reference"] = uart_text
    if not plan["trace"] and not plan["logic"]:
        raise ValueError(f"{folder}: no trace and no logic capture found")

    metric_rows: list[dict[str, Any]] = []
    instances = []
    drops: list[dict[str, Any]] = []
    diagnostics: list[dict[str, Any]] = []
    trace = tr_res = None
    sources: dict[str, Any] = {}
    srcs = {src["name"]: src for src in capture_sources(plan)}
    if plan["trace"]:
        trace = _decoded(srcs["trace"], dest, on_corrupt, reuse)
        tr_res = run_analyzers(trace, sites, options)
        metric_rows += _stat_rows(ident, "trace", "", tr_res)
        instances.append(
            tr_res.table.append_column("profile", pa.array([""] * tr_res.table.num_rows, pa.string()))
        )
        drops += [{"source": "trace", "profile": "", **d.__dict__} for d in tr_res.drop_log]
        diagnostics += [
            {
                "source": "trace",
                "code": d.code,
                "severity": d.severity.name,
                "offset": d.offset,
                "count": d.count,
                "message": d.message,
            }
            for d in trace.diagnostics
        ]
        sources["trace"] = {
            "file": Path(plan["trace"]).name,
            "format": trace.meta.source_format,
            "events": len(trace),
            "tick_hz": trace.meta.tick_hz,
        }
    xv_rows: list[dict[str, Any]] = []
    al_rows: list[dict[str, Any]] = []
    count_rows: list[dict[str, Any]] = []
    pair_tables = []
    notes = []
    for entry in plan["logic"]:
        prof = entry["profile"]
        cap = _decoded(srcs[f"logic-{prof}"], dest, on_corrupt, reuse)
        lg = run_analyzers(cap, sites, options)
        metric_rows += _stat_rows(ident, "logic", prof, lg)
        instances.append(lg.table.append_column("profile", pa.array([prof] * lg.table.num_rows, pa.string())))
        drops += [{"source": "logic", "profile": prof, **d.__dict__} for d in lg.drop_log]
        diagnostics += [
            {
                "source": f"logic:{prof}",
                "code": d.code,
                "severity": d.severity.name,
                "offset": d.offset,
                "count": d.count,
                "message": d.message,
            }
            for d in cap.diagnostics
        ]
        sources[f"logic:{prof}"] = {
            "file": Path(entry["file"]).name,
            "format": cap.meta.source_format,
            "events": len(cap),
            "samplerate": cap.meta.tick_hz,
        }
        if trace is not None and tr_res is not None:
            cv = cross_validate(
                trace,
                cap,
                sites=sites,
                trace_table=tr_res.table,
                logic_table=lg.table,
                trace_scalars=tr_res.scalars,
                logic_scalars=lg.scalars,
                tolerance=tolerance,
            )
            if cv.note:
                notes.append(f"{prof}: {cv.note}")
            xv_rows += [{**ident, "profile": prof, **a.as_row()} for a in cv.agreements]
            al_rows += [{**ident, "profile": prof, **r} for r in cv.alignment_rows()]
            count_rows += [{**ident, "profile": prof, **c} for c in cv.counts]
            if cv.pairs is not None and cv.pairs.num_rows:
                pair_tables.append(cv.pairs.append_column("profile", pa.array([prof] * cv.pairs.num_rows)))
    for r in parse_results(run.get("result_lines") or []):
        v = r["mean_ns"] if r["mean_ns"] == r["mean_ns"] else r["mean"]
        unit = "ns" if r["mean_ns"] == r["mean_ns"] else r["unit"]
        metric_rows.append(
            {
                **ident,
                "metric": r["metric"],
                "source": "firmware",
                "profile": "",
                "kind": "summary",
                "unit": unit,
                "n": r["n"],
                "mean": v,
                "std": float("nan"),
                "min": r["min_ns"] if unit == "ns" else r["min"],
                "p1": float("nan"),
                "p50": float("nan"),
                "p99": float("nan"),
                "max": r["max_ns"] if unit == "ns" else r["max"],
                "excluded": 0,
                "unmatched": 0,
            }
        )
    if instances:
        pq.write_table(pa.concat_tables(instances), dest / "instances.parquet")
    if pair_tables:
        pq.write_table(pa.concat_tables(pair_tables), dest / "pairs.parquet")
    _write_table(metric_rows, dest / "metrics.parquet")
    _write_table(xv_rows, dest / "crossval.parquet")
    _write_table(al_rows, dest / "alignment.parquet")
    _write_table(drops, dest / "drop_log.parquet")
    fw = run.get("firmware") or {}
    verdicts = [r["verdict"] for r in xv_rows if r["verdict"] in ("PASS", "FAIL")] + [
        r["verdict"] for r in count_rows
    ]
    return {
        **ident,
        "folder": str(folder),
        "status": "ok",
        "metrics": metric_rows,
        "crossval": xv_rows,
        "crossval_counts": count_rows,
        "alignment": al_rows,
        "drop_log": drops,
        "diagnostics": diagnostics,
        "notes": notes,
        "sources": sources,
        "verdict": ("FAIL" if "FAIL" in verdicts else "PASS") if verdicts else "N/A",
        "provenance": {
            "firmware_rev": fw.get("git_rev", ""),
            "elf_sha256": fw.get("elf_sha256", ""),
            "config": fw.get("config", ""),
            "rtos_version": run.get("rtos_version", ""),
            "options": run.get("options") or {},
            "qemu": run.get("qemu") or {},
            "logic_profiles": [e.get("profile") for e in run.get("logic") or []],
            "created_utc": run.get("created_utc", ""),
            "run_status": run.get("status", ""),
            "console_done": parse_done(run.get("result_lines") or []),
            "cpu_hz": options.get("CT_CPU_HZ") or BOARD_CPU_HZ.get(run.get("board", "")),
        },
        "code_hash": code_hash(),
    }


# -- the campaign ----------------------------------------------------------------------------------


def comparison_table(campaign: Any) -> Any:
    """Seed-style comparison: per board, app, variant, metric and source, every RTOS's mean as a
    multiple of the fastest and of the slowest RTOS, in µs and CPU cycles (pandas DataFrame)."""
    import pandas as pd

    df = campaign[(campaign["unit"] == "ns") & (campaign["kind"] != "scalar")]
    if df.empty:
        return pd.DataFrame(columns=["board", "app", "variant", "metric", "source", "rtos", "mean_ns"])
    keys = ["board", "app", "variant", "metric", "source", "profile"]
    g = df.groupby(keys + ["rtos"], dropna=False).agg(
        mean_ns=("mean", "mean"), p99_ns=("p99", "mean"), runs=("capture", "nunique"), n=("n", "sum")
    )
    g = g.reset_index()
    grp = g.groupby(keys, dropna=False)["mean_ns"]
    g["x_fastest"] = g["mean_ns"] / grp.transform("min")
    g["x_slowest"] = g["mean_ns"] / grp.transform("max")
    g["mean_us"] = g["mean_ns"] / 1e3
    hz = g["board"].map(BOARD_CPU_HZ)
    g["cpu_hz"] = hz
    g["mean_cycles"] = g["mean_ns"] * hz / 1e9
    g["rank"] = grp.rank(method="min").astype("Int64")
    return g.sort_values(keys + ["rank"]).reset_index(drop=True)


def overhead_table(campaign: Any, captures: list[dict[str, Any]]) -> Any:
    """Instrumentation overhead: the pin-measured mean of a traced build minus that of an untraced
    build of the same board, RTOS and app (untraced = a capture folder without a trace)."""
    import pandas as pd

    traced = {
        c["capture"]: bool(c.get("sources", {}).get("trace")) for c in captures if c.get("status") == "ok"
    }
    df = campaign[(campaign["source"] == "logic") & (campaign["kind"] == "distribution")].copy()
    if df.empty:
        return pd.DataFrame()
    df["traced"] = df["capture"].map(traced)
    keys = ["board", "rtos", "app", "metric", "profile"]
    a = df[df["traced"] == True].groupby(keys)["mean"].mean().rename("traced_ns")  # noqa: E712
    b = df[df["traced"] == False].groupby(keys)["mean"].mean().rename("untraced_ns")  # noqa: E712
    out = pd.concat([a, b], axis=1, join="inner").reset_index()
    out["overhead_ns"] = out["traced_ns"] - out["untraced_ns"]
    out["overhead_pct"] = 100.0 * out["overhead_ns"] / out["untraced_ns"]
    return out


def write_campaign(out_dir: Path, results: list[dict[str, Any]]) -> dict[str, Any]:
    """Assemble and write the campaign tables from the per-capture results."""
    import pandas as pd

    ok = [r for r in results if r.get("status") == "ok"]
    campaign = pd.DataFrame([row for r in ok for row in r["metrics"]])
    xv = pd.DataFrame([row for r in ok for row in r["crossval"]])
    al = pd.DataFrame([row for r in ok for row in r["alignment"]])
    counts = pd.DataFrame([row for r in ok for row in r.get("crossval_counts", [])])
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, df in (
        ("campaign", campaign),
        ("crossval", xv),
        ("alignment", al),
        ("crossval_counts", counts),
    ):
        df.to_csv(out_dir / f"{name}.csv", index=False)
        if not df.empty:
            df.to_parquet(out_dir / f"{name}.parquet", index=False)
    if not campaign.empty:
        comp = comparison_table(campaign)
        comp.to_csv(out_dir / "comparison.csv", index=False)
        comp.to_parquet(out_dir / "comparison.parquet", index=False)
        ov = overhead_table(campaign, ok)
        ov.to_csv(out_dir / "overhead.csv", index=False)
    manifest = {
        "code_hash": code_hash(),
        "captures": [
            {
                k: r.get(k)
                for k in (
                    "capture",
                    "folder",
                    "status",
                    "error",
                    "code",
                    "board",
                    "rtos",
                    "app",
                    "variant",
                    "run_id",
                    "verdict",
                    "notes",
                    "provenance",
                    "sources",
                    "diagnostics",
                    "input_hash",
                    "seconds",
                    "cached",
                )
            }
            for r in results
        ],
        "failed": sum(r.get("status") != "ok" for r in results),
    }
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1, default=_json_default))
    return manifest


def _single_threaded() -> None:
    """Pool-worker initializer: one worker per core, so no library thread pools on top of it
    (pyarrow's would oversubscribe the cores and slow every capture down)."""
    import pyarrow as pa

    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    _tune_malloc(True)


#: glibc mallopt parameters
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3


def _tune_malloc(on: bool) -> bool:
    """glibc only: while ``on``, freed memory stays in the process for the next capture's arrays
    (no mmap/munmap of every large array, no page faults to refill it); off restores glibc's
    defaults and hands the memory back. Measured on the synthetic campaign: serial 4.7 → 4.4 s,
    kernel time 0.7–1.0 → 0.3 s. Returns whether it could be applied."""
    import ctypes
    import platform

    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    if on:
        mallopt(_M_MMAP_THRESHOLD, 32 << 20)  # glibc's maximum
        mallopt(_M_TRIM_THRESHOLD, 1 << 30)
        mallopt(_M_TOP_PAD, 64 << 20)
    else:
        mallopt(_M_MMAP_THRESHOLD, 128 << 10)
        mallopt(_M_TRIM_THRESHOLD, 128 << 10)
        mallopt(_M_TOP_PAD, 0)
        libc.malloc_trim(0)
    return True


#: Phase-2 cost relative to decoding, per input byte: the scheduler's priority estimate.
_ANALYZE_WEIGHT = 0.5
#: A capture holding at least this share of one worker's part of the input bytes is split into
#: decode tasks (one per recording) and an analysis task.
_SPLIT_SHARE = 0.5


def _plan_tasks(
    jobs: list[tuple[str, Path]],
    out_dir: Path,
    force: bool,
    on_corrupt: str,
    tolerance: float,
    workers: int = 2,
) -> list[dict[str, Any]]:
    """The task graph of a batch: per capture, one decode task per recording (phase 1) and one
    analysis task depending on them (phase 2). Each task has a priority: the estimated length of
    the longest chain it starts (input bytes to decode, plus its capture's analysis), so a big
    capture's pieces run first and its analysis starts as soon as its last decode ends."""
    from ._io import SUFFIX

    tasks: list[dict[str, Any]] = []
    plans = []
    for cid, folder in jobs:
        try:
            srcs = capture_sources(plan_capture(folder))
        except Exception:  # the analysis task reports it
            srcs = []
        plans.append((cid, folder, srcs))
    total = sum(s["file"].stat().st_size for *_, srcs in plans for s in srcs if s["file"].is_file())
    # only a capture too big to balance whole gets decode tasks of its own: splitting the small ones
    # would add a save/load and a task round trip each for nothing
    split_bytes = _SPLIT_SHARE * total / max(workers, 1)
    for cid, folder, srcs in plans:
        dest = out_dir / "captures" / cid
        sizes = {s["name"]: s["file"].stat().st_size if s["file"].is_file() else 0 for s in srcs}
        analysis = _ANALYZE_WEIGHT * sum(sizes.values())
        deps = []
        for src in srcs if sum(sizes.values()) >= split_bytes else ():
            if not sizes[src["name"]] or src["file"].name.endswith(SUFFIX):
                continue  # missing (reported by the analysis) or already decoded events
            key = f"decode:{cid}:{src['name']}"
            deps.append(key)
            tasks.append(
                {
                    "key": key,
                    "capture": cid,
                    "fn": decode_source,
                    "args": (src, str(dest)),
                    "kwargs": {"on_corrupt": on_corrupt, "force": force},
                    "deps": [],
                    "priority": sizes[src["name"]] + analysis,
                }
            )
        tasks.append(
            {
                "key": f"analyze:{cid}",
                "capture": cid,
                "fn": analyze_capture,
                "args": (str(folder), cid, str(out_dir)),
                # the decodes above (if any) just honoured --force: phase 2 reuses what they wrote
                "kwargs": {
                    "force": True,
                    "reuse_events": bool(deps) or not force,
                    "on_corrupt": on_corrupt,
                    "tolerance": tolerance,
                },
                "deps": deps,
                "priority": analysis,
            }
        )
    return tasks


@dataclasses.dataclass
class _Timed:
    result: Any
    start: float
    end: float
    pid: int


def _timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> _Timed:
    """``fn(*args, **kwargs)`` with when (``time.perf_counter``, one clock for all processes on
    Linux) and in which process it ran."""
    t = time.perf_counter()
    r = fn(*args, **kwargs)
    return _Timed(r, t, time.perf_counter(), os.getpid())


def _run_graph(
    tasks: list[dict[str, Any]],
    workers: int,
    submit: Callable[[dict[str, Any]], Any],
    wait_any: Callable[[set[Any]], set[Any]],
    on_done: Callable[[dict[str, Any], Any], None],
    retries: int = 0,
) -> None:
    """Run a task graph on ``workers`` slots: a task starts when its dependencies are done, the
    ready task with the highest priority first, and never more tasks in flight than slots (so
    priorities decide, not the executor's FIFO queue).

    A task whose future raises (its worker died, taking every task in flight with it) is run again
    up to ``retries`` times, alone, so that the task that kills its worker fails by itself and the
    others complete; after that ``on_done`` gets the exception as the task's result."""
    by_key = {t["key"]: t for t in tasks}
    waiting = {t["key"]: set(t["deps"]) for t in tasks}
    users: dict[str, list[str]] = {}
    for t in tasks:
        for d in t["deps"]:
            users.setdefault(d, []).append(t["key"])
    ready = [k for k, d in waiting.items() if not d]
    inflight: dict[Any, str] = {}
    attempts = dict.fromkeys(by_key, 0)
    suspects: set[str] = set()  # tasks that were in flight when a worker died: they run alone
    t0 = time.perf_counter()
    while ready or inflight:
        ready.sort(key=lambda k: (by_key[k]["priority"], k))
        while ready and len(inflight) < workers and not suspects & set(inflight.values()):
            if ready[-1] in suspects and inflight:
                break
            k = ready.pop()
            attempts[k] += 1
            by_key[k]["started"] = time.perf_counter() - t0
            inflight[submit(by_key[k])] = k
        for fut in wait_any(set(inflight)):
            k = inflight.pop(fut)
            try:
                r = fut.result()
            except Exception as e:  # the worker died, or the result could not be sent back
                if attempts[k] <= retries:
                    suspects.add(k)
                    ready.append(k)
                    continue
                r = e
            by_key[k]["ended"] = time.perf_counter() - t0
            if isinstance(r, _Timed):  # when and where the task really ran
                by_key[k].update(ran=(r.start - t0, r.end - t0), pid=r.pid)
                r = r.result
            on_done(by_key[k], r)
            for u in users.get(k, []):
                waiting[u].discard(k)
                if not waiting[u]:
                    ready.append(u)


#: Modules the pool's workers start with (imported once, in the fork server, before it forks them).
_PRELOAD = [
    "numpy",
    "pyarrow",
    "pyarrow.parquet",
    "pandas",  # pyarrow imports it on the first pa.array(ndarray): once there, not in every worker
    "pyarrow.pandas_compat",
    "trace_parsers.systemview",
    "trace_parsers.systemview.convert",
    "trace_parsers.tracex",
    "trace_parsers.tracex.convert",
    "trace_parsers.tracex.stats",
    "trace_parsers.sigrok",
    "trace_parsers.saleae",
    "analyzers._io",
    "analyzers.console",
    "analyzers.run",
    "analyzers.calib",
    "analyzers.context_switch",
    "analyzers.cpu_load",
    "analyzers.isr_latency",
    "analyzers.periodicity",
    "analyzers.workload",
    "analyzers.crossval",
    "analyzers.batch",
]


def _worker_ready() -> int:
    return os.getpid()


class _ProcessPool:
    """A process pool whose workers start in a background thread: starting them (the fork server
    imports :data:`_PRELOAD`, ~0.3 s) overlaps with whatever the caller does next.

    forkserver: a clean server process forks the workers (no threads inherited from the parent).
    Each worker is single-threaded (:func:`_single_threaded`): one worker per core."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.restarts = 0
        self._start()

    def _start(self) -> None:
        import multiprocessing as mp
        import threading
        from concurrent.futures import ProcessPoolExecutor

        ctx = mp.get_context("forkserver" if sys.platform.startswith("linux") else "spawn")
        if ctx.get_start_method() == "forkserver":
            ctx.set_forkserver_preload(_PRELOAD)
        ex = ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx, initializer=_single_threaded)
        self.executor = ex

        def warm() -> None:
            # submit() spawns a worker and blocks until it exists: done off the caller's thread
            for _ in range(self.workers):
                try:
                    ex.submit(_worker_ready)
                except RuntimeError:  # broken or shut down meanwhile
                    return

        self._warm = threading.Thread(target=warm, daemon=True)
        self._warm.start()

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``executor.submit``; a pool broken by a dead worker is replaced by a fresh one first."""
        from concurrent.futures.process import BrokenProcessPool

        try:
            return self.executor.submit(fn, *args, **kwargs)
        except BrokenProcessPool:
            self.shutdown()
            self.restarts += 1
            self._start()
            return self.executor.submit(fn, *args, **kwargs)

    def shutdown(self) -> None:
        self._warm.join()
        self.executor.shutdown()


def _run_pool(
    jobs: list[tuple[str, Path]],
    out_dir: Path,
    workers: int,
    scheduler: str,
    progress: Callable[[dict[str, Any]], None],
    *,
    schedule: list[dict[str, Any]],
    written: list[dict[str, Any]],
    pool: _ProcessPool | None = None,
    force: bool = False,
    on_corrupt: str = "raise",
    tolerance: float = 0.02,
) -> list[dict[str, Any]]:
    kw = {"on_corrupt": on_corrupt, "tolerance": tolerance}
    results: list[dict[str, Any]] = []
    if scheduler == "serial" or workers == 1 and scheduler == "processes":
        for cid, folder in jobs:
            r = analyze_capture(folder, cid, out_dir, force=force, **kw)
            progress(r)
            results.append(r)
        return results
    # unchanged captures are answered from the cache here; the rest become a task graph
    todo = []
    for cid, folder in jobs:
        prev = None if force else cached_result(folder, cid, out_dir)
        if prev is not None:
            progress(prev)
            results.append(prev)
        else:
            todo.append((cid, folder))
    tasks = _plan_tasks(todo, out_dir, force, on_corrupt, tolerance, workers)
    schedule.extend(tasks)

    def on_done(task: dict[str, Any], r: Any) -> None:
        if task["fn"] is not analyze_capture:
            return  # a decode that failed is decoded again (and reported) by its capture's analysis
        if isinstance(r, BaseException):
            folder = task["args"][0]
            r = {
                "capture": task["capture"],
                "folder": str(folder),
                "status": "failed",
                "error": f"the worker process analysing it died ({type(r).__name__}: {r})",
                "code": "WORKER_DIED",
                "cached": False,
                "seconds": 0.0,
            }
        progress(r)
        results.append(r)

    if scheduler == "processes":
        from concurrent.futures import FIRST_COMPLETED, wait

        own = pool is None
        if pool is None:
            pool = _ProcessPool(workers)  # its workers start in the background
        try:
            _run_graph(
                tasks,
                workers,
                lambda t: pool.submit(_timed, t["fn"], *t["args"], **t["kwargs"]),
                lambda fs: wait(fs, return_when=FIRST_COMPLETED).done,
                on_done,
                retries=1,
            )
            # the campaign tables need pandas, which the workers have loaded and this process has not
            results.sort(key=lambda r: r["capture"])
            written.append(pool.submit(write_campaign, out_dir, results).result())
        finally:
            if own:
                pool.shutdown()
        return results
    # Dask: "dask-local" starts a local cluster; anything else is a scheduler address. The graph
    # goes to Dask whole: dependencies as futures, priorities as Dask priorities.
    from distributed import Client, LocalCluster
    from distributed import as_completed as d_as_completed

    cluster = None
    if scheduler == "dask-local":
        cluster = LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        )
        client = Client(cluster)
    else:
        client = Client(scheduler)
    try:
        futs: dict[str, Any] = {}
        finals = []
        for t in tasks:  # _plan_tasks lists a task after its dependencies
            deps = [futs[d] for d in t["deps"]]
            futs[t["key"]] = client.submit(
                _after, deps, t["fn"], *t["args"], key=f"{t['key']}-{os.urandom(4).hex()}",
                priority=int(t["priority"]), pure=False, **t["kwargs"],
            )
            if t["fn"] is analyze_capture:
                finals.append(futs[t["key"]])
        for f in d_as_completed(finals):
            on_done({"fn": analyze_capture}, f.result())
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return results


def _after(_deps: list[Any], fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Dask task body: ``fn(*args, **kwargs)`` once ``_deps`` (results of other tasks) exist."""
    return fn(*args, **kwargs)


def analyze_dirs(
    roots: Sequence[Path],
    out_dir: Path,
    *,
    workers: int | None = None,
    scheduler: str = "processes",
    force: bool = False,
    on_corrupt: str = "raise",
    tolerance: float = 0.02,
    quiet: bool = False,
) -> dict[str, Any]:
    """Discover, analyze (in parallel, cached) and write the campaign; returns the manifest."""
    out_dir = Path(out_dir)
    n_pool = workers or os.cpu_count() or 1
    pool = None
    if scheduler == "processes" and n_pool > 1 and (force or not (out_dir / "manifest.json").is_file()):
        # a fresh or forced run will need the workers: start them while the folders are searched
        pool = _ProcessPool(n_pool)
    tuned = _tune_malloc(True)
    try:
        return _analyze_dirs(roots, out_dir, workers, scheduler, force, on_corrupt, tolerance, quiet, pool)
    finally:
        if pool is not None:
            pool.shutdown()
        if tuned:
            _tune_malloc(False)


def _analyze_dirs(
    roots: Sequence[Path],
    out_dir: Path,
    workers: int | None,
    scheduler: str,
    force: bool,
    on_corrupt: str,
    tolerance: float,
    quiet: bool,
    pool: _ProcessPool | None,
) -> dict[str, Any]:
    jobs = discover(roots, exclude=[out_dir])
    # largest first: the pool stays busy to the end (longest-processing-time-first scheduling)
    jobs.sort(key=lambda j: -sum(f.stat().st_size for f in j[1].iterdir() if f.is_file()))
    workers = workers or min(len(jobs), os.cpu_count() or 1) or 1
    done = [0]
    t0 = time.perf_counter()

    def progress(r: dict[str, Any]) -> None:
        done[0] += 1
        if quiet:
            return
        status = "cached" if r.get("cached") else r.get("status")
        extra = f"  {r.get('verdict', '')}" if r.get("status") == "ok" else f"  {r.get('error', '')}"
        print(
            f"[{done[0]}/{len(jobs)}] {r['capture']}: {status} ({r.get('seconds', 0):.2f} s){extra}",
            file=sys.stderr,
            flush=True,
        )

    schedule: list[dict[str, Any]] = []
    written: list[dict[str, Any]] = []
    results = _run_pool(
        jobs,
        out_dir,
        workers,
        scheduler,
        progress,
        schedule=schedule,
        written=written,
        pool=pool,
        force=force,
        on_corrupt=on_corrupt,
        tolerance=tolerance,
    )
    results.sort(key=lambda r: r["capture"])
    # the process pool writes the campaign in a worker; otherwise it is written here
    manifest = written[0] if written else write_campaign(out_dir, results)
    manifest["seconds"] = time.perf_counter() - t0
    # the task graph as run (process pool: when each task was submitted and done, and when and in
    # which worker it ran, in s from the start of the graph)
    manifest["schedule"] = [
        {k: t.get(k) for k in ("key", "priority", "started", "ended", "ran", "pid")} for t in schedule
    ]
    if schedule:
        (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1, default=_json_default))
    return manifest


def setup_cli(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("dirs", nargs="+", type=Path, help="folders to search for capture folders")
    sp.add_argument("-o", "--output", type=Path, default=Path("out/campaign"), help="output folder")
    sp.add_argument("-j", "--jobs", type=int, default=None, help="parallel workers (default: CPU count)")
    sp.add_argument(
        "--scheduler",
        default="processes",
        help="'processes' (default), 'serial', 'dask-local', or a Dask scheduler address tcp://host:port",
    )
    sp.add_argument("--force", action="store_true", help="ignore cached results")
    sp.add_argument(
        "--on-corrupt",
        choices=("raise", "warn", "skip"),
        default="raise",
        help="reader policy for damaged input (default: raise = the capture fails)",
    )
    sp.add_argument("--tolerance", type=float, default=0.02, help="agreement tolerance (default 0.02 = 2%%)")
    sp.add_argument("--strict", action="store_true", help="exit 3 when any cross-validation FAILs")
    sp.add_argument("-q", "--quiet", action="store_true")
    sp.set_defaults(func=cmd_analyze)


def cmd_analyze(args: argparse.Namespace) -> int:
    try:
        m = analyze_dirs(
            args.dirs,
            args.output,
            workers=args.jobs,
            scheduler=args.scheduler,
            force=args.force,
            on_corrupt=args.on_corrupt,
            tolerance=args.tolerance,
            quiet=args.quiet,
        )
    except FileNotFoundError as e:
        print(f"crosstrace: {e}", file=sys.stderr)
        return 2
    caps = m["captures"]
    n_fail = m["failed"]
    n_xfail = sum(c.get("verdict") == "FAIL" for c in caps)
    print(
        f"{len(caps)} captures: {len(caps) - n_fail} analyzed ({sum(bool(c.get('cached')) for c in caps)} "
        f"cached), {n_fail} failed; cross-validation FAIL in {n_xfail}; results in {args.output}"
    )
    for c in caps:
        if c["status"] != "ok":
            print(f"  FAILED {c['capture']}: {c.get('error')}", file=sys.stderr)
    if not caps:
        print("crosstrace: no capture folders found", file=sys.stderr)
        return 1
    if n_fail:
        return 1
    if args.strict and n_xfail:
        return 3
    return 0


def load_campaign(out_dir: Path) -> dict[str, Any]:
    """The tables and manifest written by :func:`write_campaign` (pandas DataFrames)."""
    import pandas as pd

    out_dir = Path(out_dir)
    mf = out_dir / "manifest.json"
    if not mf.is_file():
        raise FileNotFoundError(
            f"{out_dir}: no manifest.json (run `crosstrace analyze ... -o {out_dir}` first)"
        )
    d: dict[str, Any] = {"manifest": json.loads(mf.read_text())}
    for name in ("campaign", "crossval", "alignment", "comparison", "crossval_counts", "overhead"):
        p, c = out_dir / f"{name}.parquet", out_dir / f"{name}.csv"
        if p.is_file():
            d[name] = pd.read_parquet(p)
        elif c.is_file() and c.stat().st_size > 1:
            try:
                d[name] = pd.read_csv(c)
            except pd.errors.EmptyDataError:
                d[name] = pd.DataFrame()
        else:
            d[name] = pd.DataFrame()
    return d


def iter_instances(out_dir: Path) -> Iterable[tuple[str, Any]]:
    """``(capture_id, instances DataFrame)`` for every analyzed capture of a campaign folder."""
    import pandas as pd

    for p in sorted((Path(out_dir) / "captures").rglob("instances.parquet")):
        yield p.parent.relative_to(Path(out_dir) / "captures").as_posix(), pd.read_parquet(p)
