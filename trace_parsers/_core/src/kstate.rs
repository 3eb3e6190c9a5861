//! The kernel-state pass: one walk over one core's scheduling events (any format's columns) that
//! yields who owns the core after each event and each ISR entry's own exit, or what closed it.
//!
//! The rules (docs/methodology.md, "Kernel state"; `analyzers.metrics.kstate` is the Python face):
//! - `ISR_ENTER` pushes its IRQ; `ISR_EXIT`/`ISR_TO_SCHED` pop one, never below empty (an exit whose
//!   entry the recording does not hold is ignored);
//! - `TASK_SWITCH_IN` sets the running task and closes the ISRs still open on the core (their exit
//!   records were lost); `IDLE` sets idle, and so does `TASK_SWITCH_OUT` when no ISR is open;
//! - a data-loss marker (`OVERFLOW`) or a restart (`TRACE_START`) closes the open ISRs and makes the
//!   running task unknown, from the event before it until a switch-in re-establishes it;
//! - the owner after an event is the innermost open ISR, else the running task.

use std::collections::TryReserveError;

/// Event kinds the pass reads (`trace_parsers.model.EventKind`).
pub const TASK_SWITCH_IN: u8 = 1;
pub const TASK_SWITCH_OUT: u8 = 2;
pub const ISR_ENTER: u8 = 5;
pub const ISR_EXIT: u8 = 6;
pub const ISR_TO_SCHED: u8 = 7;
pub const OVERFLOW: u8 = 13;
pub const TRACE_START: u8 = 14;
pub const IDLE: u8 = 16;

/// What owns the core (`Pass::owner_kind`).
pub const UNKNOWN: u8 = 0;
pub const IDLE_OWNER: u8 = 1;
pub const TASK: u8 = 2;
pub const ISR: u8 = 3;

/// Why an entry has no exit (`Pass::ent_end` below 0).
pub const OPEN: i64 = -1;
pub const BY_SWITCH_IN: i64 = -2;
pub const BY_LOSS: i64 = -3;

/// The running state carried from one chunk to the next: the task (owner kind and id) and the
/// open ISRs, outermost first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct State {
    pub task_kind: u8,
    pub task_id: i64,
    pub stack: Vec<i64>,
}

/// Per event: the owner after it (kind, id) and the ISR nesting depth after it. Per `ISR_ENTER`
/// (in order): its index, the depth it opened, its own exit's index or why it has none, and the
/// index of the event that closed it without an exit (-1 if none). `state`: after the last event.
#[derive(Debug, Default)]
pub struct Pass {
    pub owner_kind: Vec<u8>,
    pub owner_id: Vec<i64>,
    pub depth: Vec<i64>,
    pub ent_idx: Vec<i64>,
    pub ent_depth: Vec<i64>,
    pub ent_end: Vec<i64>,
    pub ent_closer: Vec<i64>,
    pub state: State,
}

/// Close every open entry at event `i` for `why`.
fn close_all(open: &mut Vec<usize>, p: &mut Pass, i: usize, why: i64) {
    for e in open.drain(..) {
        p.ent_end[e] = why;
        p.ent_closer[e] = i as i64;
    }
}

/// The pass over `kind`/`ctx` (equal lengths) from the carried state `s0`. The carried open ISRs
/// have no entry rows here (their entries were in an earlier chunk): a chunk that needs their exits
/// replays them as `ISR_ENTER` events in front of its own.
///
/// Every column is reserved up front with `try_reserve_exact`: an allocation failure is an `Err`
/// (a `MemoryError` in Python), never an abort.
pub fn pass(kind: &[u8], ctx: &[i64], s0: &State) -> Result<Pass, TryReserveError> {
    let n = kind.len();
    let entries = kind.iter().filter(|&&k| k == ISR_ENTER).count();
    let mut p = Pass::default();
    p.owner_kind.try_reserve_exact(n)?;
    p.owner_id.try_reserve_exact(n)?;
    p.depth.try_reserve_exact(n)?;
    for v in [
        &mut p.ent_idx,
        &mut p.ent_depth,
        &mut p.ent_end,
        &mut p.ent_closer,
    ] {
        v.try_reserve_exact(entries)?;
    }
    let (mut tk, mut tid) = (s0.task_kind, s0.task_id);
    let mut stack: Vec<i64> = s0.stack.clone();
    // entry index (in p.ent_*) per stack level, None for the carried levels
    let mut level: Vec<Option<usize>> = vec![None; stack.len()];
    let mut open: Vec<usize> = Vec::new();
    for i in 0..n {
        let k = kind[i];
        match k {
            ISR_ENTER => {
                stack.push(ctx[i]);
                let e = p.ent_idx.len();
                p.ent_idx.push(i as i64);
                p.ent_depth.push(stack.len() as i64);
                p.ent_end.push(OPEN);
                p.ent_closer.push(-1);
                level.push(Some(e));
                open.push(e);
            }
            ISR_EXIT | ISR_TO_SCHED => {
                if stack.pop().is_some() {
                    if let Some(Some(e)) = level.pop() {
                        p.ent_end[e] = i as i64;
                        // the innermost open entry: levels close last-in first-out
                        debug_assert_eq!(open.last(), Some(&e));
                        open.pop();
                    }
                }
            }
            TASK_SWITCH_IN => {
                stack.clear();
                level.clear();
                close_all(&mut open, &mut p, i, BY_SWITCH_IN);
                tk = TASK;
                tid = ctx[i];
            }
            IDLE => {
                tk = IDLE_OWNER;
                tid = -1;
            }
            TASK_SWITCH_OUT if stack.is_empty() => {
                tk = IDLE_OWNER;
                tid = -1;
            }
            OVERFLOW | TRACE_START => {
                stack.clear();
                level.clear();
                close_all(&mut open, &mut p, i, BY_LOSS);
                tk = UNKNOWN;
                tid = -1;
                if i > 0 {
                    // the time from the event before the loss is unknown too
                    p.owner_kind[i - 1] = UNKNOWN;
                    p.owner_id[i - 1] = -1;
                }
            }
            _ => {}
        }
        match stack.last() {
            Some(&irq) => {
                p.owner_kind.push(ISR);
                p.owner_id.push(irq);
            }
            None => {
                p.owner_kind.push(tk);
                p.owner_id.push(tid);
            }
        }
        p.depth.push(stack.len() as i64);
    }
    p.state = State {
        task_kind: tk,
        task_id: tid,
        stack,
    };
    Ok(p)
}

#[cfg(test)]
#[path = "kstate_tests.rs"]
mod tests;
