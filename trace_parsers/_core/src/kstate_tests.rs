use super::*;

const SW: u8 = TASK_SWITCH_IN;
const EN: u8 = ISR_ENTER;
const EX: u8 = ISR_EXIT;
const OV: u8 = OVERFLOW;

fn owners(p: &Pass) -> Vec<(u8, i64)> {
    p.owner_kind
        .iter()
        .copied()
        .zip(p.owner_id.iter().copied())
        .collect()
}

#[test]
fn nested_isrs_pop_to_the_task_and_never_below_empty() {
    let p = pass(
        &[SW, EN, EN, EX, ISR_TO_SCHED, EX, IDLE],
        &[7, 3, 4, 0, 0, 0, 0],
        &State::default(),
    )
    .unwrap();
    assert_eq!(p.depth, vec![0, 1, 2, 1, 0, 0, 0]);
    assert_eq!(
        owners(&p),
        vec![
            (TASK, 7),
            (ISR, 3),
            (ISR, 4),
            (ISR, 3),
            (TASK, 7),
            (TASK, 7),
            (IDLE_OWNER, -1)
        ]
    );
    assert_eq!(p.ent_idx, vec![1, 2]);
    assert_eq!(p.ent_depth, vec![1, 2]);
    assert_eq!(p.ent_end, vec![4, 3]);
    assert_eq!(p.ent_closer, vec![-1, -1]);
}

#[test]
fn a_switch_in_closes_the_open_isrs() {
    // D3: an ISR whose exit was lost is closed by the next switch-in, not by a later exit
    let p = pass(&[SW, EN, SW, EN, EX], &[1, 40, 1, 15, 0], &State::default()).unwrap();
    assert_eq!(p.ent_end, vec![BY_SWITCH_IN, 4]);
    assert_eq!(p.ent_closer, vec![2, -1]);
    assert_eq!(p.ent_depth, vec![1, 1]);
    assert_eq!(p.depth, vec![0, 1, 0, 1, 0]);
}

#[test]
fn a_data_loss_makes_the_state_unknown_from_the_event_before_it() {
    // D2: an OVERFLOW while an ISR is open resets the nesting depth
    let p = pass(
        &[SW, EN, OV, EN, EX, SW],
        &[1, 15, 0, 15, 0, 1],
        &State::default(),
    )
    .unwrap();
    assert_eq!(p.ent_end, vec![BY_LOSS, 4]);
    assert_eq!(p.ent_closer, vec![2, -1]);
    assert_eq!(p.ent_depth, vec![1, 1]);
    assert_eq!(
        owners(&p),
        vec![
            (TASK, 1),
            (UNKNOWN, -1),
            (UNKNOWN, -1),
            (ISR, 15),
            (UNKNOWN, -1),
            (TASK, 1)
        ]
    );
}

#[test]
fn a_switch_out_sets_idle_only_outside_isrs() {
    let p = pass(
        &[SW, EN, TASK_SWITCH_OUT, EX, TASK_SWITCH_OUT],
        &[2, 9, 0, 0, 0],
        &State::default(),
    )
    .unwrap();
    assert_eq!(
        owners(&p),
        vec![(TASK, 2), (ISR, 9), (ISR, 9), (TASK, 2), (IDLE_OWNER, -1)]
    );
}

#[test]
fn the_carried_state_runs_on_and_is_handed_over() {
    let s0 = State {
        task_kind: TASK,
        task_id: 5,
        stack: vec![11],
    };
    let p = pass(&[0, EN, EX, EX, 0], &[0, 12, 0, 0, 0], &s0).unwrap();
    assert_eq!(p.depth, vec![1, 2, 1, 0, 0]);
    assert_eq!(
        owners(&p),
        vec![(ISR, 11), (ISR, 12), (ISR, 11), (TASK, 5), (TASK, 5)]
    );
    assert_eq!(p.ent_end, vec![2]); // the carried level has no entry row here
    assert_eq!(
        p.state,
        State {
            task_kind: TASK,
            task_id: 5,
            stack: vec![]
        }
    );
    let q = pass(&[EN], &[3], &p.state).unwrap();
    assert_eq!(q.ent_end, vec![OPEN]);
    assert_eq!(q.state.stack, vec![3]);
}

#[test]
fn a_restart_resets_like_a_loss() {
    let p = pass(&[SW, EN, TRACE_START, EX], &[1, 2, 0, 0], &State::default()).unwrap();
    assert_eq!(p.ent_end, vec![BY_LOSS]);
    assert_eq!(p.depth, vec![0, 1, 0, 0]);
    assert_eq!(p.state.task_kind, UNKNOWN);
}
