"""Saleae Logic exports: digital CSV and binary (v0/v1); ``.sal``/``.logicdata`` saves are refused.

Readers: ``read_saleae_csv`` (sniffer ``sniff_csv``), ``read_saleae_binary`` (``sniff_binary``),
``read_saleae_project`` (``sniff_project``: always raises SALEAE_UNSUPPORTED with export advice).
"""

from __future__ import annotations

from .binary import read_saleae_binary, sniff_binary
from .csv import read_saleae_csv, sniff_csv
from .project import read_saleae_project, sniff_project

__all__ = ["read_saleae_csv", "sniff_csv", "read_saleae_binary", "sniff_binary",
           "read_saleae_project", "sniff_project"]
