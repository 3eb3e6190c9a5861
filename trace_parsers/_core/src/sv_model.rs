//! SystemView raw packet columns -> rows of the common event model (`EVENT_DTYPE`), in one
//! sequential pass: EventKind mapping, payload columns, task handles -> dense indices, running
//! context per core (task / ISR with nesting / idle, reset by OVERFLOW) and integer tick -> ns.
//!
//! The rules are docs/methodology.md's ("Kernel state"). Used by the whole read (`sv_fused`), the
//! chunk reader (`SvConverter`) and `crosstrace info`'s summary (`sv_convert`).
//! No pyo3 here: the bindings are in `python_model.rs`.

use std::collections::{HashMap, HashSet};

/// Byte layout of one `EVENT_DTYPE` row (packed, little-endian; checked by the Python glue).
pub const ROW: usize = 51;
const O_TS: usize = 0;
const O_TS_RAW: usize = 8;
const O_KIND: usize = 16;
const O_CORE: usize = 17;
const O_CTX_TYPE: usize = 18;
const O_CTX_ID: usize = 19;
const O_TARGET: usize = 23;
const O_MARKER: usize = 27;
const O_VALUE: usize = 31;
const O_SRC_ID: usize = 39;
const O_SRC_OFF: usize = 43;

pub const VALUE_NULL: i64 = i64::MIN;

// EventKind numbers (trace_parsers/model.py).
const K_TASK_SWITCH_IN: u8 = 1;
const K_TASK_SWITCH_OUT: u8 = 2;
const K_ISR_ENTER: u8 = 5;
const K_ISR_EXIT: u8 = 6;
const K_ISR_TO_SCHED: u8 = 7;
const K_MARK: u8 = 10;
const K_OVERFLOW: u8 = 13;
const K_TRACE_START: u8 = 14;
const K_IDLE: u8 = 16;
const K_API_CALL: u8 = 21;
const K_USER: u8 = 25;
const K_OTHER: u8 = 26;

// CtxType numbers.
const C_NONE: u8 = 0;
const C_TASK: u8 = 1;
const C_ISR: u8 = 2;
const C_IDLE: u8 = 3;

/// SystemView system id (0..31) -> EventKind; EX (31) is refined by its sub-id.
const KIND_LUT: [u8; 32] = {
    let mut t = [K_OTHER; 32];
    t[1] = K_OVERFLOW;
    t[2] = K_ISR_ENTER;
    t[3] = K_ISR_EXIT;
    t[4] = K_TASK_SWITCH_IN;
    t[5] = K_TASK_SWITCH_OUT;
    t[6] = 3; // TASK_READY
    t[7] = 4; // TASK_BLOCK
    t[8] = 17; // TASK_CREATE
    t[10] = 14; // TRACE_START
    t[11] = 15; // TRACE_STOP
    t[13] = 24; // SYSTIME
    t[15] = 8; // MARK_START
    t[16] = 9; // MARK_STOP
    t[17] = K_IDLE;
    t[18] = K_ISR_TO_SCHED;
    t[19] = 19; // TIMER_ENTER
    t[20] = 20; // TIMER_EXIT
    t[26] = 23; // LOG
    t[28] = 22; // API_RETURN
    t[29] = 18; // TASK_TERMINATE
    t
};

pub(crate) const ID_NOP: u32 = 0;
pub(crate) const ID_OVERFLOW: u32 = 1;
const ID_ISR_ENTER: u32 = 2;
pub(crate) const ID_START_EXEC: u32 = 4;
const ID_STOP_READY: u32 = 7;
const ID_SYSTIME_CYCLES: u32 = 12;
const ID_SYSTIME_US: u32 = 13;
const ID_MARK_START: u32 = 15;
const ID_MARK_STOP: u32 = 16;
const ID_TIMER_ENTER: u32 = 19;
pub(crate) const ID_PRINT: u32 = 26;
const ID_END_CALL: u32 = 28;
pub(crate) const ID_EX: u32 = 31;
const ID_OS_FIRST: u32 = 32;
const EX_MARK: u32 = 0;
pub(crate) const EX_NAME_MARKER: u32 = 1;
pub(crate) const META_IDS: [u32; 8] = [9, 12, 13, 14, 21, 22, 24, 25];

