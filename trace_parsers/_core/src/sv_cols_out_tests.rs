//! Unit tests of `sv_cols_out`: rows through the batch and the builders give back the rows.

use super::*;
use crate::sv_model::{write_row, ROW};

/// `n` rows of varied fields: mostly narrow values, with `late` rows from which wide ones come
/// (core, ctx_id, src_offset, value, target_id, marker).
fn rows(n: usize, late: usize) -> Vec<Fields> {
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    (0..n)
        .map(|i| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let wide = i >= late;
            let r = seed;
            Fields {
                ts: i as i64 * 1000 - 5,
                ts_raw: i as u64 * 160,
                kind: (r % 27) as u8,
                core: if wide { (r >> 8) as u8 & 1 } else { 0 },
                ctx_type: (r >> 9) as u8 % 4,
                ctx_id: if wide && i % 7 == 0 {
                    70_000
                } else {
                    (r >> 12) as i32 % 5 - 1
                },
                target: match (r >> 16) % 8 {
                    0 => (r >> 20) as i32 % 3,
                    1 if wide => i32::MIN,
                    _ => TARGET_NONE,
                },
                marker: if wide && i % 3 == 0 { u32::MAX } else { 0 },
                value: match (r >> 24) % 4 {
                    0 => (r >> 28) as i64 % 100,
                    1 if wide => i64::MIN + 1,
                    _ => VALUE_NULL,
                },
                src_id: (r >> 32) as u32 % 40,
                src_off: 100 + 3 * i as u64 + if wide { 1 << 33 } else { 0 },
            }
        })
        .collect()
}

/// `f` through `ColsOut`, with a window end after every row in `cuts`; the expanded rows and
/// the finished column specs.
fn through_cols(f: &[Fields], cuts: &[usize]) -> (Vec<u8>, Vec<(&'static str, Spec)>) {
    let mut cols = EventCols::new(0);
    let (mut ts, mut ts_raw) = (vec![0u8; f.len() * 8], vec![0u8; f.len() * 8]);
    let mut out = ColsOut {
        ts: &mut ts,
        ts_raw: &mut ts_raw,
        cols: &mut cols,
    };
    assert_eq!(out.cap(), f.len());
    for (k, r) in f.iter().enumerate() {
        out.put(k, r);
        if cuts.contains(&(k + 1)) {
            out.done();
            assert_eq!(out.cols.batch.n, 0, "a window end flushes the batch");
        }
    }
    assert_eq!(cols.rows(), f.len());
    let specs: Vec<_> = cols.finish().collect();
    (expand(&ts, &ts_raw, specs.clone()), specs)
}

fn as_rows(f: &[Fields]) -> Vec<u8> {
    let mut want = vec![0u8; f.len() * ROW];
    for (k, r) in f.iter().enumerate() {
        write_row(&mut want[k * ROW..(k + 1) * ROW], r);
    }
    want
}

#[test]
fn columns_give_back_the_rows() {
    let n = 3 * BATCH + 17;
    for late in [n, 2 * BATCH + 1, 5] {
        let f = rows(n, late);
        let want = as_rows(&f);
        for cuts in [vec![], vec![1, BATCH - 1, BATCH, 2 * BATCH + 3], vec![n]] {
            let (got, _) = through_cols(&f, &cuts);
            assert_eq!(got, want, "wide from row {}, window ends {:?}", late, cuts);
        }
    }
}

#[test]
fn narrow_and_constant_columns() {
    let n = 2 * BATCH + 9;
    let (_, specs) = through_cols(&rows(n, n), &[BATCH + 1]);
    let kind = |name: &str| match &specs.iter().find(|s| s.0 == name).unwrap().1 {
        Spec::Plain(Column::Const { value, .. }) => format!("const {}", value),
        Spec::Plain(Column::Dense { width, signed, .. }) => Column::dtype(*width, *signed).into(),
        Spec::Sparse { len, idx, val } => {
            assert_eq!(*len, n);
            assert!(
                idx.len() < n / 2 && idx.len() > n / 16,
                "{} of {}",
                idx.len(),
                n
            );
            match val {
                Column::Dense { width, signed, .. } => Column::dtype(*width, *signed).into(),
                c => format!("{:?}", c),
            }
        }
    };
    let got: Vec<String> = specs.iter().map(|s| kind(s.0)).collect();
    let want = [
        "u1", "const 0", "u1", "i1", "i1", "const 0", "i1", "u1", "<u2",
    ];
    assert_eq!(got, want);
    let names: Vec<&str> = specs.iter().map(|s| s.0).collect();
    assert_eq!(
        names,
        [
            "kind",
            "core",
            "ctx_type",
            "ctx_id",
            "target_id",
            "marker",
            "value",
            "src_id",
            "src_offset"
        ]
    );
}

#[test]
fn empty_stream() {
    let (got, specs) = through_cols(&[], &[]);
    assert!(got.is_empty());
    assert_eq!(specs.len(), 9);
    for (_, s) in specs {
        match s {
            Spec::Plain(c) => assert!(c.is_empty()),
            Spec::Sparse { len, idx, val } => {
                assert_eq!((len, idx.len(), val.len()), (0, 0, 0));
                assert!(matches!(idx, Column::Dense { .. }));
            }
        }
    }
}

#[test]
fn a_column_without_memory_marks_the_columns_incomplete() {
    use crate::adaptive::tests::{Budget, BUDGET};
    let f = rows(3 * BATCH, 0); // varied values from the first row: dense at once
    let mut cols: EventCols<Budget> = EventCols::new(0);
    for r in &f[..BATCH - 1] {
        cols.push(r);
    }
    assert!(!cols.no_memory(), "nothing flushed yet");
    for r in &f[BATCH - 1..] {
        cols.push(r); // every flush asks for more than BUDGET bytes: refused, never a panic
    }
    cols.flush();
    assert!(BATCH > BUDGET && cols.no_memory());
    assert_eq!(
        cols.rows(),
        f.len(),
        "the rows are counted (and dropped), not kept in the batch"
    );
}
