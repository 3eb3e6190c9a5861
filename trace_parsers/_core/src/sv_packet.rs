//! One SystemView packet (spec: systemview.md §3): id, fields, strings and the timestamp
//! delta, decoded at a position of the stream. Part of `systemview` (uses the decoder's state).

use super::{Code, Decoder, Diag, Pkt, Side, StrOrder};

pub(super) enum Fail {
    /// EOF inside a packet.
    Eof(&'static str),
    /// Impossible structure.
    Bad(String),
}

pub(super) struct Cur<'d> {
    pub(super) d: &'d [u8],
    pub(super) pos: usize,
    pub(super) end: usize,
    /// File offset of `d[0]` (for messages).
    pub(super) org: u64,
}

impl<'d> Cur<'d> {
    #[inline(always)]
    pub(super) fn byte(&mut self) -> Result<u8, Fail> {
        if self.pos < self.end {
            let b = self.d[self.pos];
            self.pos += 1;
            Ok(b)
        } else {
            Err(Fail::Eof("EOF in packet"))
        }
    }

    /// Unsigned LEB128, at most 5 bytes.
    #[inline(always)]
    pub(super) fn varint(&mut self) -> Result<u32, Fail> {
        // one or two bytes without a branch on which (ids, small values and most time deltas:
        // their length varies from packet to packet, a branch on it mispredicts), else the loop
        if self.pos + 1 < self.end.min(self.d.len()) {
            let (b0, b1) = (self.d[self.pos] as u32, self.d[self.pos + 1] as u32);
            let two = b0 >> 7; // 1 when a second byte follows
            if two & (b1 >> 7) == 0 {
                self.pos += 1 + two as usize;
                return Ok((b0 & 0x7F) | (b1 << 7) & 0u32.wrapping_sub(two));
            }
        } else if self.pos < self.end {
            let b = self.d[self.pos];
            if b < 0x80 {
                self.pos += 1;
                return Ok(b as u32);
            }
        }
        self.varint_wide()
    }

    /// Three to five bytes (a task id, an address, a long time delta: the common packet of
    /// some recordings) from one 8-byte load, without a loop; the loop at the window's end.
    #[inline(always)]
    fn varint_wide(&mut self) -> Result<u32, Fail> {
        if let Some(b) = self.d.get(self.pos..self.pos + 8) {
            let x = u64::from_le_bytes(b.try_into().unwrap_or([0x80; 8])); // (always 8 bytes)
            let stops = !x & 0x80_8080_8080; // clear high bit: the last byte (of the first 5)
            let len = (stops.trailing_zeros() as usize >> 3) + 1; // 9 when none: the loop
            if len <= 5 && self.pos + len <= self.end {
                let v = (x & 0x7F)
                    | (x >> 1 & 0x7F << 7)
                    | (x >> 2 & 0x7F << 14)
                    | (x >> 3 & 0x7F << 21)
                    | (x >> 4 & 0x7F << 28);
                self.pos += len;
                return Ok((v & ((1u64 << (7 * len)) - 1)) as u32);
            }
        }
        self.varint_slow()
    }

    #[inline(never)]
    fn varint_slow(&mut self) -> Result<u32, Fail> {
        let mut v: u64 = 0;
        for i in 0..5 {
            if self.pos >= self.end {
                return Err(Fail::Eof("EOF in varint"));
            }
            let b = self.d[self.pos];
            self.pos += 1;
            v |= ((b & 0x7F) as u64) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v as u32);
            }
        }
        Err(Fail::Bad(format!(
            "varint longer than 5 bytes at 0x{:x}",
            self.org + (self.pos - 5) as u64
        )))
    }
}

