//! Unit tests of `adaptive`: constant -> dense, widening at the range boundaries, round trips.

use super::*;
use crate::sv_model::tests::{cpu_ns, user_ns};

/// Every value of `c`, in order.
fn values(c: &Column) -> Vec<i128> {
    (0..c.len()).map(|i| c.get(i)).collect()
}

/// The narrowest width holding `lo..=hi`, from the ranges of the integer types.
fn narrowest(signed: bool, lo: i128, hi: i128) -> usize {
    let ranges: [(i128, i128, usize); 4] = if signed {
        [
            (i8::MIN as i128, i8::MAX as i128, 1),
            (i16::MIN as i128, i16::MAX as i128, 2),
            (i32::MIN as i128, i32::MAX as i128, 4),
            (i64::MIN as i128, i64::MAX as i128, 8),
        ]
    } else {
        [
            (0, u8::MAX as i128, 1),
            (0, u16::MAX as i128, 2),
            (0, u32::MAX as i128, 4),
            (0, u64::MAX as i128, 8),
        ]
    };
    let (_, _, w) = ranges.into_iter().find(|r| r.0 <= lo && hi <= r.1).unwrap();
    w
}

/// `vals` pushed one slice after another (slices of `step` values) and the width after each.
fn build<T: Lane>(vals: &[T], step: usize) -> (Column, Vec<usize>) {
    let mut a = Adaptive::new(T::SIGNED, 0);
    let mut widths = Vec::new();
    for s in vals.chunks(step) {
        a.extend(s).unwrap();
        widths.push(a.width());
    }
    assert_eq!(a.len(), vals.len());
    (a.finish(), widths)
}

/// The column of `vals` round-trips exactly, whatever the slices, and its width is the
/// narrowest holding them all.
fn round_trip<T: Lane>(vals: &[T]) -> Column {
    let want: Vec<i128> = vals.iter().map(|v| v.wide()).collect();
    let (whole, _) = build(vals, vals.len().max(1));
    for step in [1, 2, 3, 7, 64] {
        let (c, _) = build(vals, step);
        assert_eq!(values(&c), want, "step {}", step);
        assert_eq!(c, whole, "step {}", step);
    }
    if let (Some(lo), Some(hi)) = (want.iter().min(), want.iter().max()) {
        if let Column::Dense { width, data, .. } = &whole {
            assert!(lo < hi);
            assert_eq!(*width, narrowest(T::SIGNED, *lo, *hi));
            assert_eq!(data.len(), vals.len() * width);
        } else {
            assert_eq!(lo, hi);
        }
    }
    whole
}

#[test]
fn constant_until_a_value_differs() {
    let (c, w) = build(&[5u32, 5, 5, 5, 5], 2);
    assert_eq!(w, vec![0, 0, 0]);
    assert_eq!(
        c,
        Column::Const {
            value: 5,
            len: 5,
            signed: false
        }
    );
    // the constant is re-encoded dense when a value differs (late, and in the same slice)
    let mut v = vec![-1i32; 1000];
    v.push(0);
    let c = round_trip(&v);
    assert!(matches!(c, Column::Dense { width: 1, .. }));
    assert_eq!(c.get(999), -1);
    assert_eq!(round_trip(&[3u8, 3, 4]).get(1), 3);
    // wide constants stay constants
    let c = round_trip(&[u64::MAX; 9]);
    assert_eq!(c.get(8), u64::MAX as i128);
    assert_eq!(round_trip(&[i64::MIN; 3]).get(0), i64::MIN as i128);
}

#[test]
fn empty_is_dense_of_no_rows() {
    let c: Column = Adaptive::new(true, 10).finish();
    assert_eq!(c.len(), 0);
    assert!(matches!(c, Column::Dense { width: 1, .. }));
}

#[test]
fn unsigned_widens_at_the_boundaries() {
    let vals: Vec<u64> = vec![
        0,
        255,
        256,
        65_535,
        65_536,
        u32::MAX as u64,
        u32::MAX as u64 + 1,
        u64::MAX,
    ];
    let (c, w) = build(&vals, 1);
    assert_eq!(w, vec![0, 1, 2, 2, 4, 4, 8, 8]);
    assert_eq!(
        values(&c),
        vals.iter().map(|v| *v as i128).collect::<Vec<_>>()
    );
    round_trip(&vals);
    // the narrow types, with the last value forcing the width
    assert!(matches!(
        round_trip(&[1u8, 255]),
        Column::Dense { width: 1, .. }
    ));
    assert!(matches!(
        round_trip(&[0u32, 255, 256]),
        Column::Dense { width: 2, .. }
    ));
    assert!(matches!(
        round_trip(&[7u32, u32::MAX]),
        Column::Dense { width: 4, .. }
    ));
}

#[test]
fn signed_widens_at_the_boundaries() {
    let vals: Vec<i64> = vec![
        0,
        127,
        -128,
        128,
        -129,
        32_767,
        -32_768,
        32_768,
        i32::MIN as i64,
        i32::MAX as i64,
        i32::MIN as i64 - 1,
        i64::MIN + 1,
        i64::MAX,
        i64::MIN,
    ];
    let (c, w) = build(&vals, 1);
    assert_eq!(w, vec![0, 1, 1, 2, 2, 2, 2, 4, 4, 4, 8, 8, 8, 8]);
    assert_eq!(
        values(&c),
        vals.iter().map(|v| *v as i128).collect::<Vec<_>>()
    );
    round_trip(&vals);
    assert!(matches!(
        round_trip(&[-128i32, 127]),
        Column::Dense { width: 1, .. }
    ));
    assert!(matches!(
        round_trip(&[-129i32, 0]),
        Column::Dense { width: 2, .. }
    ));
    assert!(matches!(
        round_trip(&[0i32, 128]),
        Column::Dense { width: 2, .. }
    ));
    assert!(matches!(
        round_trip(&[0i64, i64::MIN + 1]),
        Column::Dense { width: 8, .. }
    ));
    // 255 is not an i1: signed columns use the signed range
    assert!(matches!(
        round_trip(&[0i64, 255]),
        Column::Dense { width: 2, .. }
    ));
}

