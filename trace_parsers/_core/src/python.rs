//! PyO3 glue: thin wrappers returning column buffers (bytearray/bytes that Python wraps with
//! `np.frombuffer`), never per-event Python objects.
use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::systemview::{self, Columns, Decoder, Options, Resume, Side, StrOrder};

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
        Ok((obj, data))
    }
}

pub(crate) fn shrink(obj: &Bound<'_, PyAny>, nbytes: usize) -> PyResult<()> {
    // SAFETY: obj is a bytearray we created; shrinking never moves data we still need.
    let rc = unsafe { pyo3::ffi::PyByteArray_Resize(obj.as_ptr(), nbytes as isize) };
    if rc != 0 {
        return Err(PyErr::fetch(obj.py()));
    }
    Ok(())
}

/// `len` initialised, aligned `T` at `addr`: a C-contiguous NumPy column passed by `(address, length)`,
/// which the caller keeps alive and unchanged while the call runs. `what` names it in the error.
pub(crate) fn column_at<'a, T: Copy>(addr: usize, len: usize, what: &str) -> PyResult<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    if addr == 0 || addr % std::mem::align_of::<T>() != 0 {
        return Err(PyValueError::new_err(format!(
            "column {what} is not aligned"
        )));
    }
    // SAFETY: per the contract above the address holds `len` initialised, aligned `T` that stay
    // alive and unchanged while this call runs.
    Ok(unsafe { std::slice::from_raw_parts(addr as *const T, len) })
}

pub(crate) fn as_bytes<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: plain-old-data integers viewed as bytes (native endianness, read as such by NumPy).
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

