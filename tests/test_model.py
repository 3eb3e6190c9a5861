"""The common event model: schema, unit conversion, exports, generated docs."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from trace_parsers.errors import CODES, TraceCorruptError, TraceFormatError, check_option, handle_corrupt
from trace_parsers.model import (
    EVENT_COLUMNS,
    EVENT_DTYPE,
    VALUE_NULL,
    CtxType,
    EventKind,
    Task,
    Trace,
    TraceMeta,
    empty_events,
    fill_ts,
    schema_markdown,
    ticks_to_ns,
    validate,
)

from .conftest import ROOT


def _trace(n: int = 3, hz: int | None = 180_000_000) -> Trace:
    ev = empty_events(n)
    ev["ts_raw"] = np.arange(n, dtype=np.uint64) * 180 + 1000
    ev["kind"] = EventKind.MARK
    ev["ctx_type"] = CtxType.TASK
    ev["ctx_id"] = 0
    fill_ts(ev, hz, origin_raw=1000)
    return Trace(ev, TraceMeta("test", tick_hz=hz, origin_raw=1000), tasks=[Task(0, "main", 3)])


def test_ticks_to_ns_exact_integer() -> None:
    assert ticks_to_ns(np.array([180_000_000 * 100], dtype=np.uint64), 180_000_000).tolist() == [
        100_000_000_000]
    # 1 tick at 180 MHz = 5.555.. ns -> truncated to 5
    assert ticks_to_ns(np.array([1], dtype=np.uint64), 180_000_000).tolist() == [5]


@given(st.integers(0, 2**63 // 1_000_000_000 * 10_000), st.integers(1, 10**10))
def test_ticks_to_ns_matches_python_integers(ticks: int, hz: int) -> None:
    expect = ticks * 1_000_000_000 // hz
    if expect < 2**63:
        got = int(ticks_to_ns(np.array([ticks], dtype=np.uint64), hz)[0])
        assert got == expect


def test_ticks_to_ns_rejects_bad_rate() -> None:
    with pytest.raises(ValueError):
        ticks_to_ns(np.array([1], dtype=np.uint64), 0)


def test_trace_valid_and_exports() -> None:
    tr = _trace()
    assert validate(tr) == []
    assert tr.events["ts"].tolist() == [0, 1000, 2000]
    tab = tr.to_arrow()
    assert tab.schema.metadata[b"schema_version"] == b"1"
    assert [f.name for f in tab.schema] == [c.name for c in EVENT_COLUMNS]
    assert tab.schema.field("ts").metadata[b"unit"] == b"ns"
    assert tab.column("value").null_count == 3
    df = tr.to_pandas()
    assert df["value"].isna().all() and len(df) == 3
    pl = tr.to_polars()
    assert pl.height == 3
    assert tr.side_table("tasks").column("name").to_pylist() == ["main"]
    assert tr.counts_by_kind() == {"MARK": 3}


def test_validate_reports_problems() -> None:
    tr = _trace()
    tr.events["ts"][0] = 5_000
    probs = validate(tr)
    assert any("sorted" in p for p in probs)
    tr2 = _trace()
    tr2.events["ctx_id"][1] = 7
    assert any("unknown task" in p for p in validate(tr2))


def test_ticks_unit_when_rate_unknown() -> None:
    tr = _trace(hz=None)
    assert tr.meta.ts_unit == "ticks"
    assert tr.events["ts"].tolist() == [0, 180, 360]
    assert validate(tr) == []


def test_dtype_is_generated_from_columns() -> None:
    assert EVENT_DTYPE.names == tuple(c.name for c in EVENT_COLUMNS)
    ev = empty_events(1)
    assert ev["value"][0] == VALUE_NULL and ev["ctx_id"][0] == -1


def test_errors_carry_code_path_offset() -> None:
    e = TraceCorruptError("expected 32-byte event, found 7 bytes", code="TRX_TRUNCATED",
                          path="x.trx", offset=0x1A2F)
    assert "x.trx:0x1a2f" in str(e) and "ERR:TRX_TRUNCATED" in str(e)
    assert e.to_diagnostic().severity.name == "DATA_LOSS"
    assert all(code.isupper() for code in CODES)
    with pytest.raises(KeyError):
        TraceFormatError("x", code="NOT_DECLARED")


def test_on_corrupt_policy() -> None:
    err = TraceCorruptError("bad", code="TRUNCATED", offset=4)
    diags: list = []
    with pytest.raises(TraceCorruptError):
        handle_corrupt(err, "raise", diags)
    handle_corrupt(err, "skip", diags)
    assert len(diags) == 1 and diags[0].offset == 4
    with pytest.warns(UserWarning, match="bad"):
        handle_corrupt(err, "warn", diags)
    handle_corrupt(err, "recover", diags)  # a truncation: recorded, not raised
    assert len(diags) == 3 and diags[-1].code == "TRUNCATED"
    with pytest.raises(TraceCorruptError):  # anything else still raises under "recover"
        handle_corrupt(TraceCorruptError("bad", code="CORRUPT_REGION", offset=9), "recover", diags)
    with pytest.raises(ValueError, match="Allowed values are 'raise', 'recover', 'warn' and 'skip'"):
        handle_corrupt(err, "ignore", diags)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="but got 'x' instead"):
        check_option("mode", "x", ("a", "b"))


def test_schema_doc_is_fresh() -> None:
    assert (ROOT / "docs" / "schema.md").read_text() == schema_markdown(), "run `make docs`"


def test_import_layering() -> None:
    """trace_parsers never imports analyzers; importing it pulls in no heavy libraries."""
    code = ("import sys, trace_parsers, trace_parsers.model, trace_parsers.errors; "
            "bad = [m for m in ('analyzers', 'pandas', 'polars', 'pyarrow', 'matplotlib') "
            "if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    for path in (ROOT / "trace_parsers").rglob("*.py"):
        text = path.read_text()
        assert "import analyzers" not in text and "from analyzers" not in text, path
