//! Fuzz target for the SystemView packet decoder (issue 15), as a plain `cargo test`.
//!
//! A deterministic mutation loop (xorshift, no extra crates, stable Rust): seeds are synthetic
//! streams plus every file of `$SV_FUZZ_CORPUS` (a directory), mutated by bit flips, interesting
//! bytes, insertions, deletions, duplications and cuts, and decoded with random options and
//! sub-ranges.  Each run must not panic and must keep the output invariants checked in `check`.
//!
//! `SV_FUZZ_ITERS=1000000 cargo test --release --no-default-features --test fuzz_systemview -- --nocapture`
//! runs a long session; the default (20,000 inputs) is part of `cargo test`.

use _core::systemview::{
    decode_owned, decode_range, max_packets, put_varint, Decoder, Options, Owned, Resume, StrOrder,
};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

fn pkt(out: &mut Vec<u8>, id: u32, vals: &[u32], delta: u32) {
    put_varint(out, id);
    if id >= 24 {
        let mut body = Vec::new();
        for &v in vals {
            put_varint(&mut body, v);
        }
        put_varint(out, body.len() as u32);
        out.extend_from_slice(&body);
    } else {
        for &v in vals {
            put_varint(out, v);
        }
    }
    put_varint(out, delta);
}

fn seeds() -> Vec<Vec<u8>> {
    let mut s = vec![0u8; 10];
    pkt(&mut s, 10, &[], 5);
    pkt(&mut s, 24, &[1_000_000, 168_000_000, 0x2000_0000, 2], 1);
    s.extend_from_slice(&[14, 5, b'N', b'=', b'a', b'p', b'p', 1]); // SYSDESC "N=app"
    s.extend_from_slice(&[9, 0x40, 3, 6, b'w', b'o', b'r', b'k', b'e', b'r', 1]); // TASK_INFO
    s.extend_from_slice(&[26, 0xFF, 4, 0, b'a', b'b', b'c', b'd', 2]); // long string, lo-hi
    pkt(&mut s, 4, &[0x40], 10);
    pkt(&mut s, 2, &[15], 3);
    pkt(&mut s, 3, &[], 4);
    pkt(&mut s, 31, &[0, 7, 9], 1); // EX MARK
    pkt(&mut s, 600, &[1, 2, 3, 4, 5], 2);
    pkt(&mut s, 1, &[3], 1); // OVERFLOW
    pkt(&mut s, 11, &[], 3);
    let mut esp = s.clone();
    esp[11] |= 0x40;
    let mut out = vec![s, esp];
    if let Ok(dir) = std::env::var("SV_FUZZ_CORPUS") {
        if let Ok(rd) = std::fs::read_dir(dir) {
            for e in rd.flatten() {
                if let Ok(b) = std::fs::read(e.path()) {
                    if !b.is_empty() && b.len() <= 1 << 20 {
                        out.push(b);
                    }
                }
            }
        }
    }
    out
}

fn mutate(seed: &[u8], r: &mut Rng) -> Vec<u8> {
    const INTERESTING: [u8; 8] = [0x00, 0xFF, 0x7F, 0x80, 0x0A, 0x18, 0x1F, 0x3F];
    let mut d = seed.to_vec();
    for _ in 0..1 + r.below(4) {
        let n = d.len();
        if n == 0 {
            d.push(r.next() as u8);
            continue;
        }
        let i = r.below(n);
        match r.below(8) {
            0 => d[i] ^= 1 << r.below(8),
            1 => d[i] = INTERESTING[r.below(INTERESTING.len())],
            2 => d.truncate(i),
            3 => {
                let k = 1 + r.below(32);
                d.drain(i..(i + k).min(n));
            }
            4 => {
                let k = 1 + r.below(16);
                for _ in 0..k {
                    d.insert(i, r.next() as u8);
                }
            }
            5 => {
                let k = (1 + r.below(64)).min(n - i);
                let chunk: Vec<u8> = d[i..i + k].to_vec();
                d.splice(i..i, chunk);
            }
            6 => {
                // a continuation byte run: varints of 5+ bytes
                for b in d.iter_mut().skip(i).take(1 + r.below(8)) {
                    *b |= 0x80;
                }
            }
            _ => d[i] = d[i].wrapping_add(1),
        }
    }
    d
}

