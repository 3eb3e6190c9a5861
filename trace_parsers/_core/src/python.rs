//! PyO3 glue: thin wrappers returning column buffers (bytearray/bytes that Python wraps with
//! `np.frombuffer`), never per-event Python objects.
use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::systemview::{self, Columns, Decoder, Offset, Options, Side, StrOrder};

/// Version of the compiled core.
#[pyfunction]
fn core_version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// An uninitialised bytearray of `nbytes` (untouched pages cost no memory) and its buffer.
pub(crate) fn alloc_bytearray(
    py: Python<'_>,
    nbytes: usize,
    align: usize,
) -> PyResult<(Bound<'_, PyAny>, usize)> {
    let size = isize::try_from(nbytes).map_err(|_| PyMemoryError::new_err("column too large"))?;
    // SAFETY: PyByteArray_FromStringAndSize(NULL, n) allocates n (+1) bytes without copying; the
    // returned new reference is owned by the Bound.
    unsafe {
        let ptr = pyo3::ffi::PyByteArray_FromStringAndSize(std::ptr::null(), size);
        if ptr.is_null() {
            return Err(PyErr::fetch(py));
        }
        let obj = Bound::from_owned_ptr(py, ptr);
        let data = pyo3::ffi::PyByteArray_AsString(ptr) as usize;
        if data == 0 || data % align != 0 {
            return Err(PyMemoryError::new_err(
                "unaligned or missing bytearray buffer",
            ));
        }
        advise_huge(data, nbytes);
        Ok((obj, data))
    }
}

/// Ask for transparent huge pages on large column buffers: first-touch page faults are a large
/// part of the decode cost. Advisory only; failures are ignored.
fn advise_huge(addr: usize, len: usize) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        if len < 4 * HUGE || std::env::var_os("CROSSTRACE_NO_THP").is_some() {
            return;
        }
        let page = 4096usize;
        let start = (addr + page - 1) & !(page - 1);
        let end = (addr + len) & !(page - 1);
        if end > start {
            // SAFETY: the range lies inside a live allocation we own; MADV_HUGEPAGE only changes
            // how the kernel backs it.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (addr, len);
}

pub(crate) fn shrink(obj: &Bound<'_, PyAny>, nbytes: usize) -> PyResult<()> {
    // SAFETY: obj is a bytearray we created; shrinking never moves data we still need.
    let rc = unsafe { pyo3::ffi::PyByteArray_Resize(obj.as_ptr(), nbytes as isize) };
    if rc != 0 {
        return Err(PyErr::fetch(obj.py()));
    }
    Ok(())
}

fn as_bytes<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: plain-old-data integers viewed as bytes (native endianness, read as such by NumPy).
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

struct Addrs {
    id: usize,
    core: usize,
    nv: usize,
    ts: usize,
    off: usize,
    p0: usize,
    p1: usize,
    p2: usize,
}

fn run_into<O: Offset>(
    data: &[u8],
    start: usize,
    end: usize,
    opts: Options,
    cap: usize,
    a: &Addrs,
    side: &mut Side,
) -> usize {
    // SAFETY: every address points to a live bytearray buffer of at least `cap` elements of the
    // right type and alignment (checked in alloc_bytearray); the buffers are not shared while the
    // GIL is released because Python has not seen them yet.
    let mut cols = unsafe {
        Columns {
            id: std::slice::from_raw_parts_mut(a.id as *mut u32, cap),
            core: std::slice::from_raw_parts_mut(a.core as *mut u8, cap),
            nv: std::slice::from_raw_parts_mut(a.nv as *mut u8, cap),
            ts: std::slice::from_raw_parts_mut(a.ts as *mut u64, cap),
            off: std::slice::from_raw_parts_mut(a.off as *mut O, cap),
            p0: std::slice::from_raw_parts_mut(a.p0 as *mut u32, cap),
            p1: std::slice::from_raw_parts_mut(a.p1 as *mut u32, cap),
            p2: std::slice::from_raw_parts_mut(a.p2 as *mut u32, cap),
        }
    };
    Decoder::new(data, start, end, opts).run(&mut cols, side)
}

