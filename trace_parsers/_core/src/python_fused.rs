//! PyO3 glue for `sv_fused`: one SystemView stream read window by window straight into an
//! `EVENT_DTYPE` buffer (a bytearray grown as rows come, never zero-filled by us, shrunk to the
//! rows at the end), plus the side tables the Python side needs (`trace_parsers.systemview.fast`).
//! With `columns=True`, the event columns instead (`sv_cols_out`): `ts` and `ts_raw` in two
//! such bytearrays, the others built in Rust with their dense bytes in bytearrays too
//! (`PyStore`), handed over at `finish` without a copy.
use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::adaptive::{Column, NoMemory, Store};
use crate::python::{alloc_bytearray, as_bytes, parse_order, shrink, side_items};
use crate::python_model::owned_params;
use crate::sv_cols_out::{ColsOut, EventCols, Spec};
use crate::sv_fused::{Fused, FusedState, RowOut};
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
    /// The `EVENT_DTYPE` rows, or (column output) the `ts` column.
    out: Option<Py<PyAny>>,
    /// Column output: the `ts_raw` column,
    ts_raw: Option<Py<PyAny>>,
    /// and the other columns (taken out during `feed`).
    cols: Option<EventCols<PyStore>>,
    columns: bool,
    done: bool,
}

#[pymethods]
impl SvFused {
    /// `stream_len`: bytes of the stream; `start`: its file offset; `esp_core_bit`: decode the
    /// ESP core bit (default: `esp`); `columns`: the event columns instead of rows (see
    /// `finish`). The other keywords are the conversion parameters of `sv_convert`.
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (stream_len, *, start, stream_core, esp, ram_base, shift, handles, named,
                        mod_first, tick_hz, origin, log_base, esp_core_bit=None, str_order=0,
                        columns=false))]
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
        columns: bool,
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
            ts_raw: None,
            cols: columns.then(|| EventCols::new(whole_rows(stream_len))),
            columns,
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
        let need = (self.st.rows + max_packets(length)).max(if self.out.is_none() {
            whole_rows(self.stream_len)
        } else {
            0
        });
        // SAFETY: the caller keeps `length` bytes at `address` alive and unchanged during the
        // call.
        let data = unsafe {
            if length == 0 {
                &[][..]
            } else {
                std::slice::from_raw_parts(address as *const u8, length)
            }
        };
        let used = if self.columns {
            let ts = reserve(py, &mut self.out, need, 8)?;
            let ts_raw = reserve(py, &mut self.ts_raw, need, 8)?;
            let mut cols = (self.cols.take())
                .ok_or_else(|| PyValueError::new_err("feed after a failed feed"))?;
            let used = py.allow_threads(|| {
                // SAFETY: our own bytearrays, which Python code cannot reach before `finish`.
                let (ts, ts_raw) = unsafe { (buffer(ts), buffer(ts_raw)) };
                let cols = &mut cols;
                self.window(data, last, ColsOut { ts, ts_raw, cols })
            });
            if cols.no_memory() {
                self.done = true; // the columns are incomplete: no further feed or finish
                return Err(PyMemoryError::new_err(
                    "no memory for the event columns of this SystemView stream",
                ));
            }
            self.cols = Some(cols);
            used
        } else {
            let out = reserve(py, &mut self.out, need, ROW)?;
            // SAFETY: our own bytearray, which Python code cannot reach before `finish`.
            py.allow_threads(|| self.window(data, last, unsafe { buffer(out) }))
        };
        self.base += used as u64;
        self.done = last;
        Ok(used)
    }

    /// Stream offset of the next window's first byte.
    #[getter]
    fn position(&self) -> u64 {
        self.base
    }

    /// The events and the side tables: the `sv_scan` keys (`meta_rows`/`text_rows` index the
    /// kept packets), the kept metadata/message packets as `sv_decode` columns and side
    /// records, and the stream facts (`packets`, `first_ts`, `last_ts`, `last_id`, `api_ids`).
    ///
    /// The events: `events`, a bytearray of `rows` EVENT_DTYPE rows; with `columns=True`,
    /// `columns` instead: `EVENT_DTYPE` name -> spec, one of `{"kind": "dense", "data": bytes or
    /// bytearray, "dtype": "<i8", "u1", ...}`, `{"kind": "const", "value": int, "len": rows}`
    /// and (`value`, `target_id`: the rows not null / not -1) `{"kind": "sparse", "len": rows,
    /// "idx": row indices, "val": their values}` (`idx` and `val` dense or const specs).
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let rows = self.st.rows;
        let d = PyDict::new_bound(py);
        if self.columns {
            d.set_item("columns", self.columns_dict(py)?)?;
        } else {
            d.set_item("events", take_shrunk(py, &mut self.out, rows * ROW)?)?;
        }
        d.set_item("rows", rows)?;
        self.side_tables(&d)?;
        Ok(d)
    }
}

