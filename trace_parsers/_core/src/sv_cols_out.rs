//! The column output of `sv_fused` (`SvFused(columns=True)`): the event columns of a stream
//! instead of `EVENT_DTYPE` rows. `ts` and `ts_raw` go straight into the caller's buffers (8-byte
//! little-endian values, like the rows); every other column goes into an `Adaptive` builder
//! (constant, or dense at the narrowest width holding its values). `value` and `target_id` are
//! sparse: only the rows whose value is not the default (null, -1) are kept, as row indices and
//! values.
//!
//! Rows first fill a small fixed-width batch (struct of arrays, no width checks on the hot
//! path); a full batch, and the end of every window, is flushed into the builders with one
//! range pass per column (`Adaptive::extend`). The builders keep their dense bytes in a
//! `Store`: `Vec<u8>` here and in the tests, a bytearray of ours in the Python glue.

use crate::adaptive::{Adaptive, Column, Lane, NoMemory, Store};
use crate::sv_fused::RowOut;
use crate::sv_model::{Fields, VALUE_NULL};

/// Rows per batch (a power of two: masking the index spares the bounds checks).
pub const BATCH: usize = 4096;

/// `target_id` of a row without a target.
pub const TARGET_NONE: i32 = -1;

/// A sparse column being built: the row indices (within the stream) of the rows whose value is
/// not the default, and those values.
#[derive(Debug, Clone)]
pub struct Sparse<S = Vec<u8>> {
    pub idx: Adaptive<S>,
    pub val: Adaptive<S>,
}

impl<S: Store> Sparse<S> {
    fn new(hint: usize) -> Self {
        Sparse {
            idx: Adaptive::new(false, hint),
            val: Adaptive::new(true, hint),
        }
    }
}

/// The sparse entries of one batch.
struct SparseBatch<T> {
    n: usize,
    idx: [u64; BATCH],
    val: [T; BATCH],
}

impl<T: Lane + Default> SparseBatch<T> {
    fn new() -> Self {
        SparseBatch {
            n: 0,
            idx: [0; BATCH],
            val: [T::default(); BATCH],
        }
    }

    /// Keep (`row`, `v`) unless `v` is the default. A branch: whether a row has a value follows
    /// its packet id, which the decoder has just branched on (well predicted). `n` <= the
    /// batch's rows < `BATCH` here, so the mask never wraps.
    #[inline(always)]
    fn push(&mut self, row: usize, v: T, default: T) {
        if v != default {
            let j = self.n & (BATCH - 1);
            self.idx[j] = row as u64;
            self.val[j] = v;
            self.n += 1;
        }
    }

    fn flush<S: Store>(&mut self, into: &mut Sparse<S>) -> Result<(), NoMemory> {
        let n = std::mem::take(&mut self.n);
        into.idx.extend(&self.idx[..n])?;
        into.val.extend(&self.val[..n])
    }
}

/// The rows not yet flushed, at their logical widths.
struct Batch {
    n: usize,
    kind: [u8; BATCH],
    core: [u8; BATCH],
    ctx_type: [u8; BATCH],
    ctx_id: [i32; BATCH],
    marker: [u32; BATCH],
    src_id: [u32; BATCH],
    src_off: [u64; BATCH],
    value: SparseBatch<i64>,
    target: SparseBatch<i32>,
}

/// The event columns of one stream but `ts` / `ts_raw` (see the module doc), their dense bytes
/// in stores `S`.
pub struct EventCols<S = Vec<u8>> {
    /// Rows flushed into the builders.
    rows: usize,
    batch: Box<Batch>,
    kind: Adaptive<S>,
    core: Adaptive<S>,
    ctx_type: Adaptive<S>,
    ctx_id: Adaptive<S>,
    target: Sparse<S>,
    marker: Adaptive<S>,
    value: Sparse<S>,
    src_id: Adaptive<S>,
    src_off: Adaptive<S>,
    /// A column could not grow: the rows since are dropped and the stream's read fails.
    no_memory: bool,
}

/// A finished event column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spec<S = Vec<u8>> {
    Plain(Column<S>),
    /// `len` rows, `val[i]` at row `idx[i]` and the default everywhere else.
    Sparse {
        len: usize,
        idx: Column<S>,
        val: Column<S>,
    },
}

