"""Arrays a chunked analyzer appends chunk by chunk and reads back whole when it finishes
(:class:`Parts`, the spill's storage: ``analyzers.metrics.spill``), and lookups over them.

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

import numpy as np

from analyzers.metrics.spill import BATCH, Parts

__all__ = ["SortedLookup", "append_before", "lookup_sorted"]

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
