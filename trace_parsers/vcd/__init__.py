"""Value change dump (VCD, IEEE 1364) files: ``read_vcd`` and ``sniff``.

``sniff`` lives here and the reader is imported on first use (PEP 562): recognising a file of
another format (`crosstrace info` asks every sniffer in turn) loads no VCD reader.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from .reader import read_vcd

__all__ = ["read_vcd", "sniff"]

#: a VCD file starts with one of these section keywords (after whitespace and a UTF-8 BOM)
KEYWORDS = (b"$date", b"$version", b"$timescale", b"$scope", b"$var", b"$upscope",
            b"$enddefinitions", b"$comment", b"$dumpvars")


def sniff(head: bytes, path: Path) -> bool:
    """Text starting with a VCD section keyword (after whitespace)."""
    h = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return h.startswith(KEYWORDS)


def __getattr__(name: str) -> Any:
    if name == "read_vcd":
        return importlib.import_module(".reader", __name__).read_vcd
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
