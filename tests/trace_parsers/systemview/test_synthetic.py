"""Round trips through the test encoder, container variants, damage handling and properties."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from trace_parsers import TraceCorruptError, TraceError, TraceFormatError, open_trace
from trace_parsers.model import CtxType, EventKind, Severity, validate
from trace_parsers.systemview import read_systemview, sniff
from trace_parsers.systemview.description import choose_table, load_bundled, parse_description

from ._encoder import HEADER_OPENOCD, Encoder, varint

RAM = 0x20000000


def _base(enc: Encoder, *, freq: int = 1_000_000_000, shift: int = 2) -> int:
    enc.fixed(10, 5)
    enc.init(6, freq, 168_000_000, RAM, shift)
    enc.sysdesc(7, "N=ctapp,D=STM32F429,O=FreeRTOS")
    enc.sysdesc(8, "I#15=SysTick,I#16=TIM2")
    enc.task_info(9, 0x100, 3, "worker")
    enc.task_info(10, 0x200, 0, "IDLE")
    enc.name_marker(11, 1, "ctx.yield")
    return 12


def _write(tmp_path: Path, data: bytes, name: str = "t.SVDat") -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def test_round_trip_events(tmp_path: Path) -> None:
    enc = Encoder()
    t = _base(enc)
    offs = {}
    offs["run"] = enc.fixed(4, t + 10, 0x100)                 # worker runs
    offs["mark"] = enc.mark(t + 20, 1, 1)                      # CT site 1, pin level 1
    offs["isr"] = enc.fixed(2, t + 30, 15)                     # SysTick
    offs["nested"] = enc.fixed(2, t + 31, 16)                  # TIM2 inside SysTick
    offs["nexit"] = enc.fixed(3, t + 32)
    offs["ready"] = enc.fixed(6, t + 33, 0x200)
    offs["tosched"] = enc.fixed(18, t + 40)
    offs["idle"] = enc.fixed(17, t + 50)
    offs["block"] = enc.fixed(7, t + 60, 0x100, 4)
    offs["api"] = enc.long(35, t + 61, enc.vals(10))          # vTaskDelay(10), SEGGER numbering
    offs["ret"] = enc.long(28, t + 62, enc.vals(35, 0))
    offs["log"] = enc.print_formatted(t + 70, "hello")
    offs["mstart"] = enc.fixed(15, t + 80, 7)
    offs["mstop"] = enc.fixed(16, t + 0x1_0000_0000 + 5, 7)    # time passes 2**32 ticks: 64-bit sum
    p = _write(tmp_path, enc.bytes(HEADER_OPENOCD))
    tr = read_systemview(p)
    assert validate(tr) == []
    ev = tr.events
    hdr = len(HEADER_OPENOCD)
    by_off = {int(o) - hdr: i for i, o in enumerate(ev["src_offset"].tolist())}
    names = {t.name: t.ctx_id for t in tr.tasks}
    r = ev[by_off[offs["run"]]]
    assert (r["kind"], r["ctx_type"], r["ctx_id"]) == (EventKind.TASK_SWITCH_IN, CtxType.TASK,
                                                       names["worker"])
    assert tr.tasks[names["worker"]].native_handle == RAM + (0x100 << 2)
    m = ev[by_off[offs["mark"]]]
    assert (m["kind"], m["marker"], m["value"], m["ctx_id"]) == (EventKind.MARK, 1, 1, names["worker"])
    assert [(k.id, k.name) for k in tr.markers] == [(1, "ctx.yield")]
    i1, i2, ie = ev[by_off[offs["isr"]]], ev[by_off[offs["nested"]]], ev[by_off[offs["nexit"]]]
    assert (i1["ctx_type"], i1["ctx_id"], i2["ctx_id"], ie["ctx_id"]) == (CtxType.ISR, 15, 16, 16)
    rd = ev[by_off[offs["ready"]]]
    assert (rd["kind"], rd["ctx_id"], rd["target_id"]) == (EventKind.TASK_READY, 15, names["IDLE"])
    ts_ = ev[by_off[offs["tosched"]]]
    assert (ts_["kind"], ts_["ctx_type"], ts_["ctx_id"]) == (EventKind.ISR_TO_SCHED, CtxType.ISR, 15)
    assert ev[by_off[offs["idle"]]]["ctx_type"] == CtxType.IDLE
    b = ev[by_off[offs["block"]]]
    assert (b["kind"], b["target_id"], b["value"]) == (EventKind.TASK_BLOCK, names["worker"], 4)
    a = ev[by_off[offs["api"]]]
    assert (a["kind"], a["src_id"], a["value"]) == (EventKind.API_CALL, 35, 10)
    assert tr.meta.extra["api_names"]["35"] == "vTaskDelay"
    assert tr.meta.extra["api_args"]["35"] == ["xTicksToDelay"]
    rt = ev[by_off[offs["ret"]]]
    assert (rt["kind"], rt["src_id"], rt["value"]) == (EventKind.API_RETURN, 35, 0)
    lg = ev[by_off[offs["log"]]]
    assert lg["kind"] == EventKind.LOG and tr.strings[lg["value"]] == "hello"
    assert ev[by_off[offs["mstart"]]]["marker"] == 7
    # time: ns at 1 GHz == ticks since the first packet; deltas accumulate exactly
    assert int(ev["ts"][0]) == 0
    assert int(r["ts_raw"]) == t + 10
    assert int(ev[by_off[offs["mstop"]]]["ts_raw"]) == t + 0x1_0000_0000 + 5  # never wraps
    assert {i.number: i.name for i in tr.isrs} == {15: "SysTick", 16: "TIM2"}


@pytest.mark.parametrize("sep", [b"\t\t", b"     "])
@pytest.mark.parametrize("blank", [False, True])
@pytest.mark.parametrize("prefix", [False, True])
def test_header_variants(tmp_path: Path, sep: bytes, blank: bool, prefix: bool) -> None:
    enc = Encoder()
    _base(enc)
    hdr = b";\n; Version" + sep + b"SEGGER SystemViewer V2.42\n; Author" + sep + b"x\n;\n"
    data = hdr + (b"\n" if blank else b"") + (b"\xBF\x88\xEE\xAB\x01" if prefix else b"") + enc.bytes()
    p = _write(tmp_path, data)
    assert sniff(data[:4096], p)
    tr = open_trace(p)
    assert tr.meta.source_version == "SEGGER SystemViewer V2.42"
    assert [t.name for t in tr.tasks] == ["worker", "IDLE"]


def test_offset_multicore_container(tmp_path: Path) -> None:
    a, b = Encoder(), Encoder()
    _base(a)
    _base(b)
    a.fixed(4, 100, 0x100)
    b.fixed(17, 101)
    b.fixed(2, 102, 15)
    s0, s1 = a.bytes(), b.bytes()
    hdr = (b";\n; Version     SEGGER SystemViewer V3.60\n; Offset Core0 0\n; Offset Core1 "
           + str(len(s0)).encode() + b"\n;\n")
    tr = read_systemview(_write(tmp_path, hdr + s0 + s1))
    assert tr.meta.cores == 2
    assert set(tr.meta.extra["streams"]) == {"Core0", "Core1"}
    last = tr.events[-1]
    assert (last["core"], last["kind"], last["ctx_id"]) == (1, EventKind.ISR_ENTER, 15)


def test_esp_core_bit_stream(tmp_path: Path) -> None:
    enc = Encoder(esp_core_bit=True)
    _base(enc)
    enc.fixed(4, 100, 0x100, core=1)
    enc.fixed(17, 101, core=0)
    enc.long(512, 102, enc.vals(1, 2, 3), core=1)
    hdr = b";\n; Version     SEGGER SystemViewer V2.42\n; Author      x\n; ESP_Extension\n;\n"
    tr = read_systemview(_write(tmp_path, hdr + enc.bytes()))
    ev = tr.events[-3:]
    assert ev["core"].tolist() == [1, 0, 1]
    assert ev["src_id"].tolist() == [4, 17, 512]
    assert ev["kind"][2] == EventKind.USER


@pytest.mark.parametrize("hilo", [False, True])
def test_long_strings_both_byte_orders(tmp_path: Path, hilo: bool) -> None:
    enc = Encoder(hilo_strings=hilo)
    enc.fixed(10, 1)
    enc.init(2, 1000, 1000, 0, 0)
    long_name = "n" * 300
    enc.sysdesc(3, "N=" + long_name)
    enc.print_formatted(4, "x" * 260)
    tr = read_systemview(_write(tmp_path, enc.bytes()))
    assert tr.meta.extra["sysdesc"]["N"] == long_name
    assert tr.strings == ["x" * 260]
    assert tr.meta.extra["streams"]["Core0"]["string_order"] == ("hi-lo" if hilo else "lo-hi")


def test_long_ids_and_unknown_ids_kept(tmp_path: Path) -> None:
    enc = Encoder()
    enc.fixed(10, 1)
    enc.init(2, 1000, 1000, 0, 0)
    enc.long(20000, 3, enc.vals(1, 2, 3, 4, 5))    # LONG_ID, unknown
    enc.long(30, 4, b"\x01\x02")                    # unused system id 30
    enc.fixed(23, 5, 9, 0x3F800000)                 # DATA_SAMPLE: fixed 2 varints
    enc.fixed(3, 6)
    tr = read_systemview(_write(tmp_path, enc.bytes()))
    assert tr.events["src_id"].tolist()[-4:] == [20000, 30, 23, 3]
    assert tr.events["kind"].tolist()[-4:] == [EventKind.USER, EventKind.OTHER, EventKind.OTHER,
                                                EventKind.ISR_EXIT]
    unknown = {d.message.split()[2]: d.count for d in tr.diagnostics if d.code == "SV_UNKNOWN_ID"}
    assert unknown == {"30": 1, "20000": 1}
    assert all(d.severity == Severity.NOTICE for d in tr.diagnostics)


def test_stack_info_and_resources(tmp_path: Path) -> None:
    enc = Encoder()
    _base(enc)
    enc.fixed(21, 20, 0x100, 0x20001000, 1024, 200)
    enc.long(25, 21, enc.vals(0x300) + b"\x04qbuf")
    tr = read_systemview(_write(tmp_path, enc.bytes()))
    sm = tr.meta.extra["streams"]["Core0"]
    assert sm["stack_info"] == {"0x100": {"base": 0x20001000, "size": 1024, "usage": 200}}
    assert sm["name_resource"] == {"0x300": "qbuf"}


def test_post_mortem_blocks_do_not_reset_time(tmp_path: Path) -> None:
    enc = Encoder()
    _base(enc)
    enc.fixed(4, 100, 0x100)
    enc.sync()
    _ = enc.fixed(10, 200)
    enc.init(201, 1_000_000_000, 168_000_000, RAM, 2)
    enc.fixed(17, 300)
    tr = read_systemview(_write(tmp_path, enc.bytes()))
    assert tr.events["ts_raw"].tolist()[-3:] == [200, 201, 300]
    assert tr.counts_by_kind()["TRACE_START"] == 2
    assert tr.meta.extra["streams"]["Core0"]["inits"] == 2


def test_overflow_is_a_gap(tmp_path: Path) -> None:
    enc = Encoder()
    _base(enc)
    enc.fixed(2, 100, 15)
    enc.fixed(1, 150, 7)      # OVERFLOW: 7 packets lost so far
    enc.fixed(3, 160)         # exit of an ISR whose enter may be lost: depth stays 0
    enc.fixed(4, 170, 0x100)
    tr = read_systemview(_write(tmp_path, enc.bytes()))
    ev = tr.events
    o = ev[ev["kind"] == EventKind.OVERFLOW][0]
    assert o["value"] == 7 and o["ctx_type"] == CtxType.NONE
    x = ev[ev["kind"] == EventKind.ISR_EXIT][0]
    assert x["ctx_type"] == CtxType.NONE
    d = [d for d in tr.diagnostics if d.code == "SV_OVERFLOW"]
    assert d and d[0].severity == Severity.DATA_LOSS


def test_damage_then_resync_keeps_both_sides(tmp_path: Path) -> None:
    enc = Encoder()
    _base(enc)
    enc.fixed(4, 100, 0x100)
    bad_at = len(enc.buf)
    enc.buf += b"\xC1\xFF\x3F\xE0\xFF\xFF\x3F\x11\x22"      # garbage id with a huge length
    enc.sync()
    enc.fixed(10, 500)
    enc.fixed(17, 510)
    p = _write(tmp_path, enc.bytes())
    with pytest.raises(TraceError) as ei:
        read_systemview(p)
    assert ei.value.offset == bad_at and ei.value.code == "CORRUPT_REGION"
    tr = read_systemview(p, on_corrupt="skip")
    kinds = tr.events["kind"].tolist()
    assert kinds[-3:] == [EventKind.TASK_SWITCH_IN, EventKind.TRACE_START, EventKind.IDLE]
    assert tr.events["ts_raw"].tolist()[-2:] == [500, 510]
    assert {"CORRUPT_REGION", "SV_RESYNC"} <= {d.code for d in tr.diagnostics}


def test_truncated_final_packet_and_padding(tmp_path: Path) -> None:
    enc = Encoder()
    _base(enc)
    data = enc.bytes()
    cut = _write(tmp_path, data + b"\x02\x85")
    with pytest.raises(TraceCorruptError) as ei:  # on_corrupt="raise" raises, like every reader
        read_systemview(cut)
    assert ei.value.code == "TRUNCATED" and ei.value.offset == len(data)
    tr = read_systemview(cut, on_corrupt="skip")
    assert [d.code for d in tr.diagnostics] == ["TRUNCATED"]
    assert tr.diagnostics[0].severity == Severity.DATA_LOSS
    tr = read_systemview(_write(tmp_path, data + b"\x00" * 3))
    assert "TRAILING_PADDING" in [d.code for d in tr.diagnostics]


def test_not_systemview(tmp_path: Path) -> None:
    p = _write(tmp_path, b"PK\x03\x04 definitely a zip file")
    assert not sniff(p.read_bytes(), p)
    with pytest.raises(TraceFormatError) as ei:
        read_systemview(p)
    assert ei.value.code == "SV_BAD_MAGIC" and "expected a SystemView recording" in str(ei.value)
    p = _write(tmp_path, b";\n; Version SEGGER SystemViewer\n; no end")
    with pytest.raises(TraceFormatError) as ei:
        read_systemview(p)
    assert ei.value.code == "SV_BAD_HEADER"


def test_description_file_and_tables(tmp_path: Path) -> None:
    text = ("# FreeRTOS\nNamedType Bool 0=False 1=True\n34 vTaskDelay xTicksToDelay=%u\n"
            "49 xQueueReceive xQueue=%I pvBuffer=%p xTicksToWait=%u | Returns %Bool\n")
    t = parse_description(text)
    assert t.label(49) == "xQueueReceive" and t.events[49].returns == "%Bool"
    assert t.events[49].args[0] == ("xQueue", "%I")
    assert t.named_types["Bool"] == {0: "False", 1: "True"}
    with pytest.raises(TraceFormatError):
        parse_description("abc def\n")
    seg, esp = load_bundled("freertos_segger"), load_bundled("freertos_espidf")
    assert seg.label(35) == "vTaskDelay" and esp.label(34) == "vTaskDelay"
    assert choose_table({"O": "FreeRTOS", "D": "ESP32"}) == "freertos_espidf"
    assert choose_table({"O": "FreeRTOS", "D": "STM32F429"}) == "freertos_segger"
    assert choose_table({"O": "Zephyr"}) == "zephyr"
    assert choose_table({"O": "uCOS-III"}) == "ucos3"
    assert choose_table({"O": "uCOS-II"}) == "ucos2"
    assert choose_table({"O": "embOS"}) is None
    # a user description overrides the bundled choice
    enc = Encoder()
    _base(enc)
    enc.long(49, 100, enc.vals(1, 2, 3))
    d = tmp_path / "SYSVIEW_FreeRTOS.txt"
    d.write_text(text)
    tr = read_systemview(_write(tmp_path, enc.bytes()), description=d)
    assert tr.meta.extra["api_names"] == {"49": "xQueueReceive"}
    with pytest.raises(ValueError, match="description"):
        read_systemview(_write(tmp_path, enc.bytes()), description="nonesuch")


# -- properties -----------------------------------------------------------------------------------

@given(st.binary(max_size=2048))
def test_arbitrary_bytes_only_raise_trace_error(tmp_path_factory: pytest.TempPathFactory,
                                                blob: bytes) -> None:
    p = tmp_path_factory.mktemp("fuzz") / "f.SVDat"
    variants = (blob, b"\x00" * 10 + b"\x0a" + blob, HEADER_OPENOCD + b"\x00" * 10 + blob,
                b";\n; SEGGER\n; ESP_Extension\n;\n" + b"\x00" * 10 + b"\x0a" + blob,
                b";\n; Offset Core0 0\n; Offset Core1 13\n;\n" + b"\x00" * 10 + b"\x0a" + blob)
    for data in variants:
        p.write_bytes(data)
        for policy in ("raise", "skip"):
            try:
                tr = read_systemview(p, on_corrupt=policy)
            except TraceError:
                continue
            assert validate(tr) == []


@given(st.integers(0, 2**32 - 1))
def test_varint_property(v: int) -> None:
    enc = Encoder()
    enc.fixed(10, 0)
    enc.fixed(12, 0, v)  # SYSTIME_CYCLES carries one varint
    import trace_parsers.systemview.decode as dec
    r = dec.decode_stream(bytes(enc.buf), 0, 0, len(enc.buf))
    assert int(r.p0[1]) == v
    assert len(varint(v)) == max(1, -(-v.bit_length() // 7))


@given(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=200))
def test_delta_accumulation_property(deltas: list[int]) -> None:
    import trace_parsers.systemview.decode as dec
    buf = bytearray(b"\x00" * 10 + b"\x0a\x00")
    for d in deltas:
        buf += b"\x11" + varint(d)  # IDLE packets
    r = dec.decode_stream(bytes(buf), 0, 0, len(buf))
    assert r.ts[1:].tolist() == np.cumsum(np.array(deltas, dtype=np.uint64)).tolist()


def test_no_init_means_ticks(tmp_path: Path) -> None:
    enc = Encoder()
    enc.fixed(10, 100)
    enc.fixed(17, 350)
    tr = read_systemview(_write(tmp_path, enc.bytes()))
    assert tr.meta.tick_hz is None and tr.meta.ts_unit == "ticks"
    assert tr.events["ts"].tolist() == [0, 250]
    assert [d.code for d in tr.diagnostics] == ["SV_NO_INIT"]
    assert validate(tr) == []


def test_multicore_cut_before_a_later_core_keeps_the_first(tmp_path: Path) -> None:
    enc = Encoder()
    _base(enc)
    body = enc.bytes()
    hdr = b";\n; Version     SEGGER SystemViewer V3.60\n; Offset Core0 0\n; Offset Core1 999999\n;\n"
    p = _write(tmp_path, hdr + body)
    with pytest.raises(TraceCorruptError) as ei:
        read_systemview(p)
    assert ei.value.code == "TRUNCATED" and "Core1" in str(ei.value)
    assert ei.value.offset == len(hdr + body)
    tr = read_systemview(p, on_corrupt="skip")
    whole = read_systemview(_write(tmp_path, body), on_corrupt="skip")
    assert len(tr.events) == len(whole.events) > 0  # core 0 is intact
    lost = [d for d in tr.diagnostics if d.code == "TRUNCATED"]
    assert len(lost) == 1 and lost[0].offset == len(hdr + body) and "Core1" in lost[0].message
