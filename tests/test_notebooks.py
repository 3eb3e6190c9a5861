"""The notebooks under notebooks/: committed without outputs, public API only, and each one runs
headless (nbclient, the venv's ``python3`` kernel, matplotlib Agg) in a temporary copy without error.

``make notebooks`` runs this file with ``CROSSTRACE_NB_KEEP=out/notebooks``, which keeps the executed
copies (with outputs) there for reading.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import CORPUS, IN_CI, ROOT

NB_DIR = ROOT / "notebooks"
EXPECTED = ("01_jitter_exploration.ipynb", "02_cross_validation.ipynb", "03_public_recording.ipynb")
NOTEBOOKS = sorted(NB_DIR.glob("*.ipynb"))
#: per-cell limit; the three notebooks together are meant to run well under two minutes
CELL_TIMEOUT_S = 90

nbformat = pytest.importorskip("nbformat")


def _code_cells(path: Path) -> list:
    nb = nbformat.read(path, as_version=4)
    return [c for c in nb.cells if c.cell_type == "code"]


def test_expected_notebooks_present() -> None:
    missing = [n for n in EXPECTED if not (NB_DIR / n).is_file()]
    assert not missing, f"missing notebooks in {NB_DIR}: {missing}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_valid_and_outputs_stripped(path: Path) -> None:
    """Committed notebooks carry no outputs and no execution counts (clean diffs, no stale results)."""
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"
             and (c.get("outputs") or c.get("execution_count") is not None)]
    assert not dirty, f"{path.name}: code cells {dirty} have outputs or an execution_count; strip them " \
                      "(e.g. `jupyter nbconvert --clear-output --inplace`)"
    kernel = nb.metadata.get("kernelspec", {}).get("name")
    assert kernel == "python3", f"{path.name}: kernelspec must be python3, got {kernel!r}"


def _imported_modules(source: str) -> list[str]:
    # IPython magics are not Python: drop lines starting with % or !
    text = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
    mods = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            mods += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            mods.append("." * node.level + (node.module or ""))
            mods += [f"{node.module}.{a.name}" for a in node.names if node.module]
    return mods


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_public_api_only(path: Path) -> None:
    """Notebooks import crosstrace only through public modules and names (house style §4.1)."""
    bad = []
    for cell in _code_cells(path):
        for mod in _imported_modules(cell.source):
            parts = mod.split(".")
            if parts[0] in ("trace_parsers", "analyzers") and any(p.startswith("_") for p in parts):
                bad.append(mod)
            if mod.startswith("."):
                bad.append(mod)
        if re.search(r"\b(trace_parsers|analyzers)\.\w*\._\w+", cell.source):
            bad.append("attribute access to a private module")
    assert not bad, f"{path.name} uses private API: {bad}"


@pytest.fixture(scope="module")
def nb_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One analysis output folder for all notebooks: 02 reuses the cached results of 01."""
    return tmp_path_factory.mktemp("nb-out")


def _execute(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, out: Path,
             env: dict[str, str] | None = None, suffix: str = "") -> object:
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    work = tmp_path / "nb"
    work.mkdir()
    copy = work / path.name
    shutil.copy(path, copy)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("CROSSTRACE_ROOT", str(ROOT))
    monkeypatch.setenv("CROSSTRACE_OUT", str(out))
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    # keep the kernel's connection file and IPython profile out of $HOME (read-only in some CI runners)
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "jupyter-runtime"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    for k, v in (env or {}).items():
        monkeypatch.setenv(k, v)
    nb = nbformat.read(copy, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                                     resources={"metadata": {"path": str(work)}})
    client.execute()  # raises CellExecutionError (with the cell and traceback) on any error
    keep = os.environ.get("CROSSTRACE_NB_KEEP")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, Path(keep) / (path.stem + suffix + ".ipynb"))
    return nb


def _text_outputs(nb: object) -> str:
    out = []
    for c in nb.cells:  # type: ignore[attr-defined]
        for o in c.get("outputs", []):
            if o.get("output_type") == "stream":
                out.append(o.get("text", ""))
            elif "data" in o and "text/plain" in o["data"]:
                out.append(o["data"]["text/plain"])
    return "\n".join(out)


@pytest.mark.parametrize("name", EXPECTED[:2])
def test_campaign_notebook_runs(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                nb_out: Path) -> None:
    nb = _execute(NB_DIR / name, tmp_path, monkeypatch, nb_out)
    text = _text_outputs(nb)
    assert "Traceback" not in text
    figures = sum(1 for c in nb.cells for o in c.get("outputs", [])  # type: ignore[attr-defined]
                  if "image/png" in o.get("data", {}))
    assert figures >= 3, f"{name}: expected at least 3 figures, got {figures}"


def test_public_recording_notebook_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        nb_out: Path) -> None:
    corpus = CORPUS / "systemview"
    if not corpus.is_dir():
        if IN_CI:
            pytest.fail(f"reference corpus not found at {corpus} — required in CI", pytrace=False)
        pytest.skip(f"reference corpus not found at {corpus}")
    nb = _execute(NB_DIR / EXPECTED[2], tmp_path, monkeypatch, nb_out, {"CROSSTRACE_CORPUS": str(CORPUS)})
    text = _text_outputs(nb)
    assert "corpus not found" not in text
    assert "SOURCES.md" in text  # the notebook says where the recording comes from


def test_public_recording_notebook_skips_without_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        nb_out: Path) -> None:
    """Without the corpus the notebook still runs to the end and says why it did nothing."""
    empty = tmp_path / "no-corpus"
    empty.mkdir()
    nb = _execute(NB_DIR / EXPECTED[2], tmp_path, monkeypatch, nb_out, {"CROSSTRACE_CORPUS": str(empty)},
                  suffix="-no-corpus")
    text = _text_outputs(nb)
    assert "corpus not found" in text
    figures = sum(1 for c in nb.cells for o in c.get("outputs", [])  # type: ignore[attr-defined]
                  if "image/png" in o.get("data", {}))
    assert figures == 0
