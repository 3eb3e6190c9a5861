//! Unit tests of `systemview` (packet decoding, resumable windows, varints) and a timing probe.

use super::*;

fn sync() -> Vec<u8> {
    vec![0u8; SYNC_LEN]
}

fn pkt(out: &mut Vec<u8>, id: u8, vals: &[u32], delta: u32) {
    out.push(id);
    for &v in vals {
        put_varint(out, v);
    }
    put_varint(out, delta);
}

fn long(out: &mut Vec<u8>, id: u32, payload: &[u8], delta: u32) {
    put_varint(out, id);
    put_varint(out, payload.len() as u32);
    out.extend_from_slice(payload);
    put_varint(out, delta);
}

#[test]
fn varint_roundtrip() {
    for v in [0u32, 1, 127, 128, 0x1F4, 16383, 16384, 0xFFFF_FFFF] {
        let mut b = Vec::new();
        put_varint(&mut b, v);
        let mut c = Cur {
            d: &b,
            pos: 0,
            end: b.len(),
            org: 0,
        };
        assert_eq!(c.varint().ok(), Some(v));
        assert_eq!(c.pos, b.len());
    }
    let mut b = Vec::new();
    put_varint(&mut b, 0x1F4);
    assert_eq!(b, vec![0xF4, 0x03]);
}

#[test]
fn fixed_layouts_and_time() {
    let mut s = sync();
    pkt(&mut s, 10, &[], 5);
    pkt(&mut s, 2, &[15], 3);
    pkt(&mut s, 18, &[], 200);
    pkt(&mut s, 7, &[0x40, 4], 1);
    pkt(&mut s, 17, &[], 0x1_0000);
    let o = decode_owned(&s, Options::default());
    assert_eq!(o.id, vec![10, 2, 18, 7, 17]);
    assert_eq!(o.ts, vec![5, 8, 208, 209, 209 + 0x1_0000]);
    assert_eq!(o.p0[1], 15);
    assert_eq!((o.p0[3], o.p1[3], o.nv[3]), (0x40, 4, 2));
    assert_eq!(o.off, vec![10, 12, 15, 18, 22]);
    assert!(o.side.diags.is_empty());
}

#[test]
fn long_ids_and_unknown_skipped() {
    let mut s = sync();
    long(
        &mut s,
        24,
        &[0x80, 0x89, 0x7A, 0, 0x80, 0x80, 0x80, 0x80, 0x02, 2],
        1,
    );
    long(&mut s, 20000, &[1, 2, 3, 4, 5], 2); // LONG_ID (3-byte id), 5 args
    long(&mut s, 99, &[], 3);
    pkt(&mut s, 3, &[], 4);
    let o = decode_owned(&s, Options::default());
    assert_eq!(o.id, vec![24, 20000, 99, 3]);
    assert_eq!(o.p0[0], 2_000_000);
    assert_eq!(o.p2[0], 0x2000_0000);
    assert_eq!(o.nv[1], 5);
    assert_eq!(o.ts, vec![1, 3, 6, 10]);
    // INIT has 4 values: the 4th is in aux.
    let r = o.side.aux_row.iter().position(|&r| r == 0).unwrap();
    let st = o.side.aux_start[r] as usize;
    assert_eq!(
        &o.side.aux_vals[st..st + 4],
        &[2_000_000, 0, 0x2000_0000, 2]
    );
}

#[test]
fn strings_both_orders() {
    // <= 3.42 long form: FF lo hi (300 bytes)
    let mut s = sync();
    let name = vec![b'a'; 300];
    s.push(14);
    s.extend_from_slice(&[0xFF, 300u16 as u8, (300u16 >> 8) as u8]);
    s.extend_from_slice(&name);
    put_varint(&mut s, 1);
    let o = decode_owned(&s, Options::default());
    assert_eq!(o.id, vec![14]);
    assert_eq!(o.side.str_ends, vec![300]);
    assert_eq!(o.side.str_order, Some(StrOrder::LoHi));
    // >= 3.56: FF 00 nn for every string
    let mut s = sync();
    s.push(9);
    put_varint(&mut s, 7);
    put_varint(&mut s, 3);
    s.extend_from_slice(&[0xFF, 0, 4]);
    s.extend_from_slice(b"IDLE");
    put_varint(&mut s, 1);
    let o = decode_owned(&s, Options::default());
    assert_eq!(o.id, vec![9]);
    assert_eq!(&o.side.strings, b"IDLE");
    assert_eq!(o.side.str_order, Some(StrOrder::HiLo));
}