/// Column buffers of `cap` rows, filled by `run` (which returns the rows written and the
/// side tables), returned as the `sv_decode` dict.
fn decode_dict<'py, F>(
    py: Python<'py>,
    cap: usize,
    wide: bool,
    run: F,
) -> PyResult<Bound<'py, PyDict>>
where
    F: FnOnce(&mut Columns<'_, u32>, &mut Columns<'_, u64>, &mut Side) -> usize + Send,
{
    let off_size = if wide { 8 } else { 4 };
    let (id, a_id) = alloc_bytearray(py, cap * 4, 4)?;
    let (core, a_core) = alloc_bytearray(py, cap, 1)?;
    let (nv, a_nv) = alloc_bytearray(py, cap, 1)?;
    let (ts, a_ts) = alloc_bytearray(py, cap * 8, 8)?;
    let (off, a_off) = alloc_bytearray(py, cap * off_size, off_size)?;
    let (p0, a_p0) = alloc_bytearray(py, cap * 4, 4)?;
    let (p1, a_p1) = alloc_bytearray(py, cap * 4, 4)?;
    let (p2, a_p2) = alloc_bytearray(py, cap * 4, 4)?;
    let (n, side) = py.allow_threads(|| {
        let mut side = Side::default();
        // SAFETY: every address points to a live bytearray buffer of at least `cap` elements of
        // the right type and alignment (checked in alloc_bytearray); the buffers are not shared
        // while the GIL is released because Python has not seen them yet. Only one of the two
        // offset views (chosen by `wide`) is written.
        let (mut narrow, mut wide_cols) = unsafe {
            let mk = |o: usize, k: usize| (o, if wide == (k == 8) { cap } else { 0 });
            let (o4, c4) = mk(a_off, 4);
            let (o8, c8) = mk(a_off, 8);
            (
                Columns {
                    id: std::slice::from_raw_parts_mut(a_id as *mut u32, c4),
                    core: std::slice::from_raw_parts_mut(a_core as *mut u8, c4),
                    nv: std::slice::from_raw_parts_mut(a_nv as *mut u8, c4),
                    ts: std::slice::from_raw_parts_mut(a_ts as *mut u64, c4),
                    off: std::slice::from_raw_parts_mut(o4 as *mut u32, c4),
                    p0: std::slice::from_raw_parts_mut(a_p0 as *mut u32, c4),
                    p1: std::slice::from_raw_parts_mut(a_p1 as *mut u32, c4),
                    p2: std::slice::from_raw_parts_mut(a_p2 as *mut u32, c4),
                },
                Columns {
                    id: std::slice::from_raw_parts_mut(a_id as *mut u32, c8),
                    core: std::slice::from_raw_parts_mut(a_core as *mut u8, c8),
                    nv: std::slice::from_raw_parts_mut(a_nv as *mut u8, c8),
                    ts: std::slice::from_raw_parts_mut(a_ts as *mut u64, c8),
                    off: std::slice::from_raw_parts_mut(o8 as *mut u64, c8),
                    p0: std::slice::from_raw_parts_mut(a_p0 as *mut u32, c8),
                    p1: std::slice::from_raw_parts_mut(a_p1 as *mut u32, c8),
                    p2: std::slice::from_raw_parts_mut(a_p2 as *mut u32, c8),
                },
            )
        };
        let n = run(&mut narrow, &mut wide_cols, &mut side);
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
    side_items(&d, &side)?;
    Ok(d)
}

/// The aux records, strings, diagnostics and stream facts of `side` into the result dict `d`.
pub(crate) fn side_items(d: &Bound<'_, PyDict>, side: &Side) -> PyResult<()> {
    let py = d.py();
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
    d.set_item("str_order", order_code(side.str_order))?;
    Ok(())
}

pub(crate) fn order_code(o: Option<StrOrder>) -> u8 {
    match o {
        None | Some(StrOrder::Auto) => 0,
        Some(StrOrder::LoHi) => 1,
        Some(StrOrder::HiLo) => 2,
    }
}

pub(crate) fn parse_order(str_order: u8) -> PyResult<StrOrder> {
    match str_order {
        0 => Ok(StrOrder::Auto),
        1 => Ok(StrOrder::LoHi),
        2 => Ok(StrOrder::HiLo),
        x => Err(PyValueError::new_err(format!(
            "str_order must be 0, 1 or 2, got {}",
            x
        ))),
    }
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
    let opts = Options {
        esp_core_bit,
        str_order: parse_order(str_order)?,
        expect_sync,
    };
    let cap = systemview::max_packets(end - start);
    let wide = end - start > u32::MAX as usize;
    decode_dict(py, cap, wide, |narrow, wide_cols, side| {
        let mut dec = Decoder::new(bytes, start, end, opts);
        if wide {
            dec.run(wide_cols, side)
        } else {
            dec.run(narrow, side)
        }
    })
}

/// A SystemView stream decoded window by window (bounded memory): `feed(block, last)` appends
/// the next bytes of the stream and returns the `sv_decode` dict of the packets completed so far
/// (offsets stream-relative; `aux_row` relative to the returned rows). Bytes of a packet cut by
/// the block end are kept and decoded with the next block; the rows, diagnostics and state
/// (cumulative ticks, string order, resync) equal those of one `sv_decode` of the whole stream.
#[pyclass(module = "trace_parsers._core")]
pub struct SvStreamDecoder {
    opts: Options,
    st: Resume,
    stream_len: u64,
    /// Stream offset of `buf[0]`.
    base: u64,
    /// File offset of the stream's first byte (for the positions quoted in messages).
    file_start: u64,
    buf: Vec<u8>,
    done: bool,
}

#[pymethods]
impl SvStreamDecoder {
    #[new]
    #[pyo3(signature = (stream_len, esp_core_bit=false, str_order=0, expect_sync=true, file_start=0))]
    fn new(
        stream_len: u64,
        esp_core_bit: bool,
        str_order: u8,
        expect_sync: bool,
        file_start: u64,
    ) -> PyResult<Self> {
        let opts = Options {
            esp_core_bit,
            str_order: parse_order(str_order)?,
            expect_sync,
        };
        Ok(SvStreamDecoder {
            opts,
            st: Resume::new(opts),
            stream_len,
            base: 0,
            file_start,
            buf: Vec::new(),
            done: false,
        })
    }

    /// Bytes kept from earlier blocks (the start of a packet not yet complete).
    #[getter]
    fn pending(&self) -> usize {
        self.buf.len()
    }

    /// Stream offset of the next byte `feed` expects.
    #[getter]
    fn position(&self) -> u64 {
        self.base + self.buf.len() as u64
    }

    #[pyo3(signature = (block, last=false))]
    fn feed<'py>(
        &mut self,
        py: Python<'py>,
        block: &Bound<'py, PyBytes>,
        last: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        if self.done {
            return Err(PyValueError::new_err("feed after the last block"));
        }
        let b = block.as_bytes();
        let end = self.base + (self.buf.len() + b.len()) as u64;
        if end > self.stream_len || (last && end != self.stream_len) {
            return Err(PyValueError::new_err(format!(
                "the blocks fed end at stream offset {}, the stream has {} bytes",
                end, self.stream_len
            )));
        }
        self.buf.extend_from_slice(b);
        self.done = last;
        let wide = self.stream_len > u32::MAX as u64;
        let cap = systemview::max_packets(self.buf.len());
        let (buf, base, stream_len, opts, st) =
            (&self.buf, self.base, self.stream_len, self.opts, self.st);
        let file_start = self.file_start;
        let mut out = (st, 0usize);
        let d = decode_dict(py, cap, wide, |narrow, wide_cols, side| {
            let mut dec = Decoder::resume(buf, 0, buf.len(), base, stream_len, opts, st)
                .at_file_offset(file_start);
            let (n, used) = if wide {
                dec.run_window(last, wide_cols, side)
            } else {
                dec.run_window(last, narrow, side)
            };
            out = (dec.state(), used);
            n
        })?;
        let (st, used) = out;
        self.st = st;
        self.buf.drain(..used);
        self.base += used as u64;
        if last {
            self.buf = Vec::new();
        }
        Ok(d)
    }
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(core_version, m)?)?;
    m.add_function(wrap_pyfunction!(sv_decode, m)?)?;
    m.add_class::<SvStreamDecoder>()?;
    m.add_class::<crate::python_model::SvConverter>()?;
    m.add_class::<crate::python_fused::SvFused>()?;
    m.add_function(wrap_pyfunction!(crate::python_model::sv_scan, m)?)?;
    m.add_function(wrap_pyfunction!(crate::python_model::sv_convert, m)?)?;
    m.add_function(wrap_pyfunction!(crate::python_kstate::kstate_pass, m)?)?;
    m.add("SV_MAX_PACKETS_PER_BYTE", 0.5)?;
    Ok(())
}
