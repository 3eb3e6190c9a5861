//! PyO3 glue for `sv_model`: scan and convert the raw columns of a decoded stream (NumPy arrays
//! passed by address), filling an `EVENT_DTYPE` buffer directly (no per-event Python objects).
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::python::{alloc_bytearray, column_at, shrink};
use crate::sv_model::{self, OwnedParams, Params, Raw, ROW};

/// Column `key` of a stream: `(address, element count)` of a C-contiguous NumPy array of `T`
/// (dtype and contiguity checked by `trace_parsers.systemview.fast`, which keeps it alive).
fn col<'a, T: Copy>(d: &'a Bound<'_, PyDict>, key: &str) -> PyResult<&'a [T]> {
    let obj = d
        .get_item(key)?
        .ok_or_else(|| PyKeyError::new_err(key.to_string()))?;
    let (addr, len): (usize, usize) = obj.extract()?;
    column_at(addr, len, key)
}

fn check_len<O>(r: &Raw<'_, O>) -> PyResult<()> {
    let n = r.id.len();
    let ok = [
        r.core.len(),
        r.nv.len(),
        r.ts.len(),
        r.off.len(),
        r.p0.len(),
        r.p1.len(),
        r.p2.len(),
    ]
    .iter()
    .all(|l| *l == n);
    if ok {
        Ok(())
    } else {
        Err(PyValueError::new_err("decode columns differ in length"))
    }
}

macro_rules! with_raw {
    ($d:expr, |$r:ident| $body:expr) => {{
        let wide: usize = $d
            .get_item("off_size")?
            .ok_or_else(|| PyKeyError::new_err("off_size"))?
            .extract()?;
        if wide == 8 {
            let $r = Raw {
                id: col::<u32>($d, "id")?,
                core: col::<u8>($d, "core")?,
                nv: col::<u8>($d, "nv")?,
                ts: col::<u64>($d, "ts")?,
                off: col::<u64>($d, "off")?,
                p0: col::<u32>($d, "p0")?,
                p1: col::<u32>($d, "p1")?,
                p2: col::<u32>($d, "p2")?,
            };
            check_len(&$r)?;
            $body
        } else {
            let $r = Raw {
                id: col::<u32>($d, "id")?,
                core: col::<u8>($d, "core")?,
                nv: col::<u8>($d, "nv")?,
                ts: col::<u64>($d, "ts")?,
                off: col::<u32>($d, "off")?,
                p0: col::<u32>($d, "p0")?,
                p1: col::<u32>($d, "p1")?,
                p2: col::<u32>($d, "p2")?,
            };
            check_len(&$r)?;
            $body
        }
    }};
}

/// Counts, metadata rows, task handles and event count of one `sv_decode` result.
#[pyfunction]
pub fn sv_scan<'py>(py: Python<'py>, cols: &Bound<'py, PyDict>) -> PyResult<Bound<'py, PyDict>> {
    let s = with_raw!(cols, |r| py.allow_threads(|| sv_model::scan(&r)));
    let d = PyDict::new_bound(py);
    d.set_item("counts", PyList::new_bound(py, s.counts))?;
    d.set_item("meta_rows", PyList::new_bound(py, s.meta_rows))?;
    d.set_item("text_rows", PyList::new_bound(py, s.text_rows))?;
    d.set_item("handles", PyList::new_bound(py, s.handles))?;
    d.set_item("ovf_values", PyList::new_bound(py, s.ovf_values))?;
    d.set_item("events", s.events)?;
    d.set_item("min_ts", s.min_ts)?;
    let cc: Vec<(usize, u64)> = s
        .core_counts
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .map(|(i, c)| (i, *c))
        .collect();
    d.set_item("core_counts", PyList::new_bound(py, cc))?;
    d.set_item("event_cores", PyList::new_bound(py, s.event_cores))?;
    Ok(d)
}

/// Fill `rows` EVENT_DTYPE rows from the raw columns of one stream into a new bytearray.
/// Returns `(bytearray, api_ids, sorted)`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (cols, rows, *, start, stream_core, esp, ram_base, shift, handles, named,
                    mod_first, tick_hz, origin, log_base))]
pub fn sv_convert<'py>(
    py: Python<'py>,
    cols: &Bound<'py, PyDict>,
    rows: usize,
    start: u64,
    stream_core: u8,
    esp: bool,
    ram_base: u64,
    shift: u32,
    handles: &Bound<'py, PyBytes>,
    named: &Bound<'py, PyBytes>,
    mod_first: u32,
    tick_hz: u64,
    origin: u64,
    log_base: i64,
) -> PyResult<(Bound<'py, PyAny>, Vec<u32>, bool)> {
    if shift > 32 {
        return Err(PyValueError::new_err("shift must be 0..32"));
    }
    let hb = handles.as_bytes();
    if hb.len() % 8 != 0 {
        return Err(PyValueError::new_err("handles must be u64 values"));
    }
    let hv: Vec<u64> = hb
        .chunks_exact(8)
        .map(|c| u64::from_ne_bytes(c.try_into().unwrap()))
        .collect();
    let nv: Vec<bool> = named.as_bytes().iter().map(|b| *b != 0).collect();
    let (buf, addr) = alloc_bytearray(py, rows * ROW, 1)?;
    let p = Params {
        start,
        stream_core,
        esp,
        ram_base,
        shift,
        handles: &hv,
        named: &nv,
        mod_first,
        tick_hz,
        origin,
        log_base,
    };
    let done = with_raw!(cols, |r| {
        if r.id.len() < rows {
            return Err(PyValueError::new_err("more rows than packets"));
        }
        let addr_ = addr;
        py.allow_threads(|| {
            // SAFETY: `addr` is a fresh bytearray of rows * ROW bytes that Python has not seen.
            let o = unsafe { std::slice::from_raw_parts_mut(addr_ as *mut u8, rows * ROW) };
            sv_model::convert(&r, &p, o, &mut |_| {})
        })
    });
    if done.rows != rows {
        shrink(&buf, done.rows * ROW)?;
        return Err(PyValueError::new_err(format!(
            "expected {} event rows, converted {}",
            rows, done.rows
        )));
    }
    Ok((buf, done.api_ids, done.sorted))
}

