"""Decode one recording of a capture into its stamped events file (scheduler phase 1)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from .identity import _sha256, code_hash


def _open(
    path: Path | list[Path],
    *,
    tick_hz: int | None = None,
    samplerate: int | None = None,
    on_corrupt: str = "raise",
) -> Any:
    """Decode one recording; a list of paths is an ESP32 per-core SystemView pair (core = position)."""
    from trace_parsers import open_trace

    from .._io import SUFFIX, load_trace

    if isinstance(path, list):
        from trace_parsers import read_systemview

        return read_systemview([str(p) for p in path], on_corrupt=on_corrupt)
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
        trace = open_trace(path, on_corrupt=on_corrupt, **kw)
    except TraceError as e:
        # run.json's analyzer profile states the rate; use it only when the file itself does not
        if e.code == "SR_NO_SAMPLERATE" and samplerate:
            return open_trace(path, on_corrupt=on_corrupt, samplerate=int(samplerate))
        raise
    if samplerate and trace.meta.source_kind == "logic" and trace.meta.extra.get("samplerate") is None:
        # a Saleae CSV / binary v0 export states no rate (read in ns): count in run.json's samples
        return open_trace(path, on_corrupt=on_corrupt, samplerate=int(samplerate))
    return trace


def _source_stamp(src: dict[str, Any], on_corrupt: str) -> dict[str, Any]:
    """What a decoded events file was made from: input file hash, code hash and reader options."""
    files = src.get("files") or [src["file"]]
    return {
        "file": "+".join(f.name for f in files),
        "sha256": "+".join(_sha256(f) for f in files),
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
    from .._io import load_trace, read_stamp, save_trace

    out = dest / f"events-{src['name']}.ctev.parquet"
    files = src.get("files") or [src["file"]]
    stamp = _source_stamp(src, on_corrupt) if all(f.is_file() for f in files) else None
    if reuse and stamp is not None and out.is_file() and read_stamp(out) == stamp:
        return load_trace(out)
    what = files if len(files) > 1 else src["file"]
    trace = _open(what, tick_hz=src["tick_hz"], samplerate=src["samplerate"], on_corrupt=on_corrupt)
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
