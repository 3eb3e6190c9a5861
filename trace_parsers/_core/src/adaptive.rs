//! An adaptive integer column: constant (one value and a count) while every value so far is
//! equal, then dense little-endian values of the narrowest width in {1, 2, 4, 8} bytes that
//! holds every value seen, widened (what it holds re-encoded) when a value does not fit.
//!
//! Values come in slices (`extend`): one pass per slice (an OR of the values with their sign
//! folded in, and of their differences to the first) decides the width and whether they are all
//! equal, so the caller batches its rows (`sv_cols_out`) instead of checking every value.
//! Signed columns use the signed range of a width (i8/i16/i32/i64), unsigned ones the unsigned
//! range. Plain Rust (no GIL): it lives inside `allow_threads`. The dense bytes are kept in a
//! `Store`: a `Vec<u8>`, or (the Python glue) a buffer Python takes over without a copy.

use std::ops::{BitOr, BitXor};

/// An integer type an `Adaptive` column takes.
pub trait Lane: Copy + Eq + Default + BitOr<Output = Self> + BitXor<Output = Self> {
    const SIGNED: bool;
    /// The value (exact: every lane fits i128).
    fn wide(self) -> i128;
    /// The low 64 bits of the two's complement value (the bytes a width keeps).
    fn bits(self) -> u64;
    /// The value with its sign folded in (`x` for `x >= 0`, `!x = -x - 1` below): never
    /// negative, and `x` fits a signed width iff its fold does (`width_of`).
    fn fold_sign(self) -> Self;
}

macro_rules! lane {
    ($($t:ty => $signed:expr),*) => {$(
        impl Lane for $t {
            const SIGNED: bool = $signed;
            #[inline(always)]
            fn wide(self) -> i128 {
                self as i128
            }
            #[inline(always)]
            fn bits(self) -> u64 {
                self as u64
            }
            #[inline(always)]
            fn fold_sign(self) -> Self {
                // arithmetic shift: all ones for a negative value, else 0
                if $signed { self ^ (self >> (<$t>::BITS - 1)) } else { self }
            }
        }
    )*};
}
lane!(u8 => false, u16 => false, u32 => false, u64 => false,
      i8 => true, i16 => true, i32 => true, i64 => true);

/// The narrowest width in bytes (1, 2, 4 or 8) holding every value whose sign-folded bits
/// (`Lane::fold_sign`, OR-ed together) are `mag`.
pub fn width_of(signed: bool, mag: u64) -> usize {
    match 64 - mag.leading_zeros() + signed as u32 {
        0..=8 => 1,
        9..=16 => 2,
        17..=32 => 4,
        _ => 8,
    }
}

/// `fold_sign` of the 64-bit value `bits`.
fn fold64(signed: bool, bits: u64) -> u64 {
    if signed {
        let x = bits as i64;
        (x ^ (x >> 63)) as u64
    } else {
        bits
    }
}

/// Value `i` of dense `data` of `width` bytes per value.
#[inline]
pub fn read(data: &[u8], width: usize, signed: bool, i: usize) -> i128 {
    let mut b = [0u8; 8];
    b[..width].copy_from_slice(&data[i * width..(i + 1) * width]);
    let u = u64::from_le_bytes(b);
    let shift = 64 - 8 * width as u32;
    if signed {
        (((u << shift) as i64) >> shift) as i128
    } else {
        u as i128
    }
}

/// Where a dense column keeps its bytes; it only grows at the end.
pub trait Store: Send + Sized {
    /// An empty store with room for about `room` bytes (a hint: untouched room costs no
    /// memory; a store that cannot reserve it grows as bytes come).
    fn with_room(room: usize) -> Self;
    /// The bytes held.
    fn bytes(&self) -> &[u8];
    /// Make the store `n` bytes longer; returns the new bytes (any contents: the caller
    /// overwrites them), or `NoMemory` (the store unchanged) when they cannot be had.
    fn grow(&mut self, n: usize) -> Result<&mut [u8], NoMemory>;
}

/// A store could not grow: no memory (or address space) for the bytes asked for. Never a
/// panic or an abort: the reader turns it into Python's `MemoryError`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoMemory;

impl Store for Vec<u8> {
    fn with_room(room: usize) -> Self {
        let mut v = Vec::new();
        let _ = v.try_reserve_exact(room); // the room is a hint
        v
    }

    fn bytes(&self) -> &[u8] {
        self
    }

    fn grow(&mut self, n: usize) -> Result<&mut [u8], NoMemory> {
        self.try_reserve(n).map_err(|_| NoMemory)?;
        let at = self.len();
        self.resize(at + n, 0);
        Ok(&mut self[at..])
    }
}

/// A finished column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Column<S = Vec<u8>> {
    /// `len` times `value`.
    Const {
        value: i128,
        len: usize,
        signed: bool,
    },
    /// Little-endian values of `width` bytes (`data.bytes().len() / width` of them).
    Dense { data: S, width: usize, signed: bool },
}

