use super::*;
use crate::sv_model::tests::cpu_ns;
use crate::sv_model::{convert, ConvState, Raw};
use crate::systemview::{decode_owned, max_packets, put_varint, Decoder, Options, Side};

fn stream() -> Vec<u8> {
    let mut s = vec![0u8; 10];
    s.extend_from_slice(&[10, 1]); // TRACE_START
    let init = [160_000_000u32, 160_000_000, 0x3FFB_0000, 0];
    let mut pl = Vec::new();
    for v in init {
        put_varint(&mut pl, v);
    }
    s.push(24);
    put_varint(&mut s, pl.len() as u32);
    s.extend_from_slice(&pl);
    s.push(1);
    for (i, t) in [0x100u32, 0x140].iter().enumerate() {
        s.push(9); // TASK_INFO
        put_varint(&mut s, *t);
        s.push(5);
        s.extend_from_slice(&[5, b't', b'a', b's', b'k', b'0' + i as u8]);
        s.push(1);
    }
    for i in 0..5000u32 {
        let t = [0x100u32, 0x140][(i % 2) as usize];
        for (id, vals) in [(2u8, vec![15]), (6, vec![t]), (18, vec![]), (4, vec![t])] {
            s.push(id);
            for v in vals {
                put_varint(&mut s, v);
            }
            put_varint(&mut s, 37 + i % 300);
        }
        s.extend_from_slice(&[0, 3]); // NOP
        s.push(26); // PRINT_FORMATTED "hi", 0 args
        s.extend_from_slice(&[4, 2, b'h', b'i', 0, 5]);
        s.extend_from_slice(&[34, 1, 7, 9]); // an OS API call, one value
    }
    s
}

fn params<'a>(handles: &'a [u64]) -> Params<'a> {
    Params {
        start: 100,
        stream_core: 0,
        esp: false,
        ram_base: 0x3FFB_0000,
        shift: 0,
        handles,
        named: &[],
        mod_first: 512,
        tick_hz: 160_000_000,
        origin: 1,
        log_base: 0,
    }
}

/// Fused rows, window by window (`win` bytes), and the state after.
fn fused(data: &[u8], win: usize, p: &Params<'_>) -> (Vec<u8>, FusedState, Side) {
    fused_into(data, win, p, vec![0u8; max_packets(data.len()) * ROW])
}

fn fused_into(
    data: &[u8],
    win: usize,
    p: &Params<'_>,
    mut out: Vec<u8>,
) -> (Vec<u8>, FusedState, Side) {
    let opts = Options::default();
    let (mut st, mut conv, mut side) = (
        FusedState::default(),
        ConvState::new(false, 0),
        Side::default(),
    );
    let (mut dec, mut base, mut w) = (crate::systemview::Resume::new(opts), 0usize, win);
    loop {
        let end = (base + w).min(data.len());
        let last = end == data.len();
        let mut d = Decoder::resume(
            &data[base..end],
            0,
            end - base,
            base as u64,
            data.len() as u64,
            opts,
            dec,
        );
        let mut sink = Fused::new(p, &mut st, &mut conv, &mut out);
        let used = d.run_sink(last, &mut sink, &mut side);
        sink.done();
        dec = d.state();
        base += used;
        w = if used == 0 { w * 2 } else { win }; // a packet longer than the window
        if last {
            break;
        }
    }
    out.truncate(st.rows * ROW);
    (out, st, side)
}

#[test]
fn fused_equals_decode_then_convert() {
    let data = stream();
    let handles = [0x3FFB_0100u64, 0x3FFB_0140];
    let p = params(&handles);
    let o = decode_owned(&data, Options::default());
    let r = Raw {
        id: &o.id,
        core: &o.core,
        nv: &o.nv,
        ts: &o.ts,
        off: &o.off,
        p0: &o.p0,
        p1: &o.p1,
        p2: &o.p2,
    };
    let scan = crate::sv_scan::scan(&r);
    let mut want = vec![0u8; scan.events as usize * ROW];
    let done = convert(&r, &p, &mut want, &mut |_| {});
    assert_eq!(done.rows as u64, scan.events);
    for win in [data.len(), 4096, 7, 1] {
        let (got, st, side) = fused(&data, win, &p);
        assert_eq!(got, want, "window {}", win);
        assert_eq!(st.packets as usize, o.id.len());
        let s = st.acc.finish();
        assert_eq!(
            (s.counts, s.handles, s.events),
            (scan.counts.clone(), scan.handles.clone(), scan.events)
        );
        // kept: INIT, 2 TASK_INFO, 5000 PRINT_FORMATTED; their aux records only
        assert_eq!(st.kept.meta, vec![0, 1, 2]);
        assert_eq!(st.kept.text.len(), 5000);
        assert_eq!(side.aux_row.len(), 5003);
        assert_eq!(side.aux_row[4], 4);
        assert_eq!(side.str_ends.len(), 5002);
        assert_eq!(side.diags, o.side.diags);
    }
}

