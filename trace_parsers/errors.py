"""Errors and diagnostics: the one place where bad input is classified.

Unrecoverable input raises a :class:`TraceError` subclass carrying a stable ``code``, the ``path``
and the byte ``offset``; the message says what was expected, what was found and where
(``file:0x1a2f``).  Recoverable damage becomes a :class:`~trace_parsers.model.Diagnostic` row.
Every code is declared once, in :data:`CODES`, with its default severity and meaning.
"""

from __future__ import annotations

import warnings
from typing import Literal

from ._meta import Diagnostic, Severity

OnCorrupt = Literal["raise", "recover", "warn", "skip"]
#: the reader policies for damaged input (``handle_corrupt``), also the analysis option's choices
ON_CORRUPT = ("raise", "recover", "warn", "skip")
#: damage that only cuts a recording short (a final record or chunk the file ends inside): under
#: ``on_corrupt="recover"`` a DATA_LOSS diagnostic at its offset, every record before it kept
TRUNCATION_CODES = frozenset({"TRUNCATED", "TRX_TRUNCATED", "SR_TRUNCATED_CHUNK"})

#: code -> (severity used when reported as a diagnostic, description). Codes are stable: never
#: rename one; add new ones in the section of their format.
CODES: dict[str, tuple[Severity, str]] = {
    # generic
    "FMT_UNKNOWN": (Severity.ERROR, "no reader recognises the file's content"),
    "IO_ERROR": (Severity.ERROR, "the file cannot be read"),
    "TRUNCATED": (Severity.DATA_LOSS, "the input ends inside a record"),
    "TRAILING_PADDING": (Severity.INFO, "zero padding after the last record"),
    "CORRUPT_REGION": (Severity.DATA_LOSS, "undecodable bytes skipped until the next resync point"),
    "BAD_OPTION": (Severity.ERROR, "an option has an invalid value"),
    "LIMIT_EXCEEDED": (Severity.ERROR, "the input would need more memory than the configured limit"),
    # SystemView
    "SV_BAD_MAGIC": (Severity.ERROR, "not a SystemView recording"),
    "SV_BAD_HEADER": (Severity.ERROR, "the ';' text header is malformed"),
    "SV_UNKNOWN_FIXED_ID": (Severity.DATA_LOSS, "an unknown event id below 24 (no length field)"),
    "SV_OVERFLOW": (Severity.DATA_LOSS, "the target dropped packets (OVERFLOW event)"),
    "SV_RESYNC": (Severity.DATA_LOSS, "decoding resumed at a 10-zero sync after damage"),
    "SV_UNKNOWN_ID": (Severity.NOTICE, "an event id with no name in the description tables"),
    "SV_NO_INIT": (Severity.NOTICE, "no INIT packet: tick rate unknown"),
    "SV_BAD_DESCRIPTION": (Severity.ERROR, "a SystemView description file line cannot be parsed"),
    "SV_STRING_ORDER": (Severity.NOTICE, "a long string's length byte order had to be guessed"),
    "SV_NO_TRACE_STOP": (Severity.DATA_LOSS, "a stream ends after a whole packet but without TRACE_STOP "
                         "(a cut on a packet boundary?)"),
    # TraceX
    "TRX_BAD_MAGIC": (Severity.ERROR, "not a TraceX buffer"),
    "TRX_BAD_HEADER": (Severity.ERROR, "the TraceX control header is inconsistent"),
    "TRX_WRAPPED": (Severity.INFO, "the circular event buffer wrapped"),
    "TRX_STALE_SLOTS": (Severity.INFO, "stale event slots after a re-enable were skipped"),
    "TRX_TRUNCATED": (Severity.DATA_LOSS, "the event area is truncated"),
    "TRX_NO_TICK_HZ": (Severity.NOTICE, "tick rate unknown: ts is in ticks"),
    "TRX_BAD_RESERVED": (Severity.NOTICE, "header reserved words are not 0xAAAAAAAA/0xBBBBBBBB/0xCCCCCCCC"),
    "TRX_UNKNOWN_ID": (Severity.NOTICE, "an event id below 4096 with no name in the header tables"),
    "TRX_TIMER_WRAPS": (Severity.INFO, "the masked timestamp wrapped; unrolled by mask + 1 per wrap"),
    "TRX_SHORT_TIMER": (Severity.NOTICE, "short timer period: a long gap could hide an extra wrap"),
    # CTF (Zephyr tracing)
    "CTF_BAD_METADATA": (Severity.ERROR, "the TSDL metadata cannot be parsed or is unsupported"),
    "CTF_NO_METADATA": (Severity.ERROR, "no TSDL metadata file beside the CTF streams"),
    "CTF_BAD_MAGIC": (Severity.ERROR, "a CTF stream does not start with the packet magic 0xC1FC1FC1"),
    "CTF_NO_STREAMS": (Severity.NOTICE, "a CTF trace folder holds metadata but no stream files"),
    "CTF_RESYNC": (Severity.DATA_LOSS, "CTF decoding resumed after damaged bytes"),
    "CTF_DISCARDED": (Severity.DATA_LOSS, "the tracer discarded events (events_discarded, packet_seq_num)"),
    "CTF_NO_CLOCK": (Severity.NOTICE, "the CTF streams map no single clock: ts_raw is the event number"),
    "CTF_IMPLICIT_CLOCK": (Severity.INFO, "an unmapped timestamp field: a 1 GHz clock is assumed"),
    "CTF_CLOCK_WRAPS": (Severity.INFO, "narrow CTF timestamps wrapped and were unrolled"),
    # logic captures
    "SR_BAD_ZIP": (Severity.ERROR, "not a readable sigrok session zip"),
    "SR_MISSING_METADATA": (Severity.ERROR, "a required metadata key is missing"),
    "SR_BAD_UNITSIZE": (Severity.ERROR, "unsupported unitsize"),
    "SR_NO_SAMPLERATE": (Severity.ERROR, "the capture has no sample rate and none was given"),
    "SR_TRUNCATED_CHUNK": (Severity.DATA_LOSS, "a logic chunk is truncated or damaged"),
    "SR_ANALOG_SKIPPED": (Severity.NOTICE, "analog channels are not converted"),
    "DUPLICATE_CHANNEL": (Severity.NOTICE, "several channels share a name: edges are kept per channel index"),
    "VCD_BAD_SYNTAX": (Severity.ERROR, "the VCD file cannot be parsed"),
    "CSV_BAD_ROW": (Severity.ERROR, "a CSV row cannot be parsed"),
    "CSV_NON_MONOTONIC": (Severity.ERROR, "CSV times go backwards"),
    "SALEAE_BAD_BINARY": (Severity.ERROR, "not a Saleae binary export"),
    "SALEAE_UNSUPPORTED": (Severity.ERROR, "a Saleae project file; export a supported format instead"),
    "SALEAE_NO_SAMPLERATE": (Severity.NOTICE, "the export states no sample rate: times are kept in ns as "
                             "written, not counted in samples (pass samplerate=)"),
    "DSL_BAD": (Severity.ERROR, "not a readable DSView .dsl capture"),
    "DECODER_MISSING": (Severity.ERROR, "sigrok-cli (libsigrokdecode) is not installed"),
    # analysis
    "AN_PRECONDITION": (Severity.ERROR, "the trace lacks what the analysis needs"),
    "AN_HASH_MISMATCH": (Severity.ERROR, "a recording differs from the SHA-256 its run.json declares"),
    "AN_BAD_RUN_JSON": (Severity.ERROR, "a capture folder's run.json is not a valid JSON object"),
    "AN_NO_RECORDING": (Severity.ERROR, "a capture folder holds no trace and no logic capture"),
    "AN_BAD_OPTION": (Severity.ERROR, "an analysis option is out of its range (tolerance, on-corrupt, ...)"),
    "AN_NO_SPACE": (Severity.ERROR, "the disk of the output folder is full (or its quota used up): "
                    "the message names the folder and its free space"),
    "INTERNAL": (Severity.ERROR, "an unexpected error inside crosstrace (a bug); the message names the file"),
}


