/* startup_stm32f4.c — vector table and reset handler for both STM32F4 boards: copy .data, zero .bss,
 * enable the FPU (CPACR CP10/CP11), call main(). Exception handlers are weak; ports provide SVC_Handler,
 * PendSV_Handler and SysTick_Handler, the board provides TIM5_IRQHandler. */
#include <stdint.h>

#include "stm32f4_regs.h"

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;
int main(void);

void Reset_Handler(void);
void Default_Handler(void);
static void HardFault_Report(void);

#define WEAK_ALIAS(name) void name(void) __attribute__((weak, alias("Default_Handler")))
WEAK_ALIAS(NMI_Handler);
WEAK_ALIAS(MemManage_Handler);
WEAK_ALIAS(BusFault_Handler);
WEAK_ALIAS(UsageFault_Handler);
WEAK_ALIAS(SVC_Handler);
WEAK_ALIAS(DebugMon_Handler);
WEAK_ALIAS(PendSV_Handler);
WEAK_ALIAS(SysTick_Handler);
WEAK_ALIAS(TIM5_IRQHandler);
void HardFault_Handler(void) __attribute__((weak));

#define N_IRQ 91u
typedef void (*vector_fn)(void);

__attribute__((section(".isr_vector"), used)) static const vector_fn vectors[16u + N_IRQ] = {
    [0] = (vector_fn)(uintptr_t)&_estack,
    [1] = Reset_Handler,
    [2] = NMI_Handler,
    [3] = HardFault_Handler,
    [4] = MemManage_Handler,
    [5] = BusFault_Handler,
    [6] = UsageFault_Handler,
    [11] = SVC_Handler,
    [12] = DebugMon_Handler,
    [14] = PendSV_Handler,
    [15] = SysTick_Handler,
    [16u + TIM5_IRQn] = TIM5_IRQHandler,
};

void Reset_Handler(void)
{
    uint32_t *src = &_sidata, *dst = &_sdata;
    while (dst < &_edata) *dst++ = *src++;
    for (dst = &_sbss; dst < &_ebss; ++dst) *dst = 0u;
    SCB_CPACR |= (0xFu << 20); /* CP10, CP11 full access: hard-float ABI */
    __asm volatile("dsb\n isb" ::: "memory");
    SCB_VTOR = (uint32_t)(uintptr_t)vectors;
    (void)main();
    for (;;) {
    }
}

/* An unexpected exception is a failed run, not a hang: report it on the console and stop. */
extern void ct_board_fault(const char *what, uint32_t vector) __attribute__((noreturn));

void Default_Handler(void)
{
    ct_board_fault("unexpected exception", SCB_ICSR & 0x1FFu);
}

void HardFault_Handler(void)
{
    HardFault_Report();
}

static void HardFault_Report(void)
{
    ct_board_fault("hard fault", 3u);
}