/// `SV_FILE=stream.bin cargo test --release --no-default-features --lib fused_rate -- --ignored
/// --nocapture`: the fused pass into a buffer already touched (no page faults), against the
/// decode into columns and the conversion of those.
#[test]
#[ignore]
fn fused_rate() {
    let data = match std::env::var("SV_FILE") {
        Ok(p) => std::fs::read(p).unwrap(),
        Err(_) => stream().repeat(1),
    };
    let handles: Vec<u64> = (0..4).map(|i| 0x3FFB_0100 + i * 0x40).collect();
    let p = params(&handles);
    for _ in 0..3 {
        let t = cpu_ns();
        let o = decode_owned(&data, Options::default());
        let t1 = cpu_ns();
        let (out, st, _) = fused(&data, 8 << 20, &p);
        let t2 = cpu_ns();
        let mut touched = vec![1u8; out.len()];
        drop(out);
        let tw = cpu_ns();
        touched.fill(2);
        std::hint::black_box(&touched);
        println!(
            "memset of the rows: {:.1} ns/pkt",
            (cpu_ns() - tw) / st.packets as f64
        );
        let t3 = cpu_ns();
        let (_, st2, _) = fused_into(&data, 8 << 20, &p, touched);
        let t4 = cpu_ns();
        assert_eq!(st2.rows, st.rows);
        struct Null(usize, u64);
        impl crate::systemview::Sink for Null {
            fn row(&self) -> usize {
                0
            }
            fn room(&self) -> bool {
                true
            }
            fn push(&mut self, p: &crate::systemview::Pkt, _side: &mut Side) {
                self.0 += 1;
                self.1 = self.1.wrapping_add(p.ts ^ p.v[0] as u64 ^ p.id as u64);
            }
        }
        let t5 = cpu_ns();
        let mut null = Null(0, 0);
        let mut side = Side::default();
        Decoder::new(&data, 0, data.len(), Options::default()).run_sink(true, &mut null, &mut side);
        let t6 = cpu_ns();
        let mut acc = crate::sv_scan::ScanAcc::default();
        for j in 0..o.id.len() {
            acc.add(o.id[j], o.core[j], o.ts[j], o.p0[j]);
        }
        let t7 = cpu_ns();
        println!(
            "decode alone {:.1} ns/pkt ({}), scan alone {:.1} ns/pkt",
            (t6 - t5) / null.0 as f64,
            null.1 & 1,
            (t7 - t6) / null.0 as f64
        );
        println!(
            "decode_owned {:.1} ns/pkt; fused {:.1} ns/pkt with the output's page faults, {:.1} \
             ns/pkt into touched memory; {} rows",
            (t1 - t) / o.id.len() as f64,
            (t2 - t1) / st.packets as f64,
            (t4 - t3) / st.packets as f64,
            st.rows
        );
    }
}

/// `SV_FILE=stream.bin cargo test --release --no-default-features --lib fused_only_rate --
/// --ignored --nocapture`: the fused pass alone into memory already touched, best of 5.
#[test]
#[ignore]
fn fused_only_rate() {
    let data = match std::env::var("SV_FILE") {
        Ok(p) => std::fs::read(p).unwrap(),
        Err(_) => stream().repeat(1),
    };
    let handles: Vec<u64> = (0..4).map(|i| 0x3FFB_0100 + i * 0x40).collect();
    let p = params(&handles);
    let mut out = vec![1u8; max_packets(data.len()) * ROW];
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = cpu_ns();
        let (o, st, _) = fused_into(&data, 8 << 20, &p, std::mem::take(&mut out));
        best = best.min((cpu_ns() - t) / st.packets as f64);
        out = o;
        out.resize(max_packets(data.len()) * ROW, 1);
    }
    println!("fused into touched memory: {:.2} ns/pkt", best);
}
