/* cpu_cfg.h — uC-CPU configuration for µC/OS-III on the STM32F4 (template values but two): the F4's NVIC
 * has 4 priority bits (CPU_CFG_NVIC_PRIO_BITS, `#if 0` in the template), and the kernel-aware boundary is
 * priority 5 (BASEPRI 0x50, like FreeRTOS's configMAX_SYSCALL_INTERRUPT_PRIORITY): SysTick runs at 0x50,
 * the benchmark TIM5 interrupt (CT_BENCH_IRQ_PRIO 0x60) is kernel aware and masked by critical sections. */
#ifndef CPU_CFG_MODULE_PRESENT
#define CPU_CFG_MODULE_PRESENT

#define CPU_CFG_NAME_EN                 DEF_DISABLED
#define CPU_CFG_NAME_SIZE               16
#define CPU_CFG_TS_32_EN                DEF_DISABLED
#define CPU_CFG_TS_64_EN                DEF_DISABLED
#define CPU_CFG_TS_TMR_SIZE             CPU_WORD_SIZE_32
#define CPU_CFG_INT_DIS_MEAS_OVRHD_NBR  1u
#define CPU_CFG_CACHE_MGMT_EN           DEF_DISABLED
#define CPU_CFG_KA_IPL_BOUNDARY         5u
#define CPU_CFG_NVIC_PRIO_BITS          4u

#endif
