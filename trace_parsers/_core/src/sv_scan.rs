//! The scan of a decoded SystemView stream: per-id and per-core counts, metadata and message
//! rows, task handles, OVERFLOW values and the event count (what the Python side decides the
//! conversion parameters from). `ScanAcc` takes one packet at a time, so the same accumulation
//! serves the raw columns (`scan`) and the fused decode + convert (`sv_fused`).

use std::collections::{HashMap, HashSet};

use crate::sv_model::{
    is_target, Raw, EX_NAME_MARKER, ID_EX, ID_NOP, ID_OVERFLOW, ID_PRINT, ID_START_EXEC, META_IDS,
};

/// What the Python side needs before converting: counts, metadata rows and task handles.
#[derive(Debug, Default)]
pub struct Scan {
    /// (id, packets) in ascending id order, NOP included.
    pub counts: Vec<(u32, u64)>,
    /// Rows of metadata packets (INIT, SYSDESC, TASK_INFO, ...), in stream order.
    pub meta_rows: Vec<u64>,
    /// Rows of PRINT_FORMATTED and EX NAME_MARKER packets, in stream order.
    pub text_rows: Vec<u64>,
    /// Distinct raw (shrunk) task ids named by target/switch-in packets, ascending.
    pub handles: Vec<u32>,
    /// p0 of every OVERFLOW packet.
    pub ovf_values: Vec<u32>,
    /// Rows that become events (every packet except NOP).
    pub events: u64,
    pub min_ts: Option<u64>,
    /// Packets per ESP core-bit value (NOP included).
    pub core_counts: Vec<u64>,
    /// ESP core-bit values of the rows that become events, ascending.
    pub event_cores: Vec<u8>,
}

/// What a packet is for the side tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// NOP: counted only.
    Nop,
    /// An ordinary event.
    Event,
    /// A metadata packet (INIT, SYSDESC, TASK_INFO, ...).
    Meta,
    /// PRINT_FORMATTED or EX NAME_MARKER.
    Text,
}

/// What a system id (< 32, NOP aside) asks of the scan (`SYS` below).
const S_EVENT: u8 = 0;
const S_HANDLE: u8 = 1;
const S_META: u8 = 2;
const S_PRINT: u8 = 3;
const S_EX: u8 = 4;
const S_OVERFLOW: u8 = 5;

const SYS: [u8; 32] = {
    let mut t = [S_EVENT; 32];
    let mut i = 0;
    while i < 32 {
        let id = i as u32;
        t[i] = if is_target(id) || id == ID_START_EXEC {
            S_HANDLE
        } else if id == ID_PRINT {
            S_PRINT
        } else if id == ID_EX {
            S_EX
        } else if id == ID_OVERFLOW {
            S_OVERFLOW
        } else {
            S_EVENT
        };
        i += 1;
    }
    let mut j = 0;
    while j < META_IDS.len() {
        t[META_IDS[j] as usize] = S_META;
        j += 1;
    }
    t
};

/// Slots of the direct-mapped filter in front of the handle set.
const SEEN: usize = 256;

/// The running scan (one `add` per packet, in stream order).
pub struct ScanAcc {
    dense: Box<[u64; 1 << 16]>,
    sparse: HashMap<u32, u64>,
    core_counts: [u64; 256],
    /// NOP packets per core (events per core = `core_counts` - `nop_cores`).
    nop_cores: [u64; 256],
    handles: HashSet<u32>,
    /// Handles already in `handles` (slot by hash; `1 << 32 | handle`, 0 when empty): most
    /// packets name a task seen before, so the set is rarely touched.
    seen: [u64; SEEN],
    min_ts: u64,
    ovf_values: Vec<u32>,
}

impl Default for ScanAcc {
    fn default() -> Self {
        ScanAcc {
            dense: vec![0u64; 1 << 16].into_boxed_slice().try_into().unwrap(),
            sparse: HashMap::new(),
            core_counts: [0; 256],
            nop_cores: [0; 256],
            handles: HashSet::new(),
            seen: [0; SEEN],
            min_ts: u64::MAX,
            ovf_values: Vec::new(),
        }
    }
}

