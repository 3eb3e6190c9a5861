"""The per-user cache of parsed TSDL metadata (``trace_parsers.ctf.cache``): a hit equals a parse,
and nothing but a private, intact file written by this parser is ever read back."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from tests.conftest import CAPTURES
from trace_parsers.ctf import _compiled, cache, read_ctf, tsdl
from trace_parsers.ctf.types import Metadata

from .helpers import TSDL

ZEPHYR = CAPTURES / "qemu_netduinoplus2" / "zephyr" / "calib-ctf" / "ref"
MDATA = (ZEPHYR / "metadata").read_bytes()


@pytest.fixture()
def where(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "cache"
    monkeypatch.setenv("CROSSTRACE_CACHE_DIR", str(d))
    return d


def compile_fresh(mdata: bytes) -> object:
    """``_compiled`` without its in-process memo: what a new process does."""
    return _compiled.__wrapped__(mdata)


def no_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(_: bytes) -> Metadata:
        raise AssertionError("parsed: the cache was not used")

    monkeypatch.setattr("trace_parsers.ctf.parse_metadata", refuse)


def test_a_second_process_reads_the_parse_back(where: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert len(MDATA) >= cache.MIN_BYTES and cache.load(MDATA) is None
    first = compile_fresh(MDATA)
    files = list(where.iterdir())
    assert [f.name for f in files] == [f"ctf-metadata-{cache.key(MDATA)}.pickle"]
    assert files[0].stat().st_mode & 0o077 == 0 and where.stat().st_mode & 0o077 == 0
    no_parse(monkeypatch)
    again = compile_fresh(MDATA)
    assert again.meta == first.meta == tsdl.parse_metadata(MDATA)


def test_a_cached_parse_reads_the_same_trace(where: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _compiled.cache_clear()  # this process's memo: earlier tests may have compiled the metadata
    cold = read_ctf(ZEPHYR / "trace.ctf")
    _compiled.cache_clear()
    assert list(where.iterdir())
    no_parse(monkeypatch)
    warm = read_ctf(ZEPHYR / "trace.ctf")
    assert (warm.events == cold.events).all() and warm.tasks == cold.tasks
    assert warm.meta == cold.meta


def test_the_key_follows_the_parser_sources(where: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    compile_fresh(MDATA)
    old = cache.key(MDATA)
    monkeypatch.setattr(cache, "_code_digest", b"another parser")
    assert cache.key(MDATA) not in (None, old)
    assert cache.load(MDATA) is None  # what the old parser wrote is not read
    monkeypatch.setattr(cache, "_code_digest", b"")  # sources unreadable: nothing is cached
    assert cache.key(MDATA) is None


def test_small_metadata_is_parsed_each_time(where: Path) -> None:
    small = (TSDL / "features.tsdl").read_bytes()
    assert len(small) < cache.MIN_BYTES and cache.key(small) is None
    compile_fresh(small)
    assert not where.exists()


@pytest.mark.parametrize("off", ["off", "0", ""])
def test_off(off: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CROSSTRACE_CACHE_DIR", off)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_dir() is None
    compile_fresh(MDATA)
    assert list(tmp_path.iterdir()) == []


def test_default_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CROSSTRACE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "xdg" / "crosstrace"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_dir() == tmp_path / "home" / ".cache" / "crosstrace"
    compile_fresh(MDATA)
    assert len(list((tmp_path / "home" / ".cache" / "crosstrace").iterdir())) == 1


def _stored(where: Path) -> Path:
    compile_fresh(MDATA)
    (f,) = where.iterdir()
    assert cache.load(MDATA) is not None  # intact, private: read (the faults below must matter)
    return f


@pytest.mark.parametrize("damage", ["cut", "empty", "not metadata", "not a pickle"])
def test_a_damaged_file_is_parsed_again(damage: str, where: Path) -> None:
    f = _stored(where)
    body = f.read_bytes()
    f.write_bytes({"cut": body[: len(body) // 2], "empty": b"",
                   "not metadata": pickle.dumps({"events": {}}),
                   "not a pickle": b"crosstrace" * 10}[damage])
    assert cache.load(MDATA) is None
    assert compile_fresh(MDATA).meta == tsdl.parse_metadata(MDATA)
    assert cache.load(MDATA) is not None  # rewritten by the parse


@pytest.mark.parametrize("what", ["folder", "file"])
@pytest.mark.parametrize("mode", [0o020, 0o002])
def test_a_file_others_could_write_is_not_unpickled(what: str, mode: int, where: Path) -> None:
    f = _stored(where)
    p = where if what == "folder" else f
    p.chmod(p.stat().st_mode | mode)
    assert cache.load(MDATA) is None


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX ownership")
def test_a_file_of_another_user_is_not_unpickled(where: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _stored(where)
    uid = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: uid + 1)
    assert cache.load(MDATA) is None


def test_a_cache_that_cannot_be_written_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_bytes(b"")
    monkeypatch.setenv("CROSSTRACE_CACHE_DIR", str(blocker / "cache"))  # under a file: no mkdir
    assert compile_fresh(MDATA).meta == tsdl.parse_metadata(MDATA)
    assert [p.name for p in tmp_path.iterdir()] == ["a-file"]
