"""Shared fixtures: the reference corpus (../shared/corpus), slow-test opt-in, hypothesis profiles."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import NoReturn

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
CAPTURES = ROOT / "captures"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

try:
    from hypothesis import HealthCheck, settings

    settings.register_profile("ci", derandomize=True, deadline=None, max_examples=200,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.register_profile("dev", deadline=None, max_examples=100)
    settings.load_profile("ci" if IN_CI else os.environ.get("HYPOTHESIS_PROFILE", "dev"))
except ImportError:  # pragma: no cover
    pass


def pytest_configure(config: pytest.Config) -> None:
    """Parsed CTF metadata is cached (``trace_parsers.ctf.cache``) in a folder of this session, which
    subprocesses inherit, never in the user's own cache (``tests/trace_parsers/ctf/test_cache.py``
    points it elsewhere per test)."""
    import shutil
    import tempfile

    if "CROSSTRACE_CACHE_DIR" not in os.environ:
        d = tempfile.mkdtemp(prefix="crosstrace-test-cache-")
        os.environ["CROSSTRACE_CACHE_DIR"] = d
        config.add_cleanup(lambda: shutil.rmtree(d, ignore_errors=True))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", default=False, help="run tests marked slow")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --runslow or `make test-all`")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def missing(msg: str) -> NoReturn:
    """Something a test needs is not here: fail in CI (where everything must be), skip elsewhere."""
    if IN_CI:
        pytest.fail(msg + " — required in CI", pytrace=False)
    pytest.skip(msg)


def need_tool(tool: str) -> str:
    """Path of an external tool: fails in CI when missing, skips elsewhere with the reason."""
    import shutil

    path = shutil.which(tool)
    if not path:
        missing(f"{tool} not installed (tools/install-system-deps.sh)")
    return path


def corpus_dir(fmt: str) -> Path:
    """``../shared/corpus/<fmt>``: fails in CI when missing, skips elsewhere with the reason."""
    d = CORPUS / fmt
    if not d.is_dir():
        missing(f"reference corpus not found at {d}: place the shared corpus beside the repository "
                "(../shared/corpus)")
    return d


def corpus_facts(fmt: str) -> dict:
    return json.loads((corpus_dir(fmt) / "facts.json").read_text())


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@pytest.fixture(scope="session")
def sv_corpus() -> Path:
    return corpus_dir("systemview")


@pytest.fixture(scope="session")
def trx_corpus() -> Path:
    return corpus_dir("tracex")


@pytest.fixture(scope="session")
def logic_corpus() -> Path:
    return corpus_dir("logic")
