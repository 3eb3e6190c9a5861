"""Columnar event storage: the events table as one array per column (struct of arrays).

:class:`Columns` holds the columns of :data:`~trace_parsers.model.EVENT_COLUMNS` in whatever
storage is cheapest for the recording, and hands each one out in its schema dtype:

* a NumPy array of the schema dtype (given out as it is: writes go to the storage);
* a *narrow* NumPy array (``ctx_id`` held as ``int8`` when every value fits, ``src_offset`` as
  ``uint32`` below 4 GiB, ...), widened on access to a new read-only array;
* :class:`Const` — one value for every event (``core`` on a single-core target);
* :class:`Sparse` — the rows that differ from the column's default (``value`` is mostly null,
  ``target_id`` mostly -1), expanded on access to a new read-only array.

The logical table is always the same: ``cols[name]`` equals ``cols.to_records()[name]`` for
every storage, and :class:`~trace_parsers.model.Trace` shows it both ways (``trace.columns``,
``trace.events``). A SystemView recording read by the fused Rust pass keeps 28 B/event where
the row table takes 51 B (docs/formats.md).

Read-only results are deliberate: a write into a widened copy would be lost silently, so it
raises instead. A widened or expanded column is kept after its first use, so an analyzer that
reads ``ctx_id`` ten times widens it once (:meth:`Columns.drop_widened` lets go of them).

>>> import numpy as np
>>> from trace_parsers.model import VALUE_NULL
>>> c = Columns.empty(4)
>>> c["ts"] = [1, 2, 3, 4]
>>> c = c.with_storage("value", Sparse(np.array([2]), np.array([7], dtype=np.int8), 4, VALUE_NULL))
>>> c = c.with_storage("core", Const(0, 4))
>>> c["value"].tolist() == [VALUE_NULL, VALUE_NULL, 7, VALUE_NULL]
True
>>> c[1:3]["value"].tolist() == [VALUE_NULL, 7]
True
>>> c[np.array([False, False, True, True])]["ts"].tolist()
[3, 4]
>>> c.to_records()["value"][2]
np.int64(7)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from .model import EVENT_COLUMNS, EVENT_DEFAULTS, EVENT_DTYPE

__all__ = ["Columns", "Const", "Sparse", "DEFAULTS", "concat", "from_specs", "sort_by_ts"]

#: Each column's value where a reader has nothing to say (``empty_events``).
DEFAULTS = EVENT_DEFAULTS
_DTYPES: dict[str, np.dtype] = {c.name: np.dtype(c.numpy) for c in EVENT_COLUMNS}
NAMES: tuple[str, ...] = tuple(c.name for c in EVENT_COLUMNS)


@dataclass(frozen=True)
class Const:
    """``n`` rows of one ``value``."""

    value: int
    n: int

    @property
    def nbytes(self) -> int:
        return 0


@dataclass(frozen=True)
class Sparse:
    """``n`` rows of ``default`` except ``val[i]`` at row ``idx[i]`` (``idx`` strictly rising)."""

    idx: np.ndarray
    val: np.ndarray
    n: int
    default: int

    @property
    def nbytes(self) -> int:
        return int(self.idx.nbytes + self.val.nbytes)


Storage = Union[np.ndarray, Const, Sparse]


def _read_only(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def _logical(name: str, s: Storage) -> np.ndarray:
    """Column ``name`` of storage ``s`` in its schema dtype."""
    dt = _DTYPES[name]
    if isinstance(s, np.ndarray):
        return s if s.dtype == dt else _read_only(s.astype(dt))
    if isinstance(s, Const):
        return np.broadcast_to(np.array(s.value, dtype=dt), (s.n,))  # read-only, no memory
    out = np.full(s.n, s.default, dtype=dt)
    out[s.idx] = s.val
    return _read_only(out)


def _take(s: Storage, key: Any, n_new: int) -> Storage:
    """Rows ``key`` (a slice, a boolean mask or integer indices) of storage ``s``."""
    if isinstance(s, np.ndarray):
        return s[key]
    if isinstance(s, Const):
        return Const(s.value, n_new)
    if isinstance(key, slice):
        start, stop, step = key.indices(s.n)
        if step == 1:
            lo, hi = np.searchsorted(s.idx, [start, max(start, stop)])
            idx = s.idx[lo:hi]  # (narrow: `start` fits its dtype only when a stored row is >= it)
            return Sparse(idx - idx.dtype.type(start) if len(idx) else idx.copy(), s.val[lo:hi],
                          n_new, s.default)
        key = np.arange(start, stop, step)
    if key.dtype == np.bool_:
        keep = key[s.idx]
        new_pos = np.cumsum(key, dtype=np.int64) - 1
        return Sparse(new_pos[s.idx[keep]], s.val[keep], n_new, s.default)
    # integer indices, in any order and possibly repeated: each looked up among the stored rows
    # (never the whole column expanded: for the few OVERFLOW rows of 17 M events that was an
    # int64 temporary of 140 MB per sparse column, 0.1-0.5 s)
    key = np.asarray(key, dtype=np.intp)
    pos = np.searchsorted(s.idx, key)
    found = np.minimum(pos, max(len(s.idx) - 1, 0))
    hit = pos < len(s.idx)
    if len(s.idx):
        hit &= s.idx[found] == key
        hit &= s.val[found] != s.default
    at = np.flatnonzero(hit)
    return Sparse(at, s.val[found[at]], n_new, s.default)


class Columns:
    """The events table as columns: ``cols["ts"]``, ``cols[mask]``, ``len(cols)``.

    Indexing by a column name gives that column in its schema dtype (see the module docstring
    for when it is a new read-only array); by a slice, a boolean mask or integer indices it gives
    a new :class:`Columns` of those rows; by an integer, one row as a NumPy record.
    ``np.asarray(cols)`` and :meth:`to_records` give the ``EVENT_DTYPE`` row table.
    """

    __slots__ = ("_s", "_n", "_wide", "__weakref__")
    dtype = EVENT_DTYPE
    ndim = 1

    def __init__(self, storage: Mapping[str, Storage], n: int) -> None:
        missing = [c for c in NAMES if c not in storage]
        if missing:
            raise ValueError(f"columns missing: {', '.join(missing)}")
        for name, s in storage.items():
            length = s.shape[0] if isinstance(s, np.ndarray) else s.n
            if length != n:
                raise ValueError(f"column {name!r} has {length} rows, expected {n}")
        self._s = {c: storage[c] for c in NAMES}
        self._n = int(n)
        self._wide: dict[str, np.ndarray] = {}  # columns widened or expanded on access

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def from_records(cls, rows: np.ndarray) -> Columns:
        """Columns viewing the fields of an ``EVENT_DTYPE`` array (no copy)."""
        if rows.dtype != EVENT_DTYPE:
            raise TypeError(f"events must have dtype EVENT_DTYPE, got {rows.dtype}")
        return cls({c: rows[c] for c in NAMES}, rows.shape[0])

    @classmethod
    def empty(cls, n: int = 0) -> Columns:
        """``n`` events with every column at its default, each column its own writable array."""
        return cls({c: np.full(n, DEFAULTS[c], dtype=_DTYPES[c]) for c in NAMES}, n)

    def with_storage(self, name: str, s: Storage) -> Columns:
        """A copy of the table (sharing the other columns' storage) with column ``name`` as ``s``."""
        return Columns({**self._s, name: s}, self._n)

    # -- the table ----------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._n

    @property
    def shape(self) -> tuple[int]:
        return (self._n,)

    @property
    def size(self) -> int:
        return self._n

    @property
    def nbytes(self) -> int:
        """Bytes of storage (shared views count in full)."""
        return sum(s.nbytes for s in self._s.values())

    def __iter__(self) -> Iterator[Any]:
        """The rows, as NumPy records (as iterating an ``EVENT_DTYPE`` array)."""
        return iter(self.to_records())

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            got = self._wide.get(key)
            if got is None:
                if key not in self._s:
                    raise KeyError(f"no column {key!r}; the columns are {', '.join(NAMES)}")
                got = _logical(key, self._s[key])
                if got is not self._s[key]:
                    self._wide[key] = got
            return got
        if isinstance(key, (int, np.integer)):
            i = int(key)
            if not -self._n <= i < self._n:
                raise IndexError(f"index {i} is out of bounds for {self._n} events")
            return self[i % self._n:i % self._n + 1].to_records()[0]
        if isinstance(key, slice):
            n_new = len(range(*key.indices(self._n)))
        else:
            key = np.asarray(key)
            if key.dtype == np.bool_:
                if key.shape != (self._n,):
                    raise IndexError(f"boolean index of shape {key.shape} for {self._n} events")
                n_new = int(np.count_nonzero(key))
            elif np.issubdtype(key.dtype, np.integer):
                key = np.where(key < 0, key + self._n, key)
                if key.size and (key.min() < 0 or key.max() >= self._n):
                    raise IndexError(f"index out of bounds for {self._n} events")
                n_new = int(key.size)
            else:
                raise IndexError(f"events are indexed by a column name, an integer, a slice, a "
                                 f"boolean mask or integer indices, not {key.dtype}")
        return Columns({c: _take(s, key, n_new) for c, s in self._s.items()}, n_new)

    def take(self, indices: Any) -> Columns:
        """Rows at integer ``indices`` (as ``ndarray.take``)."""
        return self[np.asarray(indices, dtype=np.intp)]

    def __setitem__(self, name: str, values: Any) -> None:
        """Set one column: in place when it is held as a writable array of its schema dtype (so
        columns viewing a row table write into it, as ``rows[name] = values`` does), otherwise
        as a new array of that dtype."""
        if not isinstance(name, str) or name not in self._s:
            raise KeyError(f"columns are set by name, one of {', '.join(NAMES)}; got {name!r}")
        s = self._s[name]
        self._wide.pop(name, None)
        if isinstance(s, np.ndarray) and s.dtype == _DTYPES[name] and s.flags.writeable:
            s[...] = values
            return
        a = np.empty(self._n, dtype=_DTYPES[name])
        a[...] = values
        self._s[name] = a

    def drop_widened(self) -> None:
        """Let go of the columns widened or expanded on access (the storage stays)."""
        self._wide.clear()

    def storage(self, name: str) -> Storage:
        """How column ``name`` is held (an array, :class:`Const` or :class:`Sparse`)."""
        return self._s[name]

    def describe(self) -> dict[str, str]:
        """``{column: how it is held}``, e.g. ``{"ts": "int64", "core": "const 0", ...}``."""
        out = {}
        for c, s in self._s.items():
            if isinstance(s, np.ndarray):
                out[c] = str(s.dtype)
            elif isinstance(s, Const):
                out[c] = f"const {s.value}"
            else:
                out[c] = f"sparse {s.idx.size} of {s.n} ({s.idx.dtype}, {s.val.dtype})"
        return out

    # -- conversions --------------------------------------------------------------------------
    def to_records(self) -> np.ndarray:
        """The ``EVENT_DTYPE`` row table (a new array)."""
        rows = np.empty(self._n, dtype=EVENT_DTYPE)
        for c, s in self._s.items():
            if isinstance(s, Sparse):
                rows[c] = s.default
                rows[c][s.idx] = s.val
            else:
                rows[c] = s.value if isinstance(s, Const) else s
        return rows

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        rows = self.to_records()
        return rows if dtype is None else rows.astype(dtype)

    def copy(self) -> Columns:
        """A deep copy: every array storage copied."""
        def cp(s: Storage) -> Storage:
            if isinstance(s, np.ndarray):
                return s.copy()
            if isinstance(s, Sparse):
                return Sparse(s.idx.copy(), s.val.copy(), s.n, s.default)
            return s
        return Columns({c: cp(s) for c, s in self._s.items()}, self._n)

    def __eq__(self, other: object) -> Any:
        """Row-wise equality, as for two ``EVENT_DTYPE`` arrays."""
        if isinstance(other, (Columns, np.ndarray)):
            return self.to_records() == np.asarray(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        held = ", ".join(f"{c}: {d}" for c, d in self.describe().items())
        return f"<Columns {self._n} events, {self.nbytes} B held ({held})>"


def concat(parts: list[Columns]) -> Columns:
    """The parts one after the other (no sort); every column as one array of its widest part."""
    parts = [p for p in parts if len(p)]
    if not parts:
        return Columns.empty(0)
    if len(parts) == 1:
        return parts[0]
    n = sum(len(p) for p in parts)
    out: dict[str, Storage] = {}
    for c in NAMES:
        held = [p.storage(c) for p in parts]
        if all(isinstance(s, Const) for s in held) and len({s.value for s in held}) == 1:
            out[c] = Const(held[0].value, n)  # type: ignore[union-attr]
        elif all(isinstance(s, Sparse) for s in held):
            starts = np.cumsum([0] + [len(p) for p in parts[:-1]])
            idx = np.concatenate([s.idx.astype(np.int64) + int(o) for s, o in zip(held, starts)])
            val = np.concatenate([s.val for s in held])  # type: ignore[union-attr]
            out[c] = Sparse(idx, val, n, DEFAULTS[c])
        else:
            arrays = [s if isinstance(s, np.ndarray) else _logical(c, s) for s in held]
            out[c] = np.concatenate(arrays)
    return Columns(out, n)


def sort_by_ts(cols: Columns) -> Columns:
    """Stable sort by ``ts`` (ties keep source order), as ``model.sort_events``."""
    ts = cols["ts"]
    if len(cols) < 2 or bool(np.all(ts[1:] >= ts[:-1])):
        return cols
    return cols[np.argsort(ts, kind="stable")]


def from_specs(specs: Mapping[str, Mapping[str, Any]], n: int) -> Columns:
    """Columns from the Rust core's column specs (``SvFused.finish()["columns"]``): per column
    ``{"kind": "dense", "data", "dtype"}``, ``{"kind": "const", "value", "len"}`` or
    ``{"kind": "sparse", "len", "idx", "val"}`` (``idx``/``val`` dense or const specs).
    Dense data is viewed, not copied."""
    def one(spec: Mapping[str, Any], name: str) -> Storage:
        k = spec["kind"]
        if k == "dense":
            return np.frombuffer(spec["data"], dtype=np.dtype(spec["dtype"]))
        if k == "const":
            return Const(int(spec["value"]), int(spec["len"]))
        if k == "sparse":
            idx, val = (_dense(one(spec[p], name)) for p in ("idx", "val"))
            return Sparse(idx, val, int(spec["len"]), DEFAULTS[name])
        raise ValueError(f"column {name!r}: unknown storage kind {k!r}")

    return Columns({c: one(specs[c], c) for c in NAMES}, n)


def _dense(s: Storage) -> np.ndarray:
    if isinstance(s, Const):  # a constant index or value list: its values, narrow
        return np.full(s.n, s.value, dtype=np.min_scalar_type(s.value))
    assert isinstance(s, np.ndarray)
    return s