class TraceError(Exception):
    """Base of every error a reader raises on bad input."""

    default_code = "FMT_UNKNOWN"

    def __init__(self, message: str, *, code: str | None = None, path: str | None = None,
                 offset: int | None = None) -> None:
        self.code = code or self.default_code
        if self.code not in CODES:  # pragma: no cover - programming error, caught by tests
            raise KeyError(f"undeclared error code {self.code!r}")
        self.path = str(path) if path is not None else None
        self.offset = offset
        self.detail = message
        super().__init__(self._render())

    def _render(self) -> str:
        where = self.path or "<input>"
        if self.offset is not None:
            where += f":0x{self.offset:x}"
        return f"{where}: {self.detail} (ERR:{self.code})"

    def with_path(self, path: str) -> TraceError:
        """Fill in the path if a lower layer did not know it."""
        if self.path is None:
            self.path = str(path)
            self.args = (self._render(),)
        return self

    def to_diagnostic(self, count: int = 1) -> Diagnostic:
        sev = CODES[self.code][0]
        return Diagnostic(self.code, sev, int(self.offset or 0), count, self.detail)


class TraceFormatError(TraceError):
    """Not this format, or an unsupported version of it."""


class TraceCorruptError(TraceError):
    """The structure is damaged beyond recovery at ``offset``."""

    default_code = "CORRUPT_REGION"


