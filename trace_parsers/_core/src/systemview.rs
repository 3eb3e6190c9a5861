//! SEGGER SystemView packet-stream decoding (spec: systemview.md §3 and §4.1, packet stage).
//!
//! Pure Rust, no pyo3: `cargo test --no-default-features` tests this module alone.
//!
//! The decoder walks one stream (the bytes of one core) sequentially and writes one row per packet
//! into caller-provided column slices (`Columns`): packet id, core, cumulative timestamp, byte
//! offset and up to three numeric payload fields. Rare packets with more fields or a string also
//! get an `aux` record (all fields plus a string-table index). Damage never panics: it becomes a
//! `Diag` (recoverable, e.g. trailing padding) or a `DecodeError` followed by a resynchronisation
//! on the next 10-zero sync.

/// Number of zero bytes in the start-of-stream sync (`_abSync`).
pub const SYNC_LEN: usize = 10;
/// TRACE_START, the packet that follows every sync.
pub const ID_TRACE_START: u8 = 10;

/// Stable error/diagnostic codes; mapped 1:1 onto `trace_parsers.errors.CODES` by the bindings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// No 10-zero sync followed by TRACE_START anywhere in the stream (`SV_BAD_MAGIC`).
    NoSync,
    /// Bytes skipped before/after damage until a sync (`SV_RESYNC`).
    Resync,
    /// Structurally impossible packet (`CORRUPT_REGION`).
    Corrupt,
    /// The stream ends inside a packet (`TRUNCATED`).
    Truncated,
    /// Only zero bytes after the last packet (`TRAILING_PADDING`).
    Padding,
    /// A long string whose byte order had to be guessed (`SV_STRING_ORDER`).
    StringOrder,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::NoSync => "SV_BAD_MAGIC",
            Code::Resync => "SV_RESYNC",
            Code::Corrupt => "CORRUPT_REGION",
            Code::Truncated => "TRUNCATED",
            Code::Padding => "TRAILING_PADDING",
            Code::StringOrder => "SV_STRING_ORDER",
        }
    }
}

/// A finding with its stream-relative byte offset. `fatal` marks structural damage (the caller's
/// `on_corrupt` policy decides whether it raises).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diag {
    pub code: Code,
    pub offset: u64,
    pub count: u64,
    pub fatal: bool,
    pub detail: String,
}

/// Byte order of the 0xFF long-string length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrOrder {
    /// Not yet decided: guess per §3.3 and remember.
    Auto,
    /// `FF lo hi` (target sources <= 3.42).
    LoHi,
    /// `FF hi lo` (target sources >= 3.56).
    HiLo,
}

#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// `; ESP_Extension` streams: bit 6 of the last id byte is the core.
    pub esp_core_bit: bool,
    pub str_order: StrOrder,
    /// Require the stream to start with the sync (else scan for one and report a Resync).
    pub expect_sync: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            esp_core_bit: false,
            str_order: StrOrder::Auto,
            expect_sync: true,
        }
    }
}

/// Offsets are stored as u32 when the stream is shorter than 4 GiB, else as u64.
pub trait Offset: Copy + Default {
    fn from_u64(v: u64) -> Self;
}
impl Offset for u32 {
    #[inline(always)]
    fn from_u64(v: u64) -> Self {
        v as u32
    }
}
impl Offset for u64 {
    #[inline(always)]
    fn from_u64(v: u64) -> Self {
        v
    }
}

/// Output columns, all with the same capacity (`max_packets(len)` guarantees it suffices).
pub struct Columns<'a, O: Offset> {
    pub id: &'a mut [u32],
    pub core: &'a mut [u8],
    pub nv: &'a mut [u8],
    pub ts: &'a mut [u64],
    pub off: &'a mut [O],
    pub p0: &'a mut [u32],
    pub p1: &'a mut [u32],
    pub p2: &'a mut [u32],
}

/// Everything that is not a fixed-size column.
#[derive(Debug, Default)]
pub struct Side {
    /// Per aux record: the event row it belongs to.
    pub aux_row: Vec<u32>,
    /// Per aux record: start of its values in `aux_vals` (values end at the next record's start).
    pub aux_start: Vec<u32>,
    /// Per aux record: string index into `str_ends`, or u32::MAX.
    pub aux_str: Vec<u32>,
    pub aux_vals: Vec<u32>,
    /// String bytes, back to back; string i spans `str_ends[i-1]..str_ends[i]`.
    pub strings: Vec<u8>,
    pub str_ends: Vec<u64>,
    pub diags: Vec<Diag>,
    /// Sync bytes consumed (10 per sync).
    pub sync_bytes: u64,
    /// Cumulative ticks after the last packet.
    pub ts_end: u64,
    pub str_order: Option<StrOrder>,
}