impl ScanAcc {
    #[inline(always)]
    pub fn add(&mut self, id: u32, core: u8, ts: u64, p0: u32) -> Class {
        if id < 1 << 16 {
            self.dense[id as usize] += 1;
        } else {
            self.add_sparse(id);
        }
        self.core_counts[core as usize] += 1;
        if id == ID_NOP {
            self.nop_cores[core as usize] += 1;
            return Class::Nop;
        }
        self.min_ts = self.min_ts.min(ts);
        if id >= 32 {
            return Class::Event;
        }
        match SYS[id as usize] {
            S_HANDLE => self.handle(p0),
            S_META => return Class::Meta,
            S_PRINT => return Class::Text,
            S_EX if p0 == EX_NAME_MARKER => return Class::Text,
            S_OVERFLOW => self.ovf_values.push(p0),
            _ => {}
        }
        Class::Event
    }

    #[inline(never)]
    fn add_sparse(&mut self, id: u32) {
        *self.sparse.entry(id).or_insert(0) += 1;
    }

    #[inline(always)]
    fn handle(&mut self, h: u32) {
        let slot = (h.wrapping_mul(0x9E37_79B1) >> 24) as usize % SEEN;
        let tag = 1 << 32 | h as u64;
        if self.seen[slot] != tag {
            self.seen[slot] = tag;
            self.handles.insert(h);
        }
    }

    /// The scan so far (`meta_rows` and `text_rows` left to the caller).
    pub fn finish(&self) -> Scan {
        let mut counts: Vec<(u32, u64)> = self
            .dense
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| (i as u32, *c))
            .collect();
        let mut big: Vec<(u32, u64)> = self.sparse.iter().map(|(k, v)| (*k, *v)).collect();
        big.sort_unstable();
        counts.extend(big);
        let mut handles: Vec<u32> = self.handles.iter().copied().collect();
        handles.sort_unstable();
        let events = self.core_counts.iter().sum::<u64>() - self.nop_cores.iter().sum::<u64>();
        Scan {
            counts,
            handles,
            ovf_values: self.ovf_values.clone(),
            events,
            min_ts: (events > 0).then_some(self.min_ts),
            core_counts: self.core_counts.to_vec(),
            event_cores: (0..=255u8)
                .filter(|&c| self.core_counts[c as usize] > self.nop_cores[c as usize])
                .collect(),
            ..Scan::default()
        }
    }
}

/// `ScanAcc` over the raw columns of one decoded stream.
pub fn scan<O>(r: &Raw<'_, O>) -> Scan {
    let mut acc = ScanAcc::default();
    let (mut meta, mut text) = (Vec::new(), Vec::new());
    for j in 0..r.id.len() {
        match acc.add(r.id[j], r.core[j], r.ts[j], r.p0[j]) {
            Class::Meta => meta.push(j as u64),
            Class::Text => text.push(j as u64),
            _ => {}
        }
    }
    let mut s = acc.finish();
    s.meta_rows = meta;
    s.text_rows = text;
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every distinct handle reaches the set, whatever the filter in front of it keeps (many
    /// handles share its slots); per-core event counts and `events` skip NOPs.
    #[test]
    fn handles_and_counts_exact() {
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let pool: Vec<u32> = (0..3000).map(|_| next() as u32).collect();
        let mut acc = ScanAcc::default();
        let mut want = HashSet::new();
        let (mut events, mut nops) = (0u64, [0u64; 2]);
        for i in 0..50_000u64 {
            let h = pool[(next() % pool.len() as u64) as usize];
            let id = [4u32, 6, 7, 8, 29, 0, 2, 40][(next() % 8) as usize];
            let core = (i % 2) as u8;
            if is_target(id) || id == ID_START_EXEC {
                want.insert(h);
            }
            if id == ID_NOP {
                nops[core as usize] += 1;
            } else {
                events += 1;
            }
            acc.add(id, core, 1000 - i % 7, h);
        }
        let s = acc.finish();
        let mut want: Vec<u32> = want.into_iter().collect();
        want.sort_unstable();
        assert_eq!(s.handles, want);
        assert_eq!(s.events, events);
        assert_eq!(s.min_ts, Some(994));
        assert_eq!(s.event_cores, vec![0, 1]);
        assert_eq!(s.core_counts[..2], [25_000, 25_000]);
        assert!(nops[0] > 0 && nops[1] > 0);
    }
}
