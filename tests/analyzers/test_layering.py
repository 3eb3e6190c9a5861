"""Imports point down: the campaign package's modules and the metric modules never import a
module above them (no cycles; analyzers-layout.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "analyzers"

#: module -> the campaign modules it may import (the order of the package docstring)
CAMPAIGN = {
    "discover": set(),
    "identity": set(),
    "plan": {"discover"},
    "decode": {"identity"},
    "capture": {"decode", "identity", "plan"},
    "tables": {"identity", "plan"},
    "scheduler": {"capture", "decode", "discover", "identity", "plan", "tables"},
    "cli_analyze": {"scheduler", "tables", "discover"},
}


def _imports(path: Path, root: Path = ROOT) -> set[str]:
    """Modules imported by a file, as absolute dotted names (relative imports resolved)."""
    pkg = path.parent.relative_to(root.parent).as_posix().replace("/", ".")
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = pkg.rsplit(".", node.level - 1)[0] if node.level else ""
            mod = f"{base}.{node.module}" if node.level and node.module else (node.module or base)
            out.add(mod)
            out |= {f"{mod}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return out


@pytest.mark.parametrize("name", sorted(CAMPAIGN))
def test_campaign_modules_import_only_below_them(name):
    got = {m.split(".")[2] for m in _imports(ROOT / "campaign" / f"{name}.py")
           if m.startswith("analyzers.campaign.") and m.split(".")[2] in CAMPAIGN}
    assert got <= CAMPAIGN[name], got - CAMPAIGN[name]


@pytest.mark.parametrize("path", sorted((ROOT / "metrics").glob("*.py")), ids=lambda p: p.name)
def test_metrics_never_import_the_campaign_or_the_cli(path):
    above = ("analyzers.campaign", "analyzers.cli", "analyzers.report")
    bad = {m for m in _imports(path) if m.startswith(above)}
    assert not bad, bad


def test_the_check_sees_a_forbidden_import(tmp_path):
    d = tmp_path / "analyzers" / "campaign"
    d.mkdir(parents=True)
    (d / "discover.py").write_text("from .scheduler import analyze_dirs\nfrom ..cli import main\n")
    got = _imports(d / "discover.py", tmp_path / "analyzers")
    assert "analyzers.campaign.scheduler" in got and "analyzers.cli" in got
