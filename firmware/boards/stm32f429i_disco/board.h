/* board.h — stm32f429i_disco (STM32F429ZI, real hardware): 180 MHz core from the 8 MHz HSE, DWT CYCCNT as
 * the timestamp (1 tick = 1 core cycle), site pins on GPIOG (same BSRR store as the QEMU board). */
#ifndef CT_BOARD_STM32F429I_DISCO_H
#define CT_BOARD_STM32F429I_DISCO_H

#include <stdint.h>

#include "stm32f4_regs.h"

#define CT_BOARD_NAME "stm32f429i_disco"
#define CT_BOARD_CPU_HZ 180000000u
#define CT_TS_HZ 180000000u          /* DWT CYCCNT */
#define CT_BENCH_TIMER_HZ 90000000u  /* TIM5 on APB1 (45 MHz) x2 */
#define CT_TS_ADDR 0xE0001004u

static inline uint32_t ct_ts(void)
{
    return DWT_CYCCNT;
}

static inline __attribute__((always_inline)) void ct_pin_write(unsigned pin, unsigned level)
{
    GPIO_BSRR(GPIOG_BASE) = level ? (1u << pin) : (1u << (pin + 16u));
}

#endif
