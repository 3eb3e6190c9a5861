"""Columnar event storage (trace_parsers.columns): every storage gives the same logical table.

The reference is always the ``EVENT_DTYPE`` row table: a Columns built with narrow, constant or
sparse storage must equal, column for column and row for row, the rows it stands for, under every
kind of indexing the analyzers use (names, slices, masks, integer indices, ``take``).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trace_parsers import columns as colmod
from trace_parsers.columns import Columns, Const, Sparse, concat
from trace_parsers.model import EVENT_COLUMNS, EVENT_DTYPE, VALUE_NULL, Trace, TraceMeta, empty_events

NAMES = [c.name for c in EVENT_COLUMNS]


def _rows(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    ev = empty_events(n)
    ev["ts"] = np.cumsum(rng.integers(0, 50, n))
    ev["ts_raw"] = ev["ts"].astype(np.uint64) + np.uint64(2**40)
    ev["kind"] = rng.integers(1, 20, n)
    ev["ctx_type"] = rng.integers(0, 4, n)
    ev["ctx_id"] = rng.integers(-1, 100, n)
    ev["marker"] = rng.integers(0, 3, n)
    ev["src_id"] = rng.integers(0, 40, n)
    ev["src_offset"] = np.arange(n, dtype=np.uint64) * 5
    has = rng.random(n) < 0.3
    ev["value"][has] = rng.integers(-(2**40), 2**40, int(has.sum()))
    tgt = rng.random(n) < 0.2
    ev["target_id"][tgt] = rng.integers(0, 9, int(tgt.sum()))
    return ev


def _narrow(a: np.ndarray) -> np.ndarray:
    """``a`` in the narrowest integer dtype that holds its values."""
    lo, hi = (int(a.min()), int(a.max())) if a.size else (0, 0)
    return np.ascontiguousarray(a).astype(np.result_type(np.min_scalar_type(lo), np.min_scalar_type(hi)))


def _compact(rows: np.ndarray) -> Columns:
    """The storage the fused SystemView reader makes: narrow arrays, constants and sparse."""
    n = len(rows)
    s: dict = {}
    for name in NAMES:
        col = rows[name]
        default = colmod.DEFAULTS[name]
        if name in ("value", "target_id"):
            idx = np.flatnonzero(col != default).astype(np.uint32)
            s[name] = Sparse(idx, _narrow(col[idx]), n, default)
        elif name == "core":
            s[name] = Const(int(col[0]) if n else 0, n)
        elif name in ("ts", "ts_raw"):
            s[name] = np.ascontiguousarray(col)
        else:
            s[name] = _narrow(col)
    return Columns(s, n)


def _equal(cols: Columns, rows: np.ndarray) -> None:
    assert len(cols) == len(rows)
    for name in NAMES:
        got = cols[name]
        assert got.dtype == rows.dtype[name], name
        np.testing.assert_array_equal(got, rows[name], err_msg=name)
    assert cols.to_records().tobytes() == np.ascontiguousarray(rows).tobytes()


def test_compact_storage_is_smaller_and_equal():
    rows = _rows(5000)
    cols = _compact(rows)
    _equal(cols, rows)
    assert cols.nbytes < 0.6 * rows.nbytes
    d = cols.describe()
    assert d["core"] == "const 0" and d["value"].startswith("sparse") and cols.storage("ctx_id").itemsize < 4


@settings(max_examples=150, deadline=None)
@given(n=st.integers(0, 300), seed=st.integers(0, 2**31), data=st.data())
def test_every_indexing_equals_the_rows(n, seed, data):
    rows = _rows(n, seed)
    cols = _compact(rows)
    start = data.draw(st.integers(-n - 2, n + 2))
    stop = data.draw(st.integers(-n - 2, n + 2))
    step = data.draw(st.sampled_from([None, 1, 2, 3, -1]))
    sl = slice(start, stop, step)
    _equal(cols[sl], rows[sl])
    mask = np.random.default_rng(seed).random(n) < 0.5
    _equal(cols[mask], rows[mask])
    idx = np.random.default_rng(seed + 1).integers(-n, n, size=n // 2) if n else np.zeros(0, int)
    _equal(cols[idx], rows[idx])
    _equal(cols.take(idx % max(n, 1)), rows.take(idx % max(n, 1)))
    _equal(cols[mask][1:], rows[mask][1:])  # indexing the result again
    if n:
        i = data.draw(st.integers(-n, n - 1))
        assert cols[i] == rows[i]


def test_sparse_mask_fault_is_caught(monkeypatch):
    """A mask that forgets to renumber the sparse rows (keeps the old row numbers) must fail."""
    rows = _rows(400, 3)
    cols = _compact(rows)
    mask = np.random.default_rng(1).random(400) < 0.5

    def no_renumber(s, key, n_new):
        if isinstance(s, Sparse) and not isinstance(key, slice) and key.dtype == np.bool_:
            keep = key[s.idx] & (s.idx < n_new)
            return Sparse(s.idx[keep], s.val[keep], n_new, s.default)
        return real(s, key, n_new)

    real = colmod._take
    monkeypatch.setattr(colmod, "_take", no_renumber)
    with pytest.raises(AssertionError):
        _equal(cols[mask], rows[mask])


def test_sparse_slice_fault_is_caught(monkeypatch):
    """A slice that does not shift the sparse rows to the slice's start must fail."""
    rows = _rows(400, 4)
    cols = _compact(rows)
    real = colmod._take

    def no_shift(s, key, n_new):
        if isinstance(s, Sparse) and isinstance(key, slice):
            start, stop, _ = key.indices(s.n)
            lo, hi = np.searchsorted(s.idx, [start, stop])
            keep = s.idx[lo:hi] < n_new
            return Sparse(s.idx[lo:hi][keep], s.val[lo:hi][keep], n_new, s.default)
        return real(s, key, n_new)

    monkeypatch.setattr(colmod, "_take", no_shift)
    with pytest.raises(AssertionError):
        _equal(cols[100:300], rows[100:300])


