"""What one capture run is (``RunSpec``), the campaign file that lists them (captures/campaign.toml), the
run.json entries derived from a run's options (time scale, negative control) and the README's Reproduce
line, which must run exactly as printed (tests/firmware/test_reproduce_lines.py checks every README)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from vla.profiles import PROFILES, Profile, parse_profile
from vla.sites import read_sites

DEFAULT_LA = ("ideal", "la100")
DEFAULT_TIMEOUT_S = 300.0

# The metric a site's trace record takes part in (the negative controls name what they must break).
SITE_METRIC = {
    "isr.enter": "isr.to_task.latency",
    "isr.task_wake": "isr.to_task.latency",
    "ctx.yield": "ctx_switch.yield",
    "ctx.switch_in": "ctx_switch.yield",
    "periodic.fast": "periodic.fast.period",
    "periodic.slow": "periodic.slow.period",
    "fft.start": "fft.duration",
    "fft.stop": "fft.duration",
}


@dataclass
class RunSpec:
    rtos: str
    app: str
    options: dict[str, str] = field(default_factory=dict)
    variant: str = ""
    profiles: tuple[Profile, ...] = tuple(PROFILES[p] for p in DEFAULT_LA)
    timeout_s: float = DEFAULT_TIMEOUT_S
    shift: int = 0

    @property
    def app_dir(self) -> str:
        return f"{self.app}-{self.variant}" if self.variant else self.app


def time_scale(shift: int) -> dict:
    """run.json ``time_scale``: QEMU ``-icount shift=S`` makes every guest instruction take 2**S ns of
    virtual time (shift 0: a 1 GHz core; shift 3: 8 ns, close to an STM32F429 at 168 MHz)."""
    return {"icount_shift": shift, "ns_per_insn": 2**shift}


def negative_control(options: dict, shift: int) -> tuple[dict | None, dict | None]:
    """run.json ``negative_control`` and ``expect`` for an image built with CT_NEGCTL_* options
    (include/ct_mark.h), else (None, None). The numbers come from the image's own options."""
    opts = {k: int(v) for k, v in options.items() if k.startswith("CT_NEGCTL_")}
    names = {s.id: s.name for s in read_sites()}
    if opts.get("CT_NEGCTL_DELAY_INSNS"):
        site = names[opts["CT_NEGCTL_DELAY_SITE"]]
        n = opts["CT_NEGCTL_DELAY_INSNS"]
        nc = {"kind": "trace_delay", "site": site, "instructions": n, "expected_delta_ns": n * 2**shift}
        return nc, {"verdict": "FAIL", "metric": SITE_METRIC.get(site)}
    if opts.get("CT_NEGCTL_DROP_EVERY"):
        site = names[opts["CT_NEGCTL_DROP_SITE"]]
        nc = {"kind": "trace_drop", "site": site, "every": opts["CT_NEGCTL_DROP_EVERY"]}
        return nc, {"verdict": "INCOMPLETE", "metric": SITE_METRIC.get(site)}
    return None, None


def reproduce_command(spec: RunSpec, run_id: str) -> str:
    """The ``make capture`` line that records this run again (shell syntax, runs as printed)."""
    parts = ["make", "capture", f"RTOS={spec.rtos}", f"APP={spec.app}"]
    if spec.options:
        parts.append("OPTS=" + shlex.quote(" ".join(f"{k}={v}" for k, v in spec.options.items())))
    if spec.variant:
        parts.append(f"VARIANT={spec.variant}")
    parts.append("LA=" + ",".join(p.name for p in spec.profiles))
    if spec.shift:
        parts.append(f"QEMU_SHIFT={spec.shift}")
    if spec.timeout_s != DEFAULT_TIMEOUT_S:
        parts.append(f"CAPTURE_TIMEOUT={spec.timeout_s:g}")
    parts.append(f"RUN_ID={run_id}")
    return " ".join(parts)


def parse_opts(text: str) -> dict[str, str]:
    """``--opts`` / ``OPTS=``: 'K=V ..' or '-DK=V ..' (make fw OPTS=)."""
    out = {}
    for kv in text.split():
        k, eq, v = kv.removeprefix("-D").partition("=")
        if not eq or not re.fullmatch(r"[A-Za-z_]\w*", k):
            raise ValueError(f"option {kv!r} is not NAME=VALUE")
        out[k] = v
    return out