/// One decoded packet: id, ESP core bit, numeric fields (`nv` of them, the first three in `v`),
/// cumulative ticks and stream-relative offset.
#[derive(Debug, Clone, Copy, Default)]
pub struct Pkt {
    pub id: u32,
    pub core: u8,
    pub nv: u8,
    pub ts: u64,
    pub off: u64,
    pub v: [u32; 3],
}

/// Where `Decoder::run_sink` puts the packets (columns, or the fused conversion of `sv_fused`).
pub trait Sink {
    /// The row the next packet gets (its aux records name it).
    fn row(&self) -> usize;
    /// False when no further packet fits (the decode stops with a CORRUPT_REGION diagnostic).
    fn room(&self) -> bool;
    /// Take one packet; its aux records (if any) are the last ones of `side` naming `row()`.
    fn push(&mut self, p: &Pkt, side: &mut Side);
}

/// An upper bound on the number of packets in `len` bytes (every packet has >= 2 bytes).
pub fn max_packets(len: usize) -> usize {
    len / 2 + 1
}

/// Find the first 10-zero run followed by TRACE_START at or after `from`; returns its start.
pub fn find_sync(data: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    let n = data.len();
    let mut run = 0usize;
    while i < n {
        let b = data[i];
        if b == 0 {
            run += 1;
        } else {
            if b == ID_TRACE_START && run >= SYNC_LEN {
                return Some(i - SYNC_LEN);
            }
            run = 0;
        }
        i += 1;
    }
    None
}

#[path = "sv_columns.rs"]
mod columns;
#[path = "sv_packet.rs"]
mod packet;
use columns::ColSink;
pub use columns::{decode_owned, decode_range, put_varint, Owned};
#[cfg(test)]
use packet::Cur;
use packet::Fail;

/// What a phase of `run_sink` leaves: go on from this position, or stop there.
enum Step {
    Go(usize),
    Stop(usize),
}

/// Where a resumable decode stands between two windows of the same stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Nothing examined yet: the stream should start with the sync.
    Start,
    /// Looking for the first sync (the stream did not start with one).
    StartScan,
    /// Decoding packets.
    Packets,
    /// Looking for the next sync after damage found at stream offset `from`.
    Resync { from: u64 },
    /// The end of the stream was reached (or no sync exists): nothing more to decode.
    Done,
}

/// Decoder state carried from one window of a stream to the next (`Decoder::resume`).
#[derive(Debug, Clone, Copy)]
pub struct Resume {
    pub phase: Phase,
    /// Cumulative ticks after the last packet.
    pub ts: u64,
    pub order: StrOrder,
}

impl Resume {
    pub fn new(opts: Options) -> Self {
        Resume {
            phase: Phase::Start,
            ts: 0,
            order: opts.str_order,
        }
    }
}

/// The stream decoder. `data[start..end]` is the part of one stream available now (the whole
/// stream for `new`); offsets are stream-relative (`base` = stream offset of `data[start]`).
pub struct Decoder<'d> {
    data: &'d [u8],
    start: usize,
    end: usize,
    /// Stream offset of `data[start]`.
    base: u64,
    /// Length of the whole stream (>= base + end - start).
    stream_len: u64,
    opts: Options,
    order: StrOrder,
    ts: u64,
    phase: Phase,
    /// File offset of `data[0]`, for the positions quoted in messages.
    org: u64,
}

impl<'d> Decoder<'d> {
    /// A decoder of the whole stream `data[start..end]`.
    pub fn new(data: &'d [u8], start: usize, end: usize, opts: Options) -> Self {
        let end = end.min(data.len());
        let start = start.min(end);
        let st = Resume::new(opts);
        Decoder::resume(data, start, end, 0, (end - start) as u64, opts, st)
    }

    /// A decoder of the bytes `data[start..end]` at stream offset `base` of a stream of
    /// `stream_len` bytes, continuing from `st` (what `state()` returned after the previous
    /// window, which ended where this one starts).
    pub fn resume(
        data: &'d [u8],
        start: usize,
        end: usize,
        base: u64,
        stream_len: u64,
        opts: Options,
        st: Resume,
    ) -> Self {
        let end = end.min(data.len());
        let start = start.min(end);
        let stream_len = stream_len.max(base + (end - start) as u64);
        Decoder {
            data,
            start,
            end,
            base,
            stream_len,
            opts,
            order: st.order,
            ts: st.ts,
            phase: st.phase,
            org: 0,
        }
    }

