"""A plain `pip install crosstrace` (the built wheel, no extras, in a clean venv) runs the main job:
`crosstrace analyze` then `crosstrace report`; the optional parts fail with one line naming the
extra. Needs maturin and the package registry (or CROSSTRACE_WHEELHOUSE: a folder of wheels)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from ..conftest import CAPTURES, IN_CI, ROOT

pytestmark = pytest.mark.slow

RUNS = [CAPTURES / "qemu_netduinoplus2" / r / "ctx_switch-n2" / "ref" for r in ("freertos", "threadx")]


def _run(*cmd, cwd=None, timeout=900):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, cwd=cwd)


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    maturin = shutil.which("maturin") or shutil.which("maturin", path=os.path.dirname(sys.executable))
    if maturin is None:
        if IN_CI:
            pytest.fail("maturin is missing (the dev extra installs it)")
        pytest.skip("maturin is not installed")
    tmp = tmp_path_factory.mktemp("wheel")
    r = _run(maturin, "build", "--release", "-q", "-o", tmp / "dist", cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    (wheel,) = (tmp / "dist").glob("crosstrace-*.whl")
    r = _run(sys.executable, "-m", "venv", tmp / "venv")
    assert r.returncode == 0, r.stderr
    py = tmp / "venv" / "bin" / "python"
    house = os.environ.get("CROSSTRACE_WHEELHOUSE")
    index = ["--no-index", "--find-links", house] if house else []
    r = _run(py, "-m", "pip", "install", "-q", "--disable-pip-version-check", *index, wheel)
    assert r.returncode == 0, r.stderr[-3000:]
    return tmp / "venv" / "bin"


def test_plain_install_runs_analyze_and_report(venv, tmp_path):
    # a clean environment: the core dependencies only, none of the extras
    probe = _run(venv / "python", "-c", "import pandas, pyarrow, numpy\n"
                 "for m in ('matplotlib', 'polars', 'distributed', 'perfetto'):\n"
                 "    try:\n        __import__(m)\n        print('present', m)\n"
                 "    except ImportError:\n        pass\n")
    assert probe.returncode == 0 and probe.stdout == "", probe.stdout + probe.stderr
    out = tmp_path / "campaign"
    r = _run(venv / "crosstrace", "analyze", *RUNS, "-o", out, "-j", "1")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert "Traceback" not in r.stderr
    html = tmp_path / "r.html"
    r = _run(venv / "crosstrace", "report", out, "-o", html)
    assert r.returncode == 0, r.stderr[-3000:]
    text = html.read_text()
    assert "is fastest at <code>ctx_switch.yield</code>" in text and "Do trace and pins agree? Yes." in text
    vcd = tmp_path / "x.vcd"
    r = _run(venv / "crosstrace", "export", RUNS[0], "--vcd", vcd)
    assert r.returncode == 0 and vcd.stat().st_size > 1000, r.stderr[-3000:]


@pytest.mark.parametrize(("args", "extra"), [
    (("export", RUNS[0], "--perfetto", "{tmp}/x.pftrace"), "crosstrace[perfetto]"),
    (("analyze", RUNS[0], "-o", "{tmp}/d", "--scheduler", "dask-local"), "crosstrace[dask]"),
])
def test_optional_parts_fail_with_one_line_naming_the_extra(venv, tmp_path, args, extra):
    r = _run(venv / "crosstrace", *(str(a).format(tmp=tmp_path) for a in args))
    assert r.returncode == 2, r.stdout + r.stderr
    err = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(err) == 1 and extra in err[0] and "Traceback" not in r.stderr, r.stderr
