"""Saleae Logic exports: digital CSV and binary (v0/v1); ``.sal``/``.logicdata`` saves are refused.

Readers: ``read_saleae_csv`` (sniffer ``sniff_csv``), ``read_saleae_binary`` (``sniff_binary``),
``read_saleae_project`` (``sniff_project``: always raises SALEAE_UNSUPPORTED with export advice).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from .binary import read_saleae_binary
    from .csv import read_saleae_csv
    from .project import read_saleae_project
    from .sniff import sniff_binary, sniff_csv, sniff_project

__all__ = ["read_saleae_csv", "sniff_csv", "read_saleae_binary", "sniff_binary",
           "read_saleae_project", "sniff_project"]

#: PEP 562: imported on first use, so that sniffing a file that is no Saleae export (every
#: `crosstrace info` of another format asks these sniffers) loads none of the three readers
_LAZY = {"read_saleae_binary": ".binary", "read_saleae_csv": ".csv", "read_saleae_project": ".project",
         "sniff_binary": ".sniff", "sniff_csv": ".sniff", "sniff_project": ".sniff"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