pub(crate) const fn is_target(id: u32) -> bool {
    matches!(id, 6 | 7 | 8 | 29)
}

/// The raw columns of one decoded stream (as written by `systemview::Decoder`).
pub struct Raw<'a, O> {
    pub id: &'a [u32],
    pub core: &'a [u8],
    pub nv: &'a [u8],
    pub ts: &'a [u64],
    pub off: &'a [O],
    pub p0: &'a [u32],
    pub p1: &'a [u32],
    pub p2: &'a [u32],
}

pub use crate::sv_scan::{scan, Scan};

#[path = "sv_clock.rs"]
mod clock;
use clock::Clock;
#[cfg(test)]
use clock::Div;

/// Per-stream conversion parameters (decided in Python from the metadata packets).
pub struct Params<'a> {
    pub start: u64,
    pub stream_core: u8,
    pub esp: bool,
    pub ram_base: u64,
    pub shift: u32,
    /// Task handles (expanded) in dense-index order.
    pub handles: &'a [u64],
    /// Ids >= 32 named by the OS table (index = id).
    pub named: &'a [bool],
    pub mod_first: u32,
    /// 0 when unknown (ts stays in ticks).
    pub tick_hz: u64,
    pub origin: u64,
    /// Index in `Trace.strings` of this stream's first PRINT_FORMATTED message.
    pub log_base: i64,
}

/// `Params` owned by a converter that lives across calls (`SvConverter`, `SvFused`).
#[derive(Debug, Clone, Default)]
pub struct OwnedParams {
    pub start: u64,
    pub stream_core: u8,
    pub esp: bool,
    pub ram_base: u64,
    pub shift: u32,
    pub handles: Vec<u64>,
    pub named: Vec<bool>,
    pub mod_first: u32,
    pub tick_hz: u64,
    pub origin: u64,
}

impl OwnedParams {
    /// The parameters of one conversion call (`log_base` is carried by `ConvState`).
    pub fn params(&self) -> Params<'_> {
        Params {
            start: self.start,
            stream_core: self.stream_core,
            esp: self.esp,
            ram_base: self.ram_base,
            shift: self.shift,
            handles: &self.handles,
            named: &self.named,
            mod_first: self.mod_first,
            tick_hz: self.tick_hz,
            origin: self.origin,
            log_base: 0,
        }
    }
}

#[derive(Debug, Default)]
pub struct ConvOut {
    pub rows: usize,
    /// Ids >= 32 converted to API_CALL, ascending.
    pub api_ids: Vec<u32>,
    /// True when `ts` never decreases along the rows.
    pub sorted: bool,
}

/// Running context of one core.
#[derive(Clone)]
struct Ctx {
    depth: u32,
    stack: Vec<i32>,
    task: (u8, i32),
}

impl Default for Ctx {
    fn default() -> Self {
        Ctx {
            depth: 0,
            stack: vec![-1],
            task: (C_NONE, -1),
        }
    }
}

impl Ctx {
    /// (ctx_type, ctx_id) of an event of `kind` (arg: IRQ or dense task index). The rules of
    /// docs/methodology.md "Kernel state": a data loss (OVERFLOW) or a restart (TRACE_START) empties
    /// the ISR stack and makes the task unknown; a switch-in closes the ISRs still open.
    #[inline(always)]
    fn step(&mut self, kind: u8, arg: i32) -> (u8, i32) {
        if kind == K_OVERFLOW || kind == K_TRACE_START {
            self.depth = 0;
            self.task = (C_NONE, -1);
            return (C_NONE, -1);
        }
        if kind == K_TASK_SWITCH_IN {
            self.depth = 0;
        }
        let prev = self.depth;
        match kind {
            K_ISR_ENTER => {
                self.depth += 1;
                let d = self.depth as usize;
                if self.stack.len() <= d {
                    self.stack.resize(d + 1, -1);
                }
                self.stack[d] = arg;
            }
            K_ISR_EXIT | K_ISR_TO_SCHED => self.depth = self.depth.saturating_sub(1),
            _ => {}
        }
        let before = self.task;
        match kind {
            K_TASK_SWITCH_IN => self.task = (C_TASK, arg),
            K_IDLE => self.task = (C_IDLE, -1),
            K_TASK_SWITCH_OUT => self.task = (C_NONE, -1),
            _ => {}
        }
        let lvl = prev.max(self.depth);
        if lvl > 0 {
            (C_ISR, self.stack[lvl as usize])
        } else if kind == K_TASK_SWITCH_OUT {
            before
        } else {
            self.task
        }
    }
}