def test_widened_columns_are_read_only_and_writes_to_storage_stay():
    rows = _rows(50)
    cols = _compact(rows)
    with pytest.raises(ValueError, match="read-only"):
        cols["ctx_id"][0] = 5  # a widened copy: the write would be lost, so it raises
    with pytest.raises(ValueError, match="read-only"):
        cols["value"][0] = 5
    cols["ctx_id"] = 7  # setting the column replaces its storage
    assert cols["ctx_id"].dtype == np.int32 and (cols["ctx_id"] == 7).all()
    cols["ts"][0] = -1  # full-width storage: written in place
    assert cols.storage("ts")[0] == -1


def test_columns_of_rows_view_them():
    rows = _rows(20)
    cols = Columns.from_records(rows)
    cols["ts"] = 11  # in place: the rows see it (as rows["ts"] = 11 would)
    assert (rows["ts"] == 11).all()
    assert cols["ctx_id"] is not None and np.shares_memory(cols["ctx_id"], rows)


def test_concat_and_records():
    a, b = _rows(30, 1), _rows(20, 2)
    b["core"] = 1
    got = concat([_compact(a), _compact(b)])
    _equal(got, np.concatenate([a, b]))
    assert isinstance(got.storage("value"), Sparse)
    assert not isinstance(got.storage("core"), Const)  # the constants differ
    assert np.asarray(got).dtype == EVENT_DTYPE
    same = concat([_compact(a), _compact(a)])
    assert isinstance(same.storage("core"), Const)


def test_from_specs_views_dense_data():
    n = 3
    dense = {"kind": "dense", "data": bytearray(np.arange(n, dtype=np.int64).tobytes()), "dtype": "<i8"}
    specs = {c: {"kind": "const", "value": colmod.DEFAULTS[c], "len": n} for c in NAMES}
    specs["ts"] = dense
    specs["value"] = {"kind": "sparse", "len": n,
                      "idx": {"kind": "dense", "data": bytes([2]), "dtype": "u1"},
                      "val": {"kind": "const", "value": -5, "len": 1}}
    cols = colmod.from_specs(specs, n)
    assert cols["ts"].tolist() == [0, 1, 2] and cols["value"].tolist() == [VALUE_NULL, VALUE_NULL, -5]
    dense["data"][0] = 9  # a view of the bytes, not a copy
    assert cols["ts"][0] == 9
    with pytest.raises(ValueError, match="unknown storage kind"):
        colmod.from_specs({**specs, "ts": {"kind": "zigzag"}}, n)


