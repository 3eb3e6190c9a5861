/* board.h — qemu_netduinoplus2: QEMU's STM32F405 machine standing in for the F429 Discovery (qemu-lab.md).
 * TIM2 counts at 1 GHz (= 1 instruction per tick at -icount shift=0); GPIOG has no model, its BSRR stores
 * are what the virtual logic analyzer records. */
#ifndef CT_BOARD_QEMU_NETDUINOPLUS2_H
#define CT_BOARD_QEMU_NETDUINOPLUS2_H

#include <stdint.h>

#include "stm32f4_regs.h"

#define CT_BOARD_NAME "qemu_netduinoplus2"
#define CT_BOARD_QEMU 1
#define CT_BOARD_CPU_HZ 168000000u    /* what QEMU clocks SysTick at */
#define CT_TS_HZ 1000000000u          /* TIM2 */
#define CT_BENCH_TIMER_HZ 1000000000u /* TIM5 input clock in QEMU */
#define CT_TS_ADDR (TIM2_BASE + 0x24u)

static inline uint32_t ct_ts(void)
{
    return TIM_CNT(TIM2_BASE);
}

static inline __attribute__((always_inline)) void ct_pin_write(unsigned pin, unsigned level)
{
    GPIO_BSRR(GPIOG_BASE) = level ? (1u << pin) : (1u << (pin + 16u));
}

#endif