impl<'d> Decoder<'d> {
    /// Decode one packet at `pos` (its aux records name row `n`); returns the position after it
    /// and the packet (`off` left for the caller).
    #[inline(always)]
    pub(super) fn packet(
        &mut self,
        pos: usize,
        n: usize,
        side: &mut Side,
    ) -> Result<(usize, Pkt), Fail> {
        let mut c = Cur {
            d: self.data,
            pos,
            end: self.end,
            org: self.org,
        };
        let (id, core) = self.read_id(&mut c)?;
        // `v` is built by value on every path, never written through its address: it stays in
        // registers (an 8-byte load of two 4-byte stores would stall store forwarding)
        let (nv, v): (usize, [u32; 3]);
        if id < 24 {
            (nv, v) = self.fixed(id, &mut c, n, side)?;
        } else {
            let len = c.varint()? as usize;
            let pstart = c.pos;
            // the stream's end decides between damage and a cut; the window's end (when the
            // stream goes on) only means the packet continues in the next window
            let in_stream = self.stream_len - self.rel(pstart);
            if len as u64 <= in_stream && len > c.end - pstart {
                return Err(Fail::Eof("EOF in payload"));
            }
            if len as u64 > in_stream {
                let remaining = in_stream;
                return if len <= 0x3FFF && id < 0x1_0000 {
                    Err(Fail::Eof("EOF in payload"))
                } else {
                    Err(Fail::Bad(format!(
                        "id {} with payload length {} runs past the end of the stream ({} bytes left)",
                        id, len, remaining
                    )))
                };
            }
            let pend = pstart + len;
            let mut p = Cur {
                d: self.data,
                pos: pstart,
                end: pend,
                org: self.org,
            };
            (nv, v) = match payload_numeric(id, &mut p) {
                Some(r) => r,
                None => {
                    p.pos = pstart;
                    self.payload_rare(id, &mut p, n, side)
                }
            };
            c.pos = pend;
        }
        let delta = c.varint()?;
        self.ts = self.ts.wrapping_add(delta as u64);
        let p = Pkt {
            id,
            core,
            nv: nv.min(255) as u8,
            ts: self.ts,
            off: 0,
            v,
        };
        Ok((c.pos, p))
    }

    /// The fields of a system packet with a fixed layout (ids 0..23, systemview.md §3.2):
    /// (values, the first three).
    #[inline(always)]
    fn fixed(
        &mut self,
        id: u32,
        c: &mut Cur<'_>,
        n: usize,
        side: &mut Side,
    ) -> Result<(usize, [u32; 3]), Fail> {
        Ok(match id {
            0 | 3 | 5 | 10 | 11 | 17 | 18 | 20 => (0, [0; 3]),
            1 | 2 | 4 | 6 | 8 | 12 | 15 | 16 | 19 => (1, [c.varint()?, 0, 0]),
            7 | 13 | 23 => {
                let a = c.varint()?;
                (2, [a, c.varint()?, 0])
            }
            _ => self.fixed_rare(id, c, n, side)?,
        })
    }

    /// The metadata packets of `fixed` (with a string or aux record).
    #[inline(never)]
    fn fixed_rare(
        &mut self,
        id: u32,
        c: &mut Cur<'_>,
        n: usize,
        side: &mut Side,
    ) -> Result<(usize, [u32; 3]), Fail> {
        let mut v = [0u32; 3];
        Ok(match id {
            9 | 22 => {
                // TASK_INFO: TaskId, Prio, Name; MODULEDESC: ModuleId, EventOffset, string
                v[0] = c.varint()?;
                v[1] = c.varint()?;
                let end = c.end;
                let s = self.string(c, end, true, side)?;
                self.aux(side, n, &v[..2], s);
                (2, v)
            }
            14 => {
                let end = c.end;
                let s = self.string(c, end, true, side)?;
                self.aux(side, n, &[], s);
                (0, v)
            }
            21 => {
                let a = [c.varint()?, c.varint()?, c.varint()?, c.varint()?];
                v.copy_from_slice(&a[..3]);
                self.aux(side, n, &a, u32::MAX);
                (4, v)
            }
            _ => (0, v), // unreachable: `fixed` takes the other ids < 24
        })
    }

