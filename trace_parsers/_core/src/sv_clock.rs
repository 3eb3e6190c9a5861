//! Ticks -> ns for `sv_model` (the rule of `model.ticks_to_ns`): an exact division by the
//! invariant tick rate, and the clock that follows a stream's growing timestamps.

/// Exact `x / d` for an invariant divisor: one multiply-high by a 65-bit reciprocal
/// `2^64 + m = ceil(2^(65+l) / d)` (`2^l <= d < 2^(l+1)`), no correction step (Granlund and
/// Montgomery; exact for every `x < 2^64` because `(2^64 + m) * d - 2^(65+l) < d <= 2^(l+1)`).
#[derive(Clone, Copy)]
pub(super) struct Div {
    d: u64,
    m: u64,
    l: u32,
    pow2: bool,
}

impl Div {
    pub(super) fn new(d: u64) -> Self {
        let l = 63 - d.max(1).leading_zeros();
        let pow2 = d.is_power_of_two();
        let m = if d > 1 && !pow2 {
            // floor(2^(65+l) / d) + 1 - 2^64; d is no power of two, so 2^(65+l) - 1 gives
            // the same quotient (and fits u128 when l = 63)
            let num = if l == 63 {
                u128::MAX
            } else {
                (1u128 << (65 + l)) - 1
            };
            (num / d as u128 + 1 - (1u128 << 64)) as u64
        } else {
            0
        };
        Div { d, m, l, pow2 }
    }

    #[inline(always)]
    pub(super) fn div_rem(self, x: u64) -> (u64, u64) {
        if self.d <= 1 {
            return (x, 0);
        }
        let q = if self.pow2 {
            x >> self.l
        } else {
            let hi = ((x as u128 * self.m as u128) >> 64) as u64;
            (((x - hi) >> 1) + hi) >> self.l
        };
        (q, x - q * self.d)
    }
}

/// Ticks -> ns since the origin: `q * 1e9 + r * 1e9 / hz` (`model.ticks_to_ns`, wrapping as
/// NumPy's int64 does), or the raw tick difference when the rate is unknown.
pub(super) struct Clock {
    hz: u64,
    div: Div,
    origin: u64,
    /// The last `rel` and its `(rel / hz, rel % hz)`: timestamps mostly grow by less than `hz`,
    /// so the quotient follows by one comparison instead of a division.
    last: (u64, u64, u64),
}

impl Clock {
    pub(super) fn new(hz: u64, origin: u64) -> Self {
        Clock {
            hz,
            div: Div::new(hz),
            origin,
            last: (0, 0, 0),
        }
    }

    #[inline(always)]
    pub(super) fn ns(&mut self, ts_raw: u64) -> i64 {
        let rel = ts_raw.wrapping_sub(self.origin);
        if self.hz == 0 {
            return rel as i64;
        }
        let (prev, q0, r0) = self.last;
        let (q, rem) = match rel.checked_sub(prev) {
            Some(d) if d < self.hz => {
                let r = r0 + d; // < 2 * hz
                let c = (r >= self.hz) as u64;
                (q0 + c, r - c * self.hz)
            }
            _ => self.div.div_rem(rel),
        };
        self.last = (rel, q, rem);
        let frac = if self.hz <= 18_446_744_073 {
            self.div.div_rem(rem * 1_000_000_000).0
        } else {
            (rem as u128 * 1_000_000_000 / self.hz as u128) as u64
        };
        (q as i64)
            .wrapping_mul(1_000_000_000)
            .wrapping_add(frac as i64)
    }
}