impl<S: Store> Column<S> {
    pub fn len(&self) -> usize {
        match self {
            Column::Const { len, .. } => *len,
            Column::Dense { data, width, .. } => data.bytes().len() / width,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Value `i`.
    pub fn get(&self, i: usize) -> i128 {
        match self {
            Column::Const { value, len, .. } => {
                assert!(i < *len, "row {} of {}", i, len);
                *value
            }
            Column::Dense {
                data,
                width,
                signed,
            } => read(data.bytes(), *width, *signed, i),
        }
    }
}

impl Column {
    /// The NumPy dtype string of a dense column (`<i8`, `u1`, ...).
    pub fn dtype(width: usize, signed: bool) -> &'static str {
        match (signed, width) {
            (true, 1) => "i1",
            (true, 2) => "<i2",
            (true, 4) => "<i4",
            (true, _) => "<i8",
            (false, 1) => "u1",
            (false, 2) => "<u2",
            (false, 4) => "<u4",
            (false, _) => "<u8",
        }
    }
}

/// The column being built (see the module doc).
#[derive(Debug, Clone)]
pub struct Adaptive<S = Vec<u8>> {
    signed: bool,
    len: usize,
    /// Bytes per value; 0 while constant.
    width: usize,
    /// The constant (while `width == 0` and `len > 0`): its low 64 bits (`Lane::bits`).
    value: u64,
    /// The dense values (once `width > 0`).
    data: Option<S>,
    /// Values to reserve room for when the column turns dense or widens (untouched room costs
    /// no memory; growing a large buffer later may copy it).
    hint: usize,
}

impl<S: Store> Adaptive<S> {
    /// An empty column; `hint`: the values it will likely hold at most.
    pub fn new(signed: bool, hint: usize) -> Self {
        Adaptive {
            signed,
            len: 0,
            width: 0,
            value: 0,
            data: None,
            hint,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes per value (0 while constant).
    pub fn width(&self) -> usize {
        self.width
    }

    /// Append `v` (a lane of the column's signedness). `NoMemory`: nothing appended (the
    /// column may have been widened).
    pub fn extend<T: Lane>(&mut self, v: &[T]) -> Result<(), NoMemory> {
        debug_assert_eq!(T::SIGNED, self.signed);
        let Some(&first) = v.first() else {
            return Ok(());
        };
        let zero = T::default();
        let (mag, diff) = v.iter().fold((zero, zero), |(m, d), &x| {
            (m | x.fold_sign(), d | (x ^ first))
        });
        let mag = mag.bits();
        if self.width == 0 {
            if self.len == 0 {
                self.value = first.bits();
            }
            if diff == zero && first.bits() == self.value {
                self.len += v.len();
                return Ok(());
            }
            let w = width_of(self.signed, mag | fold64(self.signed, self.value));
            self.dense(w)?;
        } else if width_of(self.signed, mag) > self.width {
            self.dense(width_of(self.signed, mag))?;
        }
        let out = (self.data.as_mut().expect("dense")).grow(self.width * v.len())?;
        match self.width {
            1 => put::<1, T>(out, v),
            2 => put::<2, T>(out, v),
            4 => put::<4, T>(out, v),
            _ => put::<8, T>(out, v),
        }
        self.len += v.len();
        Ok(())
    }

    /// Re-encode what the column holds as dense values of `width` bytes (unchanged on
    /// `NoMemory`).
    fn dense(&mut self, width: usize) -> Result<(), NoMemory> {
        let mut data = S::with_room(self.hint.max(self.len).saturating_mul(width));
        let out = data.grow(self.len * width)?;
        match &self.data {
            None => {
                let b = self.value.to_le_bytes();
                for c in out.chunks_exact_mut(width) {
                    c.copy_from_slice(&b[..width]);
                }
            }
            Some(old) => {
                for (i, c) in out.chunks_exact_mut(width).enumerate() {
                    let b = (read(old.bytes(), self.width, self.signed, i) as u64).to_le_bytes();
                    c.copy_from_slice(&b[..width]);
                }
            }
        }
        self.data = Some(data);
        self.width = width;
        Ok(())
    }

    /// The finished column (an empty one is dense, of width 1).
    pub fn finish(self) -> Column<S> {
        let signed = self.signed;
        match self.width {
            0 if self.len > 0 => Column::Const {
                value: if signed {
                    self.value as i64 as i128
                } else {
                    self.value as i128
                },
                len: self.len,
                signed,
            },
            0 => Column::Dense {
                data: S::with_room(0),
                width: 1,
                signed,
            },
            width => Column::Dense {
                data: self.data.expect("dense"),
                width,
                signed,
            },
        }
    }
}

/// The low `W` bytes of every value of `v` into `out` (`W * v.len()` bytes).
#[inline(always)]
fn put<const W: usize, T: Lane>(out: &mut [u8], v: &[T]) {
    for (c, x) in out.chunks_exact_mut(W).zip(v) {
        c.copy_from_slice(&x.bits().to_le_bytes()[..W]);
    }
}

#[cfg(test)]
#[path = "adaptive_tests.rs"]
pub(crate) mod tests;