    #[inline(always)]
    fn read_id(&self, c: &mut Cur<'_>) -> Result<(u32, u8), Fail> {
        let b0 = c.byte()?;
        if b0 < 0x80 {
            if self.opts.esp_core_bit {
                return Ok(((b0 & 0x3F) as u32, (b0 >> 6) & 1));
            }
            return Ok((b0 as u32, 0));
        }
        let mut core = 0u8;
        let mut b1 = c.byte().map_err(|_| Fail::Eof("EOF in varint"))?;
        if self.opts.esp_core_bit {
            core = (b1 >> 6) & 1;
            b1 &= !0x40;
        }
        let mut v: u64 = (b0 & 0x7F) as u64 | (((b1 & 0x7F) as u64) << 7);
        let mut last = b1;
        let mut i = 2;
        while last & 0x80 != 0 {
            if i >= 5 {
                return Err(Fail::Bad("event id varint longer than 5 bytes".to_string()));
            }
            last = c.byte().map_err(|_| Fail::Eof("EOF in varint"))?;
            v |= ((last & 0x7F) as u64) << (7 * i);
            i += 1;
        }
        if v > u32::MAX as u64 {
            return Err(Fail::Bad(format!("event id {} does not fit 32 bits", v)));
        }
        Ok((v as u32, core))
    }

    /// Decode a length-delimited payload (ids >= 24). Never reads past `p.end`; a short payload
    /// just yields fewer values. Returns the number of numeric values.
    fn payload(
        &mut self,
        id: u32,
        p: &mut Cur<'_>,
        n: usize,
        v: &mut [u32; 3],
        side: &mut Side,
    ) -> usize {
        match id {
            25 => {
                // NAME_RESOURCE: ResourceId, string
                let mut vals = [0u32; 1];
                let k = read_vals(p, &mut vals);
                v[0] = vals[0];
                let s = if k == 1 {
                    self.string(p, p.end, false, side).unwrap_or(u32::MAX)
                } else {
                    u32::MAX
                };
                self.aux(side, n, &vals[..k], s);
                k
            }
            26 => {
                // PRINT_FORMATTED: string, Options, NumArgs, Args...
                let s = self.string(p, p.end, false, side).unwrap_or(u32::MAX);
                let mut vals = Vec::new();
                while p.pos < p.end {
                    match p.varint() {
                        Ok(x) => vals.push(x),
                        Err(_) => break,
                    }
                }
                for (i, x) in vals.iter().take(3).enumerate() {
                    v[i] = *x;
                }
                self.aux(side, n, &vals, s);
                vals.len()
            }
            31 => self.payload_ex(p, n, v, side), // EX: SubID then sub-payload
            _ => {
                // INIT (24), NUMMODULES (27), END_CALL (28), TASK_TERMINATE (29), OS/user ids:
                // numeric fields. Values beyond the third go to aux.
                let mut first = [0u32; 3];
                let k = read_vals(p, &mut first);
                v.copy_from_slice(&first);
                if k == 3 && p.pos < p.end {
                    let mut vals = first.to_vec();
                    while p.pos < p.end {
                        match p.varint() {
                            Ok(x) => vals.push(x),
                            Err(_) => break,
                        }
                    }
                    self.aux(side, n, &vals, u32::MAX);
                    vals.len()
                } else {
                    k
                }
            }
        }
    }

    /// `payload` for the packets `payload_numeric` leaves: (values, the first three).
    #[inline(never)]
    fn payload_rare(
        &mut self,
        id: u32,
        p: &mut Cur<'_>,
        n: usize,
        side: &mut Side,
    ) -> (usize, [u32; 3]) {
        let mut v = [0u32; 3];
        let k = self.payload(id, p, n, &mut v, side);
        (k, v)
    }

