/* os_cfg_app.h — µC/OS-III run-time sizes: 1 kHz tick and the timer task at priority 5 (the published
 * configuration, firmware/README.md "µC/OS-III"); stacks in CPU_STK (32-bit) words. The message pool holds
 * every message the ct queues can have in flight (CT_MAX_QUEUES x their depth, ct_port_ucos3.c). */
#ifndef OS_CFG_APP_H
#define OS_CFG_APP_H

#define OS_CFG_ISR_STK_SIZE               256u
#define OS_CFG_MSG_POOL_SIZE              64u
#define OS_CFG_TASK_STK_LIMIT_PCT_EMPTY   10u
#define OS_CFG_IDLE_TASK_STK_SIZE         256u /* the idle hook drains the trace through semihosting */
#define OS_CFG_STAT_TASK_PRIO             ((OS_PRIO)(OS_CFG_PRIO_MAX - 2u))
#define OS_CFG_STAT_TASK_RATE_HZ          10u
#define OS_CFG_STAT_TASK_STK_SIZE         100u
#define OS_CFG_TICK_RATE_HZ               1000u
#define OS_CFG_TMR_TASK_PRIO              ((OS_PRIO)5u)
#define OS_CFG_TMR_TASK_STK_SIZE          128u
#define OS_CFG_TMR_TASK_RATE_HZ           10u

#endif
