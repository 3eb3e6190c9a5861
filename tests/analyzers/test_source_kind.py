"""``TraceMeta.source_kind``: every reader declares whether it read a trace or a logic capture, and
the analyzers decide from that field alone (issue 14: nothing branches on "is this a logic capture"
by sniffing channels or the clock domain)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from analyzers import _synth as S
from analyzers._io import load_trace, save_trace
from analyzers.sites import DEFAULT_SITES, is_logic, site_events
from tests.conftest import corpus_dir
from tests.trace_parsers.logic.writers import write_saleae_binary_v0, write_saleae_csv, write_vcd
from trace_parsers import open_trace
from trace_parsers.model import Channel, Trace, TraceMeta

EDGES = [np.array([10, 20, 30]), np.array([15])]


def _logic_files(tmp: Path) -> dict[str, Path]:
    from trace_parsers.sigrok.writer import write_sr

    files = {"sigrok": write_sr(tmp / "c.sr", samplerate=1_000_000, channels=["a", "b"], edges=EDGES,
                                initial=[0, 0], total_samples=40)}
    write_vcd(tmp / "c.vcd", ["a", "b"], [0, 0], EDGES, total=40)
    write_saleae_csv(tmp / "c.csv", ["a", "b"], [0, 0], EDGES, total_ns=40)
    write_saleae_binary_v0(tmp / "c.bin", 0, np.array([1e-6, 2e-6]), 0.0, 3e-6)
    files.update(vcd=tmp / "c.vcd", saleae_csv=tmp / "c.csv", saleae_binary=tmp / "c.bin")
    return files


def test_logic_readers_declare_logic(tmp_path: Path) -> None:
    for fmt, path in _logic_files(tmp_path).items():
        tr = open_trace(path, samplerate=1_000_000) if fmt == "saleae_binary" else open_trace(path)
        assert (tr.meta.source_format, tr.meta.source_kind) == (fmt, "logic")
        assert is_logic(tr)
    dsl = corpus_dir("logic") / "dslogic_demo_uart_40mhz.dsl"
    assert open_trace(dsl).meta.source_kind == "logic"


def test_trace_readers_declare_trace(tmp_path: Path) -> None:
    from tests.trace_parsers.ctf import builders
    from tests.trace_parsers.ctf.helpers import make_trace

    sv = open_trace(corpus_dir("systemview") / "abdo454_stm32f412_freertos_v350_raw.SVDat")
    trx = open_trace(corpus_dir("tracex") / "tracex-sample_demo_threadx.trx")
    ctf = open_trace(make_trace(tmp_path, "zephyr_old.tsdl", {"channel0_0": builders.zephyr_old_stream()[0]}))
    for tr, fmt in ((sv, "systemview"), (trx, "tracex"), (ctf, "ctf")):
        assert (tr.meta.source_format, tr.meta.source_kind) == (fmt, "trace")
        assert not is_logic(tr)


def test_logic_capture_without_channels_is_still_logic() -> None:
    cap = S.to_capture(S.periodic(n=5))
    bare = Trace(cap.events[:0], cap.meta)
    assert not bare.channels and is_logic(bare)
    # the site lookup takes the logic path (no channel matches: no occurrences, not trace markers)
    assert site_events(bare, DEFAULT_SITES).source == "logic"


def test_trace_given_channels_is_never_logic() -> None:
    sv = open_trace(corpus_dir("systemview") / "abdo454_stm32f412_freertos_v350_raw.SVDat")
    withch = Trace(sv.events, sv.meta.replace(clock_domain="la_samples"), tasks=sv.tasks, isrs=sv.isrs,
                   channels=[Channel(0, "D0", 0)])
    assert not is_logic(withch)
    assert site_events(withch, DEFAULT_SITES).source == "trace"


def test_source_kind_is_validated() -> None:
    with pytest.raises(ValueError, match="'source_kind'.*'trace' and 'logic'.*'pins'"):
        TraceMeta("x", source_kind="pins")


def test_event_file_round_trip_and_legacy_files(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    cap = S.to_capture(S.periodic(n=5))
    save_trace(cap, tmp_path / "c.ctev.parquet")
    assert load_trace(tmp_path / "c.ctev.parquet").meta.source_kind == "logic"
    # a file written before the field existed: the kind comes from the reader that wrote it
    for meta, kind in ((cap.meta, "logic"), (TraceMeta("systemview"), "trace"),
                       (TraceMeta("sigrok"), "logic"), (TraceMeta("vcd"), "logic")):
        save_trace(Trace(cap.events, meta, channels=cap.channels), tmp_path / "old.ctev.parquet")
        t = pq.read_table(tmp_path / "old.ctev.parquet")
        md = dict(t.schema.metadata)
        d = json.loads(md[b"crosstrace.meta"])
        del d["source_kind"]
        md[b"crosstrace.meta"] = json.dumps(d).encode()
        pq.write_table(t.replace_schema_metadata(md), tmp_path / "old.ctev.parquet")
        assert load_trace(tmp_path / "old.ctev.parquet").meta.source_kind == kind, meta.source_format
