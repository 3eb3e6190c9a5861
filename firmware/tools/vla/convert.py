"""Edge log -> logic channels -> sigrok ``.sr`` per analyzer profile.

Channels: every instrumentation site whose pin changed (named after the site, ct_sites.h), the status
pins (``status.done``, ``status.fail``) and any other GPIOG pin that changed (``PG<n>``), then ``uart.tx``
(the USART1 TX waveform at ``baud``). Usable as ``python -m vla.convert LOG OUT.sr [--profile P]``
with firmware/tools on ``sys.path``.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from .edgelog import Channel, EdgeLog, gpio_levels, read_edge_log, uart_brr, uart_bytes, uart_waveform
from .profiles import PROFILES, Profile, end_sample, parse_profile, to_samples
from .sites import Site, read_sites, status_pins
from .srzip import write_sr

UART_CHANNEL = "uart.tx"
TAIL_NS = 10_000  # idle time kept after the last edge


@dataclass
class Capture:
    channels: list[Channel]
    pins: dict[str, str]  # channel -> "PG<n>" / "USART1.TX"
    end_ns: int
    uart_data: bytes
    uart_brr: int | None
    unreadable_stores: int
    stores: int


def channels_from_log(log: EdgeLog, sites: list[Site] | None = None, baud: int = 115200) -> Capture:
    sites = read_sites() if sites is None else sites
    by_pin = {s.pin: s.name for s in sites}
    status = status_pins()
    levels, unknown = gpio_levels(log)
    chans: list[Channel] = []
    pins: dict[str, str] = {}
    order = sorted(
        levels,
        key=lambda p: (
            (0, [s.pin for s in sites].index(p)) if p in by_pin else (1, p) if p in status else (2, p)
        ),
    )
    for p in order:
        name = by_pin.get(p) or status.get(p) or f"PG{p}"
        chans.append(Channel(name, 0, levels[p]))
        pins[name] = f"PG{p}"
    ut, ub = uart_bytes(log)
    end = int(log.records["vt_ns"][-1]) if len(log.records) else 0
    if len(ut):
        edges, uend = uart_waveform(ut, ub, baud)
        chans.append(Channel(UART_CHANNEL, 1, edges))
        pins[UART_CHANNEL] = "USART1.TX"
        end = max(end, uend)
    return Capture(chans, pins, end + TAIL_NS, bytes(ub.tolist()), uart_brr(log), unknown, len(log.records))


def write_profile(cap: Capture, profile: Profile, out: str | Path) -> dict:
    """Write one .sr for ``profile``; returns the writer's summary plus per-channel edge counts."""
    if not cap.channels:
        raise ValueError("capture has no channels with edges")
    samples = [to_samples(c.edges_ns, profile, i) for i, c in enumerate(cap.channels)]
    total = end_sample(cap.end_ns, profile)
    comment = [
        f"crosstrace virtual logic analyzer, profile {profile.name}: samplerate={profile.samplerate} "
        f"ppm={profile.ppm:g} jitter_ns={profile.jitter_ns:g} seed={profile.seed}"
    ]
    info = write_sr(
        out,
        [c.name for c in cap.channels],
        [c.initial for c in cap.channels],
        samples,
        total,
        profile.samplerate,
        comment,
    )
    info["edges"] = {c.name: int(len(c.edges_ns)) for c in cap.channels}
    return info


def edge_log_to_sr(
    log_path: str | Path, out: str | Path, profile: Profile = PROFILES["ideal"], baud: int = 115200
) -> dict:
    cap = channels_from_log(read_edge_log(log_path), baud=baud)
    return write_profile(cap, profile, out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m vla.convert", description=__doc__.splitlines()[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--profile", default="ideal", help=f"one of {', '.join(PROFILES)} or rate=..,ppm=..")
    ap.add_argument("--baud", type=int, default=115200)
    a = ap.parse_args(argv)
    info = edge_log_to_sr(a.log, a.out, parse_profile(a.profile), a.baud)
    print(f"{a.out}: {info['samples']} samples, {info['changes']} changes, edges {info['edges']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["Capture", "channels_from_log", "write_profile", "edge_log_to_sr"]