fn check(data: &[u8], start: usize, end: usize, o: &Owned) {
    let end = end.min(data.len());
    let start = start.min(end);
    let n = o.id.len();
    assert!(
        n <= max_packets(end - start),
        "more rows than the capacity bound"
    );
    for w in o.off.windows(2) {
        assert!(w[0] < w[1], "packet offsets must increase");
    }
    if let Some(&last) = o.off.last() {
        assert!(
            (last as usize) < end - start,
            "packet offset past the stream end"
        );
    }
    for w in o.ts.windows(2) {
        assert!(w[0] <= w[1], "cumulative ticks must not decrease");
    }
    for d in &o.side.diags {
        assert!(
            d.offset as usize <= end - start,
            "diagnostic offset past the stream end"
        );
    }
    let s = &o.side;
    assert_eq!(s.aux_row.len(), s.aux_start.len());
    assert_eq!(s.aux_row.len(), s.aux_str.len());
    for w in s.aux_start.windows(2) {
        assert!(w[0] <= w[1]);
    }
    for (k, &row) in s.aux_row.iter().enumerate() {
        assert!(
            (row as usize) < n,
            "aux record of a row that does not exist"
        );
        assert!(s.aux_start[k] as usize <= s.aux_vals.len());
        assert!(s.aux_str[k] == u32::MAX || (s.aux_str[k] as usize) < s.str_ends.len());
    }
    let mut prev = 0u64;
    for &e in &s.str_ends {
        assert!(e >= prev && e as usize <= s.strings.len());
        prev = e;
    }
}

/// Decode `data` as one stream fed in blocks of random sizes (as `SvStreamDecoder.feed` does),
/// with the rows, aux records and strings renumbered as one decode would number them.
fn decode_windows(data: &[u8], opts: Options, r: &mut Rng, max_block: usize) -> Owned {
    let mut o = Owned::default();
    let mut st = Resume::new(opts);
    let (mut buf, mut base, mut fed) = (Vec::new(), 0u64, 0usize);
    loop {
        let k = 1 + r.below(max_block);
        let to = (fed + k).min(data.len());
        buf.extend_from_slice(&data[fed..to]);
        fed = to;
        let last = fed == data.len();
        let cap = max_packets(buf.len());
        let mut w = Owned::zeroed(cap);
        let (n, used) = {
            let (mut cols, side) = w.columns();
            let mut dec = Decoder::resume(&buf, 0, buf.len(), base, data.len() as u64, opts, st)
                .at_file_offset(0);
            let out = dec.run_window(last, &mut cols, side);
            st = dec.state();
            out
        };
        let (rows0, strs0, vals0) = (
            o.id.len() as u32,
            o.side.str_ends.len() as u32,
            o.side.aux_vals.len() as u32,
        );
        let sbytes0 = o.side.strings.len() as u64;
        o.id.extend_from_slice(&w.id[..n]);
        o.core.extend_from_slice(&w.core[..n]);
        o.nv.extend_from_slice(&w.nv[..n]);
        o.ts.extend_from_slice(&w.ts[..n]);
        o.off.extend_from_slice(&w.off[..n]);
        o.p0.extend_from_slice(&w.p0[..n]);
        o.p1.extend_from_slice(&w.p1[..n]);
        o.p2.extend_from_slice(&w.p2[..n]);
        let s = &w.side;
        o.side.aux_row.extend(s.aux_row.iter().map(|x| x + rows0));
        o.side
            .aux_start
            .extend(s.aux_start.iter().map(|x| x + vals0));
        o.side.aux_str.extend(
            s.aux_str
                .iter()
                .map(|x| if *x == u32::MAX { *x } else { x + strs0 }),
        );
        o.side.aux_vals.extend_from_slice(&s.aux_vals);
        o.side.strings.extend_from_slice(&s.strings);
        o.side
            .str_ends
            .extend(s.str_ends.iter().map(|x| x + sbytes0));
        o.side.diags.extend(s.diags.iter().cloned());
        o.side.sync_bytes += s.sync_bytes;
        o.side.ts_end = s.ts_end;
        o.side.str_order = s.str_order;
        buf.drain(..used);
        base += used as u64;
        if last {
            return o;
        }
    }
}