/// `sv_convert` of a stream part by part (chunked reading): the running context per core, the
/// message counter and the API ids carry from one `convert` call to the next.
#[pyclass(module = "trace_parsers._core")]
pub struct SvConverter {
    par: OwnedParams,
    st: sv_model::ConvState,
}

#[pymethods]
impl SvConverter {
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (*, start, stream_core, esp, ram_base, shift, handles, named, mod_first,
                        tick_hz, origin, log_base))]
    fn new(
        start: u64,
        stream_core: u8,
        esp: bool,
        ram_base: u64,
        shift: u32,
        handles: &Bound<'_, PyBytes>,
        named: &Bound<'_, PyBytes>,
        mod_first: u32,
        tick_hz: u64,
        origin: u64,
        log_base: i64,
    ) -> PyResult<Self> {
        let par = owned_params(
            start,
            stream_core,
            esp,
            ram_base,
            shift,
            handles,
            named,
            mod_first,
            tick_hz,
            origin,
        )?;
        Ok(SvConverter {
            par,
            st: sv_model::ConvState::new(esp, log_base),
        })
    }

    /// EVENT_DTYPE rows of the `rows` non-NOP packets of the next part `cols`: a new bytearray,
    /// or, with `out=(address, bytes)` (a writable, C-contiguous EVENT_DTYPE array the caller
    /// keeps alive), written in place from row `at` (returns None).
    #[pyo3(signature = (cols, rows, out=None, at=0))]
    fn convert<'py>(
        &mut self,
        py: Python<'py>,
        cols: &Bound<'py, PyDict>,
        rows: usize,
        out: Option<(usize, usize)>,
        at: usize,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let (buf, addr) = match out {
            None => {
                let (b, a) = alloc_bytearray(py, rows * ROW, 1)?;
                (Some(b), a)
            }
            Some((a, len)) => {
                if a == 0 || (at + rows) * ROW > len {
                    return Err(PyValueError::new_err(format!(
                        "rows {}..{} do not fit the output of {} bytes",
                        at,
                        at + rows,
                        len
                    )));
                }
                (None, a + at * ROW)
            }
        };
        let p = self.par.params();
        let st = &mut self.st;
        let done = with_raw!(cols, |r| {
            let nonnop = r.id.iter().filter(|i| **i != 0).count();
            if nonnop != rows {
                return Err(PyValueError::new_err(format!(
                    "expected {} event rows, the part has {}",
                    rows, nonnop
                )));
            }
            py.allow_threads(|| {
                // SAFETY: `addr` is a fresh bytearray of rows * ROW bytes that Python has not
                // seen, or rows `at..at + rows` of the caller's array (bounds checked above).
                let o = unsafe { std::slice::from_raw_parts_mut(addr as *mut u8, rows * ROW) };
                sv_model::convert_part(&r, &p, st, o, &mut |_| {})
            })
        });
        debug_assert_eq!(done, rows);
        Ok(buf)
    }

    /// Ids >= 32 converted to API_CALL so far, ascending.
    #[getter]
    fn api_ids(&self) -> Vec<u32> {
        self.st.api_ids()
    }

    /// The index in `Trace.strings` of the next PRINT_FORMATTED message.
    #[getter]
    fn logs(&self) -> i64 {
        self.st.logs()
    }
}

/// Check and own the conversion parameters given from Python (`SvConverter`, `SvFused`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn owned_params(
    start: u64,
    stream_core: u8,
    esp: bool,
    ram_base: u64,
    shift: u32,
    handles: &Bound<'_, PyBytes>,
    named: &Bound<'_, PyBytes>,
    mod_first: u32,
    tick_hz: u64,
    origin: u64,
) -> PyResult<OwnedParams> {
    if shift > 32 {
        return Err(PyValueError::new_err("shift must be 0..32"));
    }
    let hb = handles.as_bytes();
    if hb.len() % 8 != 0 {
        return Err(PyValueError::new_err("handles must be u64 values"));
    }
    Ok(OwnedParams {
        start,
        stream_core,
        esp,
        ram_base,
        shift,
        handles: hb
            .chunks_exact(8)
            .map(|c| u64::from_ne_bytes(c.try_into().unwrap()))
            .collect(),
        named: named.as_bytes().iter().map(|b| *b != 0).collect(),
        mod_first,
        tick_hz,
        origin,
    })
}
