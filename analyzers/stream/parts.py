"""Arrays a chunked analyzer appends chunk by chunk and reads back whole when it finishes.

The streamed analyzers (:mod:`analyzers.stream`) keep, per chunk, one small array of what they
found (an ISR entry and its exit, a task instance, a caused switch-in). Held in memory, those
arrays are most of ``analyze``'s peak on a long recording: every analyzer's grow until the last
chunk, and all of them wait for the first analyzer to finish. :class:`Parts` writes each array
to a scratch file in the spill folder as soon as it is appended when a spill is in effect
(``analyzers.metrics.spill.spilling``, which ``analyze`` enters for a recording it reads in
chunks), so that during the pass only the carried state is in memory, and each analyzer's arrays
come back when that analyzer finishes (:meth:`Parts.concat`), one analyzer at a time. Outside a
spill the arrays stay in memory. Both ways give the same array.

A row that is still waiting for its answer when its array is appended (an ISR entry whose exit is
in a later chunk) is answered with :meth:`Parts.patch`: the patches are applied, in order, when the
array is read back.

    >>> p = Parts(width=2)
    >>> p.append(np.array([[1, 2], [10, 20]]))
    0
    >>> p.append(np.array([[3], [30]]))
    2
    >>> p.patch(np.array([1]), 99, row=1)
    >>> p.concat().tolist()
    [[1, 2, 3], [10, 99, 30]]
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["Parts", "BATCH", "SortedLookup", "append_before", "lookup_sorted"]

#: columns read back at a time by :meth:`Parts.batches` (an ISR entry's 9 int64: 18 MB a batch; a
#: finishing step makes a few copies of a batch: at 1 Mi columns the kernel series peaked at 0.51 GB)
BATCH = 1 << 18


class Parts:
    """Arrays stacked along their last axis: 1-D arrays of ``dtype`` (``width`` None) or
    ``(width, n)`` arrays. ``len()`` is the number of columns (elements) appended so far."""

    def __init__(self, width: int | None = None, dtype: Any = np.int64) -> None:
        from analyzers.metrics.spill import active

        self.width = width
        self.dtype = np.dtype(dtype)
        self.n = 0
        self._mem: list[np.ndarray] = []
        self._sizes: list[int] = []  #: columns of each block written to the file
        self._patches: list[tuple[np.ndarray, Any, int | None]] = []
        spill = active()
        self._path: Path | None = spill.scratch("parts", ".bin") if spill is not None else None

    def __len__(self) -> int:
        return self.n

    @property
    def on_disk(self) -> bool:
        return self._path is not None

    @property
    def path(self) -> Path | None:
        """The scratch file (the blocks end to end, patches not applied), None in memory."""
        return self._path

    @property
    def patched(self) -> bool:
        """Some patch waits to be applied on read-back (the scratch file alone is not the array)."""
        return bool(self._patches)

    def append(self, a: np.ndarray) -> int:
        """Add ``a`` (a copy is kept, never ``a`` itself); returns the index of its first column."""
        a = np.asarray(a, dtype=self.dtype)
        want = 1 if self.width is None else 2
        if a.ndim != want or (self.width is not None and a.shape[0] != self.width):
            raise ValueError(f"Parts(width={self.width}) cannot take an array of shape {a.shape}")
        first, m = self.n, a.shape[-1]
        if not m:
            return first
        if self._path is None:
            self._mem.append(a.copy())
        else:
            with open(self._path, "ab") as f:
                f.write(np.ascontiguousarray(a).tobytes())
            self._sizes.append(m)
        self.n += m
        return first

    def patch(self, cols: np.ndarray, value: Any, row: int | None = None) -> None:
        """Set ``value`` at columns ``cols`` (indices among all appended so far) of ``row`` (all
        of a 1-D array), once the array is read back."""
        cols = np.asarray(cols, dtype=np.int64)
        if cols.size:
            if cols.min() < 0 or cols.max() >= self.n:
                raise IndexError(f"patch outside the {self.n} columns appended")
            self._patches.append((cols.copy(), np.array(value, dtype=self.dtype).copy(), row))

    def concat(self, rows: list[int] | None = None, cols: tuple[int, int] | None = None) -> np.ndarray:
        """Everything appended, patched: a new array (``(width, n)`` or ``(n,)``); of a
        ``(width, n)`` array only ``rows`` when given (``(len(rows), n)``), and only the columns
        ``cols = (lo, hi)`` when given: what is not needed is not read into memory."""
        if rows is not None and self.width is None:
            raise ValueError("rows= selects rows of a (width, n) Parts")
        pick = list(range(self.width)) if rows is None and self.width is not None else rows
        lo, hi = (0, self.n) if cols is None else (max(0, cols[0]), min(self.n, cols[1]))
        hi = max(lo, hi)
        shape = (hi - lo,) if pick is None else (len(pick), hi - lo)
        if self._path is None:
            mem = self._mem if pick is None else [a[pick] for a in self._mem]
            out = np.concatenate(mem, axis=-1)[..., lo:hi] if mem else np.zeros(shape, self.dtype)
            out = out.copy() if cols is not None else out
        else:
            out = self._read(shape, pick, lo, hi)
        for at, value, row in self._patches:
            if cols is not None:
                sel = (at >= lo) & (at < hi)
                at, value = at[sel] - lo, (value[sel] if value.ndim else value)
            if row is None:
                out[at] = value
            elif row in pick:  # type: ignore[operator]
                out[pick.index(row), at] = value  # type: ignore[union-attr]
        return out

    def batches(self, rows: list[int] | None = None) -> Iterator[np.ndarray]:
        """:meth:`concat` (``rows``) :data:`BATCH` columns at a time: what a finishing step reads
        instead of the whole array (in memory: the whole array, one batch)."""
        step = BATCH if self._path is not None else max(self.n, 1)
        for lo in range(0, self.n, step):
            yield self.concat(rows=rows, cols=(lo, lo + step))

    def _read(self, shape: tuple[int, ...], pick: list[int] | None, lo: int, hi: int) -> np.ndarray:
        out = np.empty(shape, self.dtype)
        if hi <= lo:
            return out
        w, size = self.width or 1, self.dtype.itemsize
        start = offset = 0  # first column and byte offset of each block
        path = self._path
        assert path is not None
        with open(path, "rb") as f:
            for m in self._sizes:
                a, b = max(lo, start), min(hi, start + m)
                if a < b:
                    for i, r in enumerate([0] if pick is None else pick):
                        f.seek(offset + (r * m + a - start) * size)
                        dst = out[a - lo: b - lo] if pick is None else out[i, a - lo: b - lo]
                        if f.readinto(dst.view(np.uint8)) != dst.nbytes:  # type: ignore[arg-type]
                            raise OSError(f"{self._path}: the scratch file is shorter than was written")
                start, offset = start + m, offset + w * m * size
                if start >= hi:
                    break
        return out

    def clear(self) -> None:
        """Let go of everything (memory and scratch file)."""
        self._mem, self._sizes, self._patches, self.n = [], [], [], 0
        if self._path is not None:
            self._path.unlink(missing_ok=True)


def append_before(parts: Parts, rows: np.ndarray, before: int | None,
                  keys: tuple[int, ...] = (0,)) -> np.ndarray:
    """Append to ``parts`` the columns of ``rows`` whose row 0 is below ``before`` (all when
    None), sorted by the rows ``keys`` (the first is the primary key); return the other columns,
    held back while a row that must come before them may still be found. Rows written this way
    chunk after chunk come back from ``parts`` in order."""
    done = np.ones(rows.shape[1], bool) if before is None else rows[0] < before
    out = rows[:, done]
    parts.append(out[:, np.lexsort(tuple(out[k] for k in reversed(keys)))])
    return rows[:, ~done]


def lookup_sorted(keys: np.ndarray, pairs: np.ndarray, default: int = -1) -> np.ndarray:
    """``pairs[1]`` where ``pairs[0] == keys`` (unique keys, ``pairs`` sorted by them),
    ``default`` where absent."""
    keys = np.asarray(keys, dtype=np.int64)
    if not pairs.shape[1]:
        return np.full(keys.size, default, np.int64)
    k, v = pairs[0], pairs[1]
    i = np.minimum(np.searchsorted(k, keys), k.size - 1)
    return np.where(k[i] == keys, v[i], default)


class SortedLookup:
    """:func:`lookup_sorted` in a ``(width, n)`` :class:`Parts` whose row ``key`` holds unique keys
    in ascending order: the Parts is read back :data:`BATCH` columns at a time, only the batches
    the keys asked fall in (in memory: the whole array, one batch)."""

    def __init__(self, parts: Parts, key: int = 0, value: int = 1) -> None:
        self.parts, self.key, self.value = parts, key, value
        self.step = BATCH if parts.on_disk else max(len(parts), 1)
        firsts = [parts.concat(rows=[key], cols=(lo, lo + 1))[0] for lo in range(0, len(parts), self.step)]
        self.firsts = np.concatenate(firsts) if firsts else np.zeros(0, np.int64)

    def __call__(self, keys: np.ndarray, default: int = -1) -> np.ndarray:
        keys = np.asarray(keys, dtype=np.int64)
        out = np.full(keys.size, default, np.int64)
        at = np.searchsorted(self.firsts, keys, side="right") - 1  # the batch each key falls in
        for b in np.unique(at[at >= 0]).tolist():
            sel = np.flatnonzero(at == b)
            pairs = self.parts.concat(rows=[self.key, self.value], cols=(b * self.step, (b + 1) * self.step))
            out[sel] = lookup_sorted(keys[sel], pairs, default)
        return out
