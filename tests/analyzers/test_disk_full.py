"""A full disk under a long recording's scratch files is ``AN_NO_SPACE`` naming the folder and its
free space, for ``analyze`` (the capture fails, the batch goes on) and for ``crosstrace events``;
any other OSError is still what it was (a bug, or the traceback)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from analyzers import cli
from analyzers._disk import no_space
from analyzers.campaign.capture import analyze_capture
from analyzers.metrics import spill
from tests.conftest import CAPTURES

CAPTURE = CAPTURES / "qemu_netduinoplus2" / "freertos" / "isr_latency" / "ref"
FULL = Path("/dev/full")  # every write fails with ENOSPC, from the kernel itself


@pytest.fixture()
def full_scratch(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every spill scratch file is a link to /dev/full: the chunked analysis's first scratch
    write meets a real ENOSPC."""
    if not FULL.exists():
        pytest.skip("no /dev/full")
    made: list[Path] = []
    original = spill.Spill.scratch

    def scratch(self: spill.Spill, prefix: str, suffix: str) -> Path:
        p = original(self, prefix, suffix)
        p.symlink_to(FULL)
        made.append(p)
        return p

    monkeypatch.setattr(spill.Spill, "scratch", scratch)
    return made


def test_a_full_disk_fails_the_capture_as_no_space(tmp_path: Path, full_scratch: list[Path]) -> None:
    r = analyze_capture(CAPTURE, "cap", tmp_path / "out", force=True, chunk_events=257)
    assert full_scratch, "the chunked analysis wrote no scratch file: the fault was never met"
    assert r["status"] == "failed" and r["code"] == "AN_NO_SPACE", r.get("error")
    dest = tmp_path / "out" / "captures" / "cap"
    assert f"disk holding {dest}" in r["error"] and "GB free now" in r["error"]
    assert "crosstrace bug" not in r["error"]
    assert not list(dest.glob(".crosstrace-spill-*"))  # the scratch went with the failure
    assert FULL.is_char_device()  # the links were removed, never the device


def test_the_same_capture_with_room_is_analyzed(tmp_path: Path) -> None:
    r = analyze_capture(CAPTURE, "cap", tmp_path / "out", force=True, chunk_events=257)
    assert r["status"] == "ok"


@pytest.mark.parametrize("err, code", [(errno.ENOSPC, "AN_NO_SPACE"), (errno.EDQUOT, "AN_NO_SPACE"),
                                       (errno.EIO, "INTERNAL")])
def test_only_a_full_disk_is_no_space(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, err: int,
                                      code: str) -> None:
    def fail(*_: object, **__: object) -> None:
        raise OSError(err, os.strerror(err), "scratch.bin")

    monkeypatch.setattr("analyzers.campaign.capture.analyze_chunked", fail)
    r = analyze_capture(CAPTURE, "cap", tmp_path / "out", force=True, chunk_events=257)
    assert (r["status"], r["code"]) == ("failed", code), r["error"]
    assert ("(scratch.bin)" in r["error"]) == (code == "AN_NO_SPACE")


def test_the_cause_chain_is_followed() -> None:
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as e:
            raise RuntimeError("wrapped") from e
    except RuntimeError as wrapped:
        err = no_space(wrapped, Path("out"), "writing")
    assert err is not None and err.code == "AN_NO_SPACE"
    assert no_space(RuntimeError("no cause"), Path("out"), "writing") is None


def test_events_on_a_full_disk_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    if not FULL.exists():
        pytest.skip("no /dev/full")
    out = tmp_path / "events.csv"
    partial = tmp_path / "events.csv.partial"  # what `events` writes before renaming it to out
    partial.symlink_to(FULL)
    rc = cli.main(["events", str(CAPTURE / "trace.SVDat"), "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 1 and err.startswith(f"crosstrace: no space left on the disk holding {tmp_path} ")
    assert "(ERR:AN_NO_SPACE)" in err and err.count("\n") == 1
    assert not out.exists() and not partial.exists() and FULL.is_char_device()


def test_events_with_another_oserror_is_not_hidden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*_: object, **__: object) -> int:
        raise PermissionError(errno.EACCES, "Permission denied", "x.parquet")

    monkeypatch.setattr("analyzers.export.events_chunked.export_events", fail)
    with pytest.raises(PermissionError):
        cli.main(["events", str(CAPTURE / "trace.SVDat"), "-o", str(tmp_path / "x.parquet")])