#[test]
fn widens_after_many_narrow_values() {
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut v: Vec<i64> = (0..20_000)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % 200) as i64 - 100
        })
        .collect();
    v.push(-1 << 40);
    v.extend([5, -5, 1 << 20]);
    let c = round_trip(&v);
    assert!(matches!(c, Column::Dense { width: 8, .. }));
    let u: Vec<u32> = v
        .iter()
        .map(|x| (*x as u32) & 0xFF)
        .chain([70_000])
        .collect();
    assert!(matches!(round_trip(&u), Column::Dense { width: 4, .. }));
}

#[test]
fn dense_bytes_are_little_endian() {
    let (c, _) = build(&[1i32, -2, 300], 3);
    let Column::Dense { data, width, .. } = c else {
        panic!("dense expected")
    };
    assert_eq!(width, 2);
    assert_eq!(data, [1, 0, 0xFE, 0xFF, 0x2C, 0x01]);
    assert_eq!(Column::dtype(2, true), "<i2");
    assert_eq!(Column::dtype(1, false), "u1");
}

/// `cargo test --release --no-default-features --lib extend_rate -- --ignored --nocapture`:
/// `extend` of 4096-value slices (a batch of `sv_cols_out`), ns per value: all CPU time, and
/// user time alone (without the page faults of the fresh column).
#[test]
#[ignore]
fn extend_rate() {
    fn rate<T: Lane>(name: &str, v: &[T]) {
        let reps = 100_000_000 / v.len();
        let (mut best, mut best_user) = (f64::MAX, f64::MAX);
        for _ in 0..3 {
            let mut a: Adaptive = Adaptive::new(T::SIGNED, reps * v.len());
            let (t, u) = (cpu_ns(), user_ns());
            for _ in 0..reps {
                a.extend(v).unwrap();
            }
            let (t1, u1) = (cpu_ns(), user_ns());
            best = best.min((t1 - t) / (reps * v.len()) as f64);
            best_user = best_user.min((u1 - u) / (reps * v.len()) as f64);
            std::hint::black_box(a.finish());
        }
        println!("{}: {:.3} ns/value, user {:.3}", name, best, best_user);
    }
    let n = 4096;
    rate(
        "u8 -> u1",
        &(0..n).map(|i| (i % 27) as u8).collect::<Vec<_>>(),
    );
    rate(
        "u32 -> u1",
        &(0..n).map(|i| (i % 40) as u32).collect::<Vec<_>>(),
    );
    rate(
        "u64 -> u4",
        &(0..n).map(|i| i as u64 * 5 + 100_000).collect::<Vec<_>>(),
    );
    rate(
        "i32 -> i1",
        &(0..n).map(|i| (i % 5) as i32 - 1).collect::<Vec<_>>(),
    );
    rate(
        "i64 -> i1",
        &(0..n).map(|i| (i % 100) as i64).collect::<Vec<_>>(),
    );
    rate(
        "i64 -> i8",
        &(0..n).map(|i| (i as i64) << 40).collect::<Vec<_>>(),
    );
    rate(
        "u64 -> u8",
        &(0..n).map(|i| (i as u64) << 40).collect::<Vec<_>>(),
    );
    rate("u8 const", &vec![0u8; n]);
}

/// A store that cannot grow past `BUDGET` bytes (what an address-space limit does).
#[derive(Debug)]
pub(crate) struct Budget(Vec<u8>);

pub(crate) const BUDGET: usize = 64;

impl Store for Budget {
    fn with_room(_room: usize) -> Self {
        Budget(Vec::new())
    }

    fn bytes(&self) -> &[u8] {
        &self.0
    }

    fn grow(&mut self, n: usize) -> Result<&mut [u8], NoMemory> {
        if self.0.len() + n > BUDGET {
            return Err(NoMemory);
        }
        let at = self.0.len();
        self.0.resize(at + n, 0);
        Ok(&mut self.0[at..])
    }
}

#[test]
fn no_memory_is_an_error_and_keeps_the_column() {
    let mut a: Adaptive<Budget> = Adaptive::new(true, 0);
    let v: Vec<i8> = (0..60).map(|i| (i % 7) as i8).collect();
    a.extend(&v).unwrap(); // 60 one-byte values fit the 64 bytes
    assert_eq!(a.extend(&v[..10]), Err(NoMemory), "growing past the budget");
    assert_eq!((a.len(), a.width()), (60, 1), "nothing appended");
    // widening needs 61 * 2 bytes in a new store: refused, the column stays as it was
    assert_eq!(a.extend(&[300i16]), Err(NoMemory));
    assert_eq!((a.len(), a.width()), (60, 1));
    let Column::Dense { data, width: 1, .. } = a.finish() else {
        panic!("dense of width 1")
    };
    assert_eq!(
        data.bytes(),
        &v.iter().map(|&x| x as u8).collect::<Vec<_>>()[..]
    );
}