def load_campaign(path: Path) -> list[tuple[RunSpec, str]]:
    """Every run of the campaign file: its ``[[run]]`` entries (run_id/la/timeout_s/icount_shift from
    ``[defaults]`` unless the run sets them), then each ``[[rerun]]`` section's repetition of those runs
    (its run_id, icount_shift, la; ``exclude`` = <rtos>/<app-dir> list; ``options`` = per-run overrides;
    runs with ``rerun = false`` are not repeated)."""
    import tomllib

    doc = tomllib.loads(path.read_text())
    dflt = doc.get("defaults", {})
    base = []
    for r in doc["run"]:
        spec = RunSpec(
            rtos=r["rtos"],
            app=r["app"],
            options={k: str(v) for k, v in r.get("options", {}).items()},
            variant=r.get("variant", ""),
            profiles=tuple(parse_profile(p) for p in r.get("la", dflt.get("la", list(DEFAULT_LA)))),
            timeout_s=float(r.get("timeout_s", dflt.get("timeout_s", DEFAULT_TIMEOUT_S))),
            shift=int(r.get("icount_shift", dflt.get("icount_shift", 0))),
        )
        base.append((spec, r.get("run_id", dflt.get("run_id", "ref")), r.get("rerun", True)))
    runs = [(s, rid) for s, rid, _ in base]
    for sec in doc.get("rerun", []):
        exclude = set(sec.get("exclude", []))
        over = sec.get("options", {})
        for s, _, again in base:
            key = f"{s.rtos}/{s.app_dir}"
            if not again or key in exclude:
                continue
            opts = {**s.options, **{k: str(v) for k, v in over.get(key, {}).items()}}
            spec = RunSpec(
                s.rtos,
                s.app,
                opts,
                s.variant,
                tuple(parse_profile(p) for p in sec["la"]) if "la" in sec else s.profiles,
                float(sec.get("timeout_s", s.timeout_s)),
                int(sec.get("icount_shift", s.shift)),
            )
            runs.append((spec, sec["run_id"]))
    return runs


def readme(spec: RunSpec, meta: dict) -> str:
    """The capture folder's README.md."""
    ts = meta.get("time_scale") or time_scale(spec.shift)
    lines = [
        f"# {spec.rtos} / {spec.app_dir} on QEMU {meta['qemu']['machine']}",
        "",
        "Paired recording made by `firmware/tools/capture.py` (virtual logic analyzer, captures/README.md).",
        "",
        f"Time scale: QEMU `-icount shift={ts['icount_shift']}`, {ts['ns_per_insn']} ns of virtual time per "
        "instruction" + (" (about an STM32F429 at 168 MHz)." if ts["icount_shift"] == 3 else "."),
        "",
    ]
    nc = meta.get("negative_control")
    if nc:
        what = (
            f"the trace record of `{nc['site']}` is made {nc['instructions']} instructions "
            f"({nc['expected_delta_ns']} ns) after its pin edge"
            if nc["kind"] == "trace_delay"
            else f"the trace record of every {nc['every']}th `{nc['site']}` is dropped (its pin toggles)"
        )
        lines += [
            "**Negative control: an expected failure.** Built with a fault injected on the trace side: "
            f"{what}. Cross-validation of `{meta['expect']['metric']}` must give "
            f"{meta['expect']['verdict']}; a PASS here means the check is blind.",
            "",
        ]
    lines += [
        "Reproduce (from the repository root; the same files bit for bit, but run.json's wall time, date):",
        "",
        "```",
        reproduce_command(spec, meta["run_id"]),
        "```",
        "",
        "| file | what |",
        "|---|---|",
    ]
    if meta.get("trace"):
        lines.append(
            f"| `{meta['trace']['file']}` | {meta['trace']['format']} trace, ticks at "
            f"{meta['trace']['tick_hz']} Hz (TIM2 counts virtual nanoseconds) |"
        )
    for lg in meta["logic"]:
        p = lg["profile"]
        lines.append(
            f"| `{lg['file']}` | logic capture, profile `{p['name']}`: {p['samplerate']} S/s, "
            f"{p['ppm']:g} ppm, jitter {p['jitter_ns']:g} ns, seed {p['seed']} |"
        )
    lines += [
        "| `uart.log` | USART1 output (also channel `uart.tx` at 115200 8N1) |",
        "| `run.json` | firmware/QEMU/profile metadata, site -> channel map, sha256 of every file |",
        "",
        "Channels: " + ", ".join(f"`{c['name']}` ({c['pin']})" for c in meta["channels"]),
        "",
        "Result lines:",
        "",
        "```",
        *meta["result_lines"],
        "```",
        "",
    ]
    return "\n".join(lines)
