//! PyO3 glue for `sv_fused`: one SystemView stream read window by window straight into an
//! `EVENT_DTYPE` buffer (a bytearray grown as rows come, never zero-filled by us, shrunk to the
//! rows at the end), plus the side tables the Python side needs (`trace_parsers.systemview.fast`).
use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::python::{advise_huge, alloc_bytearray, as_bytes, parse_order, shrink, side_items};
use crate::python_model::owned_params;
use crate::sv_fused::{Fused, FusedState};
use crate::sv_model::{ConvState, OwnedParams, ROW};
use crate::systemview::{max_packets, Decoder, Options, Resume, Side};

/// A stream read by `feed(address, length, last)` calls over consecutive windows of its bytes
/// (a window starts at the first byte the previous call did not consume), then `finish()`.
#[pyclass(module = "trace_parsers._core")]
pub struct SvFused {
    opts: Options,
    dec: Resume,
    stream_len: u64,
    /// Stream offset of the next window's first byte.
    base: u64,
    par: OwnedParams,
    conv: ConvState,
    st: FusedState,
    side: Side,
    out: Option<Py<PyAny>>,
    done: bool,
}

#[pymethods]
impl SvFused {
    /// `stream_len`: bytes of the stream; `start`: its file offset; `esp_core_bit`: decode the
    /// ESP core bit (default: `esp`). The other keywords are the conversion parameters of
    /// `sv_convert`.
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (stream_len, *, start, stream_core, esp, ram_base, shift, handles, named,
                        mod_first, tick_hz, origin, log_base, esp_core_bit=None, str_order=0))]
    fn new(
        stream_len: u64,
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
        esp_core_bit: Option<bool>,
        str_order: u8,
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
        let opts = Options {
            esp_core_bit: esp_core_bit.unwrap_or(esp),
            str_order: parse_order(str_order)?,
            expect_sync: true,
        };
        Ok(SvFused {
            opts,
            dec: Resume::new(opts),
            stream_len,
            base: 0,
            par,
            conv: ConvState::new(esp, log_base),
            st: FusedState::default(),
            side: Side::default(),
            out: None,
            done: false,
        })
    }

    /// Decode and convert the window of `length` bytes at `address` (a buffer the caller keeps
    /// alive and unchanged during the call), the stream bytes from `position` on. Returns the
    /// bytes consumed: the rest (a packet cut by the window end) starts the next window.
    #[pyo3(signature = (address, length, last=false))]
    fn feed(
        &mut self,
        py: Python<'_>,
        address: usize,
        length: usize,
        last: bool,
    ) -> PyResult<usize> {
        if self.done {
            return Err(PyValueError::new_err("feed after the last window"));
        }
        let end = self.base + length as u64;
        if end > self.stream_len || (last && end != self.stream_len) || (address == 0 && length > 0)
        {
            return Err(PyValueError::new_err(format!(
                "the window ends at stream offset {}, the stream has {} bytes",
                end, self.stream_len
            )));
        }
        // the first window reserves rows for the whole stream (untouched pages cost nothing;
        // growing a bytearray later may copy it)
        let whole = max_packets(usize::try_from(self.stream_len).unwrap_or(usize::MAX)) + 2;
        let need =
            (self.st.rows + max_packets(length)).max(if self.out.is_none() { whole } else { 0 });
        let (out_addr, out_len) = self.reserve(py, need)?;
        let p = self.par.params();
        let (opts, dec, base, stream_len, start) = (
            self.opts,
            self.dec,
            self.base,
            self.stream_len,
            self.par.start,
        );
        let (st, conv, side) = (&mut self.st, &mut self.conv, &mut self.side);
        let (used, next) = py.allow_threads(|| {
            // SAFETY: the caller keeps `length` bytes at `address` alive and unchanged during
            // the call; `out_addr` is our own bytearray of `out_len` bytes, which Python code
            // cannot reach before `finish`.
            let (data, out) = unsafe {
                (
                    if length == 0 {
                        &[][..]
                    } else {
                        std::slice::from_raw_parts(address as *const u8, length)
                    },
                    std::slice::from_raw_parts_mut(out_addr as *mut u8, out_len),
                )
            };
            let mut d =
                Decoder::resume(data, 0, length, base, stream_len, opts, dec).at_file_offset(start);
            let mut sink = Fused::new(&p, st, conv, out);
            let used = d.run_sink(last, &mut sink, side);
            sink.done();
            (used, d.state())
        });
        self.dec = next;
        self.base += used as u64;
        self.done = last;
        Ok(used)
    }

    /// Stream offset of the next window's first byte.
    #[getter]
    fn position(&self) -> u64 {
        self.base
    }

    /// The events (a bytearray of `rows` EVENT_DTYPE rows) and the side tables: the `sv_scan`
    /// keys (`meta_rows`/`text_rows` index the kept packets), the kept metadata/message packets
    /// as `sv_decode` columns and side records, and the stream facts (`packets`, `first_ts`,
    /// `last_ts`, `last_id`, `api_ids`).
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let rows = self.st.rows;
        let buf = match self.out.take() {
            Some(b) => b.into_bound(py),
            None => alloc_bytearray(py, 0, 1)?.0,
        };
        shrink(&buf, rows * ROW)?;
        let d = PyDict::new_bound(py);
        d.set_item("events", buf)?;
        d.set_item("rows", rows)?;
        let s = self.st.acc.finish();
        d.set_item("counts", PyList::new_bound(py, s.counts))?;
        d.set_item("handles", PyList::new_bound(py, s.handles))?;
        d.set_item("ovf_values", PyList::new_bound(py, s.ovf_values))?;
        d.set_item("events_n", s.events)?;
        d.set_item("min_ts", s.min_ts)?;
        let cc: Vec<(usize, u64)> = (s.core_counts.iter().enumerate())
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| (i, *c))
            .collect();
        d.set_item("core_counts", PyList::new_bound(py, cc))?;
        d.set_item("event_cores", PyList::new_bound(py, s.event_cores))?;
        let k = &self.st.kept;
        d.set_item("meta_rows", PyList::new_bound(py, &k.meta))?;
        d.set_item("text_rows", PyList::new_bound(py, &k.text))?;
        let c = &k.cols;
        for (name, v) in [
            ("id", as_bytes(&c.id)),
            ("core", &c.core[..]),
            ("nv", &c.nv[..]),
            ("ts", as_bytes(&c.ts)),
            ("off", as_bytes(&c.off)),
            ("p0", as_bytes(&c.p0)),
            ("p1", as_bytes(&c.p1)),
            ("p2", as_bytes(&c.p2)),
        ] {
            d.set_item(name, PyBytes::new_bound(py, v))?;
        }
        d.set_item("off_size", 8)?;
        side_items(&d, &self.side)?;
        d.set_item("packets", self.st.packets)?;
        d.set_item("first_ts", self.st.first_ts)?;
        d.set_item("last_ts", self.st.last_ts)?;
        d.set_item("last_id", self.st.last_id)?;
        d.set_item("api_ids", self.conv.api_ids())?;
        Ok(d)
    }
}

