"""Value change dump (VCD, IEEE 1364) files: ``read_vcd`` and ``sniff``."""

from __future__ import annotations

from .reader import read_vcd, sniff

__all__ = ["read_vcd", "sniff"]
