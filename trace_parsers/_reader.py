"""ByteReader: bounds-checked reads for Python decoders — the single error choke point.

Every fixed-layout read in a Python decoder goes through here, so a short or damaged file raises
:class:`TraceCorruptError` naming the path, the offset and what was expected; no ``struct.error``
or ``IndexError`` ever reaches a caller.
"""

from __future__ import annotations

import struct

from .errors import TraceCorruptError


class ByteReader:
    """Random-access reads from an in-memory buffer with explicit offsets."""

    __slots__ = ("data", "path", "code")

    def __init__(self, data: bytes | bytearray | memoryview, path: str | None = None,
                 code: str = "TRUNCATED") -> None:
        self.data = memoryview(data).cast("B") if not isinstance(data, bytes) else data
        self.path = path
        self.code = code

    def __len__(self) -> int:
        return len(self.data)

    def need(self, offset: int, size: int, what: str) -> None:
        if offset < 0 or size < 0 or offset + size > len(self.data):
            raise TraceCorruptError(
                f"expected {what} ({size} bytes) at offset 0x{offset:x}, but the input has "
                f"{len(self.data)} bytes", code=self.code, path=self.path, offset=offset)

    def bytes(self, offset: int, size: int, what: str = "bytes") -> bytes:
        self.need(offset, size, what)
        return bytes(self.data[offset:offset + size])

    def unpack(self, fmt: str, offset: int, what: str = "record") -> tuple:
        size = struct.calcsize(fmt)
        self.need(offset, size, what)
        return struct.unpack_from(fmt, self.data, offset)
