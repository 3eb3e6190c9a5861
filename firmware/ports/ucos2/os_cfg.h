/* os_cfg.h — crosstrace's µC/OS-II configuration (both boards; v2.93.01, the values of its Cfg/Template
 * unless noted). Deviations, each listed in firmware/README.md (µC/OS-II): 1 kHz tick (template 100 Hz), no
 * statistics task, OS_TRACE_EN = CT_TRACE (SEGGER's SystemView glue on the OS_TRACE_* hooks), and object
 * counts sized for the porting layer (OS_MAX_EVENTS 16, OS_MAX_MEM_PART 8: 4 semaphores, 4 queues with one
 * message partition each, 2 pools, the timer task's two semaphores). */
#ifndef OS_CFG_H
#define OS_CFG_H

#ifndef CT_TRACE
#define CT_TRACE 0
#endif

#define OS_APP_HOOKS_EN           1u /* App_TaskIdleHook drains the trace (ct_port_ucos2.c) */
#define OS_ARG_CHK_EN             1u
#define OS_CPU_HOOKS_EN           1u
#define OS_DEBUG_EN               1u
#define OS_EVENT_MULTI_EN         1u
#define OS_EVENT_NAME_EN          1u
#define OS_LOWEST_PRIO            63u
#define OS_MAX_EVENTS             16u
#define OS_MAX_FLAGS              5u
#define OS_MAX_MEM_PART           8u
#define OS_MAX_QS                 4u
#define OS_MAX_TASKS              20u
#define OS_SCHED_LOCK_EN          1u
#define OS_TICK_STEP_EN           1u
#define OS_TICKS_PER_SEC          1000u
#define OS_TLS_TBL_SIZE           0u

#define OS_TASK_TMR_STK_SIZE      128u
#define OS_TASK_STAT_STK_SIZE     128u
#define OS_TASK_IDLE_STK_SIZE     256u /* the idle hook drains the trace through semihosting */

#define OS_TASK_CHANGE_PRIO_EN    1u
#define OS_TASK_CREATE_EN         1u
#define OS_TASK_CREATE_EXT_EN     1u
#define OS_TASK_DEL_EN            1u
#define OS_TASK_NAME_EN           1u
#define OS_TASK_PROFILE_EN        1u
#define OS_TASK_QUERY_EN          1u
#define OS_TASK_REG_TBL_SIZE      1u
#define OS_TASK_STAT_EN           0u
#define OS_TASK_STAT_STK_CHK_EN   0u
#define OS_TASK_SUSPEND_EN        1u
#define OS_TASK_SW_HOOK_EN        1u

#define OS_FLAG_EN                1u
#define OS_FLAG_ACCEPT_EN         1u
#define OS_FLAG_DEL_EN            1u
#define OS_FLAG_NAME_EN           1u
#define OS_FLAG_QUERY_EN          1u
#define OS_FLAG_WAIT_CLR_EN       1u
#define OS_FLAGS_NBITS            16u

#define OS_MBOX_EN                1u
#define OS_MBOX_ACCEPT_EN         1u
#define OS_MBOX_DEL_EN            1u
#define OS_MBOX_PEND_ABORT_EN     1u
#define OS_MBOX_POST_EN           1u
#define OS_MBOX_POST_OPT_EN       1u
#define OS_MBOX_QUERY_EN          1u

#define OS_MEM_EN                 1u
#define OS_MEM_NAME_EN            1u
#define OS_MEM_QUERY_EN           1u

#define OS_MUTEX_EN               1u
#define OS_MUTEX_ACCEPT_EN        1u
#define OS_MUTEX_DEL_EN           1u
#define OS_MUTEX_QUERY_EN         1u

#define OS_Q_EN                   1u
#define OS_Q_ACCEPT_EN            1u
#define OS_Q_DEL_EN               1u
#define OS_Q_FLUSH_EN             1u
#define OS_Q_PEND_ABORT_EN        1u
#define OS_Q_POST_EN              1u
#define OS_Q_POST_FRONT_EN        1u
#define OS_Q_POST_OPT_EN          1u
#define OS_Q_QUERY_EN             1u

#define OS_SEM_EN                 1u
#define OS_SEM_ACCEPT_EN          1u
#define OS_SEM_DEL_EN             1u
#define OS_SEM_PEND_ABORT_EN      1u
#define OS_SEM_QUERY_EN           1u
#define OS_SEM_SET_EN             1u

#define OS_TIME_DLY_HMSM_EN       1u
#define OS_TIME_DLY_RESUME_EN     1u
#define OS_TIME_GET_SET_EN        1u
#define OS_TIME_TICK_HOOK_EN      1u

#define OS_TMR_EN                 1u /* the timer task exists, at priority 5 (app_cfg.h) */
#define OS_TMR_CFG_MAX            16u
#define OS_TMR_CFG_NAME_EN        1u
#define OS_TMR_CFG_WHEEL_SIZE     7u
#define OS_TMR_CFG_TICKS_PER_SEC  10u

#define OS_TRACE_EN               (CT_TRACE ? 1u : 0u)
#define OS_TRACE_API_ENTER_EN     0u
#define OS_TRACE_API_EXIT_EN      0u

#endif