impl<S: Store> EventCols<S> {
    /// No rows yet; `hint`: the rows the stream may have at most (room reserved when a column
    /// turns dense: untouched, it costs no memory).
    pub fn new(hint: usize) -> Self {
        let a = |signed| Adaptive::new(signed, hint);
        EventCols {
            rows: 0,
            batch: Box::new(Batch {
                n: 0,
                kind: [0; BATCH],
                core: [0; BATCH],
                ctx_type: [0; BATCH],
                ctx_id: [0; BATCH],
                marker: [0; BATCH],
                src_id: [0; BATCH],
                src_off: [0; BATCH],
                value: SparseBatch::new(),
                target: SparseBatch::new(),
            }),
            kind: a(false),
            core: a(false),
            ctx_type: a(false),
            ctx_id: a(true),
            target: Sparse::new(hint),
            marker: a(false),
            value: Sparse::new(hint),
            src_id: a(false),
            src_off: a(false),
            no_memory: false,
        }
    }

    /// True when a column could not grow (no memory): the columns are incomplete.
    pub fn no_memory(&self) -> bool {
        self.no_memory
    }

    /// Rows taken so far.
    pub fn rows(&self) -> usize {
        self.rows + self.batch.n
    }

    /// Take the next row (`f.ts` / `f.ts_raw` are the caller's).
    #[inline(always)]
    pub fn push(&mut self, f: &Fields) {
        let row = self.rows();
        let b = &mut *self.batch;
        let i = b.n & (BATCH - 1); // b.n < BATCH: a full batch is flushed at once
        b.kind[i] = f.kind;
        b.core[i] = f.core;
        b.ctx_type[i] = f.ctx_type;
        b.ctx_id[i] = f.ctx_id;
        b.marker[i] = f.marker;
        b.src_id[i] = f.src_id;
        b.src_off[i] = f.src_off;
        b.value.push(row, f.value, VALUE_NULL);
        b.target.push(row, f.target, TARGET_NONE);
        b.n = i + 1;
        if b.n == BATCH {
            self.flush();
        }
    }

    /// Move the batch into the builders (out of line: the hot loop stays small).
    #[inline(never)]
    pub fn flush(&mut self) {
        let n = self.batch.n;
        if n == 0 {
            return;
        }
        if !self.no_memory && self.extend_all(n).is_err() {
            self.no_memory = true;
        }
        let b = &mut *self.batch;
        (b.n, b.value.n, b.target.n) = (0, 0, 0);
        self.rows += n;
    }

    /// The batch's `n` rows appended to every column.
    fn extend_all(&mut self, n: usize) -> Result<(), NoMemory> {
        let b = &mut *self.batch;
        self.kind.extend(&b.kind[..n])?;
        self.core.extend(&b.core[..n])?;
        self.ctx_type.extend(&b.ctx_type[..n])?;
        self.ctx_id.extend(&b.ctx_id[..n])?;
        self.marker.extend(&b.marker[..n])?;
        self.src_id.extend(&b.src_id[..n])?;
        self.src_off.extend(&b.src_off[..n])?;
        b.value.flush(&mut self.value)?;
        b.target.flush(&mut self.target)
    }

    /// Bytes per value of every plain column and of the sparse ones' values (0: constant),
    /// by `EVENT_DTYPE` name.
    pub fn widths(&self) -> Vec<(&'static str, usize)> {
        vec![
            ("kind", self.kind.width()),
            ("core", self.core.width()),
            ("ctx_type", self.ctx_type.width()),
            ("ctx_id", self.ctx_id.width()),
            ("target_id", self.target.val.width()),
            ("marker", self.marker.width()),
            ("value", self.value.val.width()),
            ("src_id", self.src_id.width()),
            ("src_offset", self.src_off.width()),
        ]
    }

