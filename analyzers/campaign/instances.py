"""A capture's ``instances.parquet``, written source by source in row groups.

Each source's per-instance table (``analyzers.run.SourceResult.table``) is written as soon as the
source is analyzed, in slices of :data:`ROW_GROUP` rows with its ``profile`` column added slice by
slice, and the capture then keeps only the site-based rows (:func:`site_based_rows`, all the
cross-validation reads). The file has the rows, columns and order of one ``pq.write_table`` of the
sources' tables stacked; it appears complete or not at all.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

#: rows per Parquet row group of instances.parquet: what a write or a read holds at once (a table of
#: 256 Ki rows with its strings is ~50 MB; at 1 Mi rows the write of a 33 M-row table peaked
#: 0.2 GB higher, measured on the 100 MB stream)
ROW_GROUP = 1 << 18


class InstanceSink:
    """Writes the instances of each source of one capture to ``path`` (module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.partial")
        self.writer: Any = None
        self.rows = 0

    def write(self, table: Any, profile: str) -> None:
        """Append ``table`` (one source's instances; an Arrow table or a ``SpilledTable``) with
        ``profile`` as its last column."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        for part in _slices(table):
            profiles = pa.array([profile], pa.string()).take(_zeros(part.num_rows))
            part = part.append_column("profile", profiles)
            if self.writer is None:
                self.writer = pq.ParquetWriter(self.tmp, part.schema)
            self.writer.write_table(part, row_group_size=ROW_GROUP)
            self.rows += part.num_rows

    def close(self) -> None:
        """Finish the file (none when no source was written)."""
        if self.writer is None:
            return
        self.writer.close()
        self.writer = None
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        """Drop a file left unfinished (a failed capture)."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        self.tmp.unlink(missing_ok=True)


def _slices(table: Any) -> Any:
    """``table`` in slices of at most :data:`ROW_GROUP` rows (one, maybe empty, at least)."""
    from ..metrics.spill import is_spilled

    if not is_spilled(table):
        for lo in range(0, max(table.num_rows, 1), ROW_GROUP):
            yield table.slice(lo, ROW_GROUP)
        return
    n = 0
    for part in table.batches(ROW_GROUP):
        n += 1
        yield part
    if not n:
        yield table.schema.empty_table()


def _zeros(n: int) -> Any:
    import numpy as np
    import pyarrow as pa

    return pa.array(np.zeros(n, np.int64))


#: the columns of a per-instance table the cross-validation reads (``crossval.verdict._instances``)
CROSSVAL_COLUMNS = ("metric", "unit", "value", "start_site", "start_idx", "end_site", "end_idx")


def site_based_rows(table: Any) -> Any:
    """The rows of a per-instance table whose instances start at a site (``start_site`` not
    empty; null counts as site-based, as ``crossval.verdict`` reads it), in table order, with the
    columns the cross-validation reads (no copy when every row is site-based)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ..metrics.spill import is_spilled

    if table is None:
        return table
    if is_spilled(table):  # read back batch by batch: only the site-based rows stay
        cols = [c for c in table.column_names if c in CROSSVAL_COLUMNS]
        got = [site_based_rows(b) for b in table.batches(columns=cols)]
        return pa.concat_tables(got) if got else table.read(cols)
    table = table.select([c for c in table.column_names if c in CROSSVAL_COLUMNS])
    if table.num_rows == 0:
        return table
    keep = pc.fill_null(pc.not_equal(table.column("start_site"), ""), True)
    if pc.all(keep).as_py():
        return table
    return table.filter(keep)