    /// Messages quote file offsets: the stream starts at `file_offset` of the file (by default
    /// they quote indices into `data`, which are file offsets when `data` is the whole file).
    pub fn at_file_offset(mut self, file_offset: u64) -> Self {
        self.org = (file_offset + self.base).wrapping_sub(self.start as u64);
        self
    }

    /// The state to pass to `resume` for the next window.
    pub fn state(&self) -> Resume {
        Resume {
            phase: self.phase,
            ts: self.ts,
            order: self.order,
        }
    }

    /// Stream offset of `data[i]`.
    #[inline(always)]
    fn rel(&self, i: usize) -> u64 {
        self.base + (i - self.start) as u64
    }

    /// Decode the whole stream into `cols` (capacity >= `max_packets(end - start)`) and `side`.
    /// Returns the number of rows written.
    pub fn run<O: Offset>(&mut self, cols: &mut Columns<'_, O>, side: &mut Side) -> usize {
        self.run_window(true, cols, side).0
    }

    /// Decode the available bytes. `last`: the stream ends at `end`. Returns the rows written
    /// and the number of bytes consumed: the bytes after `start + consumed` (a packet cut by the
    /// window end, or the tail of a sync search) must be passed again, followed by more bytes.
    /// Rows and diagnostics are those the whole-stream decode gives, window by window.
    pub fn run_window<O: Offset>(
        &mut self,
        last: bool,
        cols: &mut Columns<'_, O>,
        side: &mut Side,
    ) -> (usize, usize) {
        let mut sink = ColSink::new(cols);
        let used = self.run_sink(last, &mut sink, side);
        (sink.n, used)
    }

    /// `run_window` into any `Sink` (one `push` per packet, in stream order). Returns the bytes
    /// consumed.
    pub fn run_sink<S: Sink>(&mut self, last: bool, sink: &mut S, side: &mut Side) -> usize {
        let mut pos = self.start;
        loop {
            let step = match self.phase {
                Phase::Done => Step::Stop(self.end),
                Phase::Packets => self.packets(pos, last, sink, side),
                Phase::Resync { from } => self.resync(pos, from, last, side),
                Phase::Start | Phase::StartScan => self.first_sync(pos, last, side),
            };
            match step {
                Step::Go(p) => pos = p,
                Step::Stop(p) => {
                    pos = p;
                    break;
                }
            }
        }
        side.ts_end = self.ts;
        side.str_order = match self.order {
            StrOrder::Auto => None,
            o => Some(o),
        };
        pos - self.start
    }

    /// Phases Start and StartScan: the sync at the stream start, else the first one.
    fn first_sync(&mut self, mut pos: usize, last: bool, side: &mut Side) -> Step {
        let end = self.end;
        if self.phase == Phase::Start {
            let sync_here =
                end - pos >= SYNC_LEN && self.data[pos..pos + SYNC_LEN].iter().all(|&b| b == 0);
            if self.opts.expect_sync && sync_here {
                pos += SYNC_LEN;
                side.sync_bytes += SYNC_LEN as u64;
                self.phase = Phase::Packets;
                return Step::Go(pos);
            } else if self.opts.expect_sync && end - pos < SYNC_LEN && !last {
                return Step::Stop(pos);
            }
            self.phase = Phase::StartScan;
        }
        match find_sync(&self.data[..end], pos) {
            Some(s) => {
                let skipped = self.rel(s);
                if self.opts.expect_sync || skipped > 0 {
                    side.diags.push(Diag {
                        code: Code::Resync,
                        offset: 0,
                        count: skipped,
                        fatal: false,
                        detail: format!(
                            "expected the 10-zero sync at the stream start; skipped {} bytes to the first sync",
                            skipped
                        ),
                    });
                }
                pos = s + SYNC_LEN;
                side.sync_bytes += SYNC_LEN as u64;
                self.phase = Phase::Packets;
                Step::Go(pos)
            }
            None if last => {
                side.diags.push(Diag {
                    code: Code::NoSync,
                    offset: 0,
                    count: self.stream_len,
                    fatal: true,
                    detail: "expected a SystemView stream (10 zero bytes followed by TRACE_START 0x0A), found none"
                        .to_string(),
                });
                self.phase = Phase::Done;
                Step::Go(pos)
            }
            None => {
                // a sync may start in the last SYNC_LEN bytes: search them again
                Step::Stop(pos.max(end.saturating_sub(SYNC_LEN)))
            }
        }
    }

