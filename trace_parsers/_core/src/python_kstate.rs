//! PyO3 glue for `kstate`: one core's `kind` (u8) and `ctx` (i64) columns passed by address (as
//! `python_model` takes them); the per-event and per-entry columns come back as bytes.
use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::kstate::{self, State};
use crate::python::{as_bytes, column_at};

/// The kernel-state pass (`kstate::pass`) over `n` events: `kind` and `ctx` as `(address, n)`,
/// the carried state as `(task_kind, task_id, [irq, ...])`. Returns a dict of column bytes and
/// the state after the last event.
#[pyfunction]
pub fn kstate_pass<'py>(
    py: Python<'py>,
    kind: (usize, usize),
    ctx: (usize, usize),
    state: (u8, i64, Vec<i64>),
) -> PyResult<Bound<'py, PyDict>> {
    if kind.1 != ctx.1 {
        return Err(PyValueError::new_err("kind and ctx differ in length"));
    }
    let k = column_at::<u8>(kind.0, kind.1, "kind")?;
    let c = column_at::<i64>(ctx.0, ctx.1, "ctx")?;
    let s0 = State {
        task_kind: state.0,
        task_id: state.1,
        stack: state.2,
    };
    let p = py
        .allow_threads(|| kstate::pass(k, c, &s0))
        .map_err(|e| PyMemoryError::new_err(format!("kernel-state pass: {e}")))?;
    let d = PyDict::new_bound(py);
    d.set_item("owner_kind", PyBytes::new_bound(py, &p.owner_kind))?;
    d.set_item("owner_id", PyBytes::new_bound(py, as_bytes(&p.owner_id)))?;
    d.set_item("depth", PyBytes::new_bound(py, as_bytes(&p.depth)))?;
    d.set_item("ent_idx", PyBytes::new_bound(py, as_bytes(&p.ent_idx)))?;
    d.set_item("ent_depth", PyBytes::new_bound(py, as_bytes(&p.ent_depth)))?;
    d.set_item("ent_end", PyBytes::new_bound(py, as_bytes(&p.ent_end)))?;
    d.set_item(
        "ent_closer",
        PyBytes::new_bound(py, as_bytes(&p.ent_closer)),
    )?;
    d.set_item("state", (p.state.task_kind, p.state.task_id, p.state.stack))?;
    Ok(d)
}
