"""Imports point down: the campaign package's modules and the metric modules never import a
module above them, the package has no import cycle, ``cli`` is the top of the graph, and every
``analyzers.*`` module named in an import or a module list exists (no stale path after a move;
analyzers-layout.md, MNE's ``test_import_nesting``)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "analyzers"

#: module -> the campaign modules it may import (the order of the package docstring)
CAMPAIGN = {
    "discover": set(),
    "identity": set(),
    "plan": {"discover"},
    "decode": {"identity"},
    "tables": {"identity", "plan"},
    "chunked": set(),
    "instances": set(),
    "capture": {"chunked", "decode", "identity", "instances", "plan", "tables"},
    "scheduler": {"capture", "chunked", "decode", "discover", "identity", "plan", "tables"},
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


# -- the whole package -----------------------------------------------------------------------------

REPO = ROOT.parent
#: metric modules moved into analyzers/metrics/; the old path stays only as a re-export for users
#: outside the package (notebooks), never imported from inside it or from the tests
SHIMS: dict[str, str] = {}
#: upward imports still to be removed: (importer, imported) -> reason. Each entry must still
#: exist (test below), so the list shrinks when the code is fixed.
PENDING_UPWARD: dict[tuple[str, str], str] = {}


def _modules(root: Path = ROOT) -> dict[str, Path]:
    out = {}
    for p in root.rglob("*.py"):
        name = p.relative_to(root.parent).with_suffix("").as_posix().replace("/", ".")
        out[name.removesuffix(".__init__")] = p
    return out


def _graph(root: Path = ROOT, *, toplevel: bool) -> dict[str, set[str]]:
    """module -> the package modules it imports (at module level only, or anywhere)."""
    mods = _modules(root)

    def resolve(m: str) -> str | None:
        while m and m not in mods:
            m = m.rpartition(".")[0]
        return m or None

    g: dict[str, set[str]] = {}
    for name, p in mods.items():
        pkg = name if p.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(p.read_text())
        nodes = tree.body if toplevel else list(ast.walk(tree))
        out: set[str] = set()
        for node in nodes:
            if isinstance(node, ast.ImportFrom):
                base = pkg.rsplit(".", node.level - 1)[0] if node.level > 1 else pkg
                mod = node.module or ""
                if node.level:
                    mod = f"{base}.{node.module}" if node.module else base
                out |= {r for a in node.names if (r := resolve(f"{mod}.{a.name}"))}
            elif isinstance(node, ast.Import):
                out |= {r for a in node.names if (r := resolve(a.name))}
        g[name] = out - {name}
    return g


def _cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while (w := stack.pop()) != v:
                comp.append(w)
            if comp:
                out.append(sorted([v, *comp]))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles() -> None:
    """No cycle, counting imports inside functions (a lazy import is a dependency all the same;
    there was one: metrics.base -> metrics.spill -> stream.parts -> metrics.spill, spill -> base)."""
    assert _cycles(_graph(toplevel=False)) == []


def test_cli_is_the_top_of_the_graph() -> None:
    g = _graph(toplevel=False)  # lazy imports count: they are a dependency all the same
    up = {(m, "analyzers.cli") for m, deps in g.items() if "analyzers.cli" in deps}
    assert up <= set(PENDING_UPWARD), up - set(PENDING_UPWARD)
    assert set(PENDING_UPWARD) <= up, f"fixed, remove from PENDING_UPWARD: {set(PENDING_UPWARD) - up}"


def test_trace_parsers_never_import_analyzers() -> None:
    for p in (REPO / "trace_parsers").rglob("*.py"):
        bad = {m for m in _imports(p, REPO / "trace_parsers") if m.split(".")[0] == "analyzers"}
        assert not bad, (p, bad)


def test_the_layering_checks_see_a_cycle_and_an_upward_import(tmp_path: Path) -> None:
    pkg = tmp_path / "analyzers"
    (pkg / "metrics").mkdir(parents=True)
    (pkg / "cli.py").write_text("from .metrics import stats\n")
    (pkg / "metrics" / "stats.py").write_text("def f():\n    from ..cli import main\n")
    (pkg / "metrics" / "base.py").write_text("from . import stats\nfrom .. import run\n")
    (pkg / "run.py").write_text("from .metrics.base import x\n")
    assert _cycles(_graph(pkg, toplevel=True)) == [["analyzers.metrics.base", "analyzers.run"]]
    # the lazy import in stats closes a second cycle: cli -> stats -> cli
    assert ["analyzers.cli", "analyzers.metrics.stats"] in _cycles(_graph(pkg, toplevel=False))
    assert "analyzers.cli" in _graph(pkg, toplevel=False)["analyzers.metrics.stats"]
    assert "analyzers.cli" not in _graph(pkg, toplevel=True)["analyzers.metrics.stats"]


_DOTTED = re.compile(r"analyzers(?:\.\w+)+")


def _named_modules(path: Path) -> set[str]:
    """``analyzers.*`` names in a file's imports and in string constants that are exactly a dotted
    module path (analyzer lists, preload lists, doctest module lists)."""
    names = {m for m in _imports(path, REPO / path.relative_to(REPO).parts[0]) if m.startswith("analyzers.")}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _DOTTED.fullmatch(node.value):
            names.add(node.value)
    return names


def _exists(name: str) -> bool:
    """A module, or a name defined by one (``from analyzers.x import f`` -> ``analyzers.x.f``)."""
    try:
        if importlib.util.find_spec(name) is not None:
            return True
    except ModuleNotFoundError:
        pass
    mod, _, attr = name.rpartition(".")
    try:
        return hasattr(importlib.import_module(mod), attr)
    except ModuleNotFoundError:
        return False


def test_the_stale_path_check_sees_moved_modules() -> None:
    assert _exists("analyzers.metrics.stats") and _exists("analyzers.metrics.stats.summarize")
    assert not _exists("analyzers.stats") and not _exists("analyzers.stats.summarize")
    assert not _exists("analyzers.context_switch") and not _exists("analyzers._metric.make_table")


@pytest.mark.parametrize("top", ["analyzers", "tests"])
def test_no_stale_module_paths(top: str) -> None:
    stale = {}
    for p in sorted((REPO / top).rglob("*.py")):
        if p == Path(__file__).resolve():  # names the shims on purpose
            continue
        names = {n for n in _named_modules(p) if not n.endswith(".*")}
        bad = {n for n in names if not _exists(n) or n in SHIMS or any(n.startswith(s + ".") for s in SHIMS)}
        if bad:
            stale[str(p.relative_to(REPO))] = sorted(bad)
    assert not stale, stale


def test_shims_only_re_export() -> None:
    for old, new in SHIMS.items():
        a, b = importlib.import_module(old), importlib.import_module(new)
        public = [n for n in vars(b) if not n.startswith("_")]
        assert all(getattr(a, n) is getattr(b, n) for n in public)
        assert len((ROOT / (old.split(".")[1] + ".py")).read_text().splitlines()) <= 3



#: the modules still holding state in a ContextVar (the site-occurrence memo, ``sites.reuse_site_events``;
#: the spill store is passed explicitly: ``metrics.spill.Spill``, ``store=``)
CONTEXT_STATE = {"sites.py"}


def _context_state(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*.py")
            if re.search(r"^\s*(import contextvars|from contextvars import)", p.read_text(), re.M)}


def test_no_new_context_state() -> None:
    """State reaches the analyzers through arguments: no module but those named keeps a ContextVar."""
    assert _context_state(ROOT) == CONTEXT_STATE


def test_the_context_state_check_sees_one(tmp_path: Path) -> None:
    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics" / "spill.py").write_text("import contextvars\n_S = contextvars.ContextVar('s')\n")
    (tmp_path / "sites.py").write_text("from contextvars import ContextVar\n")
    assert _context_state(tmp_path) == {"metrics/spill.py", "sites.py"} != CONTEXT_STATE