    /// Phase Resync: the next sync after damage found at stream offset `from`.
    fn resync(&mut self, pos: usize, from: u64, last: bool, side: &mut Side) -> Step {
        let end = self.end;
        match find_sync(&self.data[..end], pos) {
            Some(s) => {
                let at = self.rel(s);
                side.diags.push(Diag {
                    code: Code::Resync,
                    offset: from,
                    count: at - from,
                    fatal: false,
                    detail: format!(
                        "skipped {} damaged bytes to the next sync at stream offset 0x{:x}",
                        at - from,
                        at
                    ),
                });
                side.sync_bytes += SYNC_LEN as u64;
                self.phase = Phase::Packets;
                Step::Go(s + SYNC_LEN)
            }
            None if last => {
                let left = self.stream_len - from;
                side.diags.push(Diag {
                    code: Code::Resync,
                    offset: from,
                    count: left,
                    fatal: false,
                    detail: format!(
                        "no sync after the damage: {} bytes to the end of the stream not decoded",
                        left
                    ),
                });
                self.phase = Phase::Done;
                Step::Go(pos)
            }
            None => Step::Stop(pos.max(end.saturating_sub(SYNC_LEN))),
        }
    }

    /// Phase Packets: packets into `sink` until the window ends, damage or the stream's end.
    #[inline(always)]
    fn packets<S: Sink>(
        &mut self,
        mut pos: usize,
        last: bool,
        sink: &mut S,
        side: &mut Side,
    ) -> Step {
        let end = self.end;
        loop {
            if pos >= end {
                if last {
                    self.phase = Phase::Done;
                }
                return Step::Stop(pos);
            }
            if !sink.room() {
                side.diags.push(Diag {
                    code: Code::Corrupt,
                    offset: self.rel(pos),
                    count: (end - pos) as u64,
                    fatal: true,
                    detail: "output capacity exhausted".to_string(),
                });
                self.phase = Phase::Done;
                return Step::Go(pos);
            }
            let pkt = pos;
            let row = sink.row();
            match self.packet(pos, row, side) {
                Ok((next, mut p)) => {
                    p.off = self.rel(pkt);
                    sink.push(&p, side);
                    pos = next;
                }
                Err(f) => {
                    // Drop any aux/strings the failed packet started to write.
                    self.rollback(row, side);
                    match f {
                        Fail::Eof(_) if !last => return Step::Stop(pos), // continues in the next window
                        Fail::Eof(what) => {
                            self.cut_at(pkt, what, side);
                            self.phase = Phase::Done;
                            return Step::Go(pos);
                        }
                        Fail::Bad(msg) => {
                            let rel = self.rel(pkt);
                            side.diags.push(Diag {
                                code: Code::Corrupt,
                                offset: rel,
                                count: 1,
                                fatal: true,
                                detail: msg,
                            });
                            self.phase = Phase::Resync { from: rel };
                            return Step::Go(pkt + 1);
                        }
                    }
                }
            }
        }
    }

    /// The stream ends inside the packet at `pkt`: trailing zero padding or a cut packet.
    fn cut_at(&self, pkt: usize, what: &str, side: &mut Side) {
        let rel = self.rel(pkt);
        let rest = &self.data[pkt..self.end];
        if rest.iter().all(|&b| b == 0) {
            side.diags.push(Diag {
                code: Code::Padding,
                offset: rel,
                count: rest.len() as u64,
                fatal: false,
                detail: format!("{} zero bytes after the last complete packet", rest.len()),
            });
        } else {
            side.diags.push(Diag {
                code: Code::Truncated,
                offset: rel,
                count: rest.len() as u64,
                fatal: false,
                detail: format!(
                    "{} in the final packet ({} bytes, id byte 0x{:02x})",
                    what,
                    rest.len(),
                    rest[0]
                ),
            });
        }
    }

    pub(crate) fn rollback(&self, n: usize, side: &mut Side) {
        truncate_aux(side, n);
    }
}

/// Drop the aux records of rows `n..` (and the strings only they referenced).
#[inline]
pub fn truncate_aux(side: &mut Side, n: usize) {
    while let Some(&r) = side.aux_row.last() {
        if (r as usize) < n {
            break;
        }
        side.aux_row.pop();
        let st = side.aux_start.pop().unwrap_or(0) as usize;
        side.aux_vals.truncate(st);
        side.aux_str.pop();
    }
    // Strings are only referenced from aux; trailing unreferenced ones are harmless but
    // trimmed for tidiness.
    let keep = side
        .aux_str
        .iter()
        .rev()
        .find(|&&s| s != u32::MAX)
        .map(|&s| s as usize + 1)
        .unwrap_or(0);
    if side.str_ends.len() > keep {
        side.str_ends.truncate(keep);
        let e = if keep == 0 {
            0
        } else {
            side.str_ends[keep - 1] as usize
        };
        side.strings.truncate(e);
    }
}

#[cfg(test)]
#[path = "systemview_tests.rs"]
mod tests;
