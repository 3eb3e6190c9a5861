#!/usr/bin/env python3
"""Read the crosstrace build configuration from a firmware ELF without running it.

The firmware stores ``CT_CONFIG <config string>`` (NUL-terminated) in the non-loaded section ``.ct_config``
(firmware/README.md, "Image configuration"). Standard library only; ELF32/ELF64, either endianness.

    python3 firmware/scripts/ct_elfconfig.py firmware/build/.../ct.elf      # prints the string
    read_ct_config(path) -> str ; parse_ct_config(text) -> dict
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

SECTION = ".ct_config"
PREFIX = "CT_CONFIG "


class ElfConfigError(ValueError):
    """The file is not an ELF, is truncated, or has no .ct_config section."""


def _section_bytes(data: bytes, path: str, name: str) -> bytes:
    if len(data) < 0x34 or data[:4] != b"\x7fELF":
        raise ElfConfigError(f"{path}:0x0: expected ELF magic 7f 45 4c 46, found {data[:4].hex(' ')}")
    cls, enc = data[4], data[5]
    if cls not in (1, 2) or enc not in (1, 2):
        raise ElfConfigError(f"{path}:0x4: expected ELF class 1/2 and data encoding 1/2, found {cls}/{enc}")
    e = "<" if enc == 1 else ">"
    try:
        if cls == 1:
            shoff, = struct.unpack_from(e + "I", data, 0x20)
            shentsize, shnum, shstrndx = struct.unpack_from(e + "HHH", data, 0x2E)
            shfmt, off_i, size_i = e + "IIIIIIIIII", 4, 5
        else:
            shoff, = struct.unpack_from(e + "Q", data, 0x28)
            shentsize, shnum, shstrndx = struct.unpack_from(e + "HHH", data, 0x3A)
            shfmt, off_i, size_i = e + "IIQQQQIIQQ", 4, 5
        if shoff == 0 or shnum == 0 or shoff + shnum * shentsize > len(data):
            raise ElfConfigError(f"{path}:0x{shoff:x}: section header table missing or beyond end of file "
                                 f"({len(data)} bytes)")
        heads = [struct.unpack_from(shfmt, data, shoff + i * shentsize) for i in range(shnum)]
        strtab = heads[shstrndx]
        s_off, s_size = strtab[off_i], strtab[size_i]
        names = data[s_off:s_off + s_size]
        for h in heads:
            end = names.find(b"\0", h[0])
            if names[h[0]:end].decode("ascii", "replace") == name:
                if h[off_i] + h[size_i] > len(data):
                    raise ElfConfigError(f"{path}:0x{h[off_i]:x}: section {name} extends beyond end of file")
                return data[h[off_i]:h[off_i] + h[size_i]]
    except (struct.error, IndexError) as exc:
        raise ElfConfigError(f"{path}: truncated or malformed ELF section headers ({exc})") from None
    raise ElfConfigError(f"{path}: no {name} section (not a crosstrace firmware image?)")


def read_ct_config(path: str | Path) -> str:
    """The configuration string of a crosstrace firmware ELF (without the ``CT_CONFIG`` prefix)."""
    raw = _section_bytes(Path(path).read_bytes(), str(path), SECTION)
    text = raw.split(b"\0", 1)[0].decode("utf-8", "replace")
    if not text.startswith(PREFIX):
        raise ElfConfigError(f"{path}: {SECTION} does not start with {PREFIX!r}: {text[:40]!r}")
    return text[len(PREFIX):]


def parse_ct_config(text: str) -> dict:
    """``"rtos=freertos ... opts=CT_TRACE=1,CT_NTASKS=2"`` -> dict; ``opts`` maps to ints or strings."""
    out: dict = {}
    for item in text.split():
        key, _, value = item.partition("=")
        out[key] = value
    opts = {}
    for kv in filter(None, out.get("opts", "").split(",")):
        k, _, v = kv.partition("=")
        opts[k] = int(v) if v.lstrip("-").isdigit() else v
    out["opts"] = opts
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: ct_elfconfig.py <ct.elf>")
    try:
        print(read_ct_config(sys.argv[1]))
    except (OSError, ElfConfigError) as exc:
        sys.exit(f"error: {exc}")
