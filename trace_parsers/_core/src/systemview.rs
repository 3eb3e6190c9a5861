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

enum Fail {
    /// EOF inside a packet.
    Eof(&'static str),
    /// Impossible structure.
    Bad(String),
}

struct Cur<'d> {
    d: &'d [u8],
    pos: usize,
    end: usize,
    /// File offset of `d[0]` (for messages).
    org: u64,
}

impl<'d> Cur<'d> {
    #[inline(always)]
    fn byte(&mut self) -> Result<u8, Fail> {
        if self.pos < self.end {
            let b = self.d[self.pos];
            self.pos += 1;
            Ok(b)
        } else {
            Err(Fail::Eof("EOF in packet"))
        }
    }

    /// Unsigned LEB128, at most 5 bytes.
    #[inline(always)]
    fn varint(&mut self) -> Result<u32, Fail> {
        if self.pos < self.end {
            let b = self.d[self.pos];
            if b < 0x80 {
                self.pos += 1;
                return Ok(b as u32);
            }
        }
        self.varint_slow()
    }

    #[inline(never)]
    fn varint_slow(&mut self) -> Result<u32, Fail> {
        let mut v: u64 = 0;
        for i in 0..5 {
            if self.pos >= self.end {
                return Err(Fail::Eof("EOF in varint"));
            }
            let b = self.d[self.pos];
            self.pos += 1;
            v |= ((b & 0x7F) as u64) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v as u32);
            }
        }
        Err(Fail::Bad(format!(
            "varint longer than 5 bytes at 0x{:x}",
            self.org + (self.pos - 5) as u64
        )))
    }
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
        let cap = cols
            .id
            .len()
            .min(cols.core.len())
            .min(cols.nv.len())
            .min(cols.ts.len())
            .min(cols.off.len())
            .min(cols.p0.len())
            .min(cols.p1.len())
            .min(cols.p2.len());
        // Re-slice every column to exactly `cap` so the `n < cap` check below covers all writes.
        let mut cols = Columns {
            id: &mut cols.id[..cap],
            core: &mut cols.core[..cap],
            nv: &mut cols.nv[..cap],
            ts: &mut cols.ts[..cap],
            off: &mut cols.off[..cap],
            p0: &mut cols.p0[..cap],
            p1: &mut cols.p1[..cap],
            p2: &mut cols.p2[..cap],
        };
        let cols = &mut cols;
        let end = self.end;
        let mut n = 0usize;
        let mut pos = self.start;
        loop {
            match self.phase {
                Phase::Done => {
                    pos = end;
                    break;
                }
                Phase::Start => {
                    let sync_here = end - pos >= SYNC_LEN
                        && self.data[pos..pos + SYNC_LEN].iter().all(|&b| b == 0);
                    if self.opts.expect_sync && sync_here {
                        pos += SYNC_LEN;
                        side.sync_bytes += SYNC_LEN as u64;
                        self.phase = Phase::Packets;
                    } else if self.opts.expect_sync && end - pos < SYNC_LEN && !last {
                        break;
                    } else {
                        self.phase = Phase::StartScan;
                    }
                }
                Phase::StartScan => match find_sync(&self.data[..end], pos) {
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
                    }
                    None => {
                        // a sync may start in the last SYNC_LEN bytes: search them again
                        pos = pos.max(end.saturating_sub(SYNC_LEN));
                        break;
                    }
                },
                Phase::Resync { from } => match find_sync(&self.data[..end], pos) {
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
                        pos = s + SYNC_LEN;
                        side.sync_bytes += SYNC_LEN as u64;
                        self.phase = Phase::Packets;
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
                    }
                    None => {
                        pos = pos.max(end.saturating_sub(SYNC_LEN));
                        break;
                    }
                },
                Phase::Packets => {
                    if pos >= end {
                        if last {
                            self.phase = Phase::Done;
                        }
                        break;
                    }
                    if n >= cap {
                        side.diags.push(Diag {
                            code: Code::Corrupt,
                            offset: self.rel(pos),
                            count: (end - pos) as u64,
                            fatal: true,
                            detail: "output capacity exhausted".to_string(),
                        });
                        self.phase = Phase::Done;
                        continue;
                    }
                    let pkt = pos;
                    match self.packet(pos, n, cols, side) {
                        Ok(next) => {
                            cols.off[n] = O::from_u64(self.rel(pkt));
                            n += 1;
                            pos = next;
                        }
                        Err(f) => {
                            // Drop any aux/strings the failed packet started to write.
                            self.rollback(n, side);
                            match f {
                                Fail::Eof(_) if !last => break, // the packet continues in the next window
                                Fail::Eof(what) => {
                                    self.cut_at(pkt, what, side);
                                    self.phase = Phase::Done;
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
                                    pos = pkt + 1;
                                }
                            }
                        }
                    }
                }
            }
        }
        side.ts_end = self.ts;
        side.str_order = match self.order {
            StrOrder::Auto => None,
            o => Some(o),
        };
        (n, pos - self.start)
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

    fn rollback(&self, n: usize, side: &mut Side) {
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

    /// Decode one packet at `pos` into row `n`; returns the position after it.
    #[inline(always)]
    fn packet<O: Offset>(
        &mut self,
        pos: usize,
        n: usize,
        cols: &mut Columns<'_, O>,
        side: &mut Side,
    ) -> Result<usize, Fail> {
        let mut c = Cur {
            d: self.data,
            pos,
            end: self.end,
            org: self.org,
        };
        let (id, core) = self.read_id(&mut c)?;
        let mut v = [0u32; 3];
        let nv: usize;
        if id < 24 {
            nv = match id {
                0 | 3 | 5 | 10 | 11 | 17 | 18 | 20 => 0,
                1 | 2 | 4 | 6 | 8 | 12 | 15 | 16 | 19 => {
                    v[0] = c.varint()?;
                    1
                }
                7 | 13 | 23 => {
                    v[0] = c.varint()?;
                    v[1] = c.varint()?;
                    2
                }
                9 => {
                    // TASK_INFO: TaskId, Prio, Name
                    v[0] = c.varint()?;
                    v[1] = c.varint()?;
                    let end = c.end;
                    let s = self.string(&mut c, end, true, side)?;
                    self.aux(side, n, &v[..2], s);
                    2
                }
                14 => {
                    let end = c.end;
                    let s = self.string(&mut c, end, true, side)?;
                    self.aux(side, n, &[], s);
                    0
                }
                21 => {
                    let a = [c.varint()?, c.varint()?, c.varint()?, c.varint()?];
                    v.copy_from_slice(&a[..3]);
                    self.aux(side, n, &a, u32::MAX);
                    4
                }
                22 => {
                    // MODULEDESC: ModuleId, EventOffset, string
                    v[0] = c.varint()?;
                    v[1] = c.varint()?;
                    let end = c.end;
                    let s = self.string(&mut c, end, true, side)?;
                    self.aux(side, n, &v[..2], s);
                    2
                }
                _ => 0, // unreachable: every id < 24 is listed above
            };
        } else {
            let len = c.varint()? as usize;
            let pstart = c.pos;
            // the stream's end decides between damage and a cut; the window's end (when the
            // stream goes on) only means the packet continues in the next window
            let in_stream = self.stream_len - self.rel(pstart);
            if len as u64 <= in_stream && len > c.end - pstart {
                return Err(Fail::Eof("EOF in payload"));
            }
            if len as u64 > in_stream {
                let remaining = in_stream;
                return if len <= 0x3FFF && id < 0x1_0000 {
                    Err(Fail::Eof("EOF in payload"))
                } else {
                    Err(Fail::Bad(format!(
                        "id {} with payload length {} runs past the end of the stream ({} bytes left)",
                        id, len, remaining
                    )))
                };
            }
            let pend = pstart + len;
            let mut p = Cur {
                d: self.data,
                pos: pstart,
                end: pend,
                org: self.org,
            };
            nv = self.payload(id, &mut p, n, &mut v, side);
            c.pos = pend;
        }
        let delta = c.varint()?;
        self.ts = self.ts.wrapping_add(delta as u64);
        cols.id[n] = id;
        cols.core[n] = core;
        cols.nv[n] = nv.min(255) as u8;
        cols.ts[n] = self.ts;
        cols.p0[n] = v[0];
        cols.p1[n] = v[1];
        cols.p2[n] = v[2];
        Ok(c.pos)
    }

    #[inline(always)]
    fn read_id(&self, c: &mut Cur<'_>) -> Result<(u32, u8), Fail> {
        let b0 = c.byte()?;
        if b0 < 0x80 {
            if self.opts.esp_core_bit {
                return Ok(((b0 & 0x3F) as u32, (b0 >> 6) & 1));
            }
            return Ok((b0 as u32, 0));
        }
        let mut core = 0u8;
        let mut b1 = c.byte().map_err(|_| Fail::Eof("EOF in varint"))?;
        if self.opts.esp_core_bit {
            core = (b1 >> 6) & 1;
            b1 &= !0x40;
        }
        let mut v: u64 = (b0 & 0x7F) as u64 | (((b1 & 0x7F) as u64) << 7);
        let mut last = b1;
        let mut i = 2;
        while last & 0x80 != 0 {
            if i >= 5 {
                return Err(Fail::Bad("event id varint longer than 5 bytes".to_string()));
            }
            last = c.byte().map_err(|_| Fail::Eof("EOF in varint"))?;
            v |= ((last & 0x7F) as u64) << (7 * i);
            i += 1;
        }
        if v > u32::MAX as u64 {
            return Err(Fail::Bad(format!("event id {} does not fit 32 bits", v)));
        }
        Ok((v as u32, core))
    }

    /// Decode a length-delimited payload (ids >= 24). Never reads past `p.end`; a short payload
    /// just yields fewer values. Returns the number of numeric values.
    fn payload(
        &mut self,
        id: u32,
        p: &mut Cur<'_>,
        n: usize,
        v: &mut [u32; 3],
        side: &mut Side,
    ) -> usize {
        match id {
            25 => {
                // NAME_RESOURCE: ResourceId, string
                let mut vals = [0u32; 1];
                let k = read_vals(p, &mut vals);
                v[0] = vals[0];
                let s = if k == 1 {
                    self.string(p, p.end, false, side).unwrap_or(u32::MAX)
                } else {
                    u32::MAX
                };
                self.aux(side, n, &vals[..k], s);
                k
            }
            26 => {
                // PRINT_FORMATTED: string, Options, NumArgs, Args...
                let s = self.string(p, p.end, false, side).unwrap_or(u32::MAX);
                let mut vals = Vec::new();
                while p.pos < p.end {
                    match p.varint() {
                        Ok(x) => vals.push(x),
                        Err(_) => break,
                    }
                }
                for (i, x) in vals.iter().take(3).enumerate() {
                    v[i] = *x;
                }
                self.aux(side, n, &vals, s);
                vals.len()
            }
            31 => {
                // EX: SubID then sub-payload
                let sub = match p.varint() {
                    Ok(x) => x,
                    Err(_) => return 0,
                };
                v[0] = sub;
                match sub {
                    1 | 6 => {
                        // NAME_MARKER: MarkerId, string; REGISTER_DATA: Id, name, tail...
                        let mut vals = vec![sub];
                        let mut one = [0u32; 1];
                        if read_vals(p, &mut one) == 1 {
                            vals.push(one[0]);
                            v[1] = one[0];
                            let s = self.string(p, p.end, false, side).unwrap_or(u32::MAX);
                            while p.pos < p.end {
                                match p.varint() {
                                    Ok(x) => vals.push(x),
                                    Err(_) => break,
                                }
                            }
                            self.aux(side, n, &vals, s);
                        }
                        vals.len()
                    }
                    _ => {
                        let mut vals = [0u32; 8];
                        let k = read_vals(p, &mut vals);
                        v[1] = vals[0];
                        v[2] = vals[1];
                        if k > 2 {
                            let mut all = vec![sub];
                            all.extend_from_slice(&vals[..k]);
                            self.aux(side, n, &all, u32::MAX);
                        }
                        k + 1
                    }
                }
            }
            _ => {
                // INIT (24), NUMMODULES (27), END_CALL (28), TASK_TERMINATE (29), OS/user ids:
                // numeric fields. Values beyond the third go to aux.
                let mut first = [0u32; 3];
                let k = read_vals(p, &mut first);
                v.copy_from_slice(&first);
                if k == 3 && p.pos < p.end {
                    let mut vals = first.to_vec();
                    while p.pos < p.end {
                        match p.varint() {
                            Ok(x) => vals.push(x),
                            Err(_) => break,
                        }
                    }
                    self.aux(side, n, &vals, u32::MAX);
                    vals.len()
                } else {
                    k
                }
            }
        }
    }

    fn aux(&self, side: &mut Side, n: usize, vals: &[u32], s: u32) {
        side.aux_row.push(n as u32);
        side.aux_start.push(side.aux_vals.len() as u32);
        side.aux_str.push(s);
        side.aux_vals.extend_from_slice(vals);
    }

    /// Read a SystemView string (§3.3) bounded by `limit`; returns its index.
    /// `to_stream_end`: `limit` is the window end, the room for the guess is up to the stream end.
    fn string(
        &mut self,
        c: &mut Cur<'_>,
        limit: usize,
        to_stream_end: bool,
        side: &mut Side,
    ) -> Result<u32, Fail> {
        let b = c.byte()?;
        let len: usize = if b != 0xFF {
            b as usize
        } else {
            if c.pos + 2 > limit {
                return Err(Fail::Eof("EOF in string length"));
            }
            let (x, y) = (self.data[c.pos], self.data[c.pos + 1]);
            c.pos += 2;
            let lohi = x as usize | (y as usize) << 8;
            let hilo = (x as usize) << 8 | y as usize;
            let room = if to_stream_end {
                usize::try_from(self.stream_len - self.rel(c.pos)).unwrap_or(usize::MAX)
            } else {
                limit - c.pos
            };
            match self.order {
                StrOrder::LoHi => lohi,
                StrOrder::HiLo => hilo,
                StrOrder::Auto => {
                    // `FF 00 nn` is the >= 3.56 form (lo-hi would mean nn * 256 bytes). Otherwise
                    // take the order whose length fits (<= 3.42 uses the long form only for >= 255
                    // bytes); if both fit, the shorter one (the other is ~256x longer than any
                    // SEGGER_SYSVIEW_MAX_STRING_LEN), with a notice when both are plausible.
                    let ok_lh = x != 0 && lohi >= 255 && lohi <= room;
                    let ok_hl = hilo <= room;
                    let pick = match (ok_lh, ok_hl) {
                        (true, false) => StrOrder::LoHi,
                        (false, true) => StrOrder::HiLo,
                        (false, false) => StrOrder::LoHi,
                        (true, true) => {
                            if lohi.max(hilo) <= 4096 {
                                side.diags.push(Diag {
                                    code: Code::StringOrder,
                                    offset: self.rel(c.pos - 3),
                                    count: 1,
                                    fatal: false,
                                    detail: format!(
                                        "ambiguous long-string length bytes {:02x} {:02x}: took the shorter length",
                                        x, y
                                    ),
                                });
                            }
                            if lohi <= hilo {
                                StrOrder::LoHi
                            } else {
                                StrOrder::HiLo
                            }
                        }
                    };
                    self.order = pick;
                    if pick == StrOrder::LoHi {
                        lohi
                    } else {
                        hilo
                    }
                }
            }
        };
        if len > limit - c.pos {
            return Err(Fail::Eof("EOF in string"));
        }
        side.strings
            .extend_from_slice(&self.data[c.pos..c.pos + len]);
        side.str_ends.push(side.strings.len() as u64);
        c.pos += len;
        Ok((side.str_ends.len() - 1) as u32)
    }
}

