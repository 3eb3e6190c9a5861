"""Saleae save files (``.sal`` of Logic 2, ``.logicdata`` of Logic 1.x): recognised and refused.

Both are undocumented (Saleae calls the ``.sal`` channel files an internal format, "not for
3rd-party tools"; ``.logicdata`` had 24 serialization revisions), so no edges are extracted.
``read_saleae_project`` raises ``SALEAE_UNSUPPORTED`` with the steps to export a supported format;
for ``.sal`` the message also states what ``meta.json`` says (device, sample rate, channels).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import TraceError, TraceFormatError
from ..sigrok._zip import ZipArchive, is_zip
from .sniff import sniff_project  # noqa: F401 (re-exported)

SAL_ADVICE = ("open it in Saleae Logic 2 and use File > Export Data (CSV or Binary, digital "
              "channels), or script it with logic2-automation "
              "(Capture.export_raw_data_csv / export_raw_data_binary), then read digital.csv or the "
              "digital_<N>.bin files")
LOGICDATA_ADVICE = ("open it in Saleae Logic 1.x and use Options > Export Data (CSV, one row per "
                    "change), or open it in Logic 2 and export as for .sal, then read the export")


def _sal_summary(path: Path) -> str:
    try:
        with ZipArchive(str(path), code="SALEAE_UNSUPPORTED") as z:
            meta = json.loads(z.read("meta.json", 16 << 20).decode("utf-8"))
        data = meta.get("data", {})
        cs = data.get("captureSettings", {})
        dev = cs.get("connectedDevice", {}).get("deviceType", "?")
        st = cs.get("connectedDevice", {}).get("settings", {})
        rate = st.get("sampleRate", {}).get("digital", "?")
        chans = [c.get("index") for c in st.get("enabledChannels", []) if c.get("type") == "Digital"]
        return f" (meta.json: device {dev}, digital rate {rate} S/s, digital channels {chans})"
    except (TraceError, ValueError, AttributeError, KeyError):
        return ""


def read_saleae_project(path: str | Path, *, on_corrupt: str = "raise", **_ignored: Any) -> Any:
    """Always raises :class:`TraceFormatError` (``SALEAE_UNSUPPORTED``) with export advice."""
    p = Path(path)
    with open(p, "rb") as f:
        head = f.read(64)
    if is_zip(head):
        raise TraceFormatError(
            "a Saleae Logic 2 .sal save: its channel files use an undocumented internal format, so "
            f"crosstrace cannot extract edges{_sal_summary(p)}; {SAL_ADVICE}",
            code="SALEAE_UNSUPPORTED", path=str(p), offset=0)
    raise TraceFormatError(
        "a Saleae Logic 1.x .logicdata save (undocumented serialization), which crosstrace cannot "
        f"read; {LOGICDATA_ADVICE}", code="SALEAE_UNSUPPORTED", path=str(p), offset=0)
