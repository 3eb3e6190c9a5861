"""The whole-trace events export and the chunked one (``crosstrace events``) write the same schema,
name columns typed string included, for a trace with events and for one without."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from analyzers.export.events_chunked import _NAME_COLUMNS, write_events_chunked
from analyzers.export.events_table import write_events
from trace_parsers import open_trace
from trace_parsers.chunked import slice_trace

from ...conftest import CAPTURES

CAPTURE = CAPTURES / "qemu_netduinoplus2" / "freertos" / "isr_latency" / "ref" / "trace.SVDat"


def _schemas(trace, tmp_path: Path) -> tuple[pa.Schema, pa.Schema]:
    whole, chunked = tmp_path / "whole.parquet", tmp_path / "chunked.parquet"
    write_events(trace, whole)
    assert write_events_chunked(lambda: slice_trace(trace, 5), chunked, rows=3) == len(trace)
    return pq.read_schema(whole), pq.read_schema(chunked)


@pytest.mark.parametrize("events", ["all", "none"])
def test_whole_and_chunked_schemas_are_equal(tmp_path: Path, events: str) -> None:
    tr = open_trace(CAPTURE)
    if events == "none":
        tr = tr.select(np.zeros(len(tr), dtype=bool))
    whole, chunked = _schemas(tr, tmp_path)
    assert [whole.field(n).type for n in _NAME_COLUMNS] == [pa.string()] * len(_NAME_COLUMNS)
    assert chunked.equals(whole, check_metadata=True)
    assert all(chunked.field(n).metadata == whole.field(n).metadata for n in whole.names)


def test_a_column_typed_otherwise_is_seen(tmp_path: Path) -> None:
    """The comparison above can fail: a name column of another type differs."""
    tr = open_trace(CAPTURE)
    whole, chunked = _schemas(tr, tmp_path)
    i = whole.get_field_index("kind_name")
    other = whole.set(i, pa.field("kind_name", pa.null()))
    assert not chunked.equals(other, check_metadata=True)