impl SvFused {
    /// The output bytearray with room for `rows` rows (grown by half at least); returns its
    /// address and length.
    fn reserve(&mut self, py: Python<'_>, rows: usize) -> PyResult<(usize, usize)> {
        let need = rows
            .checked_mul(ROW)
            .ok_or_else(|| PyMemoryError::new_err("too many rows"))?;
        let obj = match &self.out {
            None => {
                let (b, _) = alloc_bytearray(py, need, 1)?;
                let b = b.unbind();
                self.out = Some(b);
                self.out.as_ref().unwrap().bind(py).clone()
            }
            Some(b) => b.bind(py).clone(),
        };
        // SAFETY: `obj` is the bytearray we created (never exposed to Python code yet).
        let len = unsafe { pyo3::ffi::PyByteArray_Size(obj.as_ptr()) } as usize;
        if len < need {
            shrink(&obj, need.max(len + len / 2))?;
        }
        // SAFETY: as above; the buffer address is valid until the next resize.
        let (addr, len) = unsafe {
            (
                pyo3::ffi::PyByteArray_AsString(obj.as_ptr()) as usize,
                pyo3::ffi::PyByteArray_Size(obj.as_ptr()) as usize,
            )
        };
        if addr == 0 {
            return Err(PyMemoryError::new_err("no bytearray buffer"));
        }
        advise_huge(addr, len);
        Ok((addr, len))
    }
}