    /// The payload of an EX packet (id 31): SubID, then the sub-payload.
    fn payload_ex(
        &mut self,
        p: &mut Cur<'_>,
        n: usize,
        v: &mut [u32; 3],
        side: &mut Side,
    ) -> usize {
        let sub = match p.varint() {
            Ok(x) => x,
            Err(_) => return 0,
        };
        v[0] = sub;
        match sub {
            1 | 6 => {
                // NAME_MARKER: MarkerId, string; REGISTER_DATA: Id, name, tail...
                let mut vals = vec![sub];
                let mut one = [0u32; 1];
                if read_vals(p, &mut one) == 1 {
                    vals.push(one[0]);
                    v[1] = one[0];
                    let s = self.string(p, p.end, false, side).unwrap_or(u32::MAX);
                    while p.pos < p.end {
                        match p.varint() {
                            Ok(x) => vals.push(x),
                            Err(_) => break,
                        }
                    }
                    self.aux(side, n, &vals, s);
                }
                vals.len()
            }
            _ => {
                let mut vals = [0u32; 8];
                let k = read_vals(p, &mut vals);
                v[1] = vals[0];
                v[2] = vals[1];
                if k > 2 {
                    let mut all = vec![sub];
                    all.extend_from_slice(&vals[..k]);
                    self.aux(side, n, &all, u32::MAX);
                }
                k + 1
            }
        }
    }

    fn aux(&self, side: &mut Side, n: usize, vals: &[u32], s: u32) {
        side.aux_row.push(n as u32);
        side.aux_start.push(side.aux_vals.len() as u32);
        side.aux_str.push(s);
        side.aux_vals.extend_from_slice(vals);
    }

    /// Read a SystemView string (§3.3) bounded by `limit`; returns its index.
    /// `to_stream_end`: `limit` is the window end, the room for the guess is up to the stream end.
    fn string(
        &mut self,
        c: &mut Cur<'_>,
        limit: usize,
        to_stream_end: bool,
        side: &mut Side,
    ) -> Result<u32, Fail> {
        let b = c.byte()?;
        let len: usize = if b != 0xFF {
            b as usize
        } else {
            if c.pos + 2 > limit {
                return Err(Fail::Eof("EOF in string length"));
            }
            let (x, y) = (self.data[c.pos], self.data[c.pos + 1]);
            c.pos += 2;
            let lohi = x as usize | (y as usize) << 8;
            let hilo = (x as usize) << 8 | y as usize;
            let room = if to_stream_end {
                usize::try_from(self.stream_len - self.rel(c.pos)).unwrap_or(usize::MAX)
            } else {
                limit - c.pos
            };
            match self.order {
                StrOrder::LoHi => lohi,
                StrOrder::HiLo => hilo,
                StrOrder::Auto => {
                    // `FF 00 nn` is the >= 3.56 form (lo-hi would mean nn * 256 bytes). Otherwise
                    // take the order whose length fits (<= 3.42 uses the long form only for >= 255
                    // bytes); if both fit, the shorter one (the other is ~256x longer than any
                    // SEGGER_SYSVIEW_MAX_STRING_LEN), with a notice when both are plausible.
                    let ok_lh = x != 0 && lohi >= 255 && lohi <= room;
                    let ok_hl = hilo <= room;
                    let pick = match (ok_lh, ok_hl) {
                        (true, false) => StrOrder::LoHi,
                        (false, true) => StrOrder::HiLo,
                        (false, false) => StrOrder::LoHi,
                        (true, true) => {
                            if lohi.max(hilo) <= 4096 {
                                side.diags.push(Diag {
                                    code: Code::StringOrder,
                                    offset: self.rel(c.pos - 3),
                                    count: 1,
                                    fatal: false,
                                    detail: format!(
                                        "ambiguous long-string length bytes {:02x} {:02x}: took the shorter length",
                                        x, y
                                    ),
                                });
                            }
                            if lohi <= hilo {
                                StrOrder::LoHi
                            } else {
                                StrOrder::HiLo
                            }
                        }
                    };
                    self.order = pick;
                    if pick == StrOrder::LoHi {
                        lohi
                    } else {
                        hilo
                    }
                }
            }
        };
        if len > limit - c.pos {
            return Err(Fail::Eof("EOF in string"));
        }
        side.strings
            .extend_from_slice(&self.data[c.pos..c.pos + len]);
        side.str_ends.push(side.strings.len() as u64);
        c.pos += len;
        Ok((side.str_ends.len() - 1) as u32)
    }
}

