"""The worked examples in docstrings outside the format readers are executed too."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "trace_parsers.model",
    "trace_parsers.columns",
    "analyzers.metrics.base",
    "analyzers.metrics.kstate",
    "analyzers.metrics.kernel",
    "analyzers.metrics.cpu_load",
    "analyzers.metrics.sched",
    "analyzers.metrics.registry",
    "analyzers.user_config",
    "analyzers.site_arrays",
    "analyzers._disk",
    "analyzers.campaign.discover",
    "analyzers.campaign.tables",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    res = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert res.attempted > 0 and res.failed == 0
