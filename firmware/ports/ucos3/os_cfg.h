/* os_cfg.h — crosstrace's µC/OS-III configuration (both boards; written for v3.08.02, the values of its
 * Cfg/Template unless noted). Deviations from the template, each listed in firmware/README.md (µC/OS-III):
 *  - OS_CFG_STAT_TASK_EN 0: no statistics task (it wakes every 20 ticks until OSStatTaskCPUUsageInit()).
 *  - OS_CFG_TRACE_EN = CT_TRACE: the OS_TRACE_* hooks go to SEGGER's SystemView glue (os_trace_events.h),
 *    which needs OS_CFG_DBG_EN 1 (so DBG_EN follows CT_TRACE too; template: 0).
 *  - OS_CFG_TASK_STK_REDZONE_EN stays 0 and OS_CFG_TS_EN 0 as in the template (no CPU_TS timer). */
#ifndef OS_CFG_H
#define OS_CFG_H

#ifndef CT_TRACE
#define CT_TRACE 0
#endif

#define OS_CFG_APP_HOOKS_EN               1u /* the idle hook drains the trace (ct_port_ucos3.c) */
#define OS_CFG_ARG_CHK_EN                 1u
#define OS_CFG_CALLED_FROM_ISR_CHK_EN     1u
#define OS_CFG_DBG_EN                     (CT_TRACE ? 1u : 0u)
#define OS_CFG_TICK_EN                    1u
#define OS_CFG_DYN_TICK_EN                0u
#define OS_CFG_INVALID_OS_CALLS_CHK_EN    1u
#define OS_CFG_OBJ_TYPE_CHK_EN            1u
#define OS_CFG_OBJ_CREATED_CHK_EN         1u
#define OS_CFG_TS_EN                      0u
#define OS_CFG_PRIO_MAX                   64u
#define OS_CFG_SCHED_LOCK_TIME_MEAS_EN    0u
#define OS_CFG_SCHED_ROUND_ROBIN_EN       1u /* needed by OSSchedRoundRobinYield (ct_task_yield) */
#define OS_CFG_STK_SIZE_MIN               64u

#define OS_CFG_FLAG_EN                    1u
#define OS_CFG_FLAG_DEL_EN                1u
#define OS_CFG_FLAG_MODE_CLR_EN           1u
#define OS_CFG_FLAG_PEND_ABORT_EN         1u
#define OS_CFG_MEM_EN                     1u
#define OS_CFG_MUTEX_EN                   1u
#define OS_CFG_MUTEX_DEL_EN               1u
#define OS_CFG_MUTEX_PEND_ABORT_EN        1u
#define OS_CFG_Q_EN                       1u
#define OS_CFG_Q_DEL_EN                   1u
#define OS_CFG_Q_FLUSH_EN                 1u
#define OS_CFG_Q_PEND_ABORT_EN            1u
#define OS_CFG_SEM_EN                     1u
#define OS_CFG_SEM_DEL_EN                 1u
#define OS_CFG_SEM_PEND_ABORT_EN          1u
#define OS_CFG_SEM_SET_EN                 1u

#define OS_CFG_STAT_TASK_EN               0u
#define OS_CFG_STAT_TASK_STK_CHK_EN       0u
#define OS_CFG_TASK_CHANGE_PRIO_EN        1u
#define OS_CFG_TASK_DEL_EN                1u
#define OS_CFG_TASK_IDLE_EN               1u
#define OS_CFG_TASK_PROFILE_EN            1u
#define OS_CFG_TASK_Q_EN                  1u
#define OS_CFG_TASK_Q_PEND_ABORT_EN       1u
#define OS_CFG_TASK_REG_TBL_SIZE          1u
#define OS_CFG_TASK_STK_REDZONE_EN        0u
#define OS_CFG_TASK_STK_REDZONE_DEPTH     8u
#define OS_CFG_TASK_SEM_PEND_ABORT_EN     1u
#define OS_CFG_TASK_SUSPEND_EN            1u
#define OS_CFG_TLS_TBL_SIZE               0u

#define OS_CFG_TIME_DLY_HMSM_EN           1u
#define OS_CFG_TIME_DLY_RESUME_EN         1u
#define OS_CFG_TMR_EN                     1u /* the timer task exists, at priority 5 (os_cfg_app.h) */
#define OS_CFG_TMR_DEL_EN                 1u

#define OS_CFG_TRACE_EN                   (CT_TRACE ? 1u : 0u)
#define OS_CFG_TRACE_API_ENTER_EN         0u
#define OS_CFG_TRACE_API_EXIT_EN          0u

#endif
