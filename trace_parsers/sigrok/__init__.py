"""sigrok session files (``.sr``): reader, writer and protocol decoding through libsigrokdecode.

``read_sigrok(path)`` → :class:`~trace_parsers.model.Trace` of EDGE events; ``write_sr(...)`` writes a
session sigrok-cli and PulseView open; ``trace_parsers.sigrok.protocol.decode_uart`` decodes UART
from any supported capture with sigrok-cli.
"""

from __future__ import annotations

from .reader import read_sigrok, sniff
from .writer import write_sr

__all__ = ["read_sigrok", "sniff", "write_sr"]
