use super::*;
use crate::sv_cols_out::{expand, ColsOut, EventCols, Spec};
use crate::sv_model::tests::{cpu_ns, user_ns};
use crate::sv_model::{convert, ConvState, Raw};
use crate::systemview::{decode_owned, max_packets, put_varint, Decoder, Options, Side};

/// Sync, TRACE_START, INIT and the TASK_INFO of tasks 0x100 and 0x140.
fn head() -> Vec<u8> {
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
    s
}

/// A packet of `id` on `core` (ESP core bit: bit 6 of the last id byte; `core` 0 and an id of
/// 2^13 or more only outside ESP streams): `vals` as varints (with their length first for ids
/// >= 24), then the time delta.
fn pkt(s: &mut Vec<u8>, id: u32, core: u8, vals: &[u32], delta: u32) {
    if id < 0x40 {
        s.push(id as u8 | core << 6);
    } else if core == 0 && id >= 1 << 13 {
        put_varint(s, id);
    } else {
        s.extend_from_slice(&[0x80 | (id & 0x7F) as u8, (id >> 7) as u8 | core << 6]);
    }
    let mut pl = Vec::new();
    for &v in vals {
        put_varint(&mut pl, v);
    }
    if id >= 24 {
        put_varint(s, pl.len() as u32);
    }
    s.extend_from_slice(&pl);
    put_varint(s, delta);
}

/// ISR enter, task ready, ISR to scheduler and task switch on `core`, then an OS API call.
fn cycle(s: &mut Vec<u8>, i: u32, core: u8) {
    let t = [0x100u32, 0x140][(i % 2) as usize];
    for (id, vals) in [(2, vec![15]), (6, vec![t]), (18, vec![]), (4, vec![t])] {
        pkt(s, id, core, &vals, 37 + i % 300);
    }
    pkt(s, 34, core, &[7], 9);
}

