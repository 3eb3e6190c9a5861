"""One capture: decode its sources, run the analyzers and the cross-validation, write its result."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import time
import traceback
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from trace_parsers.errors import AnalysisError, TraceError

from ..options import AnalysisOptions
from .chunked import analyze_chunked, chunk_size
from .decode import _decoded, _open, _source_stamp, decode_source  # noqa: F401 (re-exported)
from .identity import _identity, _json_default, _sha256, code_hash, input_hash
from .instances import InstanceSink, site_based_rows
from .plan import BOARD_CPU_HZ, capture_sources, plan_capture
from .tables import ALL_CORES
from .tables import stat_rows as _stat_rows


def _write_table(rows: list[dict[str, Any]], path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows) if rows else pa.table({"empty": pa.array([], pa.int8())}), path)


def cached_result(
    folder: str | Path, capture_id: str, out_dir: str | Path, options: AnalysisOptions | None = None
) -> dict[str, Any] | None:
    """The earlier result of a capture when its inputs, the code and the options are unchanged,
    else None."""
    t0 = time.perf_counter()
    options = options or AnalysisOptions()
    try:
        plan = plan_capture(Path(folder), tick_hz=options.tick_hz)
        ihash = input_hash(Path(folder), plan, options)
        prev = json.loads((Path(out_dir) / "captures" / capture_id / "result.json").read_text())
    except Exception:  # unreadable or unplannable: the analysis reports why
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
    options: AnalysisOptions | None = None,
    reuse_events: bool | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """Analyze one capture folder; returns its ``result.json`` content, a :class:`CaptureResult`
    (never raises).

    Unless ``force``, an unchanged capture returns its cached result. ``reuse_events`` (default:
    not ``force``) loads sources already decoded into the capture's output folder (stamped with
    input hash, code hash and reader options) instead of decoding them again. ``options`` (the
    :class:`~analyzers.options.AnalysisOptions`; ``fields`` replace some of them, as keywords)
    are part of the cache key and written into the result.

    A logic capture that run.json lists but that does not exist is left out (with a note and a
    diagnostic): the trace and the other sources are still analyzed."""
    folder, out_dir = Path(folder), Path(out_dir)
    dest = out_dir / "captures" / capture_id
    t0 = time.perf_counter()
    options = AnalysisOptions.of(options, **fields)
    if not force:
        prev = cached_result(folder, capture_id, out_dir, options)
        if prev is not None:
            return prev
    reuse = (not force) if reuse_events is None else reuse_events
    try:
        plan = plan_capture(folder, tick_hz=options.tick_hz)
        ihash = input_hash(folder, plan, options)
        missing = _drop_missing_logic(plan)
        from ..sites import reuse_site_events

        with reuse_site_events():  # each source's site occurrences found once for all analyzers
            result = _analyze(folder, capture_id, dest, plan, options, reuse)
        result["input_hash"] = ihash
        _add_plan_notes(result, plan, missing)
    except Exception as e:  # a bad capture never stops the batch
        result = _failure(capture_id, folder, dest, e)
    result["options"] = options.as_dict()
    result["cached"] = False
    result["seconds"] = time.perf_counter() - t0
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "result.json").write_text(json.dumps(result, indent=1, default=_json_default))
    return result


def _failure(capture_id: str, folder: Path, dest: Path, e: Exception) -> dict[str, Any]:
    """The result of a capture that could not be analyzed. crosstrace's own errors keep their code
    (their message names the file and offset); anything else is a bug, reported as ``INTERNAL``
    with the recording it happened on. Decoded events files already written are said to be kept."""
    from .._disk import no_space

    full = no_space(e, dest, "analyzing the capture")
    if full is not None:  # the disk filled up (scratch of a long recording): the user's to fix
        e = full
    code = getattr(e, "code", None)
    error = str(e)
    if not isinstance(code, str):
        code = "INTERNAL"
        error = f"{type(e).__name__}: {e} (a crosstrace bug: please report it with the recording)"
    kept = sorted(p.name for p in dest.glob("events-*.ctev.parquet")) if dest.is_dir() else []
    return {
        "capture": capture_id,
        "folder": str(folder),
        "status": "failed",
        "error": error,
        "code": code,
        "traceback": traceback.format_exc(limit=6),
        "file": getattr(e, "path", None),  #: the recording at fault, when the error names one
        "offset": getattr(e, "offset", None),  #: its byte offset
        "kept_events": kept,
        "notes": [f"decoded events kept in {dest} (valid, reused by the next run): {', '.join(kept)}"]
        if kept
        else [],
    }


def _drop_missing_logic(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """Take the logic captures whose file does not exist out of ``plan``; returns them. When
    nothing else is left to analyze they stay, and the capture fails on the first (IO_ERROR)."""
    missing = [e for e in plan["logic"] if not Path(e["file"]).is_file()]
    present = [e for e in plan["logic"] if Path(e["file"]).is_file()]
    if not plan["trace"] and not present:
        return []
    plan["logic"] = present
    return missing


def _add_plan_notes(result: dict[str, Any], plan: dict[str, Any], missing: list[dict[str, Any]]) -> None:
    """What the plan left out, in the result: missing logic files, recordings not analyzed."""
    for e in missing:
        msg = f"the logic capture {Path(e['file']).name} listed in run.json does not exist: not analyzed"
        result.setdefault("notes", []).append(f"{e['profile']}: {msg}")
        result.setdefault("diagnostics", []).append(
            {"source": f"logic:{e['profile']}", "code": "IO_ERROR", "severity": "ERROR", "offset": 0,
             "count": 1, "message": msg}
        )
    result["missing_sources"] = [str(e["file"]) for e in missing]
    if plan.get("ignored"):
        result.setdefault("notes", []).append(
            "several trace recordings in one folder: only the first was analyzed, not "
            + ", ".join(Path(f).name for f in plan["ignored"])
        )
    if plan.get("trace_tick_hz_assumed"):
        result["tick_hz_assumed"] = plan["trace_tick_hz_assumed"]


@dataclasses.dataclass
class SourceResult:
    """One decoded source of a capture and what the analyzers made of it."""

    name: str  #: "trace" or "logic"
    profile: str  #: the logic capture's profile ("" for the trace)
    events: Any  #: the decoded events (trace_parsers Trace)
    res: Any  #: analyzers.run result: stats, scalars, units, drop_log; ``table``: site-based rows
    file: str = ""  #: the recording's file name
    n_events: int = 0  #: events of the recording (``events`` is a stand-in when read in chunks)
    edge_counts: dict[str, int] | None = None  #: edges per channel, counted in chunks
    chunked: bool = False  #: read in chunks (:mod:`.chunked`)


class CaptureResult(TypedDict, total=False):
    """A capture's ``result.json`` (what :func:`analyze_capture` returns); a failed capture has
    ``status == "failed"``, ``error``, ``code`` and ``traceback`` instead of the tables."""

    capture: str
    board: str
    rtos: str
    app: str
    variant: str
    run_id: str
    folder: str
    status: str  #: "ok" or "failed"
    metrics: list[dict[str, Any]]  #: one row per metric, source and profile (campaign.parquet)
    crossval: list[dict[str, Any]]
    crossval_counts: list[dict[str, Any]]
    alignment: list[dict[str, Any]]
    drop_log: list[dict[str, Any]]
    diagnostics: list[dict[str, Any]]
    notes: list[str]
    sources: dict[str, dict[str, Any]]
    verdict: str  #: PASS / FAIL / N/A
    provenance: dict[str, Any]
    code_hash: str
    input_hash: str
    cached: bool
    seconds: float
    error: str
    code: str
    traceback: str


#: the row lists one capture's analysis accumulates
_ACC_KEYS = (
    "metrics", "drops", "diagnostics", "crossval", "alignment", "counts", "pairs", "notes",
    "problems", "kernel_timing",
)


def drop_summary(drops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The drop log in proportion, for result.json: one row per source, profile, metric and
    reason with the instances excluded (``count``) and the log rows behind it (``rows``: per gap,
    per ISR closed, ...). Every row is in ``drop_log.parquet``.

    >>> rows = [{"source": "trace", "profile": "", "metric": "m", "reason": "overflow_gap", "count": n}
    ...         for n in (2, 3)]
    >>> drop_summary(rows)
    [{'source': 'trace', 'profile': '', 'metric': 'm', 'reason': 'overflow_gap', 'count': 5, 'rows': 2}]
    """
    out: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for d in drops:
        key = (d["source"], d["profile"], d["metric"], d["reason"])
        row = out.setdefault(key, dict(zip(("source", "profile", "metric", "reason"), key), count=0, rows=0))
        row["count"] += int(d["count"])
        row["rows"] += len(d.get("gaps") or ()) or 1
    return list(out.values())


