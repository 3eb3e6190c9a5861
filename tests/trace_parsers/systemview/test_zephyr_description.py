"""The bundled Zephyr OS table and the description grammar's ``Option`` lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from trace_parsers import open_trace
from trace_parsers.systemview.description import choose_table, load_bundled, parse_description

ROOT = Path(__file__).resolve().parents[3]
ZEPHYR_SV = sorted((ROOT / "captures" / "qemu_netduinoplus2" / "zephyr").glob("*/*/trace.SVDat"))


def test_option_lines_and_comma_separated_args() -> None:
    t = parse_description("Option    ReversePriority\n"
                          "40 k_sem_init sem=%I, initial_count=%u | Returns %ErrCodePosix\n")
    assert t.options == {"ReversePriority"}
    assert t.events[40].args == (("sem", "%I"), ("initial_count", "%u"))
    assert t.events[40].returns == "%ErrCodePosix"


def test_zephyr_table_is_chosen_from_sysdesc() -> None:
    assert choose_table({"O": "Zephyr", "D": "qemu_netduinoplus2"}) == "zephyr"
    assert choose_table({"O": "embOS"}) is None
    z = load_bundled("zephyr")
    assert z.os == "Zephyr"
    # ids of Zephyr 4.3's tracing_sysview_ids.h (TID_OFFSET 32): k_sem_give = 9 + 32, k_yield = 73 + 32
    assert z.label(41) == "k_sem_give" and z.label(105) == "k_thread_yield"
    assert z.label(300) == "id300"


@pytest.mark.parametrize("path", ZEPHYR_SV, ids=lambda p: p.parent.parent.name)
def test_zephyr_captures_have_no_unknown_api_ids(path: Path) -> None:
    tr = open_trace(path)
    assert tr.meta.extra["description"] == "zephyr"
    assert not [d for d in tr.diagnostics if d.code == "SV_UNKNOWN_ID"]
    names = tr.meta.extra["api_names"]
    assert names and all(not v.startswith("id") for v in names.values())


def test_without_the_table_the_ids_are_unknown() -> None:
    """The check above can fail: a table that does not name the ids leaves SV_UNKNOWN_ID notices."""
    if not ZEPHYR_SV:
        pytest.skip("no Zephyr SystemView capture")
    tr = open_trace(ZEPHYR_SV[0], description=parse_description("32 k_sched_lock\n"))
    assert [d for d in tr.diagnostics if d.code == "SV_UNKNOWN_ID"]
