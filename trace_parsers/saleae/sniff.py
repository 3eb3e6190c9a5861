"""The three Saleae sniffers, apart from their readers: recognising a file imports no reader.

``detect_format`` asks these for every file that is no sigrok/DSView session, so they stay free
of NumPy-, zip- and regex-heavy imports (``.sal`` content is listed through the zip reader only
when the file is a zip).
"""

from __future__ import annotations

from pathlib import Path

#: first bytes of a Saleae binary export (v0 and v1)
MAGIC = b"<SALEAE>"
#: first bytes of a Saleae digital CSV export (after an optional UTF-8 BOM)
CSV_HEADER = b"Time [s],"
#: found in the first 32 bytes of a Logic 1.x ``.logicdata`` save
LOGICDATA_MARK = b"Data save"


def sniff_binary(head: bytes, path: Path) -> bool:
    """``<SALEAE>`` magic, export version 0 or 1, type 0 (digital)."""
    if len(head) < 16 or head[:8] != MAGIC:
        return False
    version, typ = int.from_bytes(head[8:12], "little"), int.from_bytes(head[12:16], "little")
    return version in (0, 1) and typ == 0


def sniff_csv(head: bytes, path: Path) -> bool:
    """A CSV whose header starts with ``Time [s],``."""
    return head.lstrip(b"\xef\xbb\xbf").startswith(CSV_HEADER)


def is_sal(path: Path) -> bool:
    """A zip holding ``meta.json`` and ``digital-N.bin``/``analog-N.bin`` members (Logic 2 ``.sal``)."""
    from ..errors import TraceError
    from ..sigrok._zip import ZipArchive

    try:
        with ZipArchive(str(path), code="SALEAE_UNSUPPORTED") as z:
            names = set(z.members)
    except TraceError:
        return False
    return "meta.json" in names and any(n.startswith(("digital-", "analog-")) for n in names)


def sniff_project(head: bytes, path: Path) -> bool:
    """A ``.sal`` zip (``meta.json`` + ``digital-N.bin``) or a ``.logicdata`` ("Data save") file."""
    if head[:4] == b"PK\x03\x04":  # the zip magic (sigrok._zip.is_zip, without importing zipfile)
        return is_sal(path)
    return LOGICDATA_MARK in head[:32] and head[:1] == b"\x7f"
