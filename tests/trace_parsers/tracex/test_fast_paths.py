"""The reader's shortcuts give the same answers as the plain code: the run-wise context lookup, the
magic bytes spelled in the package (so that sniffing does not import the decoder)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from trace_parsers import tracex
from trace_parsers.model import CtxType
from trace_parsers.tracex import format as fmt
from trace_parsers.tracex.convert import _contexts, _Threads


def test_magics_match_the_format() -> None:
    assert tracex._MAGICS == (fmt.MAGIC_LE, fmt.MAGIC_BE)
    assert tracex.is_magic(b"BTXT....") and tracex.is_magic(b"TXTB") and not tracex.is_magic(b"BTX")


def test_sniffing_does_not_import_the_decoder() -> None:
    code = ("import sys; from trace_parsers.tracex import sniff; sniff(b'\\x00' * 64); "
            "print('trace_parsers.tracex.decode' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
    assert tracex.RawTrace.__module__ == "trace_parsers.tracex.decode"  # still reachable, lazily


def _threads(addrs: list[int]) -> _Threads:
    t = _Threads.__new__(_Threads)
    t.addrs, t.names, t.prios = list(addrs), [f"t{i}" for i in range(len(addrs))], [None] * len(addrs)
    t._sort()
    return t


@pytest.mark.parametrize("run", [1, 2, 16, 1000])
def test_contexts_per_run_equal_per_event(run: int) -> None:
    """The context lookup done once per run of equal thread pointers (or per event when the runs
    are short) gives every event the plain per-event answer, unknown pointers added in order."""
    rng = np.random.default_rng(run)
    addrs = [0x20001000, 0x20000100, 0x20003000, 0x20000100]  # a duplicate: the first index wins
    pool = np.array(addrs + [0xFFFFFFFF, 0xF0F0F0F0, 0, 0x12345678, 0x12345600], np.uint32)
    values = np.repeat(rng.choice(pool, 5000 // run + 1), rng.integers(1, 2 * run + 1, 5000 // run + 1))
    t = _threads(addrs)
    starts, ctype, ids = _contexts(values, t)
    assert (starts is None) == (run <= 2)  # runs of 1.5 or 2.5 events on average: per event
    assert t.addrs[4:] == [a for a in dict.fromkeys(values.tolist()) if a in (0x12345678, 0x12345600)]
    lens = np.diff(starts, append=values.size) if starts is not None else np.ones(values.size, np.int64)
    want_type = np.select([values == 0xFFFFFFFF, values == 0xF0F0F0F0, values == 0],
                          [CtxType.ISR, CtxType.INIT, CtxType.NONE], CtxType.TASK)
    assert np.array_equal(np.repeat(ctype, lens), want_type)
    assert np.array_equal(np.repeat(ids, lens), t.lookup(values))
    assert (np.repeat(ids, lens)[want_type == CtxType.TASK] >= 0).all()
    assert np.array_equal(_threads([]).lookup(values), np.full(values.size, -1, np.int32))
