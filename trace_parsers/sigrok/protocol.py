"""Protocol decoding of logic captures through libsigrokdecode (``sigrok-cli -P``), UART first.

``decode_uart(path, channel=..., baud=...)`` works for every capture format crosstrace reads: a
``.sr`` file is handed to ``sigrok-cli`` as is; any other input (VCD, Saleae CSV/binary, ``.dsl``,
or a ``.sr`` without a sample rate) is read, the one channel is written to a temporary ``.sr`` with
:func:`~trace_parsers.sigrok.writer.write_sr`, and that is decoded.  Times come back as integer ns in
the capture's ``ts`` timebase, so decoded bytes line up with the trace's edge events.

``backend="numpy"`` runs :func:`uart_from_edges`, a pure-NumPy re-implementation of the
libsigrokdecode ``uart`` sampling rules (sample point ``ceil(frame_start + (bit_width-1)/2 +
bit·bit_width)``, start bit must be 0, stop bit 1), used as a cross-check and where sigrok-cli is
not installed.

Example (sigrok-dumps ``hello_world_8n1_115200.sr``)::

    >>> res = decode_uart("uart_hello_115200_8n1.sr", channel="TX", baud=115200)  # doctest: +SKIP
    >>> res.data[:14], res.ts_ns[0]                                                 # doctest: +SKIP
    (b'Hello World!\\r\\n', 13000)
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._edges import channel_edges, rescale_ticks, resolve_channel, signed_ticks_to_ns
from ..errors import TraceError, TraceFormatError, check_option

SIGROK_CLI_ENV = "CROSSTRACE_SIGROK_CLI"
_ANN_RE = re.compile(r"^(\d+)-(\d+) uart-1: (.*)$")
_PARITY = ("none", "odd", "even", "zero", "one", "ignore")


@dataclass(frozen=True)
class UartError:
    """A frame or parity error: ``ts_ns``/``sample`` where sigrok reported it, ``kind`` its text."""

    ts_ns: int
    sample: int
    kind: str


@dataclass
class UartResult:
    """Decoded UART bytes.

    * ``data`` — the bytes;
    * ``ts_ns`` — int64 start time of each byte's start bit, ns in the capture's ``ts`` timebase
      (the falling edge for the NumPy backend; the begin of sigrok's start-bit annotation, within
      one sample of it, for sigrok-cli);
    * ``samples`` — int64 (n, 2) first/last sample of the data bits as sigrok annotates them
      (``rx-data``), at the decoding sample rate;
    * ``errors`` — frame/parity errors; ``samplerate`` — the rate the decoder ran at;
    * ``backend`` — ``"sigrok-cli"`` or ``"numpy"``.
    """

    data: bytes
    ts_ns: np.ndarray
    samples: np.ndarray
    errors: list[UartError] = field(default_factory=list)
    channel: str = ""
    baud: int = 0
    samplerate: int = 0
    backend: str = ""

    def __len__(self) -> int:
        return len(self.data)

    @property
    def text(self) -> str:
        """``data`` as Latin-1 text (every byte maps to one character)."""
        return self.data.decode("latin-1")

    def lines(self) -> list[tuple[int, str]]:
        r"""Console lines as ``(ts_ns of the line's first byte, text without CR/LF)``.

        A final line without a newline is included.  This is how firmware output (``CT_DONE``,
        metric lines) printed over UART is read back from a capture.

        >>> r = UartResult(b"a=1\r\nb", np.arange(10, 70, 10), np.zeros((6, 2), np.int64))
        >>> r.lines()
        [(10, 'a=1'), (60, 'b')]
        """
        out: list[tuple[int, str]] = []
        begin = 0
        for i, byte in enumerate(self.data):
            if byte == 0x0A:
                out.append((int(self.ts_ns[begin]), self.data[begin:i].decode("latin-1").rstrip("\r")))
                begin = i + 1
        if begin < len(self.data):
            out.append((int(self.ts_ns[begin]), self.data[begin:].decode("latin-1").rstrip("\r")))
        return out


def sigrok_cli() -> str | None:
    """Path of sigrok-cli (``$CROSSTRACE_SIGROK_CLI`` or ``PATH``), or None."""
    env = os.environ.get(SIGROK_CLI_ENV)
    if env:
        return env if os.access(env, os.X_OK) else None
    return shutil.which("sigrok-cli")


def _require_cli() -> str:
    exe = sigrok_cli()
    if exe is None:
        raise TraceError("sigrok-cli (libsigrokdecode) is not installed: run `make setup` (Debian: "
                         "apt-get install sigrok-cli) or set $CROSSTRACE_SIGROK_CLI; "
                         "decode_uart(..., backend='numpy') needs no sigrok", code="DECODER_MISSING")
    return exe


def decode_uart(path: str | Path, *, channel: int | str, baud: int = 115200, data_bits: int = 8,
                parity: str = "none", stop_bits: float = 1, bit_order: str = "lsb-first",
                invert: bool = False, samplerate: int | None = None, backend: str = "sigrok",
                timeout: float = 600.0) -> UartResult:
    """Decode the UART stream on ``channel`` of any supported capture.

    Parameters
    ----------
    path : str | Path
        Capture file (``.sr``, ``.dsl``, VCD, Saleae CSV/binary).
    channel : int | str
        Channel name, or index (the ``marker`` of its edge events).
    baud, data_bits, parity, stop_bits, bit_order, invert
        libsigrokdecode ``uart`` options (defaults 8N1, LSB first, not inverted).
    samplerate : int | None
        Rate for captures that do not state one.
    backend : {"sigrok", "numpy"}
        ``"sigrok"`` runs sigrok-cli (error ``DECODER_MISSING`` when absent); ``"numpy"`` the
        built-in cross-check decoder.
    """
    check_option("backend", backend, ("sigrok", "numpy"))
    check_option("parity", parity, _PARITY)
    check_option("bit_order", bit_order, ("lsb-first", "msb-first"))
    if not 5 <= int(data_bits) <= 8:
        raise ValueError(f"Invalid value for the 'data_bits' parameter: expected 5..8 (bytes), "
                         f"got {data_bits!r}")
    if int(baud) <= 0:
        raise ValueError(f"Invalid value for the 'baud' parameter: expected > 0, got {baud!r}")
    p = Path(path)
    opts = {"baudrate": int(baud), "data_bits": int(data_bits), "parity": parity,
            "stop_bits": stop_bits, "bit_order": bit_order, "invert_rx": "yes" if invert else "no"}
    if backend == "numpy":
        return _decode_numpy(p, channel, opts, samplerate)
    exe = _require_cli()
    from trace_parsers import detect_format

    fmt = detect_format(p)
    if fmt == "sigrok" and samplerate is None:
        from ._zip import ZipArchive
        from .reader import _read_header

        with ZipArchive(str(p), code="SR_BAD_ZIP") as z:
            info = _read_header(z, str(p))
        if info["samplerate"] and str(channel) in info["names"] and _safe_name(str(channel)):
            rate = int(info["samplerate"])
            return _run_cli(exe, p, str(channel), opts, rate, tick_hz=rate, first_tick=0,
                            to_ticks=1, timeout=timeout)
        if info["samplerate"] and str(channel).isdigit():
            bits = info["bits"]
            if int(channel) in bits and _safe_name(info["names"][bits.index(int(channel))]):
                rate = int(info["samplerate"])
                name = info["names"][bits.index(int(channel))]
                return _run_cli(exe, p, name, opts, rate, tick_hz=rate, first_tick=0, to_ticks=1,
                                timeout=timeout)
    # any other input: write the one channel to a temporary .sr
    from trace_parsers import open_trace

    kw: dict[str, Any] = {"samplerate": samplerate} if samplerate else {}
    tr = open_trace(p, **kw)
    if not tr.meta.tick_hz:
        raise TraceFormatError("the capture has no sample rate; pass samplerate=",
                               code="SR_NO_SAMPLERATE", path=str(p))
    ch = _resolve(tr, channel, p)
    init, edges = channel_edges(tr, ch.index)
    tick_hz = int(tr.meta.tick_hz)
    total = int(tr.meta.extra.get("total_samples") or (edges[-1] + 1 if edges.size else 1))
    rate, edges_r, total_r = _decode_rate(tick_hz, edges, total, int(baud))
    first_tick = -int(tr.meta.origin_raw)
    from .writer import write_sr

    with tempfile.TemporaryDirectory(prefix="crosstrace-uart-") as td:
        tmp = Path(td) / "uart.sr"
        write_sr(tmp, samplerate=rate, channels=["rx"], edges=[edges_r], initial=[init],
                 total_samples=max(total_r, int(edges_r[-1]) + 1 if edges_r.size else 1))
        res = _run_cli(exe, tmp, "rx", opts, rate, tick_hz=tick_hz, first_tick=first_tick,
                       to_ticks=tick_hz / rate, timeout=timeout)
    res.channel = ch.name
    return res


def _safe_name(name: str) -> bool:
    return not any(c in name for c in ":=,")


def _resolve(tr: Any, channel: int | str, p: Path) -> Any:
    try:
        return resolve_channel(tr, channel)
    except ValueError as e:
        raise TraceFormatError(str(e), code="BAD_OPTION", path=str(p)) from None


def _decode_rate(tick_hz: int, edges: np.ndarray, total: int, baud: int) -> tuple[int, np.ndarray, int]:
    """Keep the capture's rate unless that makes a huge temporary file; then resample to 1000×baud."""
    target = 1000 * baud
    if total <= 50_000_000 or tick_hz <= target:
        return tick_hz, edges, total
    e = rescale_ticks(edges, target, tick_hz)
    keep = np.ones(e.size, bool)
    if e.size > 1:  # pulses shorter than one new sample vanish (both edges dropped)
        dup = np.flatnonzero(np.diff(e) <= 0)
        keep[dup] = False
        keep[dup + 1] = False
    e = e[keep]
    e = e[e >= 1]
    return target, e, (total * target + tick_hz // 2) // tick_hz


def _run_cli(exe: str, sr: Path, name: str, opts: dict[str, Any], rate: int, *, tick_hz: int,
             first_tick: int, to_ticks: float, timeout: float) -> UartResult:
    spec = "uart:rx=" + name + ":" + ":".join(f"{k}={v}" for k, v in opts.items())
    cmd = [exe, "-i", str(sr), "-P", spec, "-A", "uart=rx-data:rx-warnings",
           "--protocol-decoder-samplenum"]
    try:
        cp = subprocess.run(cmd, capture_output=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise TraceError(f"running sigrok-cli failed: {e}", code="DECODER_MISSING",
                         path=str(sr)) from None
    err = cp.stderr.decode("utf-8", "replace").strip()
    if cp.returncode != 0:
        raise TraceError(f"sigrok-cli exited with status {cp.returncode}: {err[:500]}",
                         code="DECODER_MISSING", path=str(sr))
    out = cp.stdout.decode("utf-8", "replace")
    vals: list[int] = []
    spans: list[tuple[int, int]] = []
    errors_raw: list[tuple[int, str]] = []
    starts: list[int] = []
    last_start = None
    bw = rate / opts["baudrate"]
    for line in out.splitlines():
        m = _ANN_RE.match(line.strip())
        if not m:
            continue
        ss, es, txt = int(m.group(1)), int(m.group(2)), m.group(3).strip()
        if txt in ("Start bit", "Start", "S"):
            last_start = ss
        elif re.fullmatch(r"[0-9A-Fa-f]{1,3}", txt) and es > ss:
            vals.append(int(txt, 16))
            spans.append((ss, es))
            # the data annotation starts at the first data bit; the start bit began one bit earlier
            starts.append(last_start if last_start is not None else int(round(ss - bw)))
            last_start = None
        elif "error" in txt.lower() or txt in ("FE", "PE"):
            errors_raw.append((ss, txt))
    start_samples = np.asarray(starts, dtype=np.int64)
    ts = _samples_to_ns(start_samples, to_ticks, first_tick, tick_hz)
    errs = [UartError(int(_samples_to_ns(np.array([s]), to_ticks, first_tick, tick_hz)[0]), s, k)
            for s, k in errors_raw]
    return UartResult(bytes(vals), ts, np.asarray(spans, dtype=np.int64).reshape(-1, 2), errs, name,
                      int(opts["baudrate"]), int(rate), "sigrok-cli")


def _samples_to_ns(samples: np.ndarray, to_ticks: float, first_tick: int, tick_hz: int) -> np.ndarray:
    s = np.asarray(samples, dtype=np.int64)
    if to_ticks != 1:
        s = np.rint(s * to_ticks).astype(np.int64)
    return signed_ticks_to_ns(s + np.int64(first_tick), tick_hz)


# -- pure NumPy cross-check ----------------------------------------------------------------------

def _decode_numpy(p: Path, channel: int | str, opts: dict[str, Any],
                  samplerate: int | None) -> UartResult:
    from trace_parsers import open_trace

    kw: dict[str, Any] = {"samplerate": samplerate} if samplerate else {}
    tr = open_trace(p, **kw)
    if not tr.meta.tick_hz:
        raise TraceFormatError("the capture has no sample rate; pass samplerate=",
                               code="SR_NO_SAMPLERATE", path=str(p))
    ch = _resolve(tr, channel, p)
    init, edges = channel_edges(tr, ch.index)
    total = tr.meta.extra.get("total_samples")
    res = uart_from_edges(init, edges, int(tr.meta.tick_hz), opts["baudrate"],
                          data_bits=opts["data_bits"], parity=opts["parity"],
                          stop_bits=opts["stop_bits"], bit_order=opts["bit_order"],
                          invert=opts["invert_rx"] == "yes", total_samples=total)
    res.ts_ns = _samples_to_ns(res.ts_ns, 1, -int(tr.meta.origin_raw), int(tr.meta.tick_hz))
    res.errors = [UartError(int(_samples_to_ns(np.array([e.sample]), 1, -int(tr.meta.origin_raw),
                                               int(tr.meta.tick_hz))[0]), e.sample, e.kind)
                  for e in res.errors]
    res.channel = ch.name
    return res


def uart_from_edges(initial: int, edges: np.ndarray, samplerate: int, baud: int, *, data_bits: int = 8,
                    parity: str = "none", stop_bits: float = 1, bit_order: str = "lsb-first",
                    invert: bool = False, total_samples: int | None = None) -> UartResult:
    """Decode UART from one channel's edges with libsigrokdecode's sampling rules.

    ``edges`` are sample indices where the level toggles, ``initial`` the level at sample 0.
    ``ts_ns`` of the result holds *sample indices* of the start bits (callers convert).

    >>> # 'A' (0x41) at 10 samples/bit, idle high: start bit at 10, bits 1,0,0,0,0,0,1,0, stop
    >>> r = uart_from_edges(1, np.array([10, 20, 30, 80, 90, 100]), 1000, 100, total_samples=120)
    >>> r.data, r.ts_ns.tolist()
    (b'A', [10])
    """
    e = np.asarray(edges, dtype=np.int64)
    end = int(total_samples) if total_samples is not None else (int(e[-1]) + 1 if e.size else 0)
    bw = samplerate / baud
    inv = 1 if invert else 0

    def level(s: int) -> int:
        return (initial ^ (int(np.searchsorted(e, s, side="right")) & 1)) ^ inv

    # falling edges (in the non-inverted sense): edges whose new level is 0
    new_levels = (initial ^ ((np.arange(e.size) + 1) & 1)) ^ inv
    falls = e[new_levels == 0]
    nbits = 1 + data_bits + (0 if parity == "none" else 1)
    vals: list[int] = []
    starts: list[int] = []
    spans: list[tuple[int, int]] = []
    errors: list[UartError] = []
    cursor = 0  # the next start bit must begin after this sample
    k = 0
    while True:
        k = int(np.searchsorted(falls, cursor, side="right"))
        if k >= falls.size:
            break
        fs = int(falls[k])

        def sp(bitnum: int, fs: int = fs) -> int:
            return math.ceil(fs + (bw - 1) / 2.0 + bitnum * bw)

        s0 = sp(0)
        if s0 >= end:
            break
        if level(s0) != 0:
            errors.append(UartError(s0, s0, "Frame error"))
            cursor = s0
            continue
        last_sp = sp(nbits)
        if last_sp >= end:
            break
        bits = [level(sp(1 + i)) for i in range(data_bits)]
        if bit_order == "msb-first":
            bits.reverse()
        v = sum(b << i for i, b in enumerate(bits))
        if parity != "none":
            pb = level(sp(1 + data_bits))
            ones = bin(v).count("1")
            ok = {"odd": (ones + pb) % 2 == 1, "even": (ones + pb) % 2 == 0, "zero": pb == 0,
                  "one": pb == 1, "ignore": True}[parity]
            if not ok:
                errors.append(UartError(sp(1 + data_bits), sp(1 + data_bits), "Parity error"))
        if level(last_sp) != 1:
            errors.append(UartError(last_sp, last_sp, "Frame error"))
        vals.append(v)
        starts.append(fs)
        spans.append((sp(1) - math.floor(bw / 2), sp(data_bits) + math.ceil(bw / 2)))
        cursor = last_sp
    return UartResult(bytes(vals), np.asarray(starts, dtype=np.int64),
                      np.asarray(spans, dtype=np.int64).reshape(-1, 2), errors, "", int(baud),
                      int(samplerate), "numpy")
