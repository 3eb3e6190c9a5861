//! crosstrace-core: sequential byte decoding for trace_parsers.
//! Pure decode modules never import pyo3; the bindings live in `python` (feature `python`).

pub mod adaptive;
pub mod kstate;
pub mod sv_cols_out;
pub mod sv_fused;
pub mod sv_model;
pub mod sv_scan;
pub mod systemview;

#[cfg(feature = "python")]
mod python;
#[cfg(feature = "python")]
mod python_fused;
#[cfg(feature = "python")]
mod python_kstate;
#[cfg(feature = "python")]
mod python_model;