def test_trace_holds_columns_until_rows_are_asked_for():
    rows = _rows(100)
    tr = Trace(_compact(rows), TraceMeta("x"))
    assert tr.columnar and len(tr) == 100
    assert tr.duration == int(rows["ts"][-1] - rows["ts"][0])
    assert tr.counts_by_kind() == Trace(rows.copy(), TraceMeta("x")).counts_by_kind()
    sel = tr.select(tr.columns["kind"] == 3)
    assert sel.columnar and np.array_equal(sel.events, rows[rows["kind"] == 3])
    assert tr.to_arrow().equals(Trace(rows.copy(), TraceMeta("x")).to_arrow())
    ev = tr.events  # the row table, built once; the columns then view it
    assert not tr.columnar and ev.tobytes() == rows.tobytes() and tr.events is ev
    assert np.shares_memory(tr.columns["ts"], ev)
    with pytest.raises(TypeError, match="EVENT_DTYPE or be Columns"):
        Trace(np.zeros(3), TraceMeta("x"))


def test_bad_indexing_is_a_clear_error():
    cols = _compact(_rows(5))
    with pytest.raises(KeyError, match="no column 'tss'"):
        cols["tss"]
    with pytest.raises(IndexError, match="out of bounds"):
        cols[5]
    with pytest.raises(IndexError, match="boolean index"):
        cols[np.array([True])]
    with pytest.raises(IndexError, match="out of bounds"):
        cols[np.array([7])]
    with pytest.raises(ValueError, match="has 4 rows"):
        Columns({**{c: cols.storage(c) for c in NAMES}, "kind": np.zeros(4, np.uint8)}, 5)


def test_a_columnar_trace_pickles_as_columns():
    """Traces cross process boundaries (the campaign scheduler): columns stay columns."""
    import pickle

    rows = _rows(60)
    tr = pickle.loads(pickle.dumps(Trace(_compact(rows), TraceMeta("x"))))
    assert tr.columnar and tr.columns.describe()["core"] == "const 0"
    assert tr.events.tobytes() == rows.tobytes()


def test_to_polars_without_polars_names_the_extra(monkeypatch):
    """Not a bare ModuleNotFoundError: the message says which extra to install (issue 33 item 9)."""
    import sys

    monkeypatch.setitem(sys.modules, "polars", None)
    tr = Trace(empty_events(0), TraceMeta(source_format="test"))
    with pytest.raises(ModuleNotFoundError, match=r"crosstrace\[frames\]") as e:
        tr.to_polars()
    assert e.value.name == "polars" and np.asarray(tr.columns["ts"]).size == 0


def test_take_of_a_few_rows_never_expands_a_sparse_column():
    """Integer indices look up the stored rows of a sparse column: taking 3 rows of a column of
    10**12 logical rows (a full expansion would need 8 TB) is instant and exact."""
    n = 10**12
    s = {name: Const(colmod.DEFAULTS[name], n) for name in NAMES}
    s["value"] = Sparse(np.array([5, 10**11], dtype=np.int64), np.array([-7, 9], dtype=np.int8), n,
                        VALUE_NULL)
    s["target_id"] = Sparse(np.zeros(0, dtype=np.uint32), np.zeros(0, dtype=np.int8), n, -1)
    cols = Columns(s, n)
    got = cols.take([10**11, 6, 5, 5])
    assert got["value"].tolist() == [9, VALUE_NULL, -7, -7]
    assert got["target_id"].tolist() == [-1] * 4
    assert got.storage("value").idx.tolist() == [0, 2, 3]


def test_narrow_sparse_rows_sliced_past_their_range():
    """A sparse column whose stored rows all lie below 256 (uint8 ``idx``), sliced from row 256
    on: no stored row, no overflow (a small SystemView recording cut into one-event chunks)."""
    sp = Sparse(np.array([2, 200], dtype=np.uint8), np.array([7, 8], dtype=np.int8), 600, VALUE_NULL)
    c = Columns.empty(600).with_storage("value", sp)
    assert c[256:257]["value"].tolist() == [VALUE_NULL]
    assert c[150:600]["value"][50] == 8 and c[199:201]["value"].tolist() == [VALUE_NULL, 8]