/// Raw task id -> dense task index, with a small direct-mapped cache in front of the map.
struct TaskIndex<'a> {
    p: &'a Params<'a>,
    map: HashMap<u64, i32>,
    cache: [(u32, i32); 64],
    valid: [bool; 64],
}

impl<'a> TaskIndex<'a> {
    fn new(p: &'a Params<'a>) -> Self {
        let mut map = HashMap::with_capacity(p.handles.len());
        for (i, h) in p.handles.iter().enumerate() {
            map.entry(*h).or_insert(i as i32);
        }
        TaskIndex {
            p,
            map,
            cache: [(0, -1); 64],
            valid: [false; 64],
        }
    }
    #[inline(always)]
    fn get(&mut self, raw: u32) -> i32 {
        let slot = (raw.wrapping_mul(0x9E37_79B1) >> 26) as usize;
        if self.valid[slot] && self.cache[slot].0 == raw {
            return self.cache[slot].1;
        }
        let h = self.p.ram_base.wrapping_add((raw as u64) << self.p.shift);
        let v = *self.map.get(&h).unwrap_or(&-1);
        self.cache[slot] = (raw, v);
        self.valid[slot] = true;
        v
    }
}

#[inline(always)]
fn put(row: &mut [u8], at: usize, b: &[u8]) {
    row[at..at + b.len()].copy_from_slice(b);
}

/// What `Mapper` makes of one packet: the mapped fields of its row and the context argument.
struct Row {
    kind: u8,
    value: i64,
    marker: u32,
    target: i32,
    /// IRQ (ISR_ENTER) or dense task index (TASK_SWITCH_IN) for the context tracker.
    arg: i32,
    src_id: u32,
}

/// Conversion state carried from one part of a stream to the next (chunked reading): running
/// context per core, the PRINT_FORMATTED counter and the ids converted to API_CALL.
#[derive(Clone)]
pub struct ConvState {
    ctx: Vec<Ctx>,
    logs: i64,
    api_small: Vec<bool>,
    api: HashSet<u32>,
    last_ts: i64,
    sorted: bool,
}

impl ConvState {
    /// The state at the start of a stream (`log_base`: index of its first message).
    pub fn new(esp: bool, log_base: i64) -> Self {
        ConvState {
            ctx: vec![Ctx::default(); if esp { 256 } else { 1 }],
            logs: log_base,
            api_small: vec![false; 1 << 16],
            api: HashSet::new(),
            last_ts: i64::MIN,
            sorted: true,
        }
    }

    /// Ids >= 32 converted to API_CALL so far, ascending.
    pub fn api_ids(&self) -> Vec<u32> {
        let mut ids: Vec<u32> = (0..1u32 << 16)
            .filter(|i| self.api_small[*i as usize])
            .collect();
        ids.extend(self.api.iter().copied());
        ids.sort_unstable();
        ids
    }

    /// True when `ts` never decreased so far.
    pub fn sorted(&self) -> bool {
        self.sorted
    }

    /// The next PRINT_FORMATTED message's index in `Trace.strings`.
    pub fn logs(&self) -> i64 {
        self.logs
    }
}

