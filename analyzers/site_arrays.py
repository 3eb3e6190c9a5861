"""Site occurrence arrays held in memory or kept on disk and read back on each access.

A long recording's site occurrences are most of what a chunked analysis holds from its first
pass to its end: 16 bytes per occurrence (``ts`` and ``level``), 0.65 GB for the 41 M
``ctx.yield`` marks of a 1 GB SystemView stream. Each analyzer needs one or two sites at a time,
so :class:`SiteArrays` keeps each site's arrays in a file (:class:`OnDisk`) and reads one back
when it is asked for: a new read-only array each time, freed when the analyzer drops it.

The files live in a folder of their own (:class:`ScratchFolder`), removed when the last array
that reads from it is gone: the cross-validation reads a trace's occurrences after its spill
folder (``analyzers.metrics.spill.spill_folder``) is removed.

    >>> import tempfile
    >>> folder = ScratchFolder(Path(tempfile.gettempdir()))
    >>> a = SiteArrays({"x": folder.write("x", [np.array([1, 2]), np.array([3])], np.int64)})
    >>> a["x"].tolist(), a.size("x"), a["x"].flags.writeable
    ([1, 2, 3], 3, False)
    >>> a["y"] = np.zeros(2, np.int64)
    >>> sorted(a), a.size("y")
    (['x', 'y'], 2)
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from collections.abc import Iterable, Iterator, Mapping, MutableMapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["BLOCK", "OnDisk", "ScratchFolder", "SiteArrays", "blocks_of", "size_of"]

#: values per block of :meth:`SiteArrays.blocks` (8 MB of int64)
BLOCK = 1 << 20


class ScratchFolder:
    """A new hidden folder under ``parent``, removed when this object is garbage collected (or at
    exit): every :class:`OnDisk` written here holds it."""

    def __init__(self, parent: Path) -> None:
        self.path = Path(tempfile.mkdtemp(prefix=".crosstrace-sites-", dir=parent))
        self._n = 0
        self._finalizer = weakref.finalize(self, shutil.rmtree, str(self.path), True)

    def write(self, name: str, blocks: Iterable[np.ndarray], dtype: Any) -> OnDisk:
        """``blocks`` end to end, as one array of ``dtype`` in a new file (``name`` only labels it)."""
        out = self.opener(name, dtype)
        for b in blocks:
            out.append(b)
        return out.close()

    def opener(self, name: str, dtype: Any) -> Appender:
        """A file of ``dtype`` to append blocks to (:class:`Appender`), then :meth:`Appender.close`."""
        self._n += 1
        path = self.path / f"{self._n:04d}-{''.join(c if c.isalnum() else '_' for c in name)}.bin"
        return Appender(self, path, np.dtype(dtype))


class Appender:
    """One file of :class:`ScratchFolder` being written a block at a time."""

    def __init__(self, folder: ScratchFolder, path: Path, dtype: np.dtype) -> None:
        self.folder, self.path, self.dtype, self.n = folder, path, dtype, 0
        self._f = open(path, "wb")  # noqa: SIM115 - closed by close()

    def append(self, block: np.ndarray) -> None:
        b = np.ascontiguousarray(block, dtype=self.dtype)
        self._f.write(b.tobytes())
        self.n += b.size

    def close(self) -> OnDisk:
        self._f.close()
        return OnDisk(self.folder, self.path, self.dtype, self.n)


class OnDisk:
    """A 1-D array kept in a file of a :class:`ScratchFolder` (which it keeps alive)."""

    def __init__(self, folder: ScratchFolder, path: Path, dtype: np.dtype, size: int) -> None:
        self.folder, self.path, self.dtype, self.size = folder, path, dtype, size

    def load(self) -> np.ndarray:
        """A new read-only array of the file's contents."""
        a = np.fromfile(self.path, dtype=self.dtype, count=self.size)
        if a.size != self.size:
            raise OSError(f"{self.path}: {a.size} of {self.size} values left (scratch file cut short)")
        a.setflags(write=False)
        return a

    def blocks(self, rows: int | None = None) -> Iterator[np.ndarray]:
        """The file's contents as consecutive read-only arrays of ``rows`` values (:data:`BLOCK`;
        the last one shorter), read one at a time."""
        rows, left = rows or BLOCK, self.size
        with open(self.path, "rb") as f:
            while left:
                a = np.fromfile(f, dtype=self.dtype, count=min(rows, left))
                if not a.size:
                    raise OSError(f"{self.path}: {left} of {self.size} values missing (cut short)")
                left -= a.size
                a.setflags(write=False)
                yield a


class SiteArrays(MutableMapping[str, np.ndarray]):
    """site name -> array, like a dict; an :class:`OnDisk` value is read back on each access.
    :meth:`size` answers without reading; :meth:`shared` is a copy sharing the values."""

    def __init__(self, items: Mapping[str, np.ndarray | OnDisk] | None = None) -> None:
        self._items: dict[str, np.ndarray | OnDisk] = dict(items or {})

    def __getitem__(self, name: str) -> np.ndarray:
        a = self._items[name]
        return a.load() if isinstance(a, OnDisk) else a

    def __setitem__(self, name: str, a: np.ndarray | OnDisk) -> None:
        self._items[name] = a

    def __delitem__(self, name: str) -> None:
        del self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"SiteArrays({ {k: self.size(k) for k in self._items} })"

    def size(self, name: str) -> int:
        a = self._items.get(name)
        return 0 if a is None else int(a.size)

    def blocks(self, name: str, rows: int | None = None) -> Iterator[np.ndarray]:
        """``self[name]`` as consecutive arrays of ``rows`` values, an on-disk one read a block
        at a time (nothing for an absent name)."""
        a = self._items.get(name)
        if isinstance(a, OnDisk):
            yield from a.blocks(rows)
        elif a is not None:
            yield from _slices(a, rows)

    def on_disk(self, name: str) -> bool:
        return isinstance(self._items.get(name), OnDisk)

    def shared(self) -> SiteArrays:
        """A copy whose container is its own; held arrays (shared) are made read-only."""
        for a in self._items.values():
            if isinstance(a, np.ndarray):
                a.setflags(write=False)
        return SiteArrays(self._items)


def blocks_of(arrays: Mapping[str, np.ndarray], name: str, rows: int | None = None) -> Iterator[np.ndarray]:
    """``arrays[name]`` as consecutive blocks of ``rows`` values (:data:`BLOCK`;
    :meth:`SiteArrays.blocks`), for a plain mapping too (nothing for an absent name)."""
    if isinstance(arrays, SiteArrays):
        return arrays.blocks(name, rows)
    a = arrays.get(name)
    return iter(()) if a is None else _slices(a, rows)


def _slices(a: np.ndarray, rows: int | None) -> Iterator[np.ndarray]:
    rows = rows or BLOCK
    for lo in range(0, a.size, rows):
        yield a[lo:lo + rows]


def size_of(arrays: Mapping[str, np.ndarray], name: str) -> int:
    """How many values ``arrays[name]`` has (0 when absent), without reading an on-disk one."""
    if isinstance(arrays, SiteArrays):
        return arrays.size(name)
    a = arrays.get(name)
    return 0 if a is None else int(a.size)
