"""Parse the firmware console contract (firmware/README.md, "Console contract").

The same regular expressions are meant for the analyzers; keep them in sync with the README.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

RESULT_RE = re.compile(
    r"^CT_RESULT (?P<metric>\S+) n=(?P<n>\d+) min=(?P<min>\d+) mean=(?P<mean>\d+\.\d\d) "
    r"max=(?P<max>\d+) unit=(?P<unit>\w+) ts_hz=(?P<ts_hz>\d+)$")
FAIL_RE = re.compile(r"^CT_FAIL (?P<metric>\S+) (?P<reason>.*)$")
DONE_RE = re.compile(r"^CT_DONE ok=(?P<ok>\d+) fail=(?P<fail>\d+)$")
TRACE_RE = re.compile(r"^CT_TRACE file=(?P<file>\S+) events=(?P<events>\d+) bytes=(?P<bytes>\d+) "
                      r"dropped=(?P<dropped>\d+)$")
CONFIG_RE = re.compile(r"^CT_CONFIG (?P<config>.+)$")
FFT_RE = re.compile(r"^CT_FFT frame=(?P<frame>\d+) peak_bin=(?P<bin>\d+) peak_hz=(?P<hz>\d+)$")


@dataclass(frozen=True)
class Result:
    metric: str
    n: int
    min: int
    mean: float
    max: int
    unit: str
    ts_hz: int


@dataclass
class Console:
    results: dict[str, Result]
    fails: list[tuple[str, str]]
    done: tuple[int, int] | None
    trace: dict[str, str] | None
    config: str | None
    fft: list[tuple[int, int, int]]

    @property
    def passed(self) -> bool:
        return self.done is not None and self.done[1] == 0 and self.done[0] > 0


def parse_console(text: str) -> Console:
    c = Console({}, [], None, None, None, [])
    for raw in text.splitlines():
        line = raw.strip()
        if m := RESULT_RE.match(line):
            g = m.groupdict()
            c.results[g["metric"]] = Result(g["metric"], int(g["n"]), int(g["min"]), float(g["mean"]),
                                            int(g["max"]), g["unit"], int(g["ts_hz"]))
        elif m := FAIL_RE.match(line):
            c.fails.append((m["metric"], m["reason"]))
        elif m := DONE_RE.match(line):
            c.done = (int(m["ok"]), int(m["fail"]))
        elif m := TRACE_RE.match(line):
            c.trace = m.groupdict()
        elif m := CONFIG_RE.match(line):
            c.config = m["config"]
        elif m := FFT_RE.match(line):
            c.fft.append((int(m["frame"]), int(m["bin"]), int(m["hz"])))
    return c
