//! The column output of the decoder (`run_window`'s sink) and the small conveniences built on
//! it: `decode_owned` (tests, small inputs) and `put_varint` (generators). Part of `systemview`.

use super::{max_packets, Columns, Decoder, Offset, Options, Pkt, Side, Sink};

/// The column sink of `run_window`: row `n` of every column.
pub(super) struct ColSink<'c, 'a, O: Offset> {
    cols: &'c mut Columns<'a, O>,
    pub(super) n: usize,
    cap: usize,
}

impl<'c, 'a, O: Offset> ColSink<'c, 'a, O> {
    pub(super) fn new(cols: &'c mut Columns<'a, O>) -> Self {
        let c = &cols;
        let cap = [
            c.core.len(),
            c.nv.len(),
            c.ts.len(),
            c.off.len(),
            c.p0.len(),
            c.p1.len(),
        ]
        .into_iter()
        .fold(c.id.len().min(c.p2.len()), usize::min);
        ColSink { cols, n: 0, cap }
    }
}

impl<O: Offset> Sink for ColSink<'_, '_, O> {
    #[inline(always)]
    fn row(&self) -> usize {
        self.n
    }
    #[inline(always)]
    fn room(&self) -> bool {
        self.n < self.cap
    }
    #[inline(always)]
    fn push(&mut self, p: &Pkt, _side: &mut Side) {
        let (c, n) = (&mut *self.cols, self.n);
        // `room()` was checked before the packet: n < cap <= every column's length
        c.id[n] = p.id;
        c.core[n] = p.core;
        c.nv[n] = p.nv;
        c.ts[n] = p.ts;
        c.off[n] = O::from_u64(p.off);
        c.p0[n] = p.v[0];
        c.p1[n] = p.v[1];
        c.p2[n] = p.v[2];
        self.n = n + 1;
    }
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

impl Owned {
    /// `cap` zeroed rows (`max_packets(len)` of the bytes to decode) and no side data.
    pub fn zeroed(cap: usize) -> Owned {
        Owned {
            id: vec![0; cap],
            core: vec![0; cap],
            nv: vec![0; cap],
            ts: vec![0; cap],
            off: vec![0; cap],
            p0: vec![0; cap],
            p1: vec![0; cap],
            p2: vec![0; cap],
            side: Side::default(),
        }
    }

    /// The decoder's output columns over these vectors, and the side tables.
    pub fn columns(&mut self) -> (Columns<'_, u64>, &mut Side) {
        let cols = Columns {
            id: &mut self.id,
            core: &mut self.core,
            nv: &mut self.nv,
            ts: &mut self.ts,
            off: &mut self.off,
            p0: &mut self.p0,
            p1: &mut self.p1,
            p2: &mut self.p2,
        };
        (cols, &mut self.side)
    }

    /// Append one packet's row (the columns grow; for the few packets a reader keeps aside).
    pub fn push(&mut self, p: &Pkt) {
        self.id.push(p.id);
        self.core.push(p.core);
        self.nv.push(p.nv);
        self.ts.push(p.ts);
        self.off.push(p.off);
        self.p0.push(p.v[0]);
        self.p1.push(p.v[1]);
        self.p2.push(p.v[2]);
    }

    /// Keep the first `n` rows of every column.
    pub fn truncate(&mut self, n: usize) {
        for v in [&mut self.id, &mut self.p0, &mut self.p1, &mut self.p2] {
            v.truncate(n);
        }
        self.core.truncate(n);
        self.nv.truncate(n);
        self.ts.truncate(n);
        self.off.truncate(n);
    }
}

/// Decode `data[start..end]` (one whole stream: `0..data.len()`) into fresh vectors.
pub fn decode_range(data: &[u8], start: usize, end: usize, opts: Options) -> Owned {
    let cap = max_packets(end.min(data.len()).saturating_sub(start.min(data.len())));
    let mut o = Owned::zeroed(cap);
    let n = {
        let (mut cols, side) = o.columns();
        Decoder::new(data, start, end, opts).run(&mut cols, side)
    };
    o.truncate(n);
    o
}

pub fn decode_owned(data: &[u8], opts: Options) -> Owned {
    decode_range(data, 0, data.len(), opts)
}

/// Encode an unsigned LEB128 varint (used by tests and benchmarks' generators).
pub fn put_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7F) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}
