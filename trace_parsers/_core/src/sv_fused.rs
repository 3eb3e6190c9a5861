//! The fused SystemView read: packets go from the decoder straight into `EVENT_DTYPE` rows (or
//! the event columns of `sv_cols_out`: `RowOut`), with no raw columns in between. One `Fused`
//! sink per window of a stream; the state that outlives a window (`FusedState`: scan, running
//! conversion state, the few metadata packets kept for the Python side) carries over, so a
//! stream fed window by window gives the rows and side tables of one pass over the whole
//! stream.
//!
//! The conversion parameters (tick rate, origin, task handles, OS table) are fixed before the
//! pass; the caller checks them against what the whole stream's metadata decides and converts
//! again when they differ (`trace_parsers/systemview/fused.py`).

use crate::sv_model::{write_row, Conv, ConvState, Fields, Params, ROW};
use crate::sv_scan::{Class, ScanAcc};
use crate::systemview::{truncate_aux, Owned, Pkt, Side, Sink};

/// The metadata and message packets of a stream (few), in stream order, as raw columns.
#[derive(Debug, Default)]
pub struct Kept {
    /// The packets' columns (its `side` stays empty: the stream's side tables are the caller's).
    pub cols: Owned,
    /// Indices (into the kept packets) of the metadata packets.
    pub meta: Vec<u64>,
    /// Indices of the PRINT_FORMATTED / NAME_MARKER packets.
    pub text: Vec<u64>,
}

impl Kept {
    fn push(&mut self, p: &Pkt, class: Class) {
        let i = self.len() as u64;
        if class == Class::Meta {
            self.meta.push(i);
        } else {
            self.text.push(i);
        }
        self.cols.push(p);
    }

    pub fn len(&self) -> usize {
        self.cols.id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cols.id.is_empty()
    }
}

/// What a fused read of one stream has gathered so far besides the rows.
#[derive(Default)]
pub struct FusedState {
    pub acc: ScanAcc,
    /// The kept packets (their aux records and strings: in the decoder's `Side`, where
    /// `aux_row` indexes `kept` since `Fused` drops every other packet's records).
    pub kept: Kept,
    /// Packets decoded (NOP included).
    pub packets: u64,
    pub first_ts: Option<u64>,
    pub last_ts: u64,
    pub last_id: u32,
    /// Rows written.
    pub rows: usize,
}

/// Where `Fused` puts the rows of a window.
pub trait RowOut {
    /// Rows it has room for (the stream's rows so far included).
    fn cap(&self) -> usize;
    /// Row `k` of the stream (rows come in order, from the stream's first).
    fn put(&mut self, k: usize, f: &Fields);
    /// End of the window.
    fn done(&mut self) {}
}

/// `EVENT_DTYPE` rows: every row of the stream so far and room for more (whole `ROW`-byte rows).
impl RowOut for &mut [u8] {
    #[inline(always)]
    fn cap(&self) -> usize {
        self.len() / ROW
    }

    #[inline(always)]
    fn put(&mut self, k: usize, f: &Fields) {
        write_row(&mut self[k * ROW..(k + 1) * ROW], f);
    }
}

/// The sink of one window: rows from `st.rows` on into `out`.
pub struct Fused<'a, 's, W: RowOut> {
    st: &'s mut FusedState,
    conv: Conv<'a, 's>,
    out: W,
    cap: usize,
}

impl<'a, 's, W: RowOut> Fused<'a, 's, W> {
    /// `out` holds every row of the stream so far and room for more.
    pub fn new(p: &'a Params<'a>, st: &'s mut FusedState, conv: &'s mut ConvState, out: W) -> Self {
        let cap = out.cap();
        Fused {
            st,
            conv: Conv::new(p, conv),
            out,
            cap,
        }
    }

    /// End of the window: the running conversion state goes back to its `ConvState`.
    pub fn done(mut self) {
        self.out.done();
        self.conv.done();
    }
}

impl<W: RowOut> Sink for Fused<'_, '_, W> {
    #[inline(always)]
    fn row(&self) -> usize {
        self.st.kept.len()
    }

    #[inline(always)]
    fn room(&self) -> bool {
        self.st.rows < self.cap
    }

    #[inline(always)]
    fn push(&mut self, p: &Pkt, side: &mut Side) {
        let st = &mut *self.st;
        st.packets += 1;
        st.first_ts.get_or_insert(p.ts);
        st.last_ts = p.ts;
        st.last_id = p.id;
        let class = st.acc.add(p.id, p.core, p.ts, p.v[0]);
        match class {
            Class::Meta | Class::Text => st.kept.push(p, class),
            // aux records of other packets are not needed: keep only the kept packets' ones
            _ => {
                if side
                    .aux_row
                    .last()
                    .is_some_and(|&r| r as usize >= st.kept.len())
                {
                    truncate_aux(side, st.kept.len());
                }
            }
        }
        if class == Class::Nop {
            return;
        }
        let k = st.rows;
        let f = self.conv.fields(p.id, p.core, p.nv, p.ts, p.v, p.off);
        self.out.put(k, &f);
        st.rows = k + 1;
    }
}

#[cfg(test)]
#[path = "sv_fused_tests.rs"]
mod tests;