/// Read up to `out.len()` varints while bytes remain; returns how many were read.
fn read_vals(p: &mut Cur<'_>, out: &mut [u32]) -> usize {
    let mut k = 0;
    while k < out.len() && p.pos < p.end {
        match p.varint() {
            Ok(x) => {
                out[k] = x;
                k += 1;
            }
            Err(_) => {
                p.pos = p.end;
                break;
            }
        }
    }
    k
}

/// Convenience for tests and small inputs: decode into freshly allocated vectors.
#[derive(Debug, Default)]
pub struct Owned {
    pub id: Vec<u32>,
    pub core: Vec<u8>,
    pub nv: Vec<u8>,
    pub ts: Vec<u64>,
    pub off: Vec<u64>,
    pub p0: Vec<u32>,
    pub p1: Vec<u32>,
    pub p2: Vec<u32>,
    pub side: Side,
}

pub fn decode_owned(data: &[u8], opts: Options) -> Owned {
    let cap = max_packets(data.len());
    let mut o = Owned {
        id: vec![0; cap],
        core: vec![0; cap],
        nv: vec![0; cap],
        ts: vec![0; cap],
        off: vec![0; cap],
        p0: vec![0; cap],
        p1: vec![0; cap],
        p2: vec![0; cap],
        side: Side::default(),
    };
    let n = {
        let mut cols = Columns {
            id: &mut o.id,
            core: &mut o.core,
            nv: &mut o.nv,
            ts: &mut o.ts,
            off: &mut o.off,
            p0: &mut o.p0,
            p1: &mut o.p1,
            p2: &mut o.p2,
        };
        Decoder::new(data, 0, data.len(), opts).run(&mut cols, &mut o.side)
    };
    o.id.truncate(n);
    o.core.truncate(n);
    o.nv.truncate(n);
    o.ts.truncate(n);
    o.off.truncate(n);
    o.p0.truncate(n);
    o.p1.truncate(n);
    o.p2.truncate(n);
    o
}

/// Encode an unsigned LEB128 varint (used by tests and benchmarks' generators).
pub fn put_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7F) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[cfg(test)]
#[path = "systemview_tests.rs"]
mod tests;
