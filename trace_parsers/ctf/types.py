"""CTF 1.8 declarations: the TSDL types and the trace, stream, event and clock blocks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union


@dataclass(frozen=True)
class IntT:
    size: int
    align: int
    signed: bool = False
    byte_order: str | None = None  #: "le", "be", or None = the trace's
    base: int = 10
    encoding: str = "none"
    clock: str | None = None  #: name of the clock this field updates (``map = clock.X.value``)


@dataclass(frozen=True)
class FloatT:
    exp_dig: int
    mant_dig: int
    align: int = 8
    byte_order: str | None = None


@dataclass(frozen=True)
class StringT:
    encoding: str = "UTF8"


@dataclass(frozen=True)
class StructT:
    fields: tuple[tuple[str, Any], ...]
    min_align: int = 1


@dataclass(frozen=True)
class ArrayT:
    elem: Any
    length: int


@dataclass(frozen=True)
class SeqT:
    elem: Any
    length_path: str


@dataclass(frozen=True)
class EnumT:
    base: IntT
    mappings: tuple[tuple[str, int, int], ...]

    def label(self, v: int) -> str | None:
        for name, lo, hi in self.mappings:
            if lo <= v <= hi:
                return name
        return None


@dataclass(frozen=True)
class VariantT:
    tag_path: str | None
    options: tuple[tuple[str, Any], ...]


Type = Union[IntT, FloatT, StringT, StructT, ArrayT, SeqT, EnumT, VariantT]


def alignment(t: Type) -> int:
    """Alignment in bits of a type (CTF 1.8 §4)."""
    if isinstance(t, (IntT, FloatT)):
        return t.align
    if isinstance(t, EnumT):
        return t.base.align
    if isinstance(t, StringT):
        return 8
    if isinstance(t, StructT):
        return max([t.min_align] + [alignment(ft) for _, ft in t.fields])
    if isinstance(t, (ArrayT, SeqT)):
        return alignment(t.elem)
    return 1  # variant: the selected option aligns itself


@dataclass
class ClockDecl:
    name: str
    freq: int = 1_000_000_000
    offset_s: int = 0
    offset: int = 0
    uuid: str = ""
    description: str = ""
    implicit: bool = False  #: created for an unmapped ``timestamp`` field (babeltrace2's rule)


@dataclass
class StreamDecl:
    id: int = 0
    packet_context: StructT | None = None
    event_header: StructT | None = None
    event_context: StructT | None = None


@dataclass
class EventDecl:
    name: str
    id: int = 0
    stream_id: int = 0
    loglevel: int | None = None
    context: StructT | None = None
    fields: StructT | None = None


@dataclass
class Metadata:
    major: int = 1
    minor: int = 8
    byte_order: str = "le"
    uuid: str = ""
    packet_header: StructT | None = None
    streams: dict[int, StreamDecl] = field(default_factory=dict)
    events: dict[tuple[int, int], EventDecl] = field(default_factory=dict)
    clocks: dict[str, ClockDecl] = field(default_factory=dict)
    env: dict[str, Any] = field(default_factory=dict)
    text: str = ""
