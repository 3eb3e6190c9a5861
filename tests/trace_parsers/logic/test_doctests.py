"""The worked examples in the logic-capture modules' docstrings are executed."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["trace_parsers._edges", "trace_parsers.sigrok.metadata", "trace_parsers.sigrok.protocol",
           "trace_parsers.saleae.csv"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    res = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert res.attempted > 0 and res.failed == 0
