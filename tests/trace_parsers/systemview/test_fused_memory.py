"""The fused read under an address-space limit: it succeeds or raises ``MemoryError``, never a
Rust panic (``PanicException``, which no ``except Exception`` catches) and never a hang.

A column that cannot grow inside the Rust pass once panicked; the panic hook then needed memory
for its backtrace and hung the process. Each limit runs in its own process, with a timeout.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.systemview import write_synthetic
from trace_parsers import _core

pytestmark = pytest.mark.skipif(not hasattr(_core, "SvFused"),
                                reason="compiled core without SvFused (run `make build`)")

_CHILD = r"""
import json, resource, sys
import numpy
from trace_parsers.systemview import read_systemview
def vm():
    for line in open('/proc/self/status'):
        if line.startswith('VmSize'):
            return int(line.split()[1]) << 10
extra = int(sys.argv[2]) << 20
if extra:
    lim = vm() + extra
    resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
try:
    tr = read_systemview(sys.argv[1])
    out = {"ok": len(tr), "columnar": tr.columnar}
except BaseException as e:  # what escapes, whatever it is
    out = {"error": type(e).__module__ + "." + type(e).__name__, "text": str(e)[:200]}
print(json.dumps(out))
"""


def _read_under(path: Path, extra_mb: int) -> dict:
    r = subprocess.run([sys.executable, "-c", _CHILD, str(path), str(extra_mb)], capture_output=True,
                       text=True, timeout=120, cwd=Path(__file__).resolve().parents[3])
    if r.returncode != 0 or not r.stdout.strip():
        return {"died": r.returncode, "stderr": r.stderr[-300:]}
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_memory_limits_give_memory_error_never_a_panic_or_hang(tmp_path: Path) -> None:
    p = tmp_path / "s.SVDat"
    n = write_synthetic(p, 8_000_000)
    whole = _read_under(p, 0)
    assert whole == {"ok": n, "columnar": True}
    outcomes = {mb: _read_under(p, mb) for mb in range(20, 220, 20)}
    bad = {mb: o for mb, o in outcomes.items()
           if not (o.get("ok") == whole["ok"] or o.get("error") == "builtins.MemoryError")}
    assert bad == {}, bad
    texts = {o.get("text", "") for o in outcomes.values()}
    # the limits reach the column builders (the case that panicked) and let the read through
    assert any("event columns" in t for t in texts), outcomes
    assert any(o.get("ok") for o in outcomes.values()), outcomes