impl SvFused {
    /// Decode and convert one window (the stream bytes from `base` on) into `out`; returns the
    /// bytes consumed.
    fn window<W: RowOut>(&mut self, data: &[u8], last: bool, out: W) -> usize {
        let p = self.par.params();
        let mut d = Decoder::resume(
            data,
            0,
            data.len(),
            self.base,
            self.stream_len,
            self.opts,
            self.dec,
        )
        .at_file_offset(self.par.start);
        let mut sink = Fused::new(&p, &mut self.st, &mut self.conv, out);
        let used = d.run_sink(last, &mut sink, &mut self.side);
        sink.done();
        self.dec = d.state();
        used
    }

    /// The `columns` of `finish`: every dense column is one of our bytearrays, shrunk to its
    /// values (no copy).
    fn columns_dict<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let rows = self.st.rows;
        let c = PyDict::new_bound(py);
        for (name, slot, dtype) in [
            ("ts", &mut self.out, "<i8"),
            ("ts_raw", &mut self.ts_raw, "<u8"),
        ] {
            let d = PyDict::new_bound(py);
            d.set_item("kind", "dense")?;
            d.set_item("data", take_shrunk(py, slot, rows * 8)?)?;
            d.set_item("dtype", dtype)?;
            c.set_item(name, d)?;
        }
        let cols = (self.cols.take())
            .ok_or_else(|| PyValueError::new_err("finish after a failed feed, or twice"))?;
        for (name, spec) in cols.finish() {
            let d = match spec {
                Spec::Plain(col) => column_dict(py, col)?,
                Spec::Sparse { len, idx, val } => {
                    let d = PyDict::new_bound(py);
                    d.set_item("kind", "sparse")?;
                    d.set_item("len", len)?;
                    d.set_item("idx", column_dict(py, idx)?)?;
                    d.set_item("val", column_dict(py, val)?)?;
                    d
                }
            };
            c.set_item(name, d)?;
        }
        Ok(c)
    }

    /// The side tables and stream facts of `finish`.
    fn side_tables(&self, d: &Bound<'_, PyDict>) -> PyResult<()> {
        let py = d.py();
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
        side_items(d, &self.side)?;
        d.set_item("packets", self.st.packets)?;
        d.set_item("first_ts", self.st.first_ts)?;
        d.set_item("last_ts", self.st.last_ts)?;
        d.set_item("last_id", self.st.last_id)?;
        d.set_item("api_ids", self.conv.api_ids())?;
        Ok(())
    }
}

/// Rows a stream of `stream_len` bytes has at most (and a little more).
fn whole_rows(stream_len: u64) -> usize {
    max_packets(usize::try_from(stream_len).unwrap_or(usize::MAX)) + 2
}

/// `len` bytes at `addr`, mutable.
///
/// # Safety
/// `addr` is the buffer of a live bytearray of at least `len` bytes that nothing else reads or
/// writes (nor resizes) while the slice lives.
unsafe fn buffer<'b>((addr, len): (usize, usize)) -> &'b mut [u8] {
    std::slice::from_raw_parts_mut(addr as *mut u8, len)
}

