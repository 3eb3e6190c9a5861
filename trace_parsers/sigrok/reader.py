"""``read_sigrok``: sigrok session files (``.sr``, srzip versions 1 and 2) into the event model.

What is read (``logic-captures.md`` §1–2):

* ``version`` 1 or 2; ``metadata`` parsed line-wise (v1 ``key = value`` and leading-space
  ``triggerN`` lines, v2 ``key=value``);
* logic data from the ``capturefile`` entry (``logic-1``) if it exists, else ``logic-1-1``,
  ``logic-1-2``, … in **numeric** order until the first missing number (like libsigrok; entries after
  a gap are reported as a DATA_LOSS diagnostic);
* ``unitsize`` from the metadata, never computed (1–8 bytes); ``probeN`` = bit N−1; channels without
  a ``probeN`` key are disabled and listed in ``meta.extra["disabled_bits"]``;
* ``samplerate`` strings like ``sr_parse_sizestring`` (``1 MHz``, ``12.5 kHz``, ``2 mHz`` = 2 MHz);
  a file without one is rejected (``SR_NO_SAMPLERATE``) unless ``samplerate=`` is given;
* analog channels (``analogN``, ``analog-1-N-k``) are skipped with a NOTICE diagnostic.

Streaming: members are inflated block by block (zlib-ng when installed); with the standard zlib
instead, chunk entries are inflated ahead in worker threads when the machine has more than one
core.  Memory stays O(block + edges) — a 1.8 G-sample capture needs ≈ 50 MB.
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._meta import Diagnostic, Severity
from .._numbers import MAX_RATE_HZ, parse_uint, rate_ok
from ..errors import (
    TraceCorruptError,
    TraceError,
    TraceFormatError,
    diagnostic,
    handle_corrupt,
    validate_on_corrupt,
)
from . import _zip as _zipmod
from ._zip import ZipArchive, is_zip, iter_member
from .metadata import parse_keyfile, parse_samplerate

if TYPE_CHECKING:  # pragma: no cover - NumPy: imported on use (sniffing and a small `info` need none)
    from concurrent.futures import Future

    from .._edges import ChannelEdges
    from ..model import Trace

BLOCK_BYTES = 1 << 22  #: inflate granularity (4 MiB)
_PARALLEL_MAX_MEMBER = 64 << 20  #: chunk entries up to this size are inflated whole in a worker
_CHUNK_RE = re.compile(r"^(?P<base>.+)-(?P<n>\d{1,9})$")


def sniff(head: bytes, path: Path) -> bool:
    """A zip archive with ``metadata`` and ``version`` entries (and no DSView ``header``)."""
    if not is_zip(head):
        return False
    try:
        with ZipArchive(str(path), code="SR_BAD_ZIP") as z:
            names = set(z.members)
    except TraceError:
        return False
    return "metadata" in names and "header" not in names and "meta.json" not in names


def _parse_rate_arg(samplerate: int | str | None) -> int | None:
    if samplerate is None:
        return None
    if isinstance(samplerate, str):
        v = parse_samplerate(samplerate)
    else:
        v = int(samplerate)
    if not rate_ok(v):
        raise ValueError(f"Invalid value for the 'samplerate' parameter: expected a positive rate in "
                         f"Hz up to {MAX_RATE_HZ} (int or a string like '1 MHz'), but got "
                         f"{samplerate!r} instead.")
    return v


def _open_session(z: ZipArchive, p: str, on_corrupt: str, diags: list[Diagnostic],
                  unitsize: int | None) -> tuple[dict[str, Any], list[str]]:
    """The session header and the logic members, in file order (whole and chunked reads alike)."""
    if z.recovered:
        diags.append(diagnostic("SR_TRUNCATED_CHUNK", z.size,
                                "the zip central directory is missing (truncated file?); "
                                "members were located from their local headers"))
    info = _read_header(z, p, on_corrupt, diags, unitsize)
    return info, _logic_members(z, info["capturefile"], diags)


def read_sigrok(path: str | Path, *, on_corrupt: str = "raise", samplerate: int | str | None = None,
                unitsize: int | None = None, **_ignored: Any) -> Trace:
    """Read a sigrok ``.sr`` session into a :class:`~trace_parsers.model.Trace` of edge events.

    Parameters
    ----------
    path : str | Path
        The ``.sr`` file.
    on_corrupt : {"raise", "recover", "warn", "skip"}
        Damaged or truncated logic data: raise, or keep every edge before the damage and record a
        DATA_LOSS diagnostic.
    samplerate : int | str | None
        Sample rate in Hz (or a sigrok string like ``"1 MHz"``) for files that do not state one;
        overrides the file's rate when given.
    unitsize : int | None
        Bytes per sample (1..8), only used when a truncated file lost its ``metadata`` entry
        (written after the logic data by sigrok v1): with ``samplerate`` it lets the surviving
        samples be read as channels ``D0..D<8*unitsize-1>``.

    A capture whose edges would exceed the edge limit (``CROSSTRACE_MAX_EDGES``, see
    :func:`trace_parsers._edges.max_edges`) raises ``LIMIT_EXCEEDED`` instead of exhausting memory.
    """
    from .._edges import build_edge_trace

    channels, edge_kwargs = decode_sigrok(path, on_corrupt=on_corrupt, samplerate=samplerate,
                                          unitsize=unitsize)
    return build_edge_trace(channels, **edge_kwargs)


def decode_sigrok(path: str | Path, *, on_corrupt: str = "raise", samplerate: int | str | None = None,
                  unitsize: int | None = None, scanner_type: Any = None
                  ) -> tuple[list[ChannelEdges], dict[str, Any]]:
    """The decode core of :func:`read_sigrok`: every channel's edges (:class:`ChannelEdges`) and
    the keywords of :func:`~trace_parsers._edges.build_edge_trace` that turn them into the trace.
    ``scanner_type``: the edge scanner class (default :class:`~trace_parsers._edges.WordEdgeScanner`;
    ``crosstrace info`` passes the NumPy-free one of :mod:`trace_parsers._pyedges`)."""
    if scanner_type is None:
        from .._edges import WordEdgeScanner as scanner_type
    on_corrupt = validate_on_corrupt(on_corrupt)
    rate_arg = _parse_rate_arg(samplerate)
    p = str(path)
    diags: list[Diagnostic] = []
    with ZipArchive(p, code="SR_BAD_ZIP") as z:
        info, members = _open_session(z, p, on_corrupt, diags, unitsize)
        scanner = scanner_type(info["bits"], info["unitsize"], path=p, source_format="sigrok")
        try:
            for block in _inflate_members(z, members):
                scanner.feed(block)
                del block  # freed before the next piece is inflated (see _zip.iter_member)
        except TraceCorruptError as err:
            err.code = "SR_TRUNCATED_CHUNK"
            err.args = (err._render(),)
            handle_corrupt(err, on_corrupt, diags)
        if scanner.leftover_bytes and members:
            last = z.members[members[-1]]
            diags.append(diagnostic("TRUNCATED", last.header_offset,
                                    f"member {last.name!r} (local header at 0x{last.header_offset:x}): "
                                    f"{scanner.leftover_bytes} trailing bytes after inflated sample "
                                    f"{scanner.samples} do not form a whole {info['unitsize']}-byte "
                                    "sample; ignored"))
    rate = rate_arg or info["samplerate"]
    if rate is None:
        raise TraceFormatError(
            "the metadata has no 'samplerate' key, so edge times are undefined; pass the rate "
            "(read_sigrok(..., samplerate=HZ) or crosstrace --samplerate HZ)",
            code="SR_NO_SAMPLERATE", path=p, offset=info["metadata_offset"])
    if rate_arg and info["samplerate"] and rate_arg != info["samplerate"]:
        diags.append(diagnostic("BAD_OPTION", 0, f"samplerate={rate_arg} overrides the file's "
                                f"{info['samplerate']} Hz", severity=Severity.NOTICE))
    if info["analog"]:
        diags.append(diagnostic("SR_ANALOG_SKIPPED", info["metadata_offset"],
                                f"{len(info['analog'])} analog channel(s) not converted: "
                                + ", ".join(info["analog"].values())))
    channels = scanner.finish(info["names"])
    extra = {
        "unitsize": info["unitsize"], "total_probes": info["total_probes"],
        "disabled_bits": info["disabled_bits"], "analog_channels": info["analog"],
        "sr_version": info["version"], "sigrok_version": info["sigrok_version"],
        "driver": info["driver"], "logic_entries": members,
        "samplerate_in_file": info["samplerate_string"],
    }
    return channels, dict(source_format="sigrok", path=p, tick_hz=rate, total_ticks=scanner.samples,
                          source_version=str(info["version"]), diagnostics=diags, extra=extra)


def _read_header(z: ZipArchive, p: str, on_corrupt: Any = "raise", diags: list[Diagnostic] | None = None,
                 unitsize: int | None = None) -> dict[str, Any]:
    diags = [] if diags is None else diags
    if "metadata" not in z.members and z.recovered and unitsize is not None:
        return _header_without_metadata(z, p, unitsize, diags)
    for required in ("version", "metadata"):
        if required not in z.members:
            hint = (" (the file is truncated and sigrok v1 writes 'metadata' after the logic data: "
                    "pass unitsize= and samplerate= to read the surviving samples)"
                    if z.recovered and required == "metadata" else "")
            raise TraceFormatError(f"expected a '{required}' entry in the sigrok session zip; found "
                                   f"{sorted(z.members)[:8]}{hint}", code="SR_MISSING_METADATA",
                                   path=p, offset=0 if not z.recovered else z.size)
    vtext = z.read("version", 64).decode("ascii", "replace").strip()
    if vtext not in ("1", "2"):
        raise TraceFormatError(f"entry 'version': expected 1 or 2, found {vtext!r}",
                               code="SR_BAD_ZIP", path=p, offset=z.members["version"].header_offset)
    moff = z.members["metadata"].header_offset
    raw, err = z.read_partial("metadata")
    if err is not None:  # a cut metadata entry: its complete lines are still usable
        err.code = "SR_TRUNCATED_CHUNK"
        err.args = (err._render(),)
        handle_corrupt(err, on_corrupt, diags)
        raw = raw[:raw.rfind(b"\n") + 1]
    text = raw.decode("utf-8", "replace")
    kf = parse_keyfile(text)
    dev = kf.get("device 1")
    if dev is None:
        raise TraceFormatError("entry 'metadata': expected a [device 1] section", path=p,
                               code="SR_MISSING_METADATA", offset=moff)

    def need(key: str) -> tuple[str, int]:
        if key not in dev:
            raise TraceFormatError(f"entry 'metadata', section [device 1]: expected the key "
                                   f"{key!r}; found {', '.join(sorted(dev)) or 'no keys'}",
                                   code="SR_MISSING_METADATA", path=p, offset=moff)
        return dev[key]

    if "capturefile" not in dev and any(re.fullmatch(r"analog\d+", k) for k in dev):
        raise TraceFormatError("entry 'metadata': an analog-only capture (no 'capturefile' key, "
                               "analog channels only); crosstrace converts logic channels only",
                               code="SR_MISSING_METADATA", path=p, offset=moff)
    capturefile, _ = need("capturefile")
    unitsize_s, uline = need("unitsize")
    probes_s, pline = need("total probes")
    unitsize = parse_uint(unitsize_s, hi=8) or -1
    if not 1 <= unitsize <= 8:
        raise TraceFormatError(f"entry 'metadata' line {uline}: unitsize={unitsize_s!r}, expected an "
                               "integer 1..8", code="SR_BAD_UNITSIZE", path=p, offset=moff)
    total_probes = parse_uint(probes_s, hi=1 << 16)
    if total_probes is None:
        raise TraceFormatError(f"entry 'metadata' line {pline}: 'total probes'={probes_s[:40]!r} is "
                               "not an integer 0..65536", code="SR_MISSING_METADATA", path=p,
                               offset=moff)
    rate = None
    rate_s = dev.get("samplerate", ("", 0))[0]
    if "samplerate" in dev:
        rate = parse_samplerate(rate_s)
        if not rate_ok(rate):
            raise TraceFormatError(f"entry 'metadata' line {dev['samplerate'][1]}: cannot use "
                                   f"samplerate={rate_s[:40]!r} (expected e.g. '1 MHz', at most "
                                   f"{MAX_RATE_HZ} Hz)",
                                   code="SR_MISSING_METADATA", path=p, offset=moff)
    names: list[str] = []
    bits: list[int] = []
    disabled: list[int] = []
    nbits = 8 * unitsize
    for n in range(1, min(total_probes, nbits) + 1):  # probes beyond the word have no bits
        key = f"probe{n}"
        if key in dev:
            names.append(dev[key][0])
            bits.append(n - 1)
        else:
            disabled.append(n - 1)
    analog = {k: v[0] for k, v in dev.items() if re.fullmatch(r"analog\d+", k)}
    return {
        "version": int(vtext), "capturefile": capturefile, "unitsize": unitsize,
        "total_probes": total_probes, "samplerate": rate, "samplerate_string": rate_s or None,
        "names": names, "bits": bits, "disabled_bits": disabled, "analog": analog,
        "metadata_offset": moff, "driver": dev.get("driver", ("", 0))[0],
        "sigrok_version": kf.get("global", {}).get("sigrok version", ("", 0))[0],
    }


def _header_without_metadata(z: ZipArchive, p: str, unitsize: int, diags: list[Diagnostic]) -> dict[str, Any]:
    """Header facts for a truncated archive whose ``metadata`` entry was cut off (caller's unitsize)."""
    if not 1 <= unitsize <= 8:
        raise ValueError(f"Invalid value for the 'unitsize' parameter: expected 1..8, got {unitsize!r}")
    capturefile = "logic-1"
    diags.append(diagnostic("SR_MISSING_METADATA", z.size, "the truncated file has no 'metadata' entry: "
                            f"read with unitsize={unitsize} as channels D0..D{8 * unitsize - 1}",
                            severity=Severity.DATA_LOSS))
    bits = list(range(8 * unitsize))
    return {
        "version": 0, "capturefile": capturefile, "unitsize": unitsize, "total_probes": len(bits),
        "samplerate": None, "samplerate_string": None, "names": [f"D{b}" for b in bits],
        "bits": bits, "disabled_bits": [], "analog": {}, "metadata_offset": z.size, "driver": "",
        "sigrok_version": "",
    }


def _logic_members(z: ZipArchive, capturefile: str, diags: list[Diagnostic]) -> list[str]:
    if capturefile in z.members:
        return [capturefile]
    nums = set()
    odd = []
    for name in z.members:
        m = _CHUNK_RE.match(name)
        if m and m.group("base") == capturefile:
            nums.add(int(m.group("n")))
        elif name.startswith(capturefile + "-"):
            odd.append(name)
    if odd:
        diags.append(diagnostic("SR_TRUNCATED_CHUNK", z.members[odd[0]].header_offset,
                                f"{len(odd)} entr{'y' if len(odd) == 1 else 'ies'} named like a logic "
                                f"chunk without a chunk number 1..999999999 ignored: {odd[0][:40]!r}",
                                count=len(odd), severity=Severity.NOTICE))
    out = []
    n = 1
    while n in nums:
        out.append(f"{capturefile}-{n}")
        n += 1
    rest = sorted(k for k in nums if k > n)
    if rest:
        diags.append(diagnostic("SR_TRUNCATED_CHUNK", 0,
                                f"chunk {capturefile}-{n} is missing; {len(rest)} later chunk(s) "
                                f"({capturefile}-{rest[0]}..) ignored, as libsigrok does",
                                count=len(rest)))
    return out


def _inflate_members(z: ZipArchive, members: list[str]) -> Iterator[bytes]:
    """Inflated logic data in order.

    With the standard zlib (≈500 MB/s, the bottleneck) chunk entries are inflated ahead in worker
    threads when the machine has several cores; zlib releases the GIL while inflating.  With
    zlib-ng (≈10 GB/s on logic captures) inflate costs less than the thread hand-off, so it runs
    inline (measured on the corpus: threads were slower and doubled peak RSS).
    """
    workers = min(4, (os.cpu_count() or 1))
    small = [m for m in members if 0 <= z.members[m].file_size <= _PARALLEL_MAX_MEMBER]
    if (workers < 2 or len(members) < 3 or len(small) != len(members)
            or _zipmod._fastzlib is not zlib):
        for m in members:
            yield from z.iter_blocks(m, BLOCK_BYTES)
        return
    from concurrent.futures import ThreadPoolExecutor  # here: not on the start-up path of `info`

    # each worker reads through its own file handle (file objects are not thread-safe)
    path, code, size = z.path, z.code, z.size

    def whole(name: str) -> bytes | _Partial:
        parts: list[bytes] = []
        try:
            with open(path, "rb") as f:
                for b in iter_member(f, size, z.members[name], BLOCK_BYTES, code, path):
                    parts.append(b)
        except TraceCorruptError as e:
            return _Partial(b"".join(parts), e)
        return b"".join(parts)

    ahead = workers * 2
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futs: list[Future] = []
        it = iter(members)
        for m in it:
            futs.append(pool.submit(whole, m))
            if len(futs) >= ahead:
                break
        while futs:
            res = futs.pop(0).result()
            nxt = next(it, None)
            if nxt is not None:
                futs.append(pool.submit(whole, nxt))
            if isinstance(res, _Partial):
                for f in futs:
                    f.cancel()
                yield res.data
                raise res.error
            yield res


class _Partial:
    __slots__ = ("data", "error")

    def __init__(self, data: bytes, error: TraceCorruptError) -> None:
        self.data = data
        self.error = error
