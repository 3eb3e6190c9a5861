"""Dump a CTF trace with babeltrace2's Python bindings (python3-bt2) as JSON lines, for the
differential test. Run with an interpreter that has ``bt2`` (Debian's /usr/bin/python3):

    python3 bt2_dump.py TRACE_DIR  ->  one {"stream", "name", "id", "clock", "fields", ...} per event
"""

from __future__ import annotations

import json
import sys

import bt2  # noqa: F401  (Debian python3-bt2)


def conv(f):  # noqa: ANN001, ANN201 - bt2 field objects
    if f is None:
        return None
    if isinstance(f, bt2._StringFieldConst):
        return str(f)
    if isinstance(f, bt2._IntegerFieldConst):
        return int(f)
    if isinstance(f, bt2._RealFieldConst):
        return float(f)
    if isinstance(f, bt2._BoolFieldConst):
        return bool(f)
    if isinstance(f, bt2._StructureFieldConst):
        return {k: conv(v) for k, v in f.items()}
    if isinstance(f, bt2._VariantFieldConst):
        return conv(f.selected_option)
    if isinstance(f, bt2._OptionFieldConst):
        return conv(f.field)
    if isinstance(f, bt2._ArrayFieldConst):
        return [conv(v) for v in f]
    raise TypeError(f"unhandled bt2 field {type(f).__name__}")


def main(path: str) -> None:
    out = sys.stdout
    for msg in bt2.TraceCollectionMessageIterator(path):
        if type(msg) is not bt2._EventMessageConst:
            continue
        ev = msg.event
        cs = msg.default_clock_snapshot if ev.stream.cls.default_clock_class is not None else None
        pctx = ev.packet.context_field if ev.packet is not None else None
        out.write(json.dumps({
            "stream": ev.stream.name, "name": ev.name, "id": ev.cls.id,
            "clock": None if cs is None else cs.value,
            "fields": conv(ev.payload_field), "context": conv(ev.specific_context_field),
            "stream_context": conv(ev.common_context_field),
            "cpu": None if pctx is None or "cpu_id" not in pctx else int(pctx["cpu_id"]),
        }) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
