"""CTF reader on hand-written metadata: the model mapping, both Zephyr layouts, TSDL features."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from trace_parsers import detect_format, open_trace
from trace_parsers.ctf import read_ctf, read_raw, sniff
from trace_parsers.ctf.convert import kind_of
from trace_parsers.errors import TraceFormatError
from trace_parsers.model import CtxType, EventKind, validate

from . import builders as B
from .helpers import make_trace

K = EventKind


@pytest.fixture
def old(tmp_path: Path) -> Path:
    return make_trace(tmp_path, "zephyr_old.tsdl", {"channel0_0": B.zephyr_old_stream()[0]})


@pytest.fixture
def percpu(tmp_path: Path) -> Path:
    return make_trace(tmp_path, "percpu.tsdl", B.percpu_streams())


def test_old_layout_model(old: Path) -> None:
    tr = read_ctf(old)
    assert validate(tr) == []
    ev = tr.events
    _, expected = B.zephyr_old_stream()
    assert len(tr) == len(expected)
    # 32-bit ns timestamps unrolled over the wrap, implicit 1 GHz clock: ts == ts_raw - origin
    wrap = next(i for i in range(1, len(expected)) if expected[i][0] < expected[i - 1][0])
    raw = [t + (1 << 32 if i >= wrap else 0) for i, (t, _) in enumerate(expected)]
    assert ev["ts_raw"].tolist() == raw
    assert ev["ts"].tolist() == [r - raw[0] for r in raw]
    assert tr.meta.tick_hz == 1_000_000_000 and tr.meta.rtos == "zephyr"
    assert tr.meta.source_format == "ctf" and tr.meta.source_version == "1.8"
    codes = {d.code for d in tr.diagnostics}
    assert codes == {"CTF_IMPLICIT_CLOCK", "CTF_CLOCK_WRAPS"}
    # side tables: names (thread_name_set renames "unknown"), priorities, handles
    tasks = {t.name: t for t in tr.tasks}
    assert set(tasks) == {"worker", "main", "idle"}
    assert tasks["worker"].native_handle == B.WORKER and tasks["worker"].priority == -3
    assert [(m.id, m.name) for m in tr.markers] == [(7, "site")]
    kinds = [K(k).name for k in ev["kind"]]
    assert kinds[:10] == ["TASK_CREATE", "OTHER", "TASK_SWITCH_OUT", "TASK_SWITCH_IN", "API_CALL",
                          "API_CALL", "TASK_BLOCK", "TASK_SWITCH_OUT", "TASK_SWITCH_IN", "IDLE"]
    assert kinds[10:16] == ["ISR_ENTER", "TASK_READY", "ISR_TO_SCHED", "TASK_SWITCH_OUT",
                            "TASK_SWITCH_IN", "API_RETURN"]
    w = tasks["worker"].ctx_id
    assert ev["target_id"][0] == w and ev["target_id"][6] == w and ev["target_id"][11] == w
    # context: worker runs after its switch-in, the ISR rows are ISR context, idle thread, then IDLE
    assert (ev["ctx_type"][3], ev["ctx_id"][3]) == (CtxType.TASK, w)
    assert ev["ctx_type"][10] == CtxType.ISR and ev["ctx_id"][10] == -1
    assert ev["ctx_type"][8] == CtxType.TASK and ev["ctx_id"][8] == tasks["idle"].ctx_id
    assert ev["ctx_type"][9] == CtxType.IDLE  # Zephyr's idle event: the CPU idles
    # payloads: named_event -> MARK(marker=arg0, value=arg1); *_exit -> API_RETURN(ret); src ids/offsets
    mark = np.flatnonzero(ev["kind"] == K.MARK)[0]
    assert (ev["marker"][mark], ev["value"][mark], ev["src_id"][mark]) == (7, 1, 0x62)
    rets = ev["value"][ev["kind"] == K.API_RETURN].tolist()
    assert rets == [0, -11]
    assert ev["value"][4] == B.SEM  # API_CALL value = first integer field (the object)
    assert ev["src_offset"].tolist()[:3] == [0, 29, 58]


def test_percpu_layout_model(percpu: Path) -> None:
    tr = read_ctf(percpu)
    assert validate(tr) == []
    ev = tr.events
    assert tr.meta.cores == 2 and tr.meta.tick_hz == 1_000_000_000
    assert np.all(np.diff(ev["ts"]) >= 0)  # two CPUs merged in time order
    assert ev["ts_raw"][0] == 1_000 and tr.meta.origin_raw == 1_000
    assert sorted(set(ev["core"].tolist())) == [0, 1]
    ovf = np.flatnonzero(ev["kind"] == K.OVERFLOW)
    assert len(ovf) == 1 and ev["core"][ovf[0]] == 1 and ev["value"][ovf[0]] == 3
    disc = [d for d in tr.diagnostics if d.code == "CTF_DISCARDED"]
    assert len(disc) == 1 and disc[0].count == 3 and disc[0].offset == 256
    # per-core context: CPU 1 runs main, then the OVERFLOW makes it unknown until the next switch-in
    core1 = ev[ev["core"] == 1]
    names = {t.ctx_id: t.name for t in tr.tasks}
    assert names[int(core1["ctx_id"][0])] == "main"
    assert core1["ctx_type"][1] == CtxType.ISR
    mark = ev[ev["kind"] == K.MARK]
    assert (int(mark["marker"][0]), int(mark["value"][0]), int(mark["src_id"][0])) == (3, 9, 0x162)
    assert tr.meta.extra["env"]["tracer_name"] == "crosstrace-test"
    assert {s["cpus"][0] for s in tr.meta.extra["streams"].values()} == {0, 1}


def test_features_layout(tmp_path: Path) -> None:
    d = make_trace(tmp_path, "features.tsdl", {"stream0": B.features_stream()})
    raw = read_raw(d)
    r = raw.records
    assert [x.name for x in r] == ["mixed", "far", "mixed", "mixed", "far", "mixed"]
    f = r[0].fields
    assert (f["small"], f["mid"], f["vals"], f["msg"], f["x"]) == (-3, 5000, [1, 2, 65535], "héllo", 2.5)
    assert f["e"] == 11 and f["e"].label == "C" and f["nested"] == {"a": 0xAB, "b": 0xDEADBEEF}
    assert r[0].stream_context == {"vtid": -7}
    # 27-bit compact clock: 2**27 + 20 (extended), then 30 (no wrap), then 10 (wrap)
    assert [x.ts for x in r[:4]] == [1000, (1 << 27) + 20, (1 << 27) + 30, (2 << 27) + 10]
    assert r[1].eid == 300 and r[4].ts == 1 << 40
    tr = read_ctf(d)
    assert tr.meta.tick_hz == 1_000_000 and tr.meta.extra["clocks"]["mono"]["offset_s"] == 100
    assert tr.events["ts"][1] - tr.events["ts"][0] == ((1 << 27) + 20 - 1000) * 1000


@pytest.mark.parametrize("name, kind", [
    ("thread_switched_in", K.TASK_SWITCH_IN), ("isr_exit_to_scheduler", K.ISR_TO_SCHED),
    ("thread_sched_pend", K.TASK_BLOCK), ("thread_sched_ready", K.TASK_READY),
    ("semaphore_take_blocking", K.API_CALL), ("k_sleep_exit", K.API_RETURN),
    ("msgq_peek", K.API_CALL), ("thread_info", K.OTHER), ("lttng_custom", K.OTHER)])
def test_kind_of(name: str, kind: EventKind) -> None:
    assert kind_of(name) == kind


@pytest.fixture
def no_default_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("CROSSTRACE_CTF_METADATA", "ZEPHYR_BASE", "CT_DEPS_DIR"):
        monkeypatch.delenv(var, raising=False)


def test_open_trace_recognises_every_shape(old: Path, percpu: Path, tmp_path: Path,
                                           no_default_metadata: None) -> None:
    for p in (old, old / "metadata", old / "channel0_0", percpu / "channel0_1"):
        assert detect_format(p) == "ctf", p
    assert len(open_trace(percpu / "channel0_1")) == 7  # one stream: that CPU only
    lone = tmp_path / "lone"
    lone.mkdir()
    (lone / "channel0_0").write_bytes(B.zephyr_old_stream()[0])
    assert not sniff(b"\0" * 16, lone / "channel0_0")
    with pytest.raises(TraceFormatError) as e:
        read_ctf(lone / "channel0_0")
    assert e.value.code == "CTF_NO_METADATA"
    assert len(read_ctf(lone / "channel0_0", metadata=old / "metadata")) == 20
    with pytest.raises(TraceFormatError) as e:
        detect_format(lone)
    assert e.value.code == "CTF_NO_METADATA"  # was IO_ERROR "Is a directory"
    assert "channel0_0" in str(e.value) and "'metadata'" in str(e.value)
    (lone / "channel0_0").rename(lone / "notes.txt")
    with pytest.raises(TraceFormatError) as e:
        detect_format(lone)
    assert e.value.code == "FMT_UNKNOWN" and "a folder, not a recording file" in str(e.value)


def test_capture_folder_companions_are_not_streams(old: Path) -> None:
    (old / "run.json").write_text("{}")
    (old / ".hidden").write_bytes(b"\1\2")
    assert len(read_ctf(old)) == 20


def test_bad_packet_magic_is_a_format_error(percpu: Path) -> None:
    s = percpu / "channel0_0"
    s.write_bytes(struct.pack("<I", 0xDEADBEEF) + s.read_bytes()[4:])
    with pytest.raises(TraceFormatError) as e:
        read_ctf(percpu)
    assert e.value.code == "CTF_BAD_MAGIC" and e.value.offset == 0


def test_stream_without_metadata_uses_the_default(old: Path, tmp_path: Path, no_default_metadata: None,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A capture's trace.ctf (Zephyr's metadata is not stored with it) is recognised and read with
    $CROSSTRACE_CTF_METADATA (or ZEPHYR_BASE / CT_DEPS_DIR) when its first bytes decode with it."""
    cap = tmp_path / "capture"
    cap.mkdir()
    stream = cap / "trace.ctf"
    stream.write_bytes(B.zephyr_old_stream()[0])
    (cap / "run.json").write_text("{}")
    with pytest.raises(TraceFormatError):
        detect_format(stream)
    monkeypatch.setenv("CROSSTRACE_CTF_METADATA", str(old / "metadata"))
    assert detect_format(stream) == "ctf"
    tr = open_trace(stream)
    assert len(tr) == 20 and tr.meta.extra["metadata"]["path"] == str(old / "metadata")
    junk = cap / "junk.bin"  # bytes that do not decode with the default metadata
    junk.write_bytes(bytes(range(7, 256)) * 20)
    with pytest.raises(TraceFormatError):
        detect_format(junk)
    monkeypatch.setenv("CROSSTRACE_CTF_METADATA", str(cap / "missing"))
    with pytest.raises(TraceFormatError) as e:
        read_ctf(stream)
    assert e.value.code == "CTF_NO_METADATA"
