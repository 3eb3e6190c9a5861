//! Unit tests of `sv_model` (context tracking, exact division, scan + convert).

use super::*;

fn ctx_of(kinds: &[u8], args: &[i32]) -> Vec<(u8, i32)> {
    let mut c = Ctx::default();
    kinds
        .iter()
        .zip(args)
        .map(|(k, a)| c.step(*k, *a))
        .collect()
}

#[test]
fn nesting_switch_and_overflow() {
    let k = [1, 5, 5, 6, 6, 2, 16, 5, 13, 6, 1];
    let a = [3, 10, 11, -1, -1, -1, -1, 12, -1, -1, 4];
    let got = ctx_of(&k, &a);
    let want = [
        (C_TASK, 3),
        (C_ISR, 10),
        (C_ISR, 11),
        (C_ISR, 11),
        (C_ISR, 10),
        (C_TASK, 3),
        (C_IDLE, -1),
        (C_ISR, 12),
        (C_NONE, -1),
        (C_NONE, -1), // exit at depth 0 after OVERFLOW is ignored
        (C_TASK, 4),
    ];
    assert_eq!(got, want);
}

#[test]
fn a_switch_in_closes_open_isrs_and_a_restart_resets() {
    // task 3, ISR 40 (exit lost), switch-in 5 closes it; the exit after it is ignored; ISR 15 then
    // is not nested; TRACE_START (14) mid-stream: unknown until the next switch-in
    let k = [1, 5, 1, 6, 5, 6, 14, 5, 6, 1];
    let a = [3, 40, 5, -1, 15, -1, -1, 15, -1, 5];
    let want = [
        (C_TASK, 3),
        (C_ISR, 40),
        (C_TASK, 5),
        (C_TASK, 5),
        (C_ISR, 15),
        (C_ISR, 15),
        (C_NONE, -1),
        (C_ISR, 15),
        (C_ISR, 15),
        (C_TASK, 5),
    ];
    assert_eq!(ctx_of(&k, &a), want);
}

#[test]
fn exact_division() {
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut divisors = vec![
        1u64,
        2,
        3,
        7,
        1 << 20,
        160_000_000,
        1_000_000_007,
        18_446_744_073,
        (1 << 63) - 1,
        1 << 63,
        (1 << 63) + 1,
        u64::MAX / 3,
        u64::MAX - 1,
        u64::MAX,
    ];
    divisors.extend((0..200).map(|i| (next() >> (i % 64)).max(1)));
    for d in divisors {
        let dv = Div::new(d);
        let mut xs = vec![
            0u64,
            1,
            d - 1,
            d,
            d.wrapping_add(1),
            d.wrapping_mul(2).wrapping_sub(1),
            12_345_678_901,
            u64::MAX,
            u64::MAX - 1,
            u64::MAX - u64::MAX % d,
            (u64::MAX - u64::MAX % d).wrapping_sub(1),
        ];
        xs.extend((0..200).map(|i| next() >> (i % 64)));
        for x in xs {
            assert_eq!(dv.div_rem(x), (x / d, x % d), "{} / {}", x, d);
        }
    }
}

#[test]
fn scan_then_convert_skips_nop() {
    let id = [10u32, 0, 4, 31, 40, 28];
    let z8 = [0u8; 6];
    let nv = [0u8, 0, 1, 3, 1, 2];
    let ts = [5u64, 6, 7, 8, 9, 10];
    let off = [0u32, 2, 4, 6, 8, 10];
    let p0 = [0u32, 0, 0x40, 0, 9, 40];
    let p1 = [0u32, 0, 0, 7, 0, 99];
    let p2 = [0u32, 0, 0, 5, 0, 0];
    let r = Raw {
        id: &id,
        core: &z8,
        nv: &nv,
        ts: &ts,
        off: &off,
        p0: &p0,
        p1: &p1,
        p2: &p2,
    };
    let s = scan(&r);
    assert_eq!(s.events, 5);
    assert_eq!(s.handles, vec![0x40]);
    assert_eq!(s.min_ts, Some(5));
    let handles = [0x1000u64 + (0x40 << 2)];
    let p = Params {
        start: 100,
        stream_core: 0,
        esp: false,
        ram_base: 0x1000,
        shift: 2,
        handles: &handles,
        named: &[],
        mod_first: 512,
        tick_hz: 0,
        origin: 5,
        log_base: 0,
    };
    let mut out = vec![0u8; ROW * 5];
    let mut seen = vec![];
    let c = convert(&r, &p, &mut out, &mut |j| seen.push(j));
    assert_eq!(seen, vec![6]);
    assert_eq!((c.rows, c.sorted, c.api_ids.clone()), (5, true, vec![40]));
    let row = |i: usize| &out[i * ROW..(i + 1) * ROW];
    assert_eq!(row(1)[O_KIND], K_TASK_SWITCH_IN);
    assert_eq!(&row(1)[O_CTX_ID..O_CTX_ID + 4], &0i32.to_le_bytes());
    assert_eq!(row(2)[O_KIND], K_MARK);
    assert_eq!(&row(2)[O_VALUE..O_VALUE + 8], &5i64.to_le_bytes());
    assert_eq!(&row(4)[O_SRC_ID..O_SRC_ID + 4], &40u32.to_le_bytes());
    assert_eq!(&row(4)[O_SRC_OFF..O_SRC_OFF + 8], &110u64.to_le_bytes());
    assert_eq!(&row(4)[O_TS..O_TS + 8], &5i64.to_le_bytes());
}

