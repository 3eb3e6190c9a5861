"""`crosstrace info`'s NumPy-free summary (:mod:`trace_parsers.summary`) equals the full read.

For every recording of the shared corpus (../shared/corpus) and every committed capture
(captures/), with ``on_corrupt`` raise and skip (and a ``--samplerate`` for logic captures): when
:func:`~trace_parsers.summary.summarize_small` gives a summary, its ``info`` document and text
equal those of the format's reader called by name (``test_info_fastpath.full_read``); when it
raises, the reader raises the same error. The fault tests alter the NumPy-free arithmetic and see
the comparison fail.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from analyzers.cli import _run_json_tick_hz, print_summary, summarize
from tests.analyzers.test_info_fastpath import LOGIC, diff_info, full_read
from tests.conftest import corpus_dir
from trace_parsers import TraceError, detect_format
from trace_parsers.summary import SMALL_FORMATS, summarize_small

ROOT = Path(__file__).resolve().parents[2]
#: file name endings of recordings (the captures also hold logs, run.json, notes)
_RECORDINGS = (".sr", ".svdat", ".trx", ".ctf", ".vcd", ".csv", ".sal", ".logicdata", ".dsl", ".bin")


def recordings() -> list[Path]:
    """Every recording of the shared corpus and the committed captures."""
    found = [p for fmt in ("logic", "systemview", "tracex") for p in corpus_dir(fmt).rglob("*")]
    found += list((ROOT / "captures").rglob("*"))
    return sorted(p for p in found if p.is_file() and p.name.lower().endswith(_RECORDINGS))


def _options(fmt: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"on_corrupt": "raise"}, {"on_corrupt": "skip"}]
    if fmt in LOGIC:
        out.append({"on_corrupt": "raise", "samplerate": 1_000_000})
    if fmt == "tracex":  # ns durations: a rate that divides 1 GHz and one that does not
        out += [{"on_corrupt": "raise", "tick_hz": 1_000_000}, {"on_corrupt": "skip", "tick_hz": 168_000_000}]
    return out


def compare(path: Path, fmt: str, opts: dict[str, Any]) -> list[str] | None:
    """Differences between the small-file summary and the full read (None: no small summary)."""
    kw = {k: v for k, v in opts.items() if k != "on_corrupt"}
    tick_hz = opts.get("tick_hz") or _run_json_tick_hz(path)  # as full_read (and `info`) pass it
    if fmt == "tracex" and tick_hz:
        kw["tick_hz"] = tick_hz
    try:
        small = summarize_small(path, fmt, on_corrupt=opts["on_corrupt"], **kw)
    except TraceError as e:
        lean: dict[str, Any] = {"path": str(path), "error": str(e), "code": e.code}
        text = ""
    else:
        if small is None:
            return None
        lean = json.loads(json.dumps(summarize(small)))
        out = io.StringIO()
        print_summary(lean, out)
        text = out.getvalue()
    full, full_text = full_read(fmt, path, opts)
    problems = [f"{path.name} {opts}{d}" for d in diff_info(lean, full)]
    if text != full_text:
        problems.append(f"{path.name} {opts}: the text differs")
    return problems


def _compare_all(paths: list[Path]) -> tuple[list[str], Counter]:
    problems: list[str] = []
    summarised: Counter = Counter()
    for p in paths:
        try:
            fmt = detect_format(p)
        except TraceError:
            continue  # both paths raise this error from detect_format
        for opts in _options(fmt):
            r = compare(p, fmt, opts)
            if r is not None:
                summarised[fmt] += 1
                problems += r
    return problems, summarised


def _smallest_per_format(paths: list[Path]) -> list[Path]:
    best: dict[str, Path] = {}
    for p in paths:
        try:
            fmt = detect_format(p)
        except TraceError:
            continue
        if fmt not in best or p.stat().st_size < best[fmt].stat().st_size:
            best[fmt] = p
    return list(best.values())


def test_small_summary_equals_full_read_smallest_files() -> None:
    problems, summarised = _compare_all(_smallest_per_format(recordings()))
    assert problems == []
    assert set(summarised) == set(SMALL_FORMATS)


def sampled(paths: list[Path]) -> list[Path]:
    """Every corpus recording, and of the committed captures (hundreds, made by a handful of writers)
    the smallest of each RTOS and file name (trace.SVDat, trace.trx, trace.ctf, logic*.sr)."""
    caps = ROOT / "captures"
    out, best = [], {}
    for p in paths:
        if caps not in p.parents:
            out.append(p)
            continue
        key = (p.relative_to(caps).parts[1], p.name)
        if key not in best or p.stat().st_size < best[key].stat().st_size:
            best[key] = p
    return out + sorted(best.values())


@pytest.mark.slow
def test_small_summary_equals_full_read_every_file() -> None:
    """Every corpus recording and a sample of the captures (:func:`sampled`)."""
    paths = sampled(recordings())
    problems, summarised = _compare_all(paths)
    assert problems == []
    # files over SMALL_BYTES, or whose content is too large (_pyedges.TooBig), are not summarised
    assert set(summarised) == set(SMALL_FORMATS), summarised


def _faults() -> dict[str, tuple[str, Any]]:
    """name -> (``module.attribute`` of the NumPy-free summary code, altered value)."""
    import trace_parsers._meta as meta
    import trace_parsers._pyedges as pyedges
    import trace_parsers.tracex.summary as tx_summary
    from trace_parsers._meta import EventKind

    rising = pyedges.PyChannelEdges.rising
    return {
        # logic captures: every duration doubled (edge_summary), one rising edge too many per channel
        "logic-duration": ("trace_parsers._pyedges.signed_ticks_to_ns_int",
                           lambda t, hz, real=pyedges.signed_ticks_to_ns_int: 2 * real(t, hz)),
        "logic-edges": ("trace_parsers._pyedges.PyChannelEdges.rising",
                        property(lambda self: rising.fget(self) + 1)),  # type: ignore[union-attr]
        # SystemView: the kinds read from the wrong byte of the converted rows
        "systemview-kinds": ("trace_parsers.systemview.summary._KIND", 17),
        # TraceX: every kind misread (user events as API calls, all others as user events: a buffer
        # that filters the kernel's events, such as RTOSBench's, has no API call to miscount)
        "tracex-kinds": ("trace_parsers.tracex.summary.event_kind",
                         lambda eid, real=tx_summary.event_kind:
                         EventKind.API_CALL if real(eid) == EventKind.USER else EventKind.USER),
        # CTF: the duration one ns longer
        "ctf-duration": ("trace_parsers._meta.int_ticks_to_ns",
                         lambda t, hz, real=meta.int_ticks_to_ns: real(t, hz) + 1),
    }


@pytest.mark.parametrize("fault", ["logic-duration", "logic-edges", "systemview-kinds", "tracex-kinds",
                                   "ctf-duration"])
def test_an_altered_summary_fails_the_comparison(monkeypatch: pytest.MonkeyPatch, fault: str) -> None:
    import importlib

    target, value = _faults()[fault]
    fmts = {"logic": ("sigrok", "vcd")}.get(fault.split("-")[0], (fault.split("-")[0],))
    paths = [p for p in _smallest_per_format(recordings()) if detect_format(p) in fmts]
    assert len(paths) == len(fmts) and _compare_all(paths)[0] == []
    mod, _, attr = target.rpartition(".")
    if mod.endswith(".PyChannelEdges"):
        owner: Any = importlib.import_module(mod.rpartition(".")[0]).PyChannelEdges
    else:
        owner = importlib.import_module(mod)
    monkeypatch.setattr(owner, attr, value)
    problems, summarised = _compare_all(paths)
    assert set(summarised) == set(fmts)
    assert len({p.split(" ")[0] for p in problems}) == len(paths), problems  # every file differs


def test_constants_spelled_without_numpy_match_the_model() -> None:
    from trace_parsers.ctf import convert as ctf_convert
    from trace_parsers.model import EVENT_DTYPE, VALUE_NULL
    from trace_parsers.systemview import fast
    from trace_parsers.systemview import summary as sv_summary

    assert ctf_convert.VALUE_NULL == VALUE_NULL
    layout = {name: off for name, off, _ in fast._LAYOUT}
    assert sv_summary.ROW == EVENT_DTYPE.itemsize and fast._layout_ok()
    assert (sv_summary._TS, sv_summary._KIND, sv_summary._VALUE, sv_summary._SRC_OFFSET) == (
        layout["ts"], layout["kind"], layout["value"], layout["src_offset"])


def _big_endian(data: bytes) -> bytes:
    """A little-endian ``.trx`` with every header, registry and event word stored big-endian."""
    import struct

    out = bytearray(data)
    hdr = struct.unpack_from("<IIIIHHIIIIIII", data)
    struct.pack_into(">IIIIHHIIIIIII", out, 0, *hdr)
    base, ns, buf, end = hdr[2], hdr[5], hdr[7] - hdr[2], min(hdr[8] - hdr[2], len(data))
    for at in range(48, buf, 16 + ns):
        struct.pack_into(">III", out, at + 4, *struct.unpack_from("<III", data, at + 4))
    for at in range(buf, end - end % 4, 4):
        struct.pack_into(">I", out, at, *struct.unpack_from("<I", data, at))
    assert base == hdr[2]
    return bytes(out)


def _tracex_variants(tmp: Path) -> list[Path]:
    """The wrapped corpus buffer (974 slots from offset 0x630, oldest in slot 888) damaged and
    altered in the ways the reader handles, and saved in each text encoding."""
    import struct

    from trace_parsers.tracex import hexfmt

    data = (corpus_dir("tracex") / "tracex-sample_demo_threadx.trx").read_bytes()
    buf = 0x630

    def slot_word(d: bytes, slot: int, word: int, value: int) -> bytes:
        out = bytearray(d)
        struct.pack_into("<I", out, buf + 32 * slot + 4 * word, value)
        return bytes(out)

    odd = slot_word(data, 900, 2, 77)  # an unnamed event id
    odd = slot_word(odd, 10, 2, (1 << 24) | struct.unpack_from("<I", odd, buf + 32 * 10 + 8)[0])  # core 1
    odd = slot_word(odd, 20, 0, 0x2000_1234)  # a thread pointer missing from the registry
    regular = data  # an up-counter, 1000 ticks per event, oldest event in slot 888
    for pos, slot in enumerate([*range(888, 974), *range(888)]):
        regular = slot_word(regular, slot, 3, (pos * 1000) & 0xFFFF)
    bad_reserved = bytearray(data)
    bad_reserved[36] ^= 0xFF
    hexed = data.hex(" ", 1).encode()
    text = b"\n".join(hexed[i:i + 96] for i in range(0, len(hexed), 96)) + b"\n"
    ihex = hexfmt.to_ihex(data)
    lines = ihex.split(b"\n")
    variants = {
        "cut-gap.trx": data[:buf + 930 * 32 + 7],  # the lost slots lie between slot 929 and slot 0
        "cut-gap-regular.trx": regular[:buf + 900 * 32],  # 74 slots = 74000 ticks cut: one wrap more
        "cut-lost.trx": data[:buf + 500 * 32],  # the oldest slots (from 888) are lost
        "cut-header.trx": data[:30], "bad-reserved.trx": bytes(bad_reserved),
        "stale.trx": slot_word(data, 950, 0, 0),  # slots 951..973 become stale
        "odd.trx": odd, "big.trx": _big_endian(odd),
        "ihex.hex": ihex, "srec.s19": hexfmt.to_srec(odd), "text.txt": text,
        "ihex-cut.hex": ihex[:len(ihex) * 2 // 3 + 5],  # inside a record, no end-of-file record
        "ihex-bad.hex": b"\n".join(lines[:200] + [b":0" + lines[200][1:]] + lines[201:]),  # line 201
        "text-odd.txt": text.rstrip()[:-1], "text-odd-unknown.txt": odd.hex().encode()[:-1],
        "text-cut.txt": data[:buf + 930 * 32].hex().encode(),
    }
    for name, content in variants.items():
        (tmp / name).write_bytes(content)
    return [tmp / n for n in variants]


def test_small_summary_equals_full_read_on_damaged_and_text_tracex(tmp_path: Path) -> None:
    paths = _tracex_variants(tmp_path)
    problems, summarised = _compare_all(paths)
    assert problems == []
    assert summarised == {"tracex": len(paths) * len(_options("tracex"))}
    infos = {p.name: summarize_small(p, "tracex", on_corrupt="skip") for p in paths
             if p.name not in ("cut-header.trx", "ihex-bad.hex")}  # these two raise
    codes = {n: {d.code for d in s.diagnostics} for n, s in infos.items() if s is not None}
    gap, stale = codes["cut-gap.trx"], codes["stale.trx"]
    assert infos["cut-gap-regular.trx"].duration == 973_000  # as intact: the wrap across the cut counted
    # the variants reach the branches they are meant to: gap estimate, stale slots, unnamed ids, SMP
    assert {"TRX_TRUNCATED", "TRX_WRAPPED"} <= gap and "TRX_STALE_SLOTS" in stale
    assert "TRX_UNKNOWN_ID" in codes["text-odd-unknown.txt"]
    assert "TRX_BAD_RESERVED" in codes["bad-reserved.trx"]
    assert infos["big.trx"].meta.cores == 2 and infos["big.trx"].meta.source_version.endswith("(big-endian)")
    assert any(t.name == "Un-named Thread 0x20001234" for t in infos["odd.trx"].tasks)


def test_an_altered_text_offset_fails_the_comparison(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from trace_parsers.tracex import summary as tx_summary

    paths = [p for p in _tracex_variants(tmp_path) if p.suffix != ".trx" and p.name != "ihex-bad.hex"]
    assert _compare_all(paths)[0] == []
    real = tx_summary._Text.offset_of
    monkeypatch.setattr(tx_summary._Text, "offset_of", lambda self, off: real(self, off) + 1)
    problems, _ = _compare_all(paths)
    assert {p.split(" ")[0] for p in problems} == {p.name for p in paths}  # every text file differs


def test_tracex_kinds_and_header_layout_match_the_numpy_reader() -> None:
    import struct

    from trace_parsers.tracex import convert, format
    from trace_parsers.tracex import summary as tx_summary

    kinds = [int(tx_summary.event_kind(i)) for i in range(1 << 16)]
    assert kinds == convert._KIND.tolist()  # every event id, user and unnamed ones included
    size = struct.calcsize("<" + tx_summary._HEADER)
    assert size == format.header_dtype("<").itemsize == format.HEADER_SIZE
    assert [t for _, t in format.HEADER_FIELDS] == ["u2" if c == "H" else "u4" for c in tx_summary._HEADER]
