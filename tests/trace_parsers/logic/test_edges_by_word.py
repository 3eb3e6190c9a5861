"""The word-wise change finder equals a plain XOR of neighbours over every sample."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from trace_parsers._edges import _changes_by_word


def _naive(s: np.ndarray, prev: int) -> tuple[list[int], list[int]]:
    full = np.concatenate((np.array([prev], dtype=s.dtype), s))
    d = full[1:] ^ full[:-1]
    nz = np.flatnonzero(d)
    return nz.tolist(), d[nz].tolist()


@st.composite
def _samples(draw):
    dtype = draw(st.sampled_from([np.uint8, np.uint16, np.uint32]))
    per = 8 // np.dtype(dtype).itemsize
    nwords = draw(st.integers(1, 40))
    hi = np.iinfo(dtype).max
    style = draw(st.sampled_from(["runs", "random", "periodic"]))
    n = nwords * per
    if style == "random":
        s = np.array(draw(st.lists(st.integers(0, hi), min_size=n, max_size=n)), dtype=dtype)
    elif style == "periodic":  # every word identical but not uniform: a plain word-vs-word test misses it
        pat = draw(st.lists(st.integers(0, hi), min_size=per, max_size=per))
        s = np.tile(np.array(pat, dtype=dtype), nwords)
    else:  # piecewise constant with sparse edges anywhere, also on word boundaries
        cuts = sorted(set(draw(st.lists(st.integers(0, n - 1), max_size=6))))
        vals = draw(st.lists(st.integers(0, hi), min_size=len(cuts) + 1, max_size=len(cuts) + 1))
        s = np.empty(n, dtype=dtype)
        bounds = [0, *cuts, n]
        for a, b, v in zip(bounds[:-1], bounds[1:], vals):
            s[a:b] = v
    prev = draw(st.integers(0, hi))
    return s, prev, per


@given(_samples())
def test_changes_by_word_equals_per_sample_xor(case) -> None:
    s, prev, per = case
    idx, dv = _changes_by_word(s, s.dtype.type(prev), per)
    assert (idx.tolist(), dv.tolist()) == _naive(s, prev)
