/* app_cfg.h — what µC/OS-II's ARMv7-M port expects from the application (the template lacks the two CPU_CFG
 * values): the timer task at priority 5 (the published configuration; template: OS_LOWEST_PRIO-2), the F4's 4
 * NVIC priority bits, and the kernel-aware boundary at priority 5 (BASEPRI 0x50: SysTick at 0x50, the
 * benchmark TIM5 interrupt at CT_BENCH_IRQ_PRIO 0x60 is kernel aware), as for µC/OS-III (ports/ucos3). */
#ifndef APP_CFG_H
#define APP_CFG_H

#define OS_TASK_TMR_PRIO        5u
#define CPU_CFG_KA_IPL_BOUNDARY 5u
#define CPU_CFG_NVIC_PRIO_BITS  4u

#endif