fn stream() -> Vec<u8> {
    let mut s = head();
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

/// `stream()`, then packets whose fields need the wide columns (after ~30000 narrow rows), then
/// narrow ones again.
fn stream_late() -> Vec<u8> {
    let mut s = stream();
    pkt(&mut s, 34, 0, &[u32::MAX], 3); // value 2^32 - 1: i8
    pkt(&mut s, 2, 0, &[70_000], 3); // ISR 70000: ctx_id i4
    pkt(&mut s, 70_000, 0, &[1], 3); // a user event: src_id u4
    pkt(&mut s, 31, 0, &[0, 0xDEAD_BEEF, 7], 3); // MARK: marker u4
    pkt(&mut s, 3, 0, &[], 3);
    pkt(&mut s, 7, 0, &[0x140, 4], 3); // TASK_STOP_READY: target 1
    pkt(&mut s, 19, 0, &[0x100], 3); // TIMER_ENTER: value ram_base + 0x100
    pkt(&mut s, 28, 0, &[90_000, 5], 3); // END_CALL of id 90000
    for i in 0..100 {
        cycle(&mut s, i, 0);
    }
    s
}

/// An ESP stream: both cores, in turns of a few packets, and a two-byte id on core 1 late.
fn esp_stream() -> Vec<u8> {
    let mut s = head();
    for i in 0..5000u32 {
        cycle(&mut s, i, ((i / 3) % 2) as u8);
    }
    pkt(&mut s, 600, 1, &[u32::MAX], 5);
    for i in 0..10u32 {
        cycle(&mut s, i, (i % 2) as u8);
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
    out: Vec<u8>,
) -> (Vec<u8>, FusedState, Side) {
    let mut out = Out::Rows(out);
    let (st, side) = read(data, win, p, Options::default(), &mut out);
    let Out::Rows(mut out) = out else {
        unreachable!()
    };
    out.truncate(st.rows * ROW);
    (out, st, side)
}

/// The column output of a fused read, expanded back to `EVENT_DTYPE` rows; the rows of the row
/// output; and the widths of the columns.
fn fused_cols(
    data: &[u8],
    win: usize,
    p: &Params<'_>,
    opts: Options,
) -> (Vec<u8>, Vec<u8>, Vec<(&'static str, usize)>) {
    let n = max_packets(data.len());
    let mut rows = Out::Rows(vec![0u8; n * ROW]);
    let (st, _) = read(data, win, p, opts, &mut rows);
    let Out::Rows(mut rows) = rows else {
        unreachable!()
    };
    rows.truncate(st.rows * ROW);
    let mut cols = Out::Cols(
        vec![0u8; n * 8],
        vec![0u8; n * 8],
        Box::new(EventCols::new(n)),
    );
    let (st2, _) = read(data, win, p, opts, &mut cols);
    let Out::Cols(mut ts, mut ts_raw, cols) = cols else {
        unreachable!()
    };
    assert_eq!((st2.rows, cols.rows()), (st.rows, st.rows));
    ts.truncate(st.rows * 8);
    ts_raw.truncate(st.rows * 8);
    let widths = cols.widths();
    (expand(&ts, &ts_raw, cols.finish().collect()), rows, widths)
}

/// Where a test read puts the rows: `EVENT_DTYPE` rows, or `ts`, `ts_raw` and the other columns.
enum Out {
    Rows(Vec<u8>),
    Cols(Vec<u8>, Vec<u8>, Box<EventCols>),
}

/// A fused read of `data` window by window (`win` bytes, doubled while a packet does not fit)
/// into `out`; the state after.
fn read(
    data: &[u8],
    win: usize,
    p: &Params<'_>,
    opts: Options,
    out: &mut Out,
) -> (FusedState, Side) {
    let (mut st, mut conv, mut side) = (
        FusedState::default(),
        ConvState::new(p.esp, 0),
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
        let (st, conv) = (&mut st, &mut conv);
        let used = match out {
            Out::Rows(o) => window(&mut d, last, Fused::new(p, st, conv, &mut o[..]), &mut side),
            Out::Cols(ts, ts_raw, cols) => {
                let o = ColsOut {
                    ts,
                    ts_raw,
                    cols: &mut **cols,
                };
                window(&mut d, last, Fused::new(p, st, conv, o), &mut side)
            }
        };
        dec = d.state();
        base += used;
        w = if used == 0 { w * 2 } else { win }; // a packet longer than the window
        if last {
            break;
        }
    }
    (st, side)
}

fn window<W: RowOut>(
    d: &mut Decoder<'_>,
    last: bool,
    mut sink: Fused<'_, '_, W>,
    side: &mut Side,
) -> usize {
    let used = d.run_sink(last, &mut sink, side);
    sink.done();
    used
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

#[test]
fn columns_equal_rows() {
    let handles = [0x3FFB_0100u64, 0x3FFB_0140];
    let p = params(&handles);
    let esp = Params {
        esp: true,
        ..params(&handles)
    };
    let esp_opts = Options {
        esp_core_bit: true,
        ..Options::default()
    };
    let (d, l, e) = (stream(), stream_late(), esp_stream());
    let cases = [
        (&d, &p, Options::default(), "i2 const0 i1 u1"),
        (&l, &p, Options::default(), "i8 u4 i4 u4"),
        (&e, &esp, esp_opts, "i8 const0 i1 u2"),
    ];
    for (data, p, opts, want) in cases {
        for win in [data.len(), 4096, 7, 1] {
            let (got, rows, widths) = fused_cols(data, win, p, opts);
            assert!(rows.len() > 20_000 * ROW);
            assert!(got == rows, "window {}: columns differ from rows", win);
            let w = |name: &str| match widths.iter().find(|c| c.0 == name).unwrap().1 {
                0 => "const0".to_string(),
                w if name == "value" || name == "ctx_id" => format!("i{}", w),
                w => format!("u{}", w),
            };
            let got = ["value", "marker", "ctx_id", "src_id"].map(w).join(" ");
            assert_eq!(got, want, "window {}", win);
            // ESP: the core column holds both cores
            assert_eq!(w("core"), if p.esp { "u1" } else { "const0" });
        }
    }
}

/// The stream of the `*_rate` timings (`SV_FILE`, else the test stream) and its task handles.
fn rate_input() -> (Vec<u8>, Vec<u64>) {
    let data = match std::env::var("SV_FILE") {
        Ok(p) => std::fs::read(p).unwrap(),
        Err(_) => stream().repeat(1),
    };
    (data, (0..4).map(|i| 0x3FFB_0100 + i * 0x40).collect())
}

/// `SV_FILE=stream.bin cargo test --release --no-default-features --lib fused_rate -- --ignored
/// --nocapture`: the fused pass into a buffer already touched (no page faults), against the
/// decode into columns and the conversion of those.
#[test]
#[ignore]
fn fused_rate() {
    let (data, handles) = rate_input();
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
    let (data, handles) = rate_input();
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

/// `SV_FILE=stream.bin cargo test --release --no-default-features --lib fused_cols_rate --
/// --ignored --nocapture`: the fused pass into rows and into columns (`ts` / `ts_raw` in memory
/// already touched, like the rows; the other columns fresh), best of 5 each, CPU and user time.
#[test]
#[ignore]
fn fused_cols_rate() {
    let (data, handles) = rate_input();
    let p = params(&handles);
    let n = max_packets(data.len());
    let mut rows = Out::Rows(vec![1u8; n * ROW]);
    let mut cols = Out::Cols(
        vec![1u8; n * 8],
        vec![1u8; n * 8],
        Box::new(EventCols::new(n)),
    );
    let mut best = [f64::MAX; 5];
    for _ in 0..5 {
        let (t, u) = (cpu_ns(), user_ns());
        read(&data, 8 << 20, &p, Options::default(), &mut rows);
        let (t1, u1) = (cpu_ns(), user_ns());
        let (st, _) = read(&data, 8 << 20, &p, Options::default(), &mut cols);
        let r = st.rows as f64;
        let (t2, u2) = (cpu_ns(), user_ns());
        let Out::Cols(_, _, c) = &mut cols else {
            unreachable!()
        };
        let bytes: usize = std::mem::replace(&mut **c, EventCols::new(n))
            .finish()
            .map(|(_, s)| match s {
                Spec::Plain(c) => c.len(),
                Spec::Sparse { idx, val, .. } => idx.len() + val.len(),
            })
            .sum();
        std::hint::black_box(bytes);
        let t3 = cpu_ns();
        let now = [t1 - t, u1 - u, t2 - t1, u2 - u1, t3 - t2];
        for (b, x) in best.iter_mut().zip(now) {
            *b = b.min(x / r);
        }
    }
    println!(
        "ns/row: rows {:.2} (user {:.2}), columns {:.2} (user {:.2}), finish {:.2}",
        best[0], best[1], best[2], best[3], best[4]
    );
}
