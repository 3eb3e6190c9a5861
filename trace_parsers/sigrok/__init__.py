"""sigrok session files (``.sr``): reader, writer and protocol decoding through libsigrokdecode.

``read_sigrok(path)`` → :class:`~trace_parsers.model.Trace` of EDGE events; ``write_sr(...)`` writes a
session sigrok-cli and PulseView open; ``trace_parsers.sigrok.protocol.decode_uart`` decodes UART
from any supported capture with sigrok-cli.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from .reader import read_sigrok, sniff
    from .writer import write_sr

__all__ = ["read_sigrok", "sniff", "write_sr"]

#: PEP 562: imported on first use, so that importing ``trace_parsers.sigrok._zip`` (the Saleae
#: project reader does) or sniffing a non-zip file at start-up loads neither reader nor writer
_LAZY = {"read_sigrok": ".reader", "sniff": ".reader", "write_sr": ".writer"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
