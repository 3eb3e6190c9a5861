"""Spilled per-instance tables (``analyzers.metrics.spill``, issue 18): what a chunked analysis
writes to disk reads back as the in-memory table, and the campaign really spills and cleans up."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from analyzers.campaign import capture as cap
from analyzers.campaign.instances import site_based_rows
from analyzers.metrics import spill
from analyzers.metrics.base import Series, make_table
from analyzers.metrics.spill import Parts
from analyzers.run import _stacked
from tests.analyzers.test_chunked_analyze import CORPUS_FILES, differences, outputs
from tests.conftest import corpus_dir


def _series(rng: np.random.Generator, metric: str, n: int, *, cores: bool = False, site: str = "") -> Series:
    st = np.sort(rng.integers(0, 10**9, n)).astype(np.int64)
    en = st + rng.integers(1, 1000, n)
    idx = np.arange(n, dtype=np.int64) if site else None
    core = rng.integers(0, 2, n).astype(np.int64) if cores else None
    return Series(metric, "ns", st, en, (en - st).astype(np.float64), site, idx, site, idx, core)


def _analyzers(rng: np.random.Generator) -> list[list[Series]]:
    """Three analyzers' series: long and short ones, an empty one, site-based ones, per-core ones."""
    return [
        [_series(rng, "a.long", 200_000, site="ctx.yield"), _series(rng, "a.empty", 0)],
        [_series(rng, f"b.short{i}", 3) for i in range(40)] + [_series(rng, "b.cores", 70_000, cores=True)],
        [],
    ]


def _both(tmp_path: Path, rng: np.random.Generator) -> tuple[Any, Any]:
    groups = _analyzers(rng)
    whole = _stacked([make_table(g, "trace") for g in groups])
    store = spill.Spill(tmp_path)
    spilled = _stacked([make_table(g, "trace", store) for g in groups])
    return whole, spilled


def test_a_spilled_table_reads_back_as_the_in_memory_one(tmp_path: Path) -> None:
    whole, spilled = _both(tmp_path, np.random.default_rng(1))
    assert spill.is_spilled(spilled) and not spill.is_spilled(whole)
    assert spilled.num_rows == whole.num_rows == 200_000 + 120 + 70_000
    assert spilled.read().equals(whole)
    assert all(b.num_rows <= 1 << 16 for b in spilled.batches(1 << 16))
    assert site_based_rows(spilled).equals(site_based_rows(whole))


@pytest.mark.parametrize("rows", [7, 1 << 16, 100_000, 1 << 20])
def test_batches_are_cut_as_parquet_cuts_them(tmp_path: Path, rows: int) -> None:
    """Batches are read row group by row group (``iter_batches`` keeps what it read until the file
    is done) but cut every ``rows`` rows of the table, across its files: ``instances.parquet``'s
    row groups follow the batches. A cut at whole row groups or at file ends fails here."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    _, spilled = _both(tmp_path, np.random.default_rng(5))
    small = spill.SpilledTable(spilled.schema, spilled.parts[:1])  # the 200 000-row series: 4 row groups
    for t in (spilled, small):
        whole = pa.concat_tables([pq.read_table(p) for p in t.parts])
        want = [whole.slice(lo, rows) for lo in range(0, whole.num_rows, rows)]
        got = list(t.batches(rows))
        assert [b.num_rows for b in got] == [b.num_rows for b in want]  # cut across the files too
        assert pa.concat_tables(got).equals(whole)
        cols = ["metric", "value"]
        assert pa.concat_tables(list(t.batches(rows, cols))).column_names == cols


def test_the_per_core_values_are_the_tables(tmp_path: Path) -> None:
    whole, spilled = _both(tmp_path, np.random.default_rng(2))
    for (metric, core), parts in spilled.core_values.items():
        t = whole.filter((whole["metric"].to_numpy(zero_copy_only=False) == metric)
                         & (whole["core"].to_numpy() == core))
        assert np.array_equal(spilled.core_array(metric, core), t["value"].to_numpy())
        assert all(p.on_disk for p in parts)  # 8 B per instance on disk, none held in memory
    assert {k[0] for k in spilled.core_values} == {"b.cores"}
    assert spilled.core_array("b.cores", 7).size == 0


def test_a_lost_part_or_row_shows(tmp_path: Path) -> None:
    """The comparisons above fail when a spilled part or a row of it is lost."""
    whole, spilled = _both(tmp_path, np.random.default_rng(3))
    lost = spill.SpilledTable(spilled.schema, spilled.parts[:-2], spilled.num_rows)
    assert not lost.read().equals(whole)
    short = spilled.read().slice(1)
    assert not short.equals(whole)


def test_times_in_ticks_are_relabelled_when_read_back(tmp_path: Path) -> None:
    _, spilled = _both(tmp_path, np.random.default_rng(4))
    assert set(spilled.read()["unit"].to_pylist()) == {"ns"}
    spilled.ticks = True
    assert set(spilled.read()["unit"].to_pylist()) == {"ticks"}


def test_without_a_store_nothing_is_spilled() -> None:
    assert not spill.is_spilled(make_table([_series(np.random.default_rng(5), "x", 5)], "trace"))


def test_mixed_tables_are_refused(tmp_path: Path) -> None:
    s = [_series(np.random.default_rng(6), "x", 5)]
    spilled = make_table(s, "trace", spill.Spill(tmp_path))
    with pytest.raises(TypeError):
        _stacked([spilled, make_table(s, "trace")])


MCORE = CORPUS_FILES[1]  # two cores in one file: per-core distribution rows


def test_a_chunked_analysis_spills_and_cleans_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The chunked analysis of a two-core recording goes through the spill (tables made on disk),
    leaves no spill folder behind, and gives the whole read's outputs, per-core rows included."""
    made: list[int] = []
    real = spill.Spill.table

    def counted(self: Any, *a: Any, **k: Any) -> Any:
        t = real(self, *a, **k)
        made.append(t.num_rows)
        return t

    monkeypatch.setattr(spill.Spill, "table", counted)
    f = corpus_dir("systemview") / MCORE
    whole = outputs(f, tmp_path / "whole", None, "skip")
    assert not made  # a small recording read whole makes in-memory tables
    got = outputs(f, tmp_path / "chunked", 1000, "skip")
    assert made and sum(made) > 0
    assert differences(whole, got) == []
    assert not list((tmp_path / "chunked").rglob(".crosstrace-spill-*"))
    metrics = got["tables"]["metrics.parquet"].to_pandas()
    assert (metrics["core"].fillna(-1) >= 0).any()  # per-core distribution rows are compared


def test_lost_per_core_values_show(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Dropping the values of one core while spilling changes the per-core rows: caught."""
    f = corpus_dir("systemview") / MCORE
    whole = outputs(f, tmp_path / "whole", None, "skip")
    real = spill._core_values

    def lossy(out: Any, s: Any, store: Any) -> None:
        real(out, s, store)
        for k in list(out.core_values):
            if k[1] == 1:
                short = []
                for part in out.core_values[k]:
                    p = Parts(dtype=np.float64)
                    p.append(part.concat()[1:])
                    short.append(p)
                out.core_values[k] = short

    monkeypatch.setattr(spill, "_core_values", lossy)
    got = outputs(f, tmp_path / "chunked", 1000, "skip")
    assert "metrics.parquet" in differences(whole, got)


def test_capture_uses_the_spilled_site_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """capture.py reads the site rows through ``site_based_rows`` (the fault test of
    test_chunked_analyze patches that name)."""
    assert cap.site_based_rows is site_based_rows
