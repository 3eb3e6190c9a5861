"""Notebook 01 never pools time scales and shares the report's colours (issue 33 item 12): every
figure is drawn per time scale and says which; every RTOS has its own colour, the same one the
report gives it whatever RTOSes a campaign holds."""

from __future__ import annotations

import re

import pytest

from analyzers.report import RTOS_COLOURS
from analyzers.report import figures as F
from tests.conftest import ROOT

nbformat = pytest.importorskip("nbformat")
NB = ROOT / "notebooks" / "01_jitter_exploration.ipynb"


def _code() -> str:
    nb = nbformat.read(NB, as_version=4)
    return "\n".join(c.source for c in nb.cells if c.cell_type == "code")


def test_one_colour_per_rtos_shared_with_the_report():
    assert len(set(RTOS_COLOURS.values())) == len(RTOS_COLOURS)
    assert {"freertos", "threadx", "zephyr", "baremetal"} <= set(RTOS_COLOURS)
    for present in (["zephyr", "freertos"], ["freertos", "threadx", "zephyr", "my_rtos"]):
        F.set_colours(present)
        assert F.colour("freertos", 0) == RTOS_COLOURS["freertos"] != F.colour("zephyr", 0)
    assert F.colour("my_rtos", 0) not in RTOS_COLOURS.values()
    code = _code()
    assert re.search(r"from analyzers\.report import RTOS_COLOURS", code)
    assert not re.search(r"RTOS_COLORS\s*=\s*\{", code)  # no colour table of its own


def test_every_figure_names_its_time_scale():
    code = _code()
    titles = re.findall(r"\.(?:set_title|suptitle)\((f?\"[^\"]*\")", code)
    # every distribution across RTOSes (one instance of one capture is drawn last: that is no pooling)
    dist = [t for t in titles if ("periodic.fast" in t or "ISR → task" in t or "isr.to_task" in t)
            and "instance" not in t]
    assert len(dist) >= 5 and all("scale" in t for t in dist), dist