/// The windowed decode equals the whole decode (rows, aux, strings, diagnostics, state).
fn same(a: &Owned, b: &Owned) {
    assert_eq!(a.id, b.id);
    assert_eq!(a.core, b.core);
    assert_eq!(a.nv, b.nv);
    assert_eq!(a.ts, b.ts);
    assert_eq!(a.off, b.off);
    assert_eq!((&a.p0, &a.p1, &a.p2), (&b.p0, &b.p1, &b.p2));
    let (x, y) = (&a.side, &b.side);
    assert_eq!(
        (&x.aux_row, &x.aux_start, &x.aux_vals),
        (&y.aux_row, &y.aux_start, &y.aux_vals)
    );
    // strings left by a packet cut at a window end are trimmed; compare through aux_str
    let text = |s: &_core::systemview::Side, i: u32| -> Vec<u8> {
        if i == u32::MAX {
            return b"-".to_vec();
        }
        let e = s.str_ends[i as usize] as usize;
        let a = if i == 0 {
            0
        } else {
            s.str_ends[i as usize - 1] as usize
        };
        s.strings[a..e].to_vec()
    };
    let tx: Vec<_> = x.aux_str.iter().map(|i| text(x, *i)).collect();
    let ty: Vec<_> = y.aux_str.iter().map(|i| text(y, *i)).collect();
    assert_eq!(tx, ty);
    assert_eq!(x.diags, y.diags);
    assert_eq!(
        (x.sync_bytes, x.ts_end, x.str_order),
        (y.sync_bytes, y.ts_end, y.str_order)
    );
}

#[test]
fn windows_equal_whole_decode() {
    let iters: usize = std::env::var("SV_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .map(|v| v / 4)
        .unwrap_or(5_000);
    let seeds = seeds();
    let mut r = Rng(0x1234_5678_9ABC_DEF1);
    for it in 0..iters {
        let seed = &seeds[r.below(seeds.len())];
        let data = if it % 8 == 0 {
            seed.clone()
        } else {
            mutate(seed, &mut r)
        };
        let opts = Options {
            esp_core_bit: r.below(2) == 1,
            str_order: [StrOrder::Auto, StrOrder::LoHi, StrOrder::HiLo][r.below(3)],
            expect_sync: r.below(4) != 0,
        };
        let whole = decode_owned(&data, opts);
        let max_block = [1, 3, 16, 300][r.below(4)];
        let win = decode_windows(&data, opts, &mut r, max_block);
        same(&win, &whole);
    }
}

#[test]
fn fuzz_systemview_decoder() {
    let iters: usize = std::env::var("SV_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let seeds = seeds();
    let mut r = Rng(0x9E37_79B9_7F4A_7C15);
    let t0 = std::time::Instant::now();
    for it in 0..iters {
        let seed = &seeds[r.below(seeds.len())];
        let data = mutate(seed, &mut r);
        let opts = Options {
            esp_core_bit: r.below(2) == 1,
            str_order: [StrOrder::Auto, StrOrder::LoHi, StrOrder::HiLo][r.below(3)],
            expect_sync: r.below(4) != 0,
        };
        if it % 4 == 0 {
            let a = r.below(data.len() + 8);
            let b = r.below(data.len() + 8);
            let o = decode_range(&data, a, b, opts);
            check(&data, a, b, &o);
        } else {
            let o = decode_owned(&data, opts);
            check(&data, 0, data.len(), &o);
        }
    }
    let dt = t0.elapsed().as_secs_f64();
    println!(
        "fuzz_systemview_decoder: {} inputs from {} seeds in {:.2} s ({:.0}/s)",
        iters,
        seeds.len(),
        dt,
        iters as f64 / dt
    );
}