class AnalysisError(Exception):
    """An analysis precondition is not met (e.g. no markers to align on)."""

    def __init__(self, message: str, *, code: str = "AN_PRECONDITION") -> None:
        self.code = code
        super().__init__(f"{message} (ERR:{code})")


def check_option(name: str, value: object, allowed: tuple[object, ...]) -> None:
    """MNE-style option validation with a message listing the allowed values."""
    if value not in allowed:
        vals = ", ".join(repr(a) for a in allowed[:-1]) + f" and {allowed[-1]!r}" if len(allowed) > 1 \
            else repr(allowed[0])
        raise ValueError(f"Invalid value for the {name!r} parameter. Allowed values are {vals}, "
                         f"but got {value!r} instead.")


def diagnostic(code: str, offset: int, message: str, count: int = 1,
               severity: Severity | None = None) -> Diagnostic:
    """Build a diagnostic for a declared code (severity from :data:`CODES` unless given)."""
    sev = CODES[code][0] if severity is None else severity
    return Diagnostic(code, sev, int(offset), int(count), message)


def handle_corrupt(err: TraceCorruptError, on_corrupt: OnCorrupt,
                   diagnostics: list[Diagnostic]) -> None:
    """Apply the ``on_corrupt`` policy to damage (the single resolution point).

    ``"raise"`` re-raises; ``"recover"`` records a truncation (:data:`TRUNCATION_CODES`: the file
    ends inside its final record) as a DATA_LOSS diagnostic and re-raises anything else;
    ``"warn"`` records a DATA_LOSS diagnostic and emits a :class:`CorruptInputWarning`;
    ``"skip"`` only records the diagnostic.  The caller keeps every event decoded before the damage.
    """
    check_option("on_corrupt", on_corrupt, ON_CORRUPT)
    if on_corrupt == "raise" or (on_corrupt == "recover" and err.code not in TRUNCATION_CODES):
        raise err
    diagnostics.append(Diagnostic(err.code, Severity.DATA_LOSS, int(err.offset or 0), 1, err.detail))
    if on_corrupt == "warn":
        warnings.warn(str(err), CorruptInputWarning, stacklevel=3)


def validate_on_corrupt(on_corrupt: str) -> OnCorrupt:
    check_option("on_corrupt", on_corrupt, ON_CORRUPT)
    return on_corrupt  # type: ignore[return-value]


class CorruptInputWarning(UserWarning):
    """Emitted under ``on_corrupt="warn"`` when damaged input was skipped."""
