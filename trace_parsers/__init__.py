"""crosstrace trace parsers: every recording format into one event model.

``open_trace(path)`` recognises the format from the file's content (never its extension) and
returns a :class:`~trace_parsers.model.Trace`.  Format readers are imported lazily, so
``import trace_parsers`` stays cheap.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - imported on first use (PEP 562): `crosstrace --version` needs no NumPy
    from .errors import AnalysisError, TraceCorruptError, TraceError, TraceFormatError
    from .model import Channel, CtxType, Diagnostic, EventKind, Isr, Marker, Severity, Task, Trace, TraceMeta

__all__ = [
    "open_trace", "detect_format", "FORMATS", "read_systemview", "read_tracex", "read_sigrok",
    "read_vcd", "read_saleae_csv", "read_saleae_binary", "read_dsview", "read_ctf", "Trace", "TraceMeta",
    "EventKind", "CtxType", "Severity", "Task", "Isr", "Marker", "Channel", "Diagnostic",
    "TraceError", "TraceFormatError", "TraceCorruptError", "AnalysisError", "iter_trace_chunks",
]

__version__ = "0.1.0"

#: (format name, module, sniff function, reader function). Order matters: the first sniffer that
#: accepts wins. A sniffer is ``sniff(head: bytes, path: Path) -> bool`` and looks at content only
#: (``head`` = the first 4 KiB; zip-based formats may open ``path`` to list members).
FORMATS: tuple[tuple[str, str, str, str], ...] = (
    ("sigrok", "trace_parsers.sigrok", "sniff", "read_sigrok"),
    ("dsl", "trace_parsers.dsl", "sniff", "read_dsview"),
    ("saleae_project", "trace_parsers.saleae", "sniff_project", "read_saleae_project"),
    ("saleae_binary", "trace_parsers.saleae", "sniff_binary", "read_saleae_binary"),
    ("tracex", "trace_parsers.tracex", "sniff", "read_tracex"),
    ("systemview", "trace_parsers.systemview", "sniff", "read_systemview"),
    ("vcd", "trace_parsers.vcd", "sniff", "read_vcd"),
    ("saleae_csv", "trace_parsers.saleae", "sniff_csv", "read_saleae_csv"),
    ("ctf", "trace_parsers.ctf", "sniff", "read_ctf"),  # folder, metadata file, or stream beside one
)

_LAZY = {reader: module for _, module, _, reader in FORMATS}
_LAZY["iter_trace_chunks"] = "trace_parsers.chunked"  # chunked reading (bounded memory where supported)
_LAZY.update({n: "trace_parsers.errors" for n in ("AnalysisError", "TraceCorruptError", "TraceError",
                                                  "TraceFormatError")})
_LAZY.update({n: "trace_parsers.model" for n in ("Channel", "CtxType", "Diagnostic", "EventKind", "Isr",
                                                 "Marker", "Severity", "Task", "Trace", "TraceMeta")})

#: formats whose files are zip archives (sigrok session, DSView); only sniffed for zip content
_ZIP_FORMATS = frozenset({"sigrok", "dsl"})

#: formats that can be a folder (asked with ``head=b""`` when ``path`` is a directory)
_DIR_FORMATS = frozenset({"ctf"})

SNIFF_BYTES = 4096


#: what a file with this extension should start with (named in the message for an empty file only:
#: the format is always recognised from the content)
_EXPECTED_BY_SUFFIX = {
    ".svdat": "a SystemView recording (a ';' text header or 10 zero bytes and TRACE_START)",
    ".trx": "a TraceX buffer (the 'BTXT'/'TXTB' id)", ".sr": "a sigrok session (a zip archive)",
    ".dsl": "a DSView session (a zip archive)", ".vcd": "a VCD header ($timescale, $var, ...)",
    ".csv": "a Saleae digital CSV header ('Time [s],<channel>,...')",
    ".bin": "a Saleae binary export (the '<SALEAE>' magic)", ".sal": "a Saleae Logic 2 project (zip)",
    ".ctf": "a CTF packet stream",
}


def _empty_message(p: Path) -> str:
    want = _EXPECTED_BY_SUFFIX.get(p.suffix.lower(), "a recording: SystemView, TraceX, sigrok .sr, "
                                   "DSView .dsl, VCD, a Saleae export or CTF")
    return f"the file is empty (0 bytes): expected {want} at offset 0"


def _dir_message(p: Path) -> tuple[str, str]:
    """Why a folder is no recording, and the code (a CTF folder without its metadata says so)."""
    import re

    names = [q.name for q in p.iterdir() if q.is_file()]
    streams = [n for n in names if n.lower().endswith(".ctf") or re.fullmatch(r"channel\d+_\d+", n)]
    if streams:
        return (f"a folder of CTF streams ({', '.join(sorted(streams)[:3])}) without a 'metadata' "
                "file: expected a CTF trace folder with its TSDL metadata; copy the metadata of the "
                "firmware's build beside the streams, or open one stream with CROSSTRACE_CTF_METADATA "
                "or ZEPHYR_BASE set", "CTF_NO_METADATA")
    return ("a folder, not a recording file: expected a CTF trace folder (with a 'metadata' file) or "
            "a recording file: SystemView, TraceX, sigrok .sr, DSView .dsl, VCD, a Saleae export",
            "FMT_UNKNOWN")


def detect_format(path: str | Path) -> str:
    """Name of the format whose reader accepts ``path``'s content; raises TraceFormatError."""
    from .errors import TraceFormatError

    p = Path(path)
    if p.is_dir():
        for name, module, sniffer, _ in FORMATS:
            if name in _DIR_FORMATS and getattr(importlib.import_module(module), sniffer)(b"", p):
                return name
        msg, code = _dir_message(p)
        raise TraceFormatError(msg, code=code, path=str(p))
    try:
        with open(p, "rb") as f:
            head = f.read(SNIFF_BYTES)
    except OSError as e:
        raise TraceFormatError(f"cannot read the file: {e.strerror}", code="IO_ERROR",
                               path=str(p)) from None
    if not head:
        raise TraceFormatError(_empty_message(p), code="FMT_UNKNOWN", path=str(p), offset=0)
    is_zip = head[:4] == b"PK\x03\x04"
    for name, module, sniffer, _ in FORMATS:
        if name in _ZIP_FORMATS and not is_zip:
            continue  # skip importing zip-based readers for content that is no zip
        try:
            mod = importlib.import_module(module)
        except ImportError:  # a format whose reader is not built into this installation
            continue
        sniff = getattr(mod, sniffer, None)
        if sniff is not None and sniff(head, p):
            return name
    raise TraceFormatError(
        f"no reader recognises this content (first bytes {head[:16].hex(' ')}); expected "
        "SystemView, TraceX, sigrok .sr, DSView .dsl, VCD, a Saleae export or CTF",
        code="FMT_UNKNOWN", path=str(p), offset=0)


def open_trace(path: str | Path, *, on_corrupt: str = "raise", **kwargs: Any) -> Trace:
    """Read any supported recording, recognised by content; extra keywords go to the reader."""
    name = detect_format(path)
    module, reader = next((m, r) for n, m, _, r in FORMATS if n == name)
    fn = getattr(importlib.import_module(module), reader)
    return fn(path, on_corrupt=on_corrupt, **kwargs)


def __getattr__(name: str) -> Any:  # PEP 562 lazy readers
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'trace_parsers' has no attribute {name!r}")
