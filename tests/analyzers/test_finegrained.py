"""analyzers/metrics/finegrained.py: the fine-grained benchmarks (tests A-F, firmware/apps/finegrained), on a
synthetic run with known truth (cross-validated, and failing when the trace clock is wrong or a mark is
missing) and on the committed captures, against an independent reading of the pins (the sigrok file's
samples decoded here with zipfile + NumPy, not trace_parsers)."""

import configparser
import json
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest

from analyzers import _synth as S
from analyzers.crossval import cross_validate
from analyzers.metrics.finegrained import OPS, finegrained
from analyzers.metrics.registry import cross_validated, lookup
from trace_parsers import open_trace

ROOT = Path(__file__).resolve().parents[2]
CAPS = ROOT / "captures" / "qemu_netduinoplus2"
FG = sorted(p for p in CAPS.glob("*/finegrained-[a-f]/board") if p.is_dir())


def fg_scenario(test="C", n=40, first_ns=1000, second_ns=1200, clock=1.0, skip=()):
    """``n`` iterations of test ``test``: tm.count at the start and end of each of the two calls.
    ``clock`` scales every time (a trace clock running fast); ``skip``: mark indices never recorded."""
    sc = S.Scenario("finegrained", options={"CT_FG_TEST": test, "CT_FG_BATCHES": 1, "CT_FG_SAMPLES": n})
    t = 50_000
    marks = []
    for k in range(n):
        marks += [t, t + first_ns, t + first_ns + 300, t + first_ns + 300 + second_ns + (k % 3)]
        t += 5_000
    sc.marks = [(round(clock * m), "tm.count") for i, m in enumerate(marks) if i not in skip]
    return sc


def test_metrics_are_registered_and_cross_validated():
    for test, ops in OPS.items():
        for op in ops:
            d = lookup(f"fg.{test}.{op}")
            assert d is not None and d.module == "analyzers.metrics.finegrained" and d.unit == "ns"
            assert cross_validated(f"fg.{test}.{op}")


def test_synthetic_calls_from_trace_and_pins_pass():
    sc = fg_scenario()
    tr, cap = S.to_trace(sc), S.to_capture(sc, ppm=20, jitter_ns=1)
    rt, rl = finegrained(tr, options=sc.options), finegrained(cap, options=sc.options)
    st = rt.summary.stats
    assert st["fg.C.take"].n == 40 and st["fg.C.take"].mean == pytest.approx(1000)
    assert st["fg.C.give"].mean == pytest.approx(1200 + 39 / 40)  # 1200 + k % 3
    tab = rt.table.to_pandas()
    give = tab[tab.metric == "fg.C.give"]
    assert give.start_idx.tolist()[:2] == [2, 6] and (give.end_idx - give.start_idx == 1).all()
    cv = cross_validate(tr, cap, trace_table=rt.table, logic_table=rl.table)
    verdicts = {a.metric: a.verdict for a in cv.agreements}
    assert verdicts["fg.C.take"] == "PASS" and verdicts["fg.C.give"] == "PASS"


def test_a_trace_clock_5_percent_fast_fails():
    """Fault injection: the trace's times run 5 % fast; the pins keep true time."""
    true, fast = fg_scenario(), fg_scenario(clock=1.05)
    tr, cap = S.to_trace(fast), S.to_capture(true)
    rt, rl = finegrained(tr, options=fast.options), finegrained(cap, options=true.options)
    cv = cross_validate(tr, cap, trace_table=rt.table, logic_table=rl.table)
    assert {a.metric: a.verdict for a in cv.agreements}["fg.C.take"] == "FAIL"


def test_a_missing_mark_gives_no_instances_and_other_runs_are_left_alone():
    sc = fg_scenario(skip=(17,))
    r = finegrained(S.to_trace(sc), options=sc.options)
    assert r.table.num_rows == 0
    assert {d.reason for d in r.summary.drop_log} == {"unexpected_count"}
    for opts in ({"CT_NTASKS": 2}, {"CT_FG_TEST": "G"}):
        assert finegrained(S.to_trace(fg_scenario()), options=opts).table.num_rows == 0


# ---- the committed captures: an independent reading of the pins ------------------------------------------

def sr_edges_ns(path: Path, channel: str) -> np.ndarray:
    """Times (ns) of every change of ``channel`` in a sigrok session file: its samples read directly."""
    with zipfile.ZipFile(path) as z:
        meta = configparser.ConfigParser()
        meta.read_string(re.sub(r"^#.*$", "", z.read("metadata").decode(), flags=re.M))
        dev = meta["device 1"]
        probes = [dev[f"probe{i + 1}"] for i in range(int(dev["total probes"]))]
        width = int(dev["unitsize"])
        value, unit = dev["samplerate"].split()
        rate = float(value) * {"GHz": 1e9, "MHz": 1e6, "kHz": 1e3}[unit]
        chunks = sorted((n for n in z.namelist() if n.startswith("logic-1")),
                        key=lambda n: int(n.rsplit("-", 1)[1]))
        raw = np.frombuffer(b"".join(z.read(n) for n in chunks), dtype=np.uint8).reshape(-1, width)
    bit = probes.index(channel)
    level = (raw[:, bit // 8] >> (bit % 8)) & 1
    return (np.flatnonzero(np.diff(level)) + 1) * (1e9 / rate)


def run_options(folder: Path) -> dict:
    return json.loads((folder / "run.json").read_text())["options"]


@pytest.mark.slow
@pytest.mark.parametrize("folder", FG, ids=lambda p: f"{p.parts[-3]}/{p.parts[-2]}")
def test_capture_instances_equal_an_independent_reading_of_the_pins(folder):
    opts = run_options(folder)
    t = sr_edges_ns(folder / "logic-la100.sr", "tm.count")
    n = opts["CT_FG_BATCHES"] * opts["CT_FG_SAMPLES"]
    assert t.size == 4 * n
    r = finegrained(open_trace(folder / "logic-la100.sr"), options=opts)
    tab = r.table.to_pandas()
    for op, name in enumerate(OPS[opts["CT_FG_TEST"]]):
        mine = t[4 * np.arange(n) + 2 * op + 1] - t[4 * np.arange(n) + 2 * op]
        got = tab[tab.metric == f"fg.{opts['CT_FG_TEST']}.{name}"].sort_values("start_idx").value.to_numpy()
        assert got.size == n and np.abs(got - mine).max() <= 1.0, name  # a la100 sample is 10 ns


def test_the_independent_reading_sees_a_moved_edge(tmp_path):
    """Fault injection on a capture: one sample of the tm.count channel flipped inside a measured call
    (a pulse: two more edges) makes the independent reading disagree with the committed instances."""
    folder = next(p for p in FG if p.parts[-3] == "freertos")
    src = folder / "logic-la100.sr"
    t = sr_edges_ns(src, "tm.count")
    bad = tmp_path / "logic-la100.sr"
    with zipfile.ZipFile(src) as z, zipfile.ZipFile(bad, "w", zipfile.ZIP_DEFLATED) as out:
        names = z.namelist()
        for n in names:
            data = bytearray(z.read(n))
            if n == "logic-1-1":
                at = int(t[0] / 10) + 3  # 30 ns into the first call: the first chunk holds it
                data[at] ^= 1  # probe1 = tm.count is bit 0
            out.writestr(n, bytes(data))
    moved = sr_edges_ns(bad, "tm.count")
    assert moved.size == t.size + 2
    opts = run_options(folder)
    got = finegrained(open_trace(bad), options=opts)
    assert got.table.num_rows == 0  # 4N + 2 marks: refused, not misassigned