    /// Every column but `ts` / `ts_raw` by `EVENT_DTYPE` name, in row order. A column is
    /// finished (and its builder moved out of `self`) only when the iterator reaches it, so a
    /// caller that copies each and drops it before the next holds at most one copy at a time.
    pub fn finish(mut self) -> impl Iterator<Item = (&'static str, Spec<S>)> {
        self.flush();
        let len = self.rows;
        enum B<S> {
            Plain(Adaptive<S>),
            Sparse(Sparse<S>),
        }
        let cols = vec![
            ("kind", B::Plain(self.kind)),
            ("core", B::Plain(self.core)),
            ("ctx_type", B::Plain(self.ctx_type)),
            ("ctx_id", B::Plain(self.ctx_id)),
            ("target_id", B::Sparse(self.target)),
            ("marker", B::Plain(self.marker)),
            ("value", B::Sparse(self.value)),
            ("src_id", B::Plain(self.src_id)),
            ("src_offset", B::Plain(self.src_off)),
        ];
        cols.into_iter().map(move |(name, b)| {
            let spec = match b {
                B::Plain(a) => Spec::Plain(a.finish()),
                B::Sparse(s) => Spec::Sparse {
                    len,
                    idx: s.idx.finish(),
                    val: s.val.finish(),
                },
            };
            (name, spec)
        })
    }
}

/// `Fused`'s column output of one window: `ts` / `ts_raw` buffers of 8 bytes per row (room for
/// every row of the stream so far and more), the other columns into `cols`.
pub struct ColsOut<'o, S: Store = Vec<u8>> {
    pub ts: &'o mut [u8],
    pub ts_raw: &'o mut [u8],
    pub cols: &'o mut EventCols<S>,
}

impl<S: Store> RowOut for ColsOut<'_, S> {
    #[inline(always)]
    fn cap(&self) -> usize {
        self.ts.len().min(self.ts_raw.len()) / 8
    }

    #[inline(always)]
    fn put(&mut self, k: usize, f: &Fields) {
        debug_assert_eq!(k, self.cols.rows());
        self.ts[k * 8..k * 8 + 8].copy_from_slice(&f.ts.to_le_bytes());
        self.ts_raw[k * 8..k * 8 + 8].copy_from_slice(&f.ts_raw.to_le_bytes());
        self.cols.push(f);
    }

    fn done(&mut self) {
        self.cols.flush();
    }
}

/// The `EVENT_DTYPE` rows of the columns (`ts` / `ts_raw`: 8 bytes per row, then the
/// `finish()` specs): what the Python side rebuilds, for the tests.
#[cfg(test)]
pub(crate) fn expand(ts: &[u8], ts_raw: &[u8], specs: Vec<(&str, Spec)>) -> Vec<u8> {
    use crate::sv_model::{write_row, ROW};
    let n = ts.len() / 8;
    let mut cols = std::collections::HashMap::new();
    for (name, spec) in specs {
        let v: Vec<i128> = match spec {
            Spec::Plain(c) => (0..c.len()).map(|i| c.get(i)).collect(),
            Spec::Sparse { len, idx, val } => {
                assert_eq!(idx.len(), val.len());
                let default = if name == "value" { VALUE_NULL } else { -1 };
                let mut v = vec![default as i128; len];
                for i in 0..idx.len() {
                    v[idx.get(i) as usize] = val.get(i);
                }
                v
            }
        };
        assert_eq!(v.len(), n, "{}", name);
        cols.insert(name.to_string(), v);
    }
    let mut out = vec![0u8; n * ROW];
    let at = |b: &[u8], i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
    for i in 0..n {
        let c = |name: &str| cols[name][i];
        let f = Fields {
            ts: at(ts, i) as i64,
            ts_raw: at(ts_raw, i),
            kind: c("kind").try_into().unwrap(),
            core: c("core").try_into().unwrap(),
            ctx_type: c("ctx_type").try_into().unwrap(),
            ctx_id: c("ctx_id").try_into().unwrap(),
            target: c("target_id").try_into().unwrap(),
            marker: c("marker").try_into().unwrap(),
            value: c("value").try_into().unwrap(),
            src_id: c("src_id").try_into().unwrap(),
            src_off: c("src_offset").try_into().unwrap(),
        };
        write_row(&mut out[i * ROW..(i + 1) * ROW], &f);
    }
    out
}

#[cfg(test)]
#[path = "sv_cols_out_tests.rs"]
mod tests;