/// The bytearray of `slot` (created at the first call) with room for `rows` rows of `row`
/// bytes (grown by half at least); returns its address and length.
fn reserve(
    py: Python<'_>,
    slot: &mut Option<Py<PyAny>>,
    rows: usize,
    row: usize,
) -> PyResult<(usize, usize)> {
    let need = rows
        .checked_mul(row)
        .ok_or_else(|| PyMemoryError::new_err("too many rows"))?;
    let obj = match slot {
        None => {
            let (b, _) = alloc_bytearray(py, need, 1)?;
            slot.insert(b.unbind()).bind(py).clone()
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
    Ok((addr, len))
}

/// The bytearray of `slot` (an empty one when there is none), shrunk to `nbytes`.
fn take_shrunk<'py>(
    py: Python<'py>,
    slot: &mut Option<Py<PyAny>>,
    nbytes: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let buf = match slot.take() {
        Some(b) => b.into_bound(py),
        None => alloc_bytearray(py, 0, 1)?.0,
    };
    shrink(&buf, nbytes)?;
    Ok(buf)
}

/// The `finish` spec of a column built in Rust.
fn column_dict(py: Python<'_>, col: Column<PyStore>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new_bound(py);
    match col {
        Column::Const { value, len, signed } => {
            d.set_item("kind", "const")?;
            if signed {
                d.set_item("value", value as i64)?;
            } else {
                d.set_item("value", value as u64)?;
            }
            d.set_item("len", len)?;
        }
        Column::Dense {
            data,
            width,
            signed,
        } => {
            d.set_item("kind", "dense")?;
            d.set_item("data", data.into_bytearray(py)?)?;
            d.set_item("dtype", Column::dtype(width, signed))?;
        }
    }
    Ok(d)
}

/// The dense bytes of a column of the column output (`adaptive::Store`) in a bytearray of ours:
/// written without the GIL, which only growing takes (rare: the room for the whole stream is
/// reserved when the column turns dense or widens); handed to Python without a copy.
pub(crate) struct PyStore {
    buf: Option<Py<PyAny>>,
    /// Address and length of the bytearray's buffer (valid until it is resized).
    addr: usize,
    cap: usize,
    /// Bytes written.
    len: usize,
}

impl PyStore {
    /// A bytearray of at least `need` bytes (taking the GIL).
    fn room(&mut self, need: usize) -> PyResult<()> {
        Python::with_gil(|py| {
            (self.addr, self.cap) = reserve(py, &mut self.buf, need, 1)?;
            Ok(())
        })
    }

    /// The bytearray, shrunk to the bytes written.
    fn into_bytearray(mut self, py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
        take_shrunk(py, &mut self.buf, self.len)
    }
}

impl Store for PyStore {
    fn with_room(room: usize) -> Self {
        let mut s = PyStore {
            buf: None,
            addr: 0,
            cap: 0,
            len: 0,
        };
        // the room is a hint: without it, the bytearray is made (and grows) as bytes come
        let _ = s.room(room);
        s
    }

    fn bytes(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `addr` is the buffer of our bytearray, at least `len` bytes long, which
        // Python code cannot reach before `finish` (nor resize: only `room` does).
        unsafe { std::slice::from_raw_parts(self.addr as *const u8, self.len) }
    }

    fn grow(&mut self, n: usize) -> Result<&mut [u8], NoMemory> {
        let need = self.len.checked_add(n).ok_or(NoMemory)?;
        if need > self.cap || self.buf.is_none() {
            // a bytearray that cannot be had (MemoryError) is NoMemory, never a panic: a
            // panic here would print its backtrace, which needs memory too (it hung)
            self.room(need).map_err(|_| NoMemory)?;
        }
        let at = self.len;
        self.len = need;
        // SAFETY: as in `bytes`; the buffer has `cap >= len` bytes.
        Ok(unsafe { std::slice::from_raw_parts_mut((self.addr + at) as *mut u8, n) })
    }
}

impl Drop for PyStore {
    fn drop(&mut self) {
        // freed now (a widened column's old bytes), not at the next call from Python
        if let Some(b) = self.buf.take() {
            Python::with_gil(|_| drop(b));
        }
    }
}
