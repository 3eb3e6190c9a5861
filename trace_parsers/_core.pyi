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

def sv_scan(cols: dict[str, Any]) -> dict[str, Any]:
    """One pass over the raw columns of a decoded stream (``cols``: ``off_size`` and, per column,
    ``(address, length)`` of a contiguous NumPy array; see ``systemview/fast.py``).

    Keys: ``counts`` ((id, packets) ascending), ``meta_rows``, ``text_rows``, ``handles`` (distinct
    raw task ids), ``ovf_values``, ``events`` (non-NOP rows), ``min_ts``, ``core_counts``,
    ``event_cores``.
    """
    ...

def sv_convert(
    cols: dict[str, Any],
    rows: int,
    *,
    start: int,
    stream_core: int,
    esp: bool,
    ram_base: int,
    shift: int,
    handles: bytes,
    named: bytes,
    mod_first: int,
    tick_hz: int,
    origin: int,
    log_base: int,
) -> tuple[bytearray, list[int], bool]:
    """Fill ``rows`` EVENT_DTYPE rows (51 bytes each) from the raw columns: kinds, payloads, task
    indices, running context per core, ns timestamps. Returns ``(bytearray, api_ids, sorted)``.
    """
    ...

def kstate_pass(
    kind: tuple[int, int], ctx: tuple[int, int], state: tuple[int, int, list[int]]
) -> dict[str, Any]:
    """The kernel-state pass (``src/kstate.rs``) over one core's events: ``kind`` (uint8) and ``ctx``
    (int64) as ``(address, length)`` of C-contiguous arrays the caller keeps alive, from the carried
    ``state`` ``(task owner kind, task id, open IRQs)``. Returns bytes columns ``owner_kind`` (u8),
    ``owner_id``, ``depth`` (i64 per event), ``ent_idx``, ``ent_depth``, ``ent_end``, ``ent_closer``
    (i64 per ``ISR_ENTER``) and ``state`` after the last event. MemoryError when a column cannot be
    allocated."""
    ...
