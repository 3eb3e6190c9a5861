"""``read_dsview``: DSView ``.dsl`` logic captures (header version 2, logic mode).

Layout (``logic-captures.md`` §6): a zip with ``header`` (INI: ``[version] version = 2``;
``[header]`` ``device mode = 0`` (logic), ``total samples``, ``total probes``, ``total blocks``,
``samplerate = 40 MHz``, ``trigger time`` (unix ms), ``trigger pos`` (sample), ``probe0 = <name>``
— 0-based), ``session``/``decoders`` JSON (kept out of the model), and one bit plane per channel and
block, ``L-<ch>/<block>``: 1 bit per sample, LSB first, 2^24 samples per block, the last block
trimmed to ``total samples``.  Planes are streamed block by block (O(block + edges) memory).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .._edges import BitPlaneEdgeScanner, ChannelEdges, build_edge_trace
from .._numbers import INT64_MAX, MAX_RATE_HZ, parse_int, parse_uint, rate_ok
from ..errors import TraceCorruptError, TraceError, TraceFormatError, handle_corrupt, validate_on_corrupt
from ..model import Diagnostic, Trace
from ..sigrok._zip import ZipArchive, is_zip
from ..sigrok.metadata import parse_keyfile, parse_samplerate

BLOCK_SAMPLES = 1 << 24
MAX_SAMPLES = 1 << 48  #: total samples accepted from a header (2^24 blocks of 2^24 samples)


def sniff(head: bytes, path: Path) -> bool:
    """A zip with a ``header`` entry and ``L-<ch>/<block>`` planes."""
    if not is_zip(head):
        return False
    try:
        with ZipArchive(str(path), code="DSL_BAD") as z:
            names = set(z.members)
    except TraceError:
        return False
    return "header" in names and any(re.match(r"[LAO]-\d+/\d+$", n) for n in names)


def read_dsview(path: str | Path, *, on_corrupt: str = "raise", samplerate: int | None = None,
                **_ignored: Any) -> Trace:
    """Read a DSView ``.dsl`` logic capture into a :class:`~trace_parsers.model.Trace`.

    ``on_corrupt`` applies to a missing or truncated bit-plane block: raise, or keep every edge
    before it (per channel) with a DATA_LOSS diagnostic.  ``samplerate`` overrides the header's.
    """
    on_corrupt = validate_on_corrupt(on_corrupt)
    p = str(path)
    diags: list[Diagnostic] = []
    with ZipArchive(p, code="DSL_BAD") as z:
        if "header" not in z.members:
            raise TraceFormatError("expected a 'header' entry in the .dsl zip", code="DSL_BAD", path=p,
                                   offset=0)
        hoff = z.members["header"].header_offset
        kf = parse_keyfile(z.read("header").decode("utf-8", "replace"))
        hdr = kf.get("header", {})
        version = kf.get("version", {}).get("version", ("", 0))[0]
        if version != "2":
            raise TraceFormatError(f"entry 'header': [version] version = {version or '(missing)'}; only "
                                   "version 2 (DSView 1.x) is supported", code="DSL_BAD", path=p,
                                   offset=hoff)

        def need(key: str) -> str:
            if key not in hdr:
                raise TraceFormatError(f"entry 'header', section [header]: expected the key {key!r}",
                                       code="DSL_BAD", path=p, offset=hoff)
            return hdr[key][0]

        mode = hdr.get("device mode", ("0", 0))[0]
        if mode != "0":
            raise TraceFormatError(f"entry 'header': device mode = {mode} (analog/oscilloscope); only "
                                   "logic captures (mode 0) are supported", code="DSL_BAD", path=p,
                                   offset=hoff)
        total = parse_uint(need("total samples"), hi=MAX_SAMPLES)
        nprobes = parse_uint(need("total probes"), hi=1024)
        nblocks = parse_uint(need("total blocks"), hi=1 << 24)
        if total is None or nprobes is None or nblocks is None:
            raise TraceFormatError(f"entry 'header': expected total probes 0..1024, total blocks "
                                   f"0..2^24 and total samples 0..2^48; found "
                                   f"{hdr['total probes'][0][:24]!r}, {hdr['total blocks'][0][:24]!r}, "
                                   f"{hdr['total samples'][0][:24]!r}", code="DSL_BAD", path=p, offset=hoff)
        rate_s = hdr.get("samplerate", ("", 0))[0]
        rate = int(samplerate) if samplerate else parse_samplerate(rate_s) if rate_s else None
        if not rate_ok(rate):
            raise TraceFormatError(f"entry 'header': no usable samplerate ({rate_s[:40]!r}; expected "
                                   f"1 Hz .. {MAX_RATE_HZ} Hz); pass samplerate=",
                                   code="SR_NO_SAMPLERATE", path=p, offset=hoff)
        chans, ends = _read_planes(z, hdr, p, total, nprobes, nblocks, on_corrupt, diags)
    extra = {
        "channel_samples": ends,
        "trigger_pos": _int_or_none(hdr.get("trigger pos", ("", 0))[0]),
        "trigger_time_unix_ms": _int_or_none(hdr.get("trigger time", ("", 0))[0]),
        "driver": hdr.get("driver", ("", 0))[0], "total_blocks": nblocks,
        "samplerate_in_file": rate_s or None,
    }
    return build_edge_trace(chans, source_format="dsl", path=p, tick_hz=rate, total_ticks=total,
                            source_version=version, diagnostics=diags, extra=extra)


def _read_planes(z: ZipArchive, hdr: dict, p: str, total: int, nprobes: int, nblocks: int,
                 on_corrupt: Any, diags: list[Diagnostic]) -> tuple[list[ChannelEdges], dict[str, int]]:
    """Every channel's edges; a damaged block ends only its own channel (the others stay whole).

    Returns the channels and, per channel name, the samples decoded (``total`` when intact).
    """
    chans = []
    ends: dict[str, int] = {}
    edges = 0
    for ch in range(nprobes):
        name = hdr.get(f"probe{ch}", (str(ch), 0))[0]
        sc = BitPlaneEdgeScanner(path=p, edges_before=edges)
        remaining = total
        for b in range(nblocks):
            if remaining <= 0:
                break
            n = min(BLOCK_SAMPLES, remaining)
            entry = f"L-{ch}/{b}"
            try:
                if entry not in z.members:
                    raise TraceCorruptError(f"bit-plane entry {entry!r} is missing (block {b} of "
                                            f"{nblocks}, channel {ch} {name!r})", code="DSL_BAD", path=p,
                                            offset=z.size)
                plane = z.read(entry, (BLOCK_SAMPLES // 8) + 16)
                if len(plane) * 8 < n:
                    raise TraceCorruptError(f"entry {entry!r}: {len(plane)} bytes, expected "
                                            f"{(n + 7) // 8}", code="DSL_BAD", path=p,
                                            offset=z.members[entry].header_offset)
            except TraceCorruptError as err:
                err.detail += (f"; channel {ch} {name!r} keeps its first {sc.samples} samples, the "
                               "other channels are not affected")
                err.args = (err._render(),)
                handle_corrupt(err, on_corrupt, diags)
                break
            sc.feed(plane, n)
            remaining -= n
        edges = sc.edges
        chans.append(sc.finish(ch, name))
        ends[name] = sc.samples
    return chans, ends


def _int_or_none(s: str) -> int | None:
    return parse_int(s, lo=-INT64_MAX, hi=INT64_MAX)
