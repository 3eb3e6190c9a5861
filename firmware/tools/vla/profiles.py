"""Analyzer profiles: turn exact edge times (ns) into the sample indices a given logic analyzer would see.

A profile is a nominal sample rate, a clock error in ppm (the analyzer's clock runs fast by ``ppm``: it
takes ``rate * (1 + ppm/1e6)`` samples per true second while the file still states the nominal rate), and
optional Gaussian edge jitter (``jitter_ns`` = standard deviation, drawn from a seeded NumPy generator per
channel, so a profile is reproducible bit for bit). An edge at true time t is first seen by the sample
``n = ceil((t + jitter) * rate * (1 + ppm/1e6) / 1e9)``; integer arithmetic throughout (ppm is kept in
parts per billion, jitter in picoseconds).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class Profile:
    name: str
    samplerate: int
    ppm: float = 0.0
    jitter_ns: float = 0.0
    seed: int = 0

    def as_json(self) -> dict:
        return asdict(self)

    @property
    def exact(self) -> bool:
        return self.samplerate == 1_000_000_000 and self.ppm == 0 and self.jitter_ns == 0


PROFILES: dict[str, Profile] = {
    "ideal": Profile("ideal", 1_000_000_000),
    "la500": Profile("la500", 500_000_000),
    "la100": Profile("la100", 100_000_000, ppm=50.0),
    "la100j": Profile("la100j", 100_000_000, ppm=50.0, jitter_ns=2.0, seed=1),
    "la24": Profile("la24", 24_000_000, ppm=-30.0),
}

_RATE = re.compile(r"^(\d+(?:\.\d+)?)\s*([kKmMgG]?)(?:hz|Hz|HZ)?$")


def parse_rate(text: str) -> int:
    m = _RATE.match(text.strip())
    if not m:
        raise ValueError(f"Invalid sample rate {text!r}: expected e.g. 100M, 24MHz, 1G or 500000000")
    mult = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9}[m.group(2).lower()]
    from fractions import Fraction

    v = Fraction(m.group(1)) * mult
    if v.denominator != 1 or v <= 0:
        raise ValueError(f"Invalid sample rate {text!r}: must be a positive whole number of Hz")
    return int(v)


def parse_profile(text: str) -> Profile:
    """A named profile (``ideal``, ``la500``, ``la100``, ``la100j``, ``la24``) or a custom one written
    ``name:rate=100M,ppm=50,jitter=2,seed=7`` (name optional; unspecified keys default to 0)."""
    if text in PROFILES:
        return PROFILES[text]
    name, _, spec = text.rpartition(":") if ":" in text else ("", "", text)
    kv = {}
    for part in filter(None, spec.split(",")):
        k, eq, v = part.partition("=")
        if not eq or k not in ("rate", "ppm", "jitter", "seed"):
            raise ValueError(
                f"Invalid profile {text!r}: allowed values are {', '.join(PROFILES)} or "
                f"'[name:]rate=<Hz>[,ppm=<p>][,jitter=<ns>][,seed=<n>]', but got {part!r}"
            )
        kv[k] = v
    if "rate" not in kv:
        raise ValueError(f"Invalid profile {text!r}: a custom profile needs rate=<Hz>")
    p = Profile(
        name or f"custom{kv['rate']}",
        parse_rate(kv["rate"]),
        float(kv.get("ppm", 0)),
        float(kv.get("jitter", 0)),
        int(kv.get("seed", 0)),
    )
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", p.name):
        raise ValueError(f"Invalid profile name {p.name!r}: use letters, digits, '_', '.', '-'")
    return p


def to_samples(edges_ns: np.ndarray, profile: Profile, stream: int = 0) -> np.ndarray:
    """Sample indices (int64, non-decreasing) at which the analyzer first sees each edge.

    ``stream`` selects the jitter random stream (use the channel index) so channels jitter independently
    and adding a channel does not change the others."""
    t = np.asarray(edges_ns, np.int64)
    if profile.exact:
        return t.copy()
    ppb = round(profile.ppm * 1000)
    t_ps = [int(x) * 1000 for x in t.tolist()]
    if profile.jitter_ns:
        rng = np.random.default_rng([profile.seed, stream])
        j = np.rint(rng.normal(0.0, profile.jitter_ns * 1000.0, len(t_ps))).astype(np.int64).tolist()
        t_ps = [max(0, a + b) for a, b in zip(t_ps, j)]
    num = profile.samplerate * (1_000_000_000 + ppb)
    den = 10**21  # ps -> s (1e12) times the ppb scale (1e9)
    out = np.asarray([-((-x * num) // den) for x in t_ps], np.int64)  # ceil
    return np.maximum.accumulate(out) if len(out) else out


def end_sample(end_ns: int, profile: Profile) -> int:
    """Number of samples needed to cover true time [0, end_ns]."""
    if profile.exact:
        return int(end_ns) + 1
    ppb = round(profile.ppm * 1000)
    num = int(end_ns) * profile.samplerate * (1_000_000_000 + ppb)
    return -((-num) // 10**18) + 1
