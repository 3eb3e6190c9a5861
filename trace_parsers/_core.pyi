"""Type stub for the compiled Rust core (trace_parsers/_core, built by maturin)."""

from typing import Any

SV_MAX_PACKETS_PER_BYTE: float

def core_version() -> str: ...
def sv_decode(
    data: bytes,
    start: int = 0,
    end: int | None = None,
    esp_core_bit: bool = False,
    str_order: int = 0,
    expect_sync: bool = True,
) -> dict[str, Any]:
    """Decode one SystemView stream ``data[start:end]`` into column buffers.

    Keys: ``n``; bytearray columns ``id`` (u32), ``core`` (u8), ``nv`` (u8), ``ts`` (u64),
    ``off`` (u32 or u64, see ``off_size``), ``p0``/``p1``/``p2`` (u32); bytes ``aux_row``,
    ``aux_start``, ``aux_str``, ``aux_vals`` (u32), ``strings``, ``str_ends`` (u64); ``diags``
    (list of ``(code, offset, count, fatal, detail)``); ``sync_bytes``; ``ts_end``; ``str_order``.
    """
    ...
