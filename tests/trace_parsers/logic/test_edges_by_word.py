"""The word-wise change finder equals a plain XOR of neighbours over every sample."""

from __future__ import annotations

from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from trace_parsers import _edges
from trace_parsers._edges import WordEdgeScanner, _changes_by_word


def _naive(s: np.ndarray, prev: int, mask: int | None = None) -> tuple[list[int], list[int]]:
    full = np.concatenate((np.array([prev], dtype=s.dtype), s))
    if mask is not None:
        full &= s.dtype.type(mask)
    d = full[1:] ^ full[:-1]
    nz = np.flatnonzero(d)
    return nz.tolist(), d[nz].tolist()


@st.composite
def _samples(draw):
    dtype = draw(st.sampled_from([np.uint8, np.uint16, np.uint32]))
    per = 8 // np.dtype(dtype).itemsize
    nwords = draw(st.integers(1, 40))
    hi = np.iinfo(dtype).max
    style = draw(st.sampled_from(["runs", "random", "periodic", "noisy"]))
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
        if style == "noisy":  # toggles on bits that the mask may drop
            flip = draw(st.lists(st.integers(0, n - 1), max_size=6))
            s[flip] ^= dtype(draw(st.integers(0, hi)))
    prev = draw(st.integers(0, hi))
    mask = draw(st.one_of(st.none(), st.integers(0, hi)))
    return s, prev, per, mask


@given(_samples())
def test_changes_by_word_equals_per_sample_xor(case) -> None:
    s, prev, per, mask = case
    m = None if mask is None else s.dtype.type(mask)
    p = prev if mask is None else prev & mask
    idx, dv = _changes_by_word(s, s.dtype.type(p), per, m)
    assert (idx.tolist(), dv.tolist()) == _naive(s, p, mask)


@given(unitsize=st.sampled_from([1, 2, 3, 4]), data=st.data())
@settings(max_examples=150, deadline=None)
def test_scanner_equals_per_sample_xor(unitsize: int, data) -> None:
    """Any feed split (partial words, constant pieces, masked bits) gives the per-bit XOR edges."""
    nbits = 8 * unitsize
    bits = sorted(data.draw(st.sets(st.integers(0, nbits - 1), min_size=1, max_size=6)))
    n = data.draw(st.integers(1, 300))
    cuts = sorted(set(data.draw(st.lists(st.integers(0, n - 1), max_size=8))))
    vals = data.draw(st.lists(st.integers(0, 2**nbits - 1), min_size=len(cuts) + 1,
                              max_size=len(cuts) + 1))
    w = np.empty(n, np.uint64)
    for a, b, v in zip([0, *cuts], [*cuts, n], vals):
        w[a:b] = v
    raw = b"".join(int(x).to_bytes(unitsize, "little") for x in w)
    splits = sorted(set(data.draw(st.lists(st.integers(0, len(raw)), max_size=5))))
    block = data.draw(st.sampled_from([_edges._BLOCK_BYTES, 8, 24, 64]))  # several blocks per feed
    sc = WordEdgeScanner(bits, unitsize)
    with mock.patch.object(_edges, "_BLOCK_BYTES", block):
        for a, b in zip([0, *splits], [*splits, len(raw)]):
            sc.feed(raw[a:b])
    assert sc.samples == n and sc.leftover_bytes == 0
    for b, ch in zip(bits, sc.finish([str(b) for b in bits])):
        lvl = ((w >> np.uint64(b)) & np.uint64(1)).astype(np.int8)
        assert ch.initial == lvl[0]
        assert ch.edges.tolist() == (np.flatnonzero(lvl[1:] != lvl[:-1]) + 1).tolist()
