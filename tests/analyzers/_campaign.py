"""A small synthetic campaign on disk (capture folders with run.json) for batch/report/compare tests."""

from __future__ import annotations

from pathlib import Path

from analyzers import _synth as S


def make_campaign(root: Path, *, slow_factor: float = 1.6, broken: bool = True, seed: int = 0) -> Path:
    for rtos, k in (("freertos", 1.0), ("threadx", slow_factor)):
        apps = (
            ("ctx_switch", S.ctx_switch(switch_ns=int(1280 * k), spread_ns=200, seed=seed)),
            ("isr_latency", S.isr(latency_ns=int(3040 * k), spread_ns=300, seed=seed)),
            ("periodic", S.periodic(jitter_ns=int(200 * k), seed=seed)),
            ("fft_workload", S.fft(n=20, seed=seed)),
        )
        for app, sc in apps:
            S.write_capture_folder(
                root / "qemu_netduinoplus2" / rtos / app / "r1",
                sc,
                rtos=rtos,
                trace=S.to_trace(sc),
                capture=S.to_capture(sc, ppm=20, samplerate=500_000_000),
                extra={
                    "result_lines": [
                        "CT_RESULT ctx_switch.yield n=3 min=1 mean=2.00 max=3 unit=ticks ts_hz=1000000000",
                        "CT_DONE ok=1 fail=0",
                    ]
                },
            )
    sc = S.ctx_switch(switch_ns=1100, seed=seed)
    S.write_capture_folder(
        root / "qemu_netduinoplus2" / "freertos" / "ctx_switch-notrace" / "r1", sc, capture=S.to_capture(sc)
    )
    if broken:
        d = root / "qemu_netduinoplus2" / "freertos" / "broken" / "r1"
        d.mkdir(parents=True)
        (d / "run.json").write_text('{"schema": 1, "app": "broken", "trace": {"file": "trace.SVDat"}}')
        (d / "trace.SVDat").write_bytes(b"\x00garbage")
    return root