#[test]
fn long_string_orders_in_fixed_packets() {
    // 300-byte SYSDESC, both orders, followed by more packets (room for either reading)
    for hilo in [false, true] {
        let mut s = sync();
        s.push(14);
        let n = 300usize;
        if hilo {
            s.extend_from_slice(&[0xFF, (n >> 8) as u8, n as u8]);
        } else {
            s.extend_from_slice(&[0xFF, n as u8, (n >> 8) as u8]);
        }
        s.extend(std::iter::repeat(b'x').take(n));
        put_varint(&mut s, 1);
        for _ in 0..10_000 {
            pkt(&mut s, 17, &[], 1);
        }
        let o = decode_owned(&s, Options::default());
        assert_eq!(o.side.str_ends[0], 300);
        assert_eq!(o.id.len(), 10_001);
        let want = if hilo { StrOrder::HiLo } else { StrOrder::LoHi };
        assert_eq!(o.side.str_order, Some(want));
    }
}

#[test]
fn esp_core_bit() {
    let mut s = sync();
    pkt(&mut s, 4 | 0x40, &[1], 1); // core 1 START_EXEC
    pkt(&mut s, 17, &[], 1);
    s.extend_from_slice(&[0x80 | (512 & 0x7F) as u8, ((512 >> 7) as u8) | 0x40]); // id 512 on core 1
    s.push(0);
    s.push(1);
    let o = decode_owned(
        &s,
        Options {
            esp_core_bit: true,
            ..Options::default()
        },
    );
    assert_eq!(o.id, vec![4, 17, 512]);
    assert_eq!(o.core, vec![1, 0, 1]);
}

#[test]
fn padding_truncation_and_resync() {
    let mut s = sync();
    pkt(&mut s, 10, &[], 1);
    s.extend_from_slice(&[0, 0, 0]); // NOP + stray zero
    let o = decode_owned(&s, Options::default());
    assert_eq!(o.id, vec![10, 0]);
    assert_eq!(o.side.diags.len(), 1);
    assert_eq!(o.side.diags[0].code, Code::Padding);

    let mut s = sync();
    pkt(&mut s, 10, &[], 1);
    s.extend_from_slice(&[2, 0x85]); // ISR_ENTER with a cut varint
    let o = decode_owned(&s, Options::default());
    assert_eq!(o.id, vec![10]);
    assert_eq!(o.side.diags[0].code, Code::Truncated);

    // garbage id + huge length, then a new sync block
    let mut s = sync();
    pkt(&mut s, 10, &[], 1);
    s.extend_from_slice(&[0xC1, 0xFF, 0x3F, 0xE0, 0xFF, 0xFF, 0x3F]);
    let at = s.len();
    s.extend_from_slice(&sync());
    pkt(&mut s, 10, &[], 7);
    pkt(&mut s, 3, &[], 1);
    let o = decode_owned(&s, Options::default());
    assert_eq!(o.id, vec![10, 10, 3]);
    assert_eq!(o.ts, vec![1, 8, 9]);
    assert!(o
        .side
        .diags
        .iter()
        .any(|d| d.code == Code::Corrupt && d.fatal));
    assert!(o
        .side
        .diags
        .iter()
        .any(|d| d.code == Code::Resync && d.count == (at - 12) as u64));
}

#[test]
fn no_sync_is_reported() {
    let o = decode_owned(b"hello world, this is not systemview", Options::default());
    assert!(o.id.is_empty());
    assert_eq!(o.side.diags[0].code, Code::NoSync);
}

#[test]
fn never_panics_on_noise() {
    // xorshift noise with a sync prefix: must terminate without panicking.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for len in [0usize, 1, 11, 64, 1000, 5000] {
        for _ in 0..50 {
            let mut d = sync();
            d.push(10);
            for _ in 0..len {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                d.push(x as u8);
            }
            let o = decode_owned(&d, Options::default());
            assert!(o.id.len() <= max_packets(d.len()));
            let o = decode_owned(
                &d,
                Options {
                    esp_core_bit: true,
                    ..Options::default()
                },
            );
            assert!(o.id.len() <= max_packets(d.len()));
        }
    }
}

mod timing {
    /// `SV_TIMING_FILE=path cargo test --release --no-default-features -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn decode_file_timing() {
        let Ok(path) = std::env::var("SV_TIMING_FILE") else {
            return;
        };
        let data = std::fs::read(path).unwrap_or_default();
        for _ in 0..3 {
            let t0 = std::time::Instant::now();
            let o = super::super::decode_owned(&data, super::super::Options::default());
            let dt = t0.elapsed().as_secs_f64();
            println!(
                "{} packets in {:.3} s: {:.1} M/s, {:.0} MB/s",
                o.id.len(),
                dt,
                o.id.len() as f64 / dt / 1e6,
                data.len() as f64 / dt / 1e6
            );
        }
    }
}