def drop_table(drops: list[dict[str, Any]]) -> Any:
    """The drop log's table for ``drop_log.parquet`` (a pyarrow Table, None when empty): an entry
    standing for several gaps becomes one row per gap (its ``start_ts``, ``end_ts`` and ``count``).
    Built column by column (a gap-dense recording has one row per gap and metric: hundreds of
    thousands; as Python dicts they were the analysis' peak memory).

    >>> t = drop_table([{"metric": "m", "reason": "r", "count": 3, "gaps": [(1, 2, 1), (5, 6, 2)]},
    ...                 {"metric": "n", "reason": "q", "count": 1, "start_ts": 7}])
    >>> t.column_names, t["metric"].to_pylist(), t["count"].to_pylist()
    (['metric', 'reason', 'count', 'start_ts', 'end_ts'], ['m', 'm', 'n'], [1, 2, 1])
    >>> t["start_ts"].to_pylist(), t["end_ts"].to_pylist()
    ([1, 5, 7], [2, 6, None])
    """
    import pyarrow as pa

    if not drops:
        return None
    keys: dict[str, None] = {}
    per_gap = ("start_ts", "end_ts", "count")
    for d in drops:
        keys.update((k, None) for k in d if k != "gaps")
        if d.get("gaps"):
            keys.update((k, None) for k in per_gap)
    n = np.array([len(d.get("gaps") or ()) or 1 for d in drops], np.int64)
    take = pa.array(np.repeat(np.arange(len(drops)), n))
    cols = {}
    for k in keys:
        if k in per_gap and any(d.get("gaps") for d in drops):
            j = per_gap.index(k)
            vals = [v for d in drops for v in ([g[j] for g in d["gaps"]] if d.get("gaps") else [d.get(k)])]
            cols[k] = pa.array(vals)
        else:
            cols[k] = pa.array([d.get(k) for d in drops]).take(take)
    return pa.table(cols)


