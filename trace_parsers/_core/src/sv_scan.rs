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

/// The running scan (one `add` per packet, in stream order).
pub struct ScanAcc {
    dense: Vec<u64>,
    sparse: HashMap<u32, u64>,
    core_counts: Vec<u64>,
    ev_cores: [bool; 256],
    handles: HashSet<u32>,
    last_h: Option<u32>,
    min_ts: u64,
    ovf_values: Vec<u32>,
    events: u64,
}

impl Default for ScanAcc {
    fn default() -> Self {
        ScanAcc {
            dense: vec![0u64; 1 << 16],
            sparse: HashMap::new(),
            core_counts: vec![0u64; 256],
            ev_cores: [false; 256],
            handles: HashSet::new(),
            last_h: None,
            min_ts: u64::MAX,
            ovf_values: Vec::new(),
            events: 0,
        }
    }
}

impl ScanAcc {
    #[inline(always)]
    pub fn add(&mut self, id: u32, core: u8, ts: u64, p0: u32) -> Class {
        if id < 1 << 16 {
            self.dense[id as usize] += 1;
        } else {
            *self.sparse.entry(id).or_insert(0) += 1;
        }
        self.core_counts[core as usize] += 1;
        if id == ID_NOP {
            return Class::Nop;
        }
        self.events += 1;
        self.ev_cores[core as usize] = true;
        self.min_ts = self.min_ts.min(ts);
        if id >= 32 {
            return Class::Event;
        }
        if is_target(id) || id == ID_START_EXEC {
            if self.last_h != Some(p0) {
                self.handles.insert(p0);
                self.last_h = Some(p0);
            }
        } else if META_IDS.contains(&id) {
            return Class::Meta;
        } else if id == ID_PRINT || (id == ID_EX && p0 == EX_NAME_MARKER) {
            return Class::Text;
        } else if id == ID_OVERFLOW {
            self.ovf_values.push(p0);
        }
        Class::Event
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
        Scan {
            counts,
            handles,
            ovf_values: self.ovf_values.clone(),
            events: self.events,
            min_ts: (self.events > 0).then_some(self.min_ts),
            core_counts: self.core_counts.clone(),
            event_cores: (0..=255u8).filter(|c| self.ev_cores[*c as usize]).collect(),
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
