"""Statistics of values kept on disk, equal to :func:`.stats.summarize` of them in memory.

A long recording's metric can have more instances than memory should hold at once (issue 18).
:func:`summarize_files` reads float64 values from files a block at a time and gives the
:class:`~.stats.Stats` that ``summarize`` gives for the same values in memory — equal, not close:

- ``mean`` and ``std`` add in NumPy's order. ``np.add.reduce`` of a contiguous float64 array is
  a pairwise sum whose split points depend only on the length (below 8 values a loop, up to 128
  eight accumulators, above that halves cut at a multiple of 8). The same tree is walked here:
  a subtree that fits in a block is read and handed to ``np.add.reduce``, which sums it exactly
  as it would inside the whole array. ``std`` is NumPy's: the mean, then the pairwise sum of the
  squared deviations.
- ``p1``, ``p50``, ``p99`` are NumPy's ``linear`` percentiles from exact order statistics, found
  by a radix selection on the values' bits (four passes of 16 bits, a histogram per pass), then
  interpolated with NumPy's formulas (``_get_indexes``, ``_get_gamma``, ``_lerp`` of
  ``numpy.lib._function_base_impl``, copied below).
- Non-finite values are left out, as ``summarize`` does.

The tests compare against ``summarize`` bit for bit on arrays that cross every block and tree
border (``tests/analyzers/test_disk_stats.py``); a NumPy that sums or interpolates differently
fails them. One difference is left: ``-0.0`` and ``0.0`` are ordered here (``-0.0`` first) where
NumPy's partition takes either, so a percentile that lands on a zero may differ in its sign.

Memory: one block (``block`` values, 8 MiB by default) and a 65,536-bin histogram per percentile.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from .stats import EMPTY_STATS, Stats

#: values read at a time
BLOCK = 1 << 20
#: the percentiles of :class:`~.stats.Stats`
PERCENTILES = (1, 50, 99)

_SIGN = np.uint64(1 << 63)
#: NumPy's PW_BLOCKSIZE: no split at or below it
_PW_BLOCK = 128


class Values:
    """float64 values stored end to end in ``files`` (raw, native byte order), read by range."""

    def __init__(self, files: Sequence[Path]) -> None:
        self.files = [Path(f) for f in files]
        self.sizes = [f.stat().st_size // 8 for f in self.files]
        self.starts = np.cumsum([0] + self.sizes)
        self.n = int(self.starts[-1])

    def read(self, lo: int, n: int) -> np.ndarray:
        """Values ``lo`` .. ``lo + n`` (a new array)."""
        out = np.empty(n, np.float64)
        at = 0
        i = int(np.searchsorted(self.starts, lo, side="right")) - 1
        while at < n:
            off = lo + at - int(self.starts[i])
            k = min(self.sizes[i] - off, n - at)
            got = np.fromfile(self.files[i], np.float64, count=k, offset=off * 8)
            if got.size != k:
                raise OSError(f"{self.files[i]}: shorter than its size said")
            out[at: at + k] = got
            at += k
            i += 1
        return out

    def blocks(self, block: int = BLOCK) -> Iterator[np.ndarray]:
        for lo in range(0, self.n, block):
            yield self.read(lo, min(block, self.n - lo))


def summarize_files(files: Sequence[Path], scratch: Path, block: int = BLOCK) -> Stats:
    """``summarize`` of the float64 values in ``files`` (end to end); ``scratch``: a file name
    for the finite values when some are not finite (removed before returning)."""
    v = Values(files)
    finite = sum(int(np.count_nonzero(np.isfinite(b))) for b in v.blocks(block))
    if finite == v.n:
        return _summarize(v, block)
    try:
        with open(scratch, "wb") as f:
            for b in v.blocks(block):
                f.write(b[np.isfinite(b)].tobytes())
        return _summarize(Values([scratch]), block)
    finally:
        Path(scratch).unlink(missing_ok=True)


def _summarize(v: Values, block: int) -> Stats:
    n = v.n
    if n == 0:
        return EMPTY_STATS
    lo, hi = math.inf, -math.inf
    for b in v.blocks(block):  # one pass for both
        lo, hi = min(lo, float(b.min())), max(hi, float(b.max()))
    total = pairwise_sum(v, block)
    mean = total / n  # np.mean: the sum divided by the count
    std = math.sqrt(pairwise_sum(v, block, minus=mean) / n)  # np.std: of the squared deviations
    p1, p50, p99 = percentiles(v, PERCENTILES, block).tolist()
    return Stats(n, mean, std, lo, p1, p50, p99, hi)


def pairwise_sum(v: Values, block: int = BLOCK, minus: float | None = None) -> float:
    """``np.add.reduce`` of the values (of ``(x - minus) ** 2`` when ``minus`` is given, as
    ``np.var`` squares the deviations), in NumPy's pairwise order."""
    m = None if minus is None else np.float64(minus)

    def leaf(lo: int, n: int) -> float:
        x = v.read(lo, n)
        if m is not None:
            x = np.subtract(x, m, out=x)
            x = np.multiply(x, x, out=x)
        return float(np.add.reduce(x))

    def walk(lo: int, n: int) -> float:
        if n <= max(block, _PW_BLOCK):  # NumPy splits nothing of 128 values or fewer
            return leaf(lo, n)
        n2 = n // 2
        n2 -= n2 % 8
        return walk(lo, n2) + walk(lo + n2, n - n2)  # float64 addition, as NumPy's

    return walk(0, v.n) if v.n else 0.0


