"""What to decode and analyze for one capture folder (:func:`plan_capture`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trace_parsers.errors import AnalysisError

from .discover import _sniff, folder_contents, pair_stem

#: CPU clock per board for the cycles column (QEMU at -icount shift=0: 1 insn per ns).
BOARD_CPU_HZ = {"stm32f429i_disco": 180_000_000, "qemu_netduinoplus2": 1_000_000_000}


def _read_run_json(rj: Path) -> dict[str, Any]:
    try:
        run = json.loads(rj.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise AnalysisError(f"{rj}: not valid JSON: {e}", code="AN_BAD_RUN_JSON") from None
    if not isinstance(run, dict):
        raise AnalysisError(f"{rj}: expected a JSON object", code="AN_BAD_RUN_JSON")
    return run


def _logic_entry(f: Path) -> dict[str, Any]:
    stem = f.name.split(".")[0]
    prof = stem.split("-", 1)[1] if "-" in stem else "ideal"
    return {"file": f, "profile": prof, "samplerate": None}


def _trace_files(folder: Path, file: Any) -> list[Path]:
    """run.json ``trace.file``: one file, or a list of per-core files (core = list position)."""
    files = file if isinstance(file, list) else [file]
    return [folder / str(f) for f in files]


def plan_capture(folder: Path, *, tick_hz: int | None = None) -> dict[str, Any]:
    """What a capture holds: run.json (or {}), trace file(s), logic files with profiles, UART log.

    ``folder`` is a capture folder, or one recording of a folder holding several (see
    :func:`~.discover.discover_all`): then the capture is that recording (with its ESP32 per-core
    partner) and the logic captures named after it (``<stem>.sr``, ``<stem>-<profile>.sr``).
    ``tick_hz`` is the trace tick rate to assume when neither the recording nor run.json states
    it (TraceX)."""
    folder = Path(folder)
    run: dict[str, Any] = {}
    rj = folder / "run.json"
    if rj.is_file():
        run = _read_run_json(rj)
    plan: dict[str, Any] = {
        "run": run,
        "trace": None,
        "trace_files": [],
        "trace_tick_hz": None,
        "logic": [],
        "uart": None,
        "uart_baud": 115200,
        "ignored": [],
    }
    if run:
        t = run.get("trace") or None
        if t and t.get("file"):
            plan["trace_files"] = _trace_files(folder, t["file"])
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
    elif folder.is_file():
        _plan_recording(folder, plan)
    else:
        c = folder_contents(folder)
        if c.traces:
            plan["trace_files"] = c.traces[0]
            plan["ignored"] = [str(f) for g in c.traces[1:] for f in g]
        plan["logic"] = [_logic_entry(f) for f in c.logic]
        if (folder / "uart.log").is_file():
            plan["uart"] = folder / "uart.log"
    plan["trace"] = plan["trace_files"][0] if plan["trace_files"] else None
    from ..user_config import load_config

    cfg = load_config(folder, run)  # crosstrace.toml / run.json "crosstrace": own intervals, pins
    plan["user_config"] = cfg.as_dict() if cfg is not None else None
    if plan["trace_tick_hz"] is None and cfg is not None and cfg.tick_hz:
        plan["trace_tick_hz"] = cfg.tick_hz  # crosstrace.toml [trace] tick_hz
    if plan["trace_tick_hz"] is None and tick_hz:
        plan["trace_tick_hz"] = plan["trace_tick_hz_assumed"] = int(tick_hz)
    return plan


def _plan_recording(file: Path, plan: dict[str, Any]) -> None:
    """A capture that is one recording of a folder with several (and its per-core partner)."""
    c = folder_contents(file.parent)
    group = next((g for g in c.traces if file in g), None)
    if group is None:  # a logic capture on its own
        if _sniff(file) is None:
            raise AnalysisError(f"{file}: no reader recognises this file", code="FMT_UNKNOWN")
        plan["logic"] = [_logic_entry(file)]
        return
    plan["trace_files"] = group
    stem = pair_stem(group)
    plan["logic"] = [_logic_entry(f) for f in c.logic if logic_belongs_to(f, stem)]


def logic_belongs_to(logic_file: Path, stem: str) -> bool:
    """A logic capture named after a trace recording (``<stem>.sr``, ``<stem>-<profile>.sr``)."""
    own = logic_file.name.split(".")[0]
    return own == stem or own.startswith(stem + "-")


def capture_sources(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """The recordings of a planned capture, each with the name of its events file
    (``events-<name>.ctev.parquet``) and the options its reader needs."""
    out = []
    if plan["trace"]:
        out.append(
            {
                "name": "trace",
                "file": Path(plan["trace"]),
                "files": [Path(f) for f in plan["trace_files"]] or [Path(plan["trace"])],
                "tick_hz": plan["trace_tick_hz"],
                "samplerate": None,
                "user_config": plan.get("user_config"),
            }
        )
    for e in plan["logic"]:
        out.append(
            {
                "name": f"logic-{e['profile']}",
                "file": Path(e["file"]),
                "files": [Path(e["file"])],
                "tick_hz": None,
                "samplerate": e["samplerate"],
                "profile": e["profile"],
                "user_config": plan.get("user_config"),
            }
        )
    return out