def gap_list(drops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The data-loss gaps once per source and profile (``start_ts``, ``end_ts``), in time order."""
    seen: dict[tuple[str, str], set[tuple[int, int]]] = {}
    for d in drops:
        if d["reason"] == "overflow_gap":
            gaps = d.get("gaps") or ((d["start_ts"], d["end_ts"], d["count"]),)
            seen.setdefault((d["source"], d["profile"]), set()).update((int(a), int(b)) for a, b, _ in gaps)
    return [{"source": s, "profile": p, "gaps": [list(g) for g in sorted(gs)]} for (s, p), gs in seen.items()]


def _diagnostic_rows(source: str, diagnostics: Any) -> list[dict[str, Any]]:
    return [
        {
            "source": source,
            "code": d.code,
            "severity": d.severity.name,
            "offset": d.offset,
            "count": d.count,
            "message": d.message,
        }
        for d in diagnostics
    ]


def _analyze_source(
    src: dict[str, Any], kind: str, profile: str, dest: Path, ctx: dict[str, Any], acc: dict[str, list[Any]]
) -> SourceResult:
    """Decode one source (or read it in chunks: :mod:`.chunked`), run every analyzer on it and add
    its rows to the accumulators ``acc``; its instances go to the capture's instances file."""
    options = ctx["options"]
    if src.get("user_config"):  # the user's own intervals and pins (analyzers.user_config)
        options = {**options, "_user_config": src["user_config"]}
        _add_user_sites(ctx, src["user_config"])
    with contextlib.ExitStack() as keep:  # a chunked source's spilled instances (metrics.spill)
        return _analyze_read(src, kind, profile, dest, ctx, acc, options, keep)


def _analyze_read(src: dict[str, Any], kind: str, profile: str, dest: Path, ctx: dict[str, Any],
                  acc: dict[str, list[Any]], options: dict[str, Any], keep: Any) -> SourceResult:
    got = _read_chunked(src, kind, ctx, options, dest, keep)
    if got is not None:
        events, res, n_events, edges = got.events, got.res, got.n_events, got.edge_counts
    else:
        from ..run import run_analyzers

        events = _decode_checked(src, dest, ctx)
        res = run_analyzers(events, ctx["sites"], options)
        n_events, edges = len(events), None
    if kind == "trace":
        _identity_from_trace(ctx["ident"], events)
    acc["metrics"] += _stat_rows(ctx["ident"], kind, profile, res, cores=events.meta.cores)
    ctx["instances"].write(res.table, profile)
    from ..crossval.verdict import site_instances

    # all cross-validation reads of it (a spilled table read back batch by batch); nothing when
    # there is no other kind of source to cross-validate against (a trace without logic captures)
    crossed = ctx.get("has_logic", True) if kind == "trace" else ctx.get("has_trace", True)
    res.table = site_instances(res.table, site_based_rows) if crossed else None
    if got is not None:  # what reading the spilled tables back freed, given back before crossval
        from .._memory import release_memory

        release_memory()
    acc["drops"] += [{"source": kind, "profile": profile, **d.__dict__} for d in res.drop_log]
    diag_source = kind if kind == "trace" else f"logic:{profile}"
    acc["diagnostics"] += _diagnostic_rows(diag_source, events.diagnostics)
    return SourceResult(kind, profile, events, res, Path(src["file"]).name, n_events, edges,
                        chunked=got is not None)


def _decode_checked(src: dict[str, Any], dest: Path, ctx: dict[str, Any]) -> Any:
    """The whole decoded source; an exception that is not crosstrace's is reported as a bug."""
    try:
        return _decoded(src, dest, ctx["on_corrupt"], ctx["reuse"])
    except (TraceError, AnalysisError):
        raise
    except Exception as e:  # not ours: a bug; say which recording it happened on
        raise _bug(src, "while decoding", e) from e


def _read_chunked(src: dict[str, Any], kind: str, ctx: dict[str, Any], options: dict[str, Any],
                  dest: Path, keep: Any) -> Any:
    """The source analyzed in chunks (:func:`.chunked.analyze_chunked`) when it goes that way, else
    None (read whole: too small, or no bounded reader; the same engine analyzes it as one chunk). Its
    per-instance tables are spilled to a folder under ``dest`` that ``keep`` (an ExitStack)
    removes when the caller is done with them."""
    from ..metrics.spill import Spill, spill_folder
    from ..sites import scoped_site_events

    size = chunk_size(src, ctx.get("chunk_events"))
    if size is None:
        return None
    try:
        # the stand-ins the analysis seeds for itself are forgotten when it ends (not held to
        # the capture's end): only the source's own stand-in stays (sites.scoped_site_events)
        store = Spill(keep.enter_context(spill_folder(dest)))  # this source's spilled tables
        with scoped_site_events() as keep_site_events:
            got = analyze_chunked(src, ctx["sites"], options, ctx["on_corrupt"], size,
                                  keep_rows=kind == "trace" and ctx.get("has_logic", True), store=store)
            keep_site_events(got.events)
            return got
    except (TraceError, AnalysisError):
        raise
    except Exception as e:  # not ours: a bug; say which recording it happened on
        raise _bug(src, "while analyzing it in chunks", e) from e


def _bug(src: dict[str, Any], doing: str, e: Exception) -> AnalysisError:
    """A foreign exception on ``src``: a crosstrace bug, reported with the recording it hit."""
    return AnalysisError(f"{src['file']}: {type(e).__name__} {doing}: {e} (a crosstrace bug: please "
                         "report it with this recording)", code="INTERNAL")


def _add_user_sites(ctx: dict[str, Any], user_config: dict[str, Any]) -> None:
    """Once per capture: the user's marks with a pin that toggles on each become sites (named by
    their selector), so alignment and pairing treat them like crosstrace's own sites."""
    if ctx.get("_user_sites_added"):
        return
    from ..user_config import parse_config, virtual_sites

    extra = virtual_sites(parse_config(user_config, str(user_config.get("source", ""))))
    ctx["sites"] = tuple(ctx["sites"]) + tuple(s for s in extra if s not in ctx["sites"])
    ctx["_user_sites_added"] = True


def _identity_from_trace(ident: dict[str, Any], trace: Any) -> None:
    """Fill the capture's RTOS, board and app from the recording where run.json does not say
    (a public recording has no run.json, but its SYSDESC or TraceX header names the RTOS)."""
    m = trace.meta
    for key, value in (("rtos", m.rtos), ("board", m.board), ("app", m.app)):
        if not ident.get(key) and value:
            ident[key] = value


def _firmware_rows(ident: dict[str, Any], run: dict[str, Any]) -> list[dict[str, Any]]:
    """The statistics the firmware printed on its console (run.json ``result_lines``)."""
    from ..console import parse_results

    rows = []
    for r in parse_results(run.get("result_lines") or []):
        v = r["mean_ns"] if r["mean_ns"] == r["mean_ns"] else r["mean"]
        unit = "ns" if r["mean_ns"] == r["mean_ns"] else r["unit"]
        rows.append(
            {
                **ident,
                "metric": r["metric"],
                "source": "firmware",
                "profile": "",
                "core": ALL_CORES,
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
    return rows


def _provenance(run: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    from ..console import parse_done

    fw = run.get("firmware") or {}
    return {
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
    }


def _write_capture_tables(dest: Path, acc: dict[str, list[Any]]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if acc["pairs"]:
        pq.write_table(pa.concat_tables(acc["pairs"]), dest / "pairs.parquet")
    _write_table(acc["metrics"], dest / "metrics.parquet")
    _write_table(acc["crossval"], dest / "crossval.parquet")
    _write_table(acc["alignment"], dest / "alignment.parquet")
    drops = drop_table(acc["drops"])
    if drops is None:
        _write_table([], dest / "drop_log.parquet")
    else:
        pq.write_table(drops, dest / "drop_log.parquet")


def _cross_validate_source(
    trace: SourceResult, lg: SourceResult, ctx: dict[str, Any], acc: dict[str, list[Any]]
) -> None:
    """Trace versus one logic capture: agreements, alignment, counts and matched pairs."""
    import pyarrow as pa

    from ..crossval import cross_validate
    from ..crossval.capture_checks import declared_edges

    ident, prof = ctx["ident"], lg.profile
    cv = cross_validate(
        trace.events,
        lg.events,
        sites=ctx["sites"],
        trace_table=trace.res.table,
        logic_table=lg.res.table,
        trace_scalars=trace.res.scalars,
        logic_scalars=lg.res.scalars,
        tolerance=ctx["tolerance"],
        calibration=ctx["calibration"],
        declared_edges=declared_edges(ctx["run"], lg.file),
        capture_edges=lg.edge_counts,
    )
    if cv.note:
        acc["notes"].append(f"{prof}: {cv.note}")
    acc["problems"] += [f"{prof}: {p}" for p in cv.problems]
    acc["crossval"] += [{**ident, "profile": prof, **a.as_row()} for a in cv.agreements]
    acc["alignment"] += [{**ident, "profile": prof, **r} for r in cv.alignment_rows()]
    acc["counts"] += [{**ident, "profile": prof, **c} for c in cv.counts]
    acc["kernel_timing"] += [{**ident, "profile": prof, **r} for r in cv.kernel_timing]
    if cv.pairs is not None and cv.pairs.num_rows:
        acc["pairs"].append(cv.pairs.append_column("profile", pa.array([prof] * cv.pairs.num_rows)))


def _capture_verdict(acc: dict[str, list[Any]]) -> str:
    """The worst verdict of every metric, count and completeness check of every profile."""
    from ..crossval import combine

    verdicts = [r["verdict"] for r in acc["crossval"]] + [r["verdict"] for r in acc["counts"]]
    if not acc["crossval"] and not acc["counts"] and not acc["alignment"] and not acc["problems"]:
        return "N/A"
    return combine(verdicts + (["INCOMPLETE"] if acc["problems"] else []))


def _analyze(
    folder: Path,
    capture_id: str,
    dest: Path,
    plan: dict[str, Any],
    opts: AnalysisOptions,
    reuse: bool = False,
) -> dict[str, Any]:
    from ..crossval import Calibration
    from ..crossval.capture_checks import verify_hashes
    from ..sites import load_sites

    run = plan["run"]
    missing = verify_hashes(folder, run, _sha256)
    options = dict(run.get("options") or {})
    ident = _identity(folder, capture_id, run)
    dest.mkdir(parents=True, exist_ok=True)
    options["_uart_baud"] = plan["uart_baud"]
    if plan["uart"]:
        options["_uart_reference"] = Path(plan["uart"]).read_text(encoding="latin-1")
    if not plan["trace"] and not plan["logic"]:
        raise AnalysisError(f"{folder}: no trace and no logic capture found", code="AN_NO_RECORDING")
    ctx = {
        "ident": ident,
        "sites": load_sites(run),
        "options": options,
        "on_corrupt": opts.on_corrupt,
        "reuse": reuse,
        "tolerance": opts.tolerance,
        "calibration": Calibration.from_run(run, folder),
        "run": run,
        "chunk_events": opts.chunk_events,
        "has_logic": bool(plan["logic"]),
        "has_trace": bool(plan["trace"]),
        "instances": InstanceSink(dest / "instances.parquet"),
    }
    acc: dict[str, list[Any]] = {k: [] for k in _ACC_KEYS}
    acc["problems"] += missing
    try:
        sources = _analyze_sources(plan, dest, ctx, acc)
        acc["metrics"] += _firmware_rows(ident, run)
        ctx["instances"].close()
    finally:
        ctx["instances"].abort()  # a failed capture leaves no partial instances file
    _write_capture_tables(dest, acc)
    return _result(folder, ident, run, options, sources, acc, ctx["calibration"])


def _analyze_sources(
    plan: dict[str, Any], dest: Path, ctx: dict[str, Any], acc: dict[str, list[Any]]
) -> dict[str, Any]:
    """Analyze the trace, then each logic capture (cross-validated against the trace)."""
    sources: dict[str, Any] = {}
    srcs = {src["name"]: src for src in capture_sources(plan)}
    trace = None
    if plan["trace"]:
        trace = _analyze_source(srcs["trace"], "trace", "", dest, ctx, acc)
        sources["trace"] = {
            "file": Path(plan["trace"]).name,
            "format": trace.events.meta.source_format,
            "events": trace.n_events,
            "tick_hz": trace.events.meta.tick_hz,
        }
    for entry in plan["logic"]:
        prof = entry["profile"]
        lg = _analyze_source(srcs[f"logic-{prof}"], "logic", prof, dest, ctx, acc)
        sources[f"logic:{prof}"] = {
            "file": Path(entry["file"]).name,
            "format": lg.events.meta.source_format,
            "events": lg.n_events,
            "samplerate": lg.events.meta.tick_hz,
        }
        if trace is not None:
            _cross_validate_source(trace, lg, ctx, acc)
    return sources


def _result(
    folder: Path,
    ident: dict[str, Any],
    run: dict[str, Any],
    options: dict[str, Any],
    sources: dict[str, Any],
    acc: dict[str, list[Any]],
    calibration: Any,
) -> dict[str, Any]:
    from ..crossval.capture_checks import expectation

    verdict = _capture_verdict(acc)
    return {
        **ident,
        "folder": str(folder),
        "status": "ok",
        "metrics": acc["metrics"],
        "crossval": acc["crossval"],
        "crossval_counts": acc["counts"],
        "alignment": acc["alignment"],
        "drop_log": drop_summary(acc["drops"]),
        "gaps": gap_list(acc["drops"]),
        "diagnostics": acc["diagnostics"],
        "notes": acc["notes"],
        "sources": sources,
        "verdict": verdict,
        "problems": acc["problems"],
        "kernel_timing": acc["kernel_timing"],
        "calibration": calibration.as_dict(),
        "expectation": expectation(run, verdict, acc["crossval"]),
        "expected_verdict": str((run.get("expect") or {}).get("verdict", "")),
        "negative_control": run.get("negative_control"),
        "time_scale": run.get("time_scale"),
        "provenance": _provenance(run, options),
        "code_hash": code_hash(),
    }