def percentiles(v: Values, q: Sequence[float], block: int = BLOCK) -> np.ndarray:
    """``np.percentile(values, q)`` (method ``linear``) from exact order statistics."""
    n = v.n
    quantiles = np.true_divide(np.asarray(q, dtype=np.float64), 100)
    virtual = np.asanyarray((n - 1) * quantiles)  # _QuantileMethods["linear"]["get_virtual_index"]
    prev, nxt = _get_indexes(virtual, n)
    want = sorted({int(i) % n for i in np.concatenate((prev, nxt)).tolist()})
    got = dict(zip(want, order_statistics(v, want, block)))
    previous = np.array([got[int(i) % n] for i in prev.tolist()], np.float64)
    following = np.array([got[int(i) % n] for i in nxt.tolist()], np.float64)
    gamma = np.asanyarray(virtual - prev, dtype=virtual.dtype)  # _get_gamma, linear: as is
    return _lerp(previous, following, gamma)


def _get_indexes(virtual: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """NumPy's ``_get_indexes`` (finite values: no NaN indexes)."""
    previous = np.floor(virtual)
    following = previous + 1
    above = virtual >= count - 1
    previous[above] = -1
    following[above] = -1
    below = virtual < 0
    previous[below] = 0
    following[below] = 0
    return previous.astype(np.intp), following.astype(np.intp)


def _lerp(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
    """NumPy's ``_lerp``."""
    diff_b_a = b - a
    out = np.add(a, diff_b_a * t)
    np.subtract(b, diff_b_a * (1 - t), out=out, where=t >= 0.5, casting="unsafe", dtype=out.dtype)
    return out


def _keys(x: np.ndarray) -> np.ndarray:
    """uint64 keys in the order of the float64 values (``-0.0`` before ``0.0``)."""
    bits = x.view(np.uint64)
    return np.where(bits & _SIGN, ~bits, bits | _SIGN)


def _value(key: int) -> float:
    k = np.uint64(key)
    bits = k & ~_SIGN if k & _SIGN else ~k
    return float(np.array([bits], np.uint64).view(np.float64)[0])


def order_statistics(v: Values, ranks: Sequence[int], block: int = BLOCK) -> list[float]:
    """The values of rank ``ranks`` (0-based) in sorted order: a radix selection, 16 bits a pass."""
    found: dict[int, tuple[int, int]] = {r: (0, r) for r in ranks}  # rank -> (key prefix, rank left)
    for p in range(4):
        shift = np.uint64(48 - 16 * p)
        prefixes = sorted({pre for pre, _ in found.values()})
        hist = {pre: np.zeros(1 << 16, np.int64) for pre in prefixes}
        for b in v.blocks(block):
            k = _keys(b)
            for pre in prefixes:
                sel = k if p == 0 else k[(k >> (shift + np.uint64(16))) == np.uint64(pre)]
                hist[pre] += np.bincount(((sel >> shift) & np.uint64(0xFFFF)).astype(np.intp),
                                         minlength=1 << 16)
        for r, (pre, left) in found.items():
            cum = np.cumsum(hist[pre])
            digit = int(np.searchsorted(cum, left, side="right"))
            below = int(cum[digit - 1]) if digit else 0
            found[r] = ((pre << 16) | digit, left - below)
    return [_value(found[r][0]) for r in ranks]
