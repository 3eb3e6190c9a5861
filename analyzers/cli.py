"""`crosstrace` command line: the top of the import graph.

Subcommands are registered in :data:`COMMANDS` as ``name -> "module:function"``; each module
provides ``add_arguments(parser)`` through ``<function>.configure`` or the function itself
takes the parsed namespace.  Heavy modules are imported only when their command runs, so
``crosstrace info`` starts fast.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: name -> (module, setup function, help). The setup function adds arguments and sets ``func``.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "info": ("analyzers.cli", "_setup_info", "summarise recordings and captures"),
    "events": ("analyzers.cli", "_setup_events", "export the decoded events to Parquet or CSV"),
    "analyze": (
        "analyzers.campaign.cli_analyze",
        "setup_cli",
        "analyze capture folders (metrics + cross-validation)",
    ),
    "report": ("analyzers.report", "setup_cli", "render one self-contained HTML report"),
    "export": ("analyzers.export", "setup_cli", "timeline of a capture for Perfetto (trace + pins) or VCD"),
    "compare": ("analyzers.compare", "setup_cli", "compare two runs or campaigns (CI gate)"),
    "calibrate": (
        "analyzers.crossval.calibrate_cli",
        "setup_cli",
        "measure per-site constants on a calibration capture, to declare on other captures",
    ),
    "decode": ("analyzers.cli", "_setup_decode", "decode a protocol (UART) from a logic capture"),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser. Only ``command``'s module is imported (all of them when None), so a
    `crosstrace info` never pays for the analysis stack's imports."""
    from trace_parsers import __version__

    p = argparse.ArgumentParser(prog="crosstrace", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"crosstrace {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, setup, help_) in COMMANDS.items():
        sp = sub.add_parser(name, help=help_, description=help_)
        if command is not None and name != command:
            continue  # never parsed in this run: leave it unconfigured
        try:
            fn: Callable[[argparse.ArgumentParser], None] = getattr(importlib.import_module(module), setup)
        except (ImportError, AttributeError):
            sp.set_defaults(func=_unavailable(name))
            continue
        fn(sp)
    return p


def _unavailable(name: str) -> Callable[[argparse.Namespace], int]:
    def run(_: argparse.Namespace) -> int:
        print(f"crosstrace: the '{name}' command is not available in this installation", file=sys.stderr)
        return 2
    return run


def _run_json_tick_hz(path: Path) -> int | None:
    """The trace tick rate a capture folder's run.json states for ``path`` (issue: TraceX has none)."""
    rj = Path(path).parent / "run.json"
    try:
        trace = json.loads(rj.read_text()).get("trace") or {}
    except (OSError, ValueError, AttributeError):
        return None
    if trace.get("file") == Path(path).name and isinstance(trace.get("tick_hz"), int):
        return int(trace["tick_hz"])
    return None


def _reader_kwargs(args: argparse.Namespace, path: Path | None = None, fmt: str | None = None
                   ) -> dict[str, Any]:
    """The reader's keywords for ``path`` (whose format is ``fmt``, recognised here when None)."""
    kw: dict[str, Any] = {"on_corrupt": args.on_corrupt}
    if path is None:
        return kw
    if fmt is None:
        from trace_parsers import detect_format

        fmt = detect_format(path)
    tick_hz = getattr(args, "tick_hz", None) or _run_json_tick_hz(path)
    if tick_hz and fmt == "tracex":  # the only trace format that does not state its rate
        kw["tick_hz"] = tick_hz
    if getattr(args, "samplerate", None) and fmt in ("sigrok", "vcd", "saleae_csv", "saleae_binary", "dsl"):
        kw["samplerate"] = args.samplerate
    return kw


def _add_read_options(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--on-corrupt", choices=("raise", "recover", "warn", "skip"), default="recover",
                    help="damaged input: recover (default: a file cut inside its final record is a "
                    "DATA_LOSS diagnostic, other damage raises), raise, warn or skip")
    sp.add_argument("--tick-hz", type=int, default=None,
                    help="trace tick rate when the recording does not state it (TraceX)")
    sp.add_argument("--samplerate", type=int, default=None,
                    help="sample rate for logic captures that do not state it")


# -- info ------------------------------------------------------------------------------------------

def _setup_info(sp: argparse.ArgumentParser) -> None:
    # `info` does no linear algebra: without this, NumPy's import starts one OpenBLAS thread per
    # core, which costs ~60 ms of start-up on a busy 2-core machine (bench/startup.py). Only before
    # NumPy's first import (a process that has it already is left alone); a user's setting wins.
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    sp.add_argument("files", nargs="+", type=Path)
    sp.add_argument("--json", action="store_true", help="machine-readable output")
    _add_read_options(sp)
    sp.set_defaults(func=cmd_info)


def _edges_by_index(trace: Any) -> dict[int, int]:
    """Channel index -> edge events of a Trace (a TraceSummary counted them as it read)."""
    if hasattr(trace, "edges_by_index"):
        return trace.edges_by_index
    import numpy as np

    from trace_parsers.model import EventKind

    ev = trace.columns
    is_edge = (ev["kind"] == EventKind.EDGE_RISE) | (ev["kind"] == EventKind.EDGE_FALL)
    idx, cnt = np.unique(ev["marker"][is_edge], return_counts=True)
    return dict(zip(idx.tolist(), cnt.tolist()))


def summarize(trace: Any) -> dict[str, Any]:
    """A JSON-able summary of a trace (what `crosstrace info` shows): a
    :class:`~trace_parsers.model.Trace` or a :class:`~trace_parsers.summary.TraceSummary`."""
    m = trace.meta
    per = _edges_by_index(trace) if trace.channels else {}  # by index: two channels may share a name
    return {
        "path": m.source_path,
        "format": m.source_format,
        "version": m.source_version,
        "sha256": m.source_sha256,
        "tick_hz": m.tick_hz,
        "ts_unit": m.ts_unit,
        "clock_domain": m.clock_domain,
        "source_kind": m.source_kind,
        "duration": trace.duration,
        "cores": m.cores,
        "events": len(trace),
        "counts_by_kind": trace.counts_by_kind(),
        "tasks": [{"id": t.ctx_id, "name": t.name, "priority": t.priority} for t in trace.tasks],
        "isrs": [{"number": i.number, "name": i.name} for i in trace.isrs],
        "markers": [{"id": k.id, "name": k.name} for k in trace.markers],
        "channels": [{"index": c.index, "name": c.name, "initial_level": c.initial_level,
                      "edges": int(per.get(c.index, 0))} for c in trace.channels],
        "diagnostics": [{"code": d.code, "severity": d.severity.name, "offset": d.offset,
                         "count": d.count, "message": d.message} for d in trace.diagnostics],
        "rtos": m.rtos, "board": m.board, "app": m.app,
        "capture": ({k: m.extra.get(k) for k in ("samplerate", "total_samples", "duration_ns",
                                                 "sample_period_ns")}
                    if m.source_kind == "logic" else None),
    }


def _fmt_duration(d: int, unit: str) -> str:
    if unit == "ticks":
        return f"{d} ticks"
    return f"{d / 1e9:.6f} s ({d} ns)"


def print_summary(s: dict[str, Any], out: Any = None) -> None:
    w = (out or sys.stdout).write  # resolved per call: sys.stdout may be replaced after import
    w(f"{s['path']}\n  format    {s['format']} {s['version']}\n")
    rate = f"{s['tick_hz']} Hz" if s["tick_hz"] else "unknown: times in ticks (--tick-hz HZ to convert)"
    w(f"  tick rate {rate}  clock {s['clock_domain']}\n")
    w(f"  duration  {_fmt_duration(s['duration'], s['ts_unit'])}   cores {s['cores']}   "
      f"events {s['events']}\n")
    if s["rtos"] or s["app"]:
        w(f"  firmware  rtos={s['rtos']} board={s['board']} app={s['app']}\n")
    cap = s.get("capture")
    if cap and cap.get("samplerate") is None:
        w(f"  capture   sample rate not stated in the file: times in {s['ts_unit']} as written "
          "(--samplerate HZ to count samples)\n")
    elif cap and cap.get("total_samples") is not None:
        dur = cap.get("duration_ns")
        w(f"  capture   {cap['total_samples']} samples at {cap['samplerate']} Hz"
          + (f", {dur / 1e9:.6f} s ({dur} ns)" if dur is not None else "") + "\n")
    if s["tasks"]:
        w(f"  tasks ({len(s['tasks'])}):\n")
        for t in s["tasks"]:
            w(f"    {t['id']:>4}  prio {t['priority']:>4}  {t['name']}\n")
    if s["isrs"]:
        w(f"  ISRs ({len(s['isrs'])}):\n")
        for i in s["isrs"]:
            w(f"    {i['number']:>4}  {i['name']}\n")
    if s["channels"]:
        w(f"  channels ({len(s['channels'])}):\n")
        for c in s["channels"]:
            w(f"    {c['index']:>4}  {c['name']:<16} initial {c['initial_level']}  edges {c['edges']}\n")
    w("  events by kind:\n")
    for k, n in sorted(s["counts_by_kind"].items(), key=lambda kv: -kv[1]):
        w(f"    {k:<16} {n}\n")
    if s["diagnostics"]:
        w(f"  diagnostics ({len(s['diagnostics'])}):\n")
        for d in s["diagnostics"]:
            w(f"    {d['severity']:<9} {d['code']:<20} @0x{d['offset']:x} x{d['count']}  {d['message']}\n")


def read_for_info(path: Path, args: argparse.Namespace) -> Any:
    """What `info` summarises of ``path``: a NumPy-free :class:`~trace_parsers.summary.TraceSummary`
    for a small file of a format that has one, else the whole :class:`~trace_parsers.model.Trace`.
    ``CROSSTRACE_INFO_SMALL=0`` always reads the whole trace."""
    from trace_parsers import detect_format, open_trace

    fmt = detect_format(path)  # raises TraceFormatError as open_trace does
    kw = _reader_kwargs(args, path, fmt)
    if os.environ.get("CROSSTRACE_INFO_SMALL", "1") != "0":
        from trace_parsers.summary import summarize_small

        small = summarize_small(path, fmt, **kw)
        if small is not None:
            return small
    return open_trace(path, **kw)


def cmd_info(args: argparse.Namespace) -> int:
    from trace_parsers import TraceError

    status = 0
    results = []
    for f in args.files:
        try:
            tr = read_for_info(f, args)
        except TraceError as e:
            print(f"crosstrace: {e}", file=sys.stderr)
            results.append({"path": str(f), "error": str(e), "code": e.code})
            status = 1
            continue
        s = summarize(tr)
        results.append(s)
        if not args.json:
            print_summary(s)
    if args.json:
        json.dump(results if len(results) != 1 else results[0], sys.stdout, indent=2)
        sys.stdout.write("\n")
    return status


# -- events ----------------------------------------------------------------------------------------

def _setup_events(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("file", type=Path)
    sp.add_argument("-o", "--output", type=Path, required=True, help="OUT.parquet or OUT.csv")
    _add_read_options(sp)
    sp.add_argument("--chunk-events", type=int, default=None, metavar="N",
                    help="events per Parquet row group / CSV append (default 1 Mi): memory is bounded "
                         "by a row group, not the recording")
    sp.set_defaults(func=cmd_events)


def cmd_events(args: argparse.Namespace) -> int:
    from trace_parsers import TraceError

    from .export.events_chunked import export_events  # chunked: Parquet row groups / CSV appends

    try:
        n = export_events(args.file, args.output, _reader_kwargs(args, args.file),
                          chunk_events=getattr(args, "chunk_events", None))
    except TraceError as e:
        print(f"crosstrace: {e}", file=sys.stderr)
        return 1
    print(f"wrote {n} events to {args.output}")
    return 0


# -- decode ----------------------------------------------------------------------------------------

def _setup_decode(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("file", type=Path, help="logic capture (.sr, .vcd, ...)")
    sp.add_argument("--uart", metavar="CHANNEL", required=True, help="channel carrying UART TX")
    sp.add_argument("--baud", type=int, default=115200)
    sp.add_argument("--backend", choices=("numpy", "sigrok"), default="numpy",
                    help="numpy (default: libsigrokdecode's UART sampling rules on the edges, seconds "
                    "on a 1 GS/s capture) or sigrok (sigrok-cli itself, sample by sample)")
    sp.set_defaults(func=cmd_decode)


def cmd_decode(args: argparse.Namespace) -> int:
    from trace_parsers import TraceError
    from trace_parsers.sigrok.protocol import decode_uart

    try:
        res = decode_uart(args.file, channel=args.uart, baud=args.baud, backend=args.backend)
    except TraceError as e:
        print(f"crosstrace: {e}", file=sys.stderr)
        return 1
    sys.stdout.write(bytes(res.data).decode("latin-1"))
    return 0


#: top-level module of an optional dependency -> the pyproject extra that installs it
OPTIONAL_EXTRAS = {"distributed": "dask", "dask": "dask", "polars": "frames", "perfetto": "perfetto",
                   "google": "perfetto", "matplotlib": "analysis"}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    # no (known) command: --version, --help or an error; configure no subcommand (no imports)
    parser = build_parser(command if command in COMMANDS else "")
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from ._warnings import plain_warnings

    plain_warnings()  # --on-corrupt warn: one line per damaged spot, not a Python warning
    try:
        return int(args.func(args) or 0)
    except OSError as e:  # a full disk: one line naming the folder, not a traceback
        from ._disk import no_space

        out = getattr(args, "output", None)
        folder = Path.cwd() if out is None else out if Path(out).is_dir() else Path(out).parent
        full = no_space(e, folder, f"running `crosstrace {command}`")
        if full is None:
            raise
        print(f"crosstrace: {full}", file=sys.stderr)
        return 1
    except ModuleNotFoundError as e:  # an optional part without its extra: one line, not a traceback
        extra = OPTIONAL_EXTRAS.get((e.name or "").split(".")[0])
        if extra is None:
            raise
        print(f"crosstrace: this needs {e.name!r}: pip install 'crosstrace[{extra}]'", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