/// The common payloads inline: at most three numeric values and no string (OS and user ids,
/// INIT, END_CALL, ...: up to three values; EX other than NAME_MARKER and REGISTER_DATA: the
/// SubID and up to two values). Returns the number of values, or None for every other payload
/// (strings, more values, a damaged varint): `payload` decodes those from the start again.
#[inline(always)]
fn payload_numeric(id: u32, p: &mut Cur<'_>) -> Option<(usize, [u32; 3])> {
    let more = |p: &Cur<'_>| p.pos < p.end;
    let (mut k, mut v) = (0usize, [0u32; 3]);
    match id {
        25 | 26 => return None,
        31 => {
            v[0] = p.varint().ok()?;
            if v[0] == 1 || v[0] == 6 {
                return None;
            }
            k = 1;
        }
        _ => {
            if more(p) {
                v[0] = p.varint().ok()?;
                k = 1;
            }
        }
    }
    if more(p) {
        v[1] = p.varint().ok()?;
        k += 1;
        if more(p) {
            v[2] = p.varint().ok()?;
            k += 1;
        }
    }
    (!more(p)).then_some((k, v))
}

/// Read up to `out.len()` varints while bytes remain; returns how many were read.
fn read_vals(p: &mut Cur<'_>, out: &mut [u32]) -> usize {
    let mut k = 0;
    while k < out.len() && p.pos < p.end {
        match p.varint() {
            Ok(x) => {
                out[k] = x;
                k += 1;
            }
            Err(_) => {
                p.pos = p.end;
                break;
            }
        }
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::systemview::Options;

    fn cur(d: &[u8]) -> Cur<'_> {
        Cur {
            d,
            pos: 0,
            end: d.len(),
            org: 0,
        }
    }

    /// `varint` (its 1-2 byte, 8-byte-load and loop paths) equals the byte loop on every length
    /// 1..=6, cut by `end` anywhere and near the buffer's end: value, position and error.
    #[test]
    fn varint_paths_equal_the_loop() {
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..50_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = (seed % 12) as usize;
            let more = (seed >> 60) as usize % 7; // bytes with the continuation bit
            let bytes: Vec<u8> = (0..len)
                .map(|i| (seed >> (i * 5 % 56)) as u8 & 0x7F | if i < more { 0x80 } else { 0 })
                .collect();
            let end = (seed >> 40) as usize % (len + 1);
            let (mut a, mut b) = (Cur { end, ..cur(&bytes) }, Cur { end, ..cur(&bytes) });
            match (a.varint(), b.varint_slow()) {
                (Ok(x), Ok(y)) => assert_eq!((x, a.pos), (y, b.pos), "{:x?} end {}", bytes, end),
                (Err(Fail::Eof(_)), Err(Fail::Eof(_))) | (Err(Fail::Bad(_)), Err(Fail::Bad(_))) => {
                }
                _ => panic!("paths differ on {:x?} end {}", bytes, end),
            }
        }
    }

    /// The inline numeric payloads (`payload_numeric`, else `payload_rare`) equal `payload` on
    /// random payloads: values, count and aux records.
    #[test]
    fn numeric_fast_path_equals_payload() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let ids = [24u32, 25, 26, 27, 28, 29, 31, 32, 40, 1000, 70_000];
        for _ in 0..20_000 {
            let len = (next() % 14) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|_| match next() % 4 {
                    0 => 0x80 | next() as u8,
                    1 => (next() % 8) as u8,
                    _ => next() as u8 & 0x7F,
                })
                .collect();
            let id = ids[(next() % ids.len() as u64) as usize];
            let mut dec = Decoder::new(&bytes, 0, len, Options::default());
            let (mut want_side, mut got_side) = (Side::default(), Side::default());
            let mut want = [0u32; 3];
            let k = dec.payload(id, &mut cur(&bytes), 0, &mut want, &mut want_side);
            let mut p = cur(&bytes);
            let got = match payload_numeric(id, &mut p) {
                Some(r) => r,
                None => dec.payload_rare(id, &mut cur(&bytes), 0, &mut got_side),
            };
            assert_eq!(got, (k, want), "id {} payload {:02x?}", id, bytes);
            assert_eq!(
                (got_side.aux_vals, got_side.aux_row, got_side.strings),
                (want_side.aux_vals, want_side.aux_row, want_side.strings)
            );
        }
    }
}