#[test]
fn stop_ready_sets_target_and_value() {
    let handles = [0x40u64, 0x80];
    let p = Params {
        start: 0,
        stream_core: 0,
        esp: false,
        ram_base: 0,
        shift: 0,
        handles: &handles,
        named: &[],
        mod_first: 512,
        tick_hz: 0,
        origin: 0,
        log_base: 0,
    };
    let mut st = ConvState::new(false, 0);
    let mut m = Mapper::new(&p, &mut st);
    let o = m.row(7, 0x80, 4, 0, 2); // TASK_STOP_READY(task 0x80, reason 4)
    assert_eq!((o.kind, o.target, o.value), (4, 1, 4));
    let o = m.row(6, 0x99, 0, 0, 1); // TASK_START_READY of an unknown handle
    assert_eq!((o.kind, o.target, o.value), (3, -1, VALUE_NULL));
}

#[test]
fn parts_equal_one_pass() {
    // ISR nesting, switches, OVERFLOW, messages and API ids split at every row
    let id = [4u32, 2, 2, 26, 3, 0, 40, 1, 4, 3, 26, 17, 2, 18, 5, 600];
    let n = id.len();
    let core = vec![0u8; n];
    let nv = vec![1u8; n];
    let ts: Vec<u64> = (0..n as u64).map(|i| i * 3).collect();
    let off: Vec<u32> = (0..n as u32).map(|i| i * 2).collect();
    let p0: Vec<u32> = (0..n as u32).map(|i| 0x40 + (i % 3)).collect();
    let zero = vec![0u32; n];
    let handles = [0x40u64, 0x41, 0x42];
    let p = Params {
        start: 0,
        stream_core: 0,
        esp: false,
        ram_base: 0,
        shift: 0,
        handles: &handles,
        named: &[],
        mod_first: 512,
        tick_hz: 7,
        origin: 0,
        log_base: 3,
    };
    let raw = |a: usize, b: usize| Raw {
        id: &id[a..b],
        core: &core[a..b],
        nv: &nv[a..b],
        ts: &ts[a..b],
        off: &off[a..b],
        p0: &p0[a..b],
        p1: &zero[a..b],
        p2: &zero[a..b],
    };
    let rows = scan(&raw(0, n)).events as usize;
    let mut whole = vec![0u8; rows * ROW];
    let c = convert(&raw(0, n), &p, &mut whole, &mut |_| {});
    for cut in 0..=n {
        let mut st = ConvState::new(false, 3);
        let mut got = vec![0u8; rows * ROW];
        let k = convert_part(&raw(0, cut), &p, &mut st, &mut got, &mut |_| {});
        convert_part(&raw(cut, n), &p, &mut st, &mut got[k * ROW..], &mut |_| {});
        assert_eq!(got, whole, "cut at {}", cut);
        assert_eq!(st.api_ids(), c.api_ids);
        assert_eq!(st.logs(), 5);
    }
}

// Throughput of the pure passes (CPU time), a development aid:
/// CPU time of this thread in ns (Linux schedstat), so a busy machine does not count.
pub(crate) fn cpu_ns() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|x| x.parse().ok()))
        .unwrap_or(0.0)
}

/// User CPU time of this thread in ns (10 ms resolution): page faults of fresh memory aside.
pub(crate) fn user_ns() -> f64 {
    let s = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    let after = s.rsplit(')').next().unwrap_or("");
    let ticks: f64 = (after.split_whitespace().nth(11))
        .and_then(|x| x.parse().ok())
        .unwrap_or(0.0);
    ticks * 1e7
}

/// `cargo test --release --no-default-features --lib sv_model::speed -- --ignored --nocapture`
#[test]
#[ignore]
fn convert_rate() {
    let n: usize = std::env::var("N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8_000_000);
    let ids = [2u32, 6, 18, 4, 31, 31, 34, 7, 17, 2, 3];
    let id: Vec<u32> = (0..n).map(|i| ids[i % ids.len()]).collect();
    let z8 = vec![0u8; n];
    let nv = vec![2u8; n];
    let ts: Vec<u64> = (0..n as u64).map(|i| i * 37).collect();
    let off: Vec<u32> = (0..n as u32).map(|i| i * 4).collect();
    let p0: Vec<u32> = (0..n as u32).map(|i| 0x100 + (i % 4) * 0x40).collect();
    let p1 = vec![1u32; n];
    let p2 = vec![0u32; n];
    let r = Raw {
        id: &id,
        core: &z8,
        nv: &nv,
        ts: &ts,
        off: &off,
        p0: &p0,
        p1: &p1,
        p2: &p2,
    };
    let handles: Vec<u64> = (0..4).map(|i| 0x100 + i * 0x40).collect();
    let p = Params {
        start: 0,
        stream_core: 0,
        esp: false,
        ram_base: 0,
        shift: 0,
        handles: &handles,
        named: &[],
        mod_first: 512,
        tick_hz: std::env::var("HZ")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(160_000_000),
        origin: 0,
        log_base: 0,
    };
    let mut out = vec![1u8; n * ROW];
    for _ in 0..3 {
        let reps = (8_000_000 / n).max(1);
        let t = cpu_ns();
        let mut rows = 0;
        for _ in 0..reps {
            rows += convert(&r, &p, &mut out, &mut |_| {}).rows;
        }
        println!(
            "convert {} rows: {:.1} ns/row CPU",
            rows,
            (cpu_ns() - t) / rows as f64
        );
    }
    let t = cpu_ns();
    let s = scan(&r);
    println!("scan: {:.1} ns/row CPU", (cpu_ns() - t) / s.events as f64);
}