/// Decode one SystemView stream `data[start:end]`.
///
/// Returns a dict of column buffers (`id` u32, `core` u8, `nv` u8, `ts` u64, `off` u32 or u64 as
/// given by `off_size`, `p0`..`p2` u32), the aux records (`aux_row`, `aux_start`, `aux_str`,
/// `aux_vals` u32), the string table (`strings`, `str_ends` u64), `diags` as a list of
/// `(code, offset, count, fatal, detail)`, `sync_bytes`, `ts_end` and `str_order`
/// (0 unknown, 1 lo-hi, 2 hi-lo).
#[pyfunction]
#[pyo3(signature = (data, start=0, end=None, esp_core_bit=false, str_order=0, expect_sync=true))]
fn sv_decode<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyBytes>,
    start: usize,
    end: Option<usize>,
    esp_core_bit: bool,
    str_order: u8,
    expect_sync: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let bytes: &[u8] = data.as_bytes();
    let end = end.unwrap_or(bytes.len()).min(bytes.len());
    if start > end {
        return Err(PyValueError::new_err(format!(
            "start {} is after end {}",
            start, end
        )));
    }
    let order = match str_order {
        0 => StrOrder::Auto,
        1 => StrOrder::LoHi,
        2 => StrOrder::HiLo,
        x => {
            return Err(PyValueError::new_err(format!(
                "str_order must be 0, 1 or 2, got {}",
                x
            )))
        }
    };
    let opts = Options {
        esp_core_bit,
        str_order: order,
        expect_sync,
    };
    let cap = systemview::max_packets(end - start);
    let wide = end - start > u32::MAX as usize;
    let off_size = if wide { 8 } else { 4 };
    let (id, a_id) = alloc_bytearray(py, cap * 4, 4)?;
    let (core, a_core) = alloc_bytearray(py, cap, 1)?;
    let (nv, a_nv) = alloc_bytearray(py, cap, 1)?;
    let (ts, a_ts) = alloc_bytearray(py, cap * 8, 8)?;
    let (off, a_off) = alloc_bytearray(py, cap * off_size, off_size)?;
    let (p0, a_p0) = alloc_bytearray(py, cap * 4, 4)?;
    let (p1, a_p1) = alloc_bytearray(py, cap * 4, 4)?;
    let (p2, a_p2) = alloc_bytearray(py, cap * 4, 4)?;
    let addrs = Addrs {
        id: a_id,
        core: a_core,
        nv: a_nv,
        ts: a_ts,
        off: a_off,
        p0: a_p0,
        p1: a_p1,
        p2: a_p2,
    };
    let (n, side) = py.allow_threads(|| {
        let mut side = Side::default();
        let n = if wide {
            run_into::<u64>(bytes, start, end, opts, cap, &addrs, &mut side)
        } else {
            run_into::<u32>(bytes, start, end, opts, cap, &addrs, &mut side)
        };
        (n, side)
    });
    shrink(&id, n * 4)?;
    shrink(&core, n)?;
    shrink(&nv, n)?;
    shrink(&ts, n * 8)?;
    shrink(&off, n * off_size)?;
    shrink(&p0, n * 4)?;
    shrink(&p1, n * 4)?;
    shrink(&p2, n * 4)?;
    let d = PyDict::new_bound(py);
    d.set_item("n", n)?;
    d.set_item("id", id)?;
    d.set_item("core", core)?;
    d.set_item("nv", nv)?;
    d.set_item("ts", ts)?;
    d.set_item("off", off)?;
    d.set_item("off_size", off_size)?;
    d.set_item("p0", p0)?;
    d.set_item("p1", p1)?;
    d.set_item("p2", p2)?;
    d.set_item("aux_row", PyBytes::new_bound(py, as_bytes(&side.aux_row)))?;
    d.set_item(
        "aux_start",
        PyBytes::new_bound(py, as_bytes(&side.aux_start)),
    )?;
    d.set_item("aux_str", PyBytes::new_bound(py, as_bytes(&side.aux_str)))?;
    d.set_item("aux_vals", PyBytes::new_bound(py, as_bytes(&side.aux_vals)))?;
    d.set_item("strings", PyBytes::new_bound(py, &side.strings))?;
    d.set_item("str_ends", PyBytes::new_bound(py, as_bytes(&side.str_ends)))?;
    let diags = PyList::empty_bound(py);
    for g in &side.diags {
        diags.append((
            g.code.as_str(),
            g.offset,
            g.count,
            g.fatal,
            g.detail.as_str(),
        ))?;
    }
    d.set_item("diags", diags)?;
    d.set_item("sync_bytes", side.sync_bytes)?;
    d.set_item("ts_end", side.ts_end)?;
    d.set_item(
        "str_order",
        match side.str_order {
            None | Some(StrOrder::Auto) => 0u8,
            Some(StrOrder::LoHi) => 1,
            Some(StrOrder::HiLo) => 2,
        },
    )?;
    Ok(d)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(core_version, m)?)?;
    m.add_function(wrap_pyfunction!(sv_decode, m)?)?;
    m.add_function(wrap_pyfunction!(crate::python_model::sv_scan, m)?)?;
    m.add_function(wrap_pyfunction!(crate::python_model::sv_convert, m)?)?;
    m.add("SV_MAX_PACKETS_PER_BYTE", 0.5)?;
    Ok(())
}
