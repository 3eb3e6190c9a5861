"""Capture-level checks around cross-validation: the files are the ones run.json describes, and a
negative control fails the way it was built to fail.

``run.json`` may declare, for a capture built to fail (a negative control)::

    "negative_control": {"kind": "trace_delay", "site": "isr.task_wake", "instructions": 64,
                         "expected_delta_ns": 64},
    "expect": {"verdict": "FAIL", "metric": "isr.to_task.latency"}

The expectation is *met* when the capture's verdict is the expected one and, for a delay, every
profile's raw difference of that metric recovers ``expected_delta_ns`` within one quantum. A
negative control that passes, or fails by another amount, is a broken check and an error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from trace_parsers.errors import AnalysisError


def declared_files(run: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(file name, sha256)`` of every recording run.json names with a hash."""
    out = []
    trace = run.get("trace") if isinstance(run.get("trace"), Mapping) else {}
    for entry in [trace, trace.get("metadata"), *(run.get("logic") or []), run.get("uart")]:
        if isinstance(entry, Mapping) and entry.get("file") and entry.get("sha256"):
            out.append((str(entry["file"]), str(entry["sha256"])))
    return out


def verify_hashes(folder: Path, run: Mapping[str, Any], sha256: Callable[[Path], str]) -> list[str]:
    """Raise ``AN_HASH_MISMATCH`` naming the first file whose SHA-256 is not the declared one;
    return the declared files that are missing (the rest of the capture is still analyzed).
    ``sha256`` hashes a file (the campaign's memoised one: its input hash reads the same files)."""
    missing = []
    for name, want in declared_files(run):
        path = folder / name
        if not path.is_file():
            missing.append(f"{path}: run.json names this recording, but it is missing")
            continue
        got = sha256(path)
        if got != want.lower():
            raise AnalysisError(
                f"{path}: SHA-256 {got} differs from {want} declared in {folder / 'run.json'} "
                "(the file changed after recording; re-record it or update run.json)",
                code="AN_HASH_MISMATCH",
            )
    return missing


def declared_edges(run: Mapping[str, Any], file_name: str) -> dict[str, int] | None:
    """Edge count per channel that run.json declares for one logic file (None: not declared)."""
    for entry in run.get("logic") or []:
        if isinstance(entry, Mapping) and Path(str(entry.get("file", ""))).name == file_name:
            edges = entry.get("edges")
            return {str(k): int(v) for k, v in edges.items()} if isinstance(edges, Mapping) else None
    return None


def expectation(
    run: Mapping[str, Any], verdict: str, crossval: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """Whether a capture built to fail failed as built (None for an ordinary capture)."""
    exp = run.get("expect")
    if not isinstance(exp, Mapping):
        return None
    want = str(exp.get("verdict", "FAIL"))
    metric = str(exp.get("metric", ""))
    nc = run.get("negative_control") if isinstance(run.get("negative_control"), Mapping) else {}
    problems = [] if verdict == want else [f"verdict {verdict}, expected {want}"]
    recovered = []
    delta = nc.get("expected_delta_ns") if nc else None
    rows = [r for r in crossval if not metric or r.get("metric") == metric]
    if metric and not rows:
        problems.append(f"metric {metric} was not cross-validated")
    if delta is not None:
        for r in rows:
            got, q = float(r.get("raw_diff_ns", float("nan"))), float(r.get("quantum_ns", 0.0))
            ok = abs(got - float(delta)) <= q
            recovered.append({"profile": r.get("profile", ""), "measured_ns": got, "quantum_ns": q, "ok": ok})
            if not ok:
                problems.append(
                    f"{r.get('profile', '')}: raw difference {got:+.1f} ns, injected {float(delta):+.1f} ns "
                    f"(more than one quantum, {q:g} ns, apart)"
                )
    return {
        "verdict": want,
        "metric": metric,
        "negative_control": dict(nc) if nc else {},
        "recovered": recovered,
        "met": not problems,
        "detail": "; ".join(problems) or f"failed as built ({want})",
    }
