/* config.h — RTOSBench's type mapping (its README: "config.h defines the type mappings between the types
 * used in the test scenarios and the types of the tested OS") onto crosstrace's porting layer: every object
 * is a ct integer id, tasks are ct tasks (void fn(void *)), time is the board timestamp in ns (int64).
 * Included by upstream's porting_layer.h; the port itself is ../rb_port_ct.c. */
#ifndef CT_RB_CONFIG_H
#define CT_RB_CONFIG_H

#include <stdint.h>

typedef void no_task_retval_t;
typedef void *no_task_argument_t;
typedef int no_main_retval_t;
typedef int no_main_argument_t;
typedef no_task_retval_t (*no_task_entry_t)(no_task_argument_t);
/* Zero-size handle (GNU C): no test reads a handle back, and jitter.c stores one past the end of its
 * one-element array (tasks_handle[NB_TASK + 1] with NB_TASK 0): a zero-size store writes nothing. */
typedef struct {
} no_task_handle_t;
typedef int64_t no_time_t;
typedef int no_sem_t;
typedef int no_mutex_t;
typedef int no_event_t;
typedef int no_mq_t;
typedef void (*no_int_handler_t)(int, void *);

#define MAIN_DEFAULT_RETURN 0
#define TASK_DEFAULT_RETURN
/* ct priorities: 1 highest .. 31 lowest, so "decrease" adds (upstream's default subtracts). */
#define BASE_PRIO 10
#define NO_DECREASE_TASK_PRIO(prio, decrease_by) ((prio) + (decrease_by))
/* Each test defines main(); the image's main() is crosstrace's, which calls this from ct_app_init(). */
#define main ct_rb_test_main
#ifndef NB_ITER
#define NB_ITER CT_RB_ITER
#endif

#endif
