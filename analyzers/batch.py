"""`crosstrace analyze DIR...`: every capture folder → metrics, cross-validation, campaign tables.

A capture folder holds one run (``run.json`` with the trace, logic captures and UART log it lists;
or, without run.json, any files whose content a reader recognises). Folders are analyzed in
parallel — a process pool by default, a Dask cluster with ``--scheduler tcp://host:port`` (or
``--scheduler dask-local``) — and results are cached by input hash, so a rerun skips unchanged
captures. A capture that fails is reported and the rest complete.

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
- ``manifest.json``: captures, status, errors, provenance.
"""

from __future__ import annotations

import argparse
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
            files = [d / f for f in sorted(filenames) if f not in _SKIP_NAMES and not f.startswith(".")]
            if any(_sniff(f) for f in files if f.is_file() and f.stat().st_size > 0):
                found[cid] = d
    return sorted(found.items())


# -- one capture -----------------------------------------------------------------------------------


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


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
            if not f.is_file() or f.name in _SKIP_NAMES or f.stat().st_size == 0:
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


def analyze_capture(
    folder: str | Path,
    capture_id: str,
    out_dir: str | Path,
    *,
    force: bool = False,
    on_corrupt: str = "raise",
    tolerance: float = 0.02,
) -> dict[str, Any]:
    """Analyze one capture folder; returns its ``result.json`` content (never raises)."""
    folder, out_dir = Path(folder), Path(out_dir)
    dest = out_dir / "captures" / capture_id
    t0 = time.perf_counter()
    try:
        plan = plan_capture(folder)
        ihash = input_hash(folder, plan)
        cached = dest / "result.json"
        if not force and cached.is_file():
            try:
                prev = json.loads(cached.read_text())
                if prev.get("input_hash") == ihash and prev.get("status") == "ok":
                    prev["cached"] = True
                    prev["seconds"] = time.perf_counter() - t0
                    return prev
            except ValueError:
                pass
        result = _analyze(folder, capture_id, dest, plan, on_corrupt, tolerance)
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
    folder: Path, capture_id: str, dest: Path, plan: dict[str, Any], on_corrupt: str, tolerance: float
) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ._io import save_trace
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
    if plan["trace"]:
        trace = _open(plan["trace"], tick_hz=plan["trace_tick_hz"], on_corrupt=on_corrupt)
        save_trace(trace, dest / "events-trace.ctev.parquet")
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
        cap = _open(entry["file"], samplerate=entry["samplerate"], on_corrupt=on_corrupt)
        save_trace(cap, dest / f"events-logic-{prof}.ctev.parquet")
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


def _run_pool(
    jobs: list[tuple[str, Path]],
    out_dir: Path,
    workers: int,
    scheduler: str,
    progress: Callable[[dict[str, Any]], None],
    **kw: Any,
) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    if scheduler == "serial" or workers == 1 and scheduler == "processes":
        for cid, folder in jobs:
            r = analyze_capture(folder, cid, out_dir, **kw)
            progress(r)
            results.append(r)
        return results
    if scheduler == "processes":
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor, as_completed

        # forkserver: a clean server process forks the workers (no threads inherited from the
        # parent); preloading the analysis modules there lets every worker start without imports
        ctx = mp.get_context("forkserver" if sys.platform.startswith("linux") else "spawn")
        if ctx.get_start_method() == "forkserver":
            ctx.set_forkserver_preload(
                [
                    "numpy",
                    "pyarrow",
                    "pyarrow.parquet",
                    "analyzers.run",
                    "analyzers.crossval",
                    "analyzers.batch",
                ]
            )
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_single_threaded) as ex:
            futs = [ex.submit(analyze_capture, folder, cid, out_dir, **kw) for cid, folder in jobs]
            for f in as_completed(futs):
                r = f.result()
                progress(r)
                results.append(r)
        return results
    # Dask: "dask-local" starts a local cluster; anything else is a scheduler address
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
        dfuts = [
            client.submit(analyze_capture, str(folder), cid, str(out_dir), pure=False, **kw)
            for cid, folder in jobs
        ]
        for f in d_as_completed(dfuts):
            r = f.result()
            progress(r)
            results.append(r)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return results


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

    results = _run_pool(
        jobs, out_dir, workers, scheduler, progress, force=force, on_corrupt=on_corrupt, tolerance=tolerance
    )
    results.sort(key=lambda r: r["capture"])
    manifest = write_campaign(out_dir, results)
    manifest["seconds"] = time.perf_counter() - t0
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
