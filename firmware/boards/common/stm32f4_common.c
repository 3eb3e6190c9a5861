/* stm32f4_common.c — board functions identical on both STM32F4 boards: USART1 console, TIM5 benchmark
 * interrupt, PRIMASK critical sections, fault reporting. Board specifics (clocks, timestamps, ADC poll,
 * trace sink, end of run) live in each board's board.c. */
#include "ct_board.h"
#include "ct_port.h"
#include "stm32f4_regs.h"

void ct_putc(char c)
{
    while ((USART_SR(USART1_BASE) & USART_SR_TXE) == 0u) {
    }
    USART_DR(USART1_BASE) = (uint32_t)(unsigned char)c;
}

void ct_puts(const char *s)
{
    while (*s) ct_putc(*s++);
}

uint32_t ct_irq_save(void)
{
    uint32_t primask;
    __asm volatile("mrs %0, primask\n cpsid i" : "=r"(primask)::"memory");
    return primask;
}

void ct_irq_restore(uint32_t state)
{
    __asm volatile("msr primask, %0" ::"r"(state) : "memory");
}

static void (*bench_handler)(void);

void ct_bench_irq_start(uint32_t period_us, void (*handler)(void))
{
    bench_handler = handler;
    RCC_APB1ENR |= (1u << 3); /* TIM5EN */
    TIM_CR1(TIM5_BASE) = 0u;
    TIM_PSC(TIM5_BASE) = (CT_BENCH_TIMER_HZ / 1000000u) - 1u; /* 1 MHz count */
    TIM_ARR(TIM5_BASE) = period_us - 1u;
    TIM_CNT(TIM5_BASE) = 0u;
    TIM_EGR(TIM5_BASE) = 1u; /* UG: load PSC */
    TIM_SR(TIM5_BASE) = 0u;
    TIM_DIER(TIM5_BASE) = 1u; /* UIE */
    NVIC_IPR_BYTE(TIM5_IRQn) = CT_BENCH_IRQ_PRIO;
    NVIC_ISER(TIM5_IRQn / 32u) = 1u << (TIM5_IRQn % 32u);
    TIM_CR1(TIM5_BASE) = 1u; /* CEN */
}

void ct_bench_irq_stop(void)
{
    TIM_CR1(TIM5_BASE) = 0u;
    TIM_DIER(TIM5_BASE) = 0u;
    NVIC_ICER(TIM5_IRQn / 32u) = 1u << (TIM5_IRQn % 32u);
    TIM_SR(TIM5_BASE) = 0u;
}

void TIM5_IRQHandler(void)
{
    TIM_SR(TIM5_BASE) = 0u; /* acknowledge UIF first */
    ct_port_isr_enter();
    if (bench_handler) bench_handler();
    ct_port_isr_exit();
}

void ct_board_fault(const char *what, uint32_t vector) __attribute__((noreturn));
void ct_board_fault(const char *what, uint32_t vector)
{
    char num[4];
    (void)ct_irq_save();
    num[0] = (char)('0' + (int)((vector / 100u) % 10u));
    num[1] = (char)('0' + (int)((vector / 10u) % 10u));
    num[2] = (char)('0' + (int)(vector % 10u));
    num[3] = '\0';
    ct_puts("\r\nCT_FAIL board.fault ");
    ct_puts(what);
    ct_puts(" vector=");
    ct_puts(num);
    ct_puts("\r\nCT_DONE ok=0 fail=1\r\n");
    ct_board_done(0);
}