/// Packet id and payload -> EventKind and the payload columns (systemview.md section 7).
struct Mapper<'a, 's> {
    p: &'a Params<'a>,
    tix: TaskIndex<'a>,
    st: &'s mut ConvState,
}

impl<'a, 's> Mapper<'a, 's> {
    fn new(p: &'a Params<'a>, st: &'s mut ConvState) -> Self {
        Mapper {
            p,
            tix: TaskIndex::new(p),
            st,
        }
    }

    #[inline(always)]
    fn row(&mut self, kid: u32, p0: u32, p1: u32, p2: u32, nv: u8) -> Row {
        let mut o = Row {
            kind: KIND_LUT[kid.min(31) as usize],
            value: VALUE_NULL,
            marker: 0,
            target: -1,
            arg: -1,
            src_id: kid,
        };
        if kid >= ID_OS_FIRST {
            let p = self.p;
            if kid < p.mod_first || p.named.get(kid as usize).copied().unwrap_or(false) {
                o.kind = K_API_CALL;
                if kid < 1 << 16 {
                    self.st.api_small[kid as usize] = true;
                } else {
                    self.st.api.insert(kid);
                }
            } else {
                o.kind = K_USER;
            }
            if nv >= 1 {
                o.value = p0 as i64;
            }
            return o;
        }
        match kid {
            ID_OVERFLOW | ID_SYSTIME_CYCLES => o.value = p0 as i64,
            ID_STOP_READY => o.value = p1 as i64,
            ID_SYSTIME_US => o.value = p0 as i64 | ((p1 as i64) << 32),
            ID_TIMER_ENTER => {
                o.value = self.p.ram_base.wrapping_add((p0 as u64) << self.p.shift) as i64
            }
            ID_EX if p0 == EX_MARK => {
                o.kind = K_MARK;
                if nv >= 3 {
                    o.value = p2 as i64;
                }
                o.marker = p1;
            }
            ID_END_CALL => {
                if nv >= 2 {
                    o.value = p1 as i64;
                }
                o.src_id = p0;
            }
            ID_PRINT => {
                o.value = self.st.logs;
                self.st.logs += 1;
            }
            ID_MARK_START | ID_MARK_STOP => o.marker = p0,
            ID_ISR_ENTER => o.arg = p0 as i32,
            ID_START_EXEC => o.arg = self.tix.get(p0),
            _ => {}
        }
        if is_target(kid) {
            o.target = self.tix.get(p0);
        }
        o
    }
}

/// The field values of one output row (an `EVENT_DTYPE` row or a row of the event columns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fields {
    pub ts: i64,
    pub ts_raw: u64,
    pub kind: u8,
    pub core: u8,
    pub ctx_type: u8,
    pub ctx_id: i32,
    pub target: i32,
    pub marker: u32,
    pub value: i64,
    pub src_id: u32,
    pub src_off: u64,
}

/// `f` as one `EVENT_DTYPE` row (`ROW` bytes of `out`).
#[inline(always)]
pub(crate) fn write_row(out: &mut [u8], f: &Fields) {
    let row: &mut [u8; ROW] = out.try_into().expect("one row");
    put(row, O_TS, &f.ts.to_le_bytes());
    put(row, O_TS_RAW, &f.ts_raw.to_le_bytes());
    row[O_KIND] = f.kind;
    row[O_CORE] = f.core;
    row[O_CTX_TYPE] = f.ctx_type;
    put(row, O_CTX_ID, &f.ctx_id.to_le_bytes());
    put(row, O_TARGET, &f.target.to_le_bytes());
    put(row, O_MARKER, &f.marker.to_le_bytes());
    put(row, O_VALUE, &f.value.to_le_bytes());
    put(row, O_SRC_ID, &f.src_id.to_le_bytes());
    put(row, O_SRC_OFF, &f.src_off.to_le_bytes());
}

/// Raw rows converted between two calls of the `progress` callback of `convert`.
pub const PROGRESS_ROWS: usize = 1 << 18;

/// Convert every non-NOP row of `r` into `out` (`scan(r).events` rows of `ROW` bytes).
/// `progress(j)` is called after every `PROGRESS_ROWS` raw rows and at the end: rows `..j` of
/// `r` are no longer needed (the caller may release their memory).
pub fn convert<O: Copy + Into<u64>>(
    r: &Raw<'_, O>,
    p: &Params<'_>,
    out: &mut [u8],
    progress: &mut dyn FnMut(usize),
) -> ConvOut {
    let mut st = ConvState::new(p.esp, p.log_base);
    let rows = convert_part(r, p, &mut st, out, progress);
    ConvOut {
        rows,
        api_ids: st.api_ids(),
        sorted: st.sorted,
    }
}

/// `convert` of one part of a stream, continuing from `st` (the state after the previous part;
/// `ConvState::new` for the first). Returns the rows written.
pub fn convert_part<O: Copy + Into<u64>>(
    r: &Raw<'_, O>,
    p: &Params<'_>,
    st: &mut ConvState,
    out: &mut [u8],
    progress: &mut dyn FnMut(usize),
) -> usize {
    let mut conv = Conv::new(p, st);
    let mut k = 0usize;
    for j in 0..r.id.len() {
        if j % PROGRESS_ROWS == 0 && j > 0 {
            progress(j);
        }
        let kid = r.id[j];
        if kid == ID_NOP {
            continue;
        }
        let v = [r.p0[j], r.p1[j], r.p2[j]];
        let f = conv.fields(kid, r.core[j], r.nv[j], r.ts[j], v, r.off[j].into());
        write_row(&mut out[k * ROW..(k + 1) * ROW], &f);
        k += 1;
    }
    progress(r.id.len());
    conv.done();
    k
}

/// The conversion of one packet after another (`convert_part`, and `sv_fused` straight from
/// the decoder): mapping, running context per core and ticks -> ns.
pub(crate) struct Conv<'a, 's> {
    p: &'a Params<'a>,
    map: Mapper<'a, 's>,
    ctx: Vec<Ctx>,
    clock: Clock,
    sorted: bool,
    last_ts: i64,
}

impl<'a, 's> Conv<'a, 's> {
    pub(crate) fn new(p: &'a Params<'a>, st: &'s mut ConvState) -> Self {
        let mut ctx = std::mem::take(&mut st.ctx);
        if ctx.is_empty() {
            ctx = vec![Ctx::default(); if p.esp { 256 } else { 1 }];
        }
        let (sorted, last_ts) = (st.sorted, st.last_ts);
        Conv {
            p,
            map: Mapper::new(p, st),
            ctx,
            clock: Clock::new(p.tick_hz, p.origin),
            sorted,
            last_ts,
        }
    }

    /// The row of one non-NOP packet (`off`: stream-relative).
    #[inline(always)]
    pub(crate) fn fields(
        &mut self,
        kid: u32,
        core_bit: u8,
        nv: u8,
        ts_raw: u64,
        v: [u32; 3],
        off: u64,
    ) -> Fields {
        let p = self.p;
        let o = self.map.row(kid, v[0], v[1], v[2], nv);
        let core = if p.esp { core_bit } else { p.stream_core };
        let (ctx_type, ctx_id) =
            self.ctx[if p.esp { core as usize } else { 0 }].step(o.kind, o.arg);
        let ts = self.clock.ns(ts_raw);
        self.sorted &= ts >= self.last_ts;
        self.last_ts = ts;
        Fields {
            ts,
            ts_raw,
            kind: o.kind,
            core,
            ctx_type,
            ctx_id,
            target: o.target,
            marker: o.marker,
            value: o.value,
            src_id: o.src_id,
            src_off: p.start.wrapping_add(off),
        }
    }

    /// Hand the running state back to the `ConvState` for the next part.
    pub(crate) fn done(self) {
        let st = self.map.st;
        st.ctx = self.ctx;
        st.sorted = self.sorted;
        st.last_ts = self.last_ts;
    }
}

#[cfg(test)]
#[path = "sv_model_tests.rs"]
pub(crate) mod tests;
