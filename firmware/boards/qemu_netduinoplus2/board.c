/* board.c — qemu_netduinoplus2: no clock setup (RCC/PWR/FLASH are unimplemented and would hang a PLL
 * wait), TIM2 free-running at 1 GHz as the timestamp, ADC1 read without the EOC poll (QEMU never sets
 * EOC), trace sink and exit through semihosting. No WFI anywhere (it would warp virtual time). */
#include "ct_board.h"
#include "ct_sites.h"
#include "semihost.h"

void ct_board_init(void)
{
    RCC_AHB1ENR |= (1u << 6) | 1u;          /* GPIOG, GPIOA (harmless on QEMU; mirrors the real board) */
    RCC_APB1ENR |= 1u;                      /* TIM2 */
    RCC_APB2ENR |= (1u << 4) | (1u << 8);   /* USART1, ADC1 */
    GPIO_MODER(GPIOG_BASE) = 0x55555555u;   /* PG0..15 outputs */
    GPIO_BSRR(GPIOG_BASE) = 0xFFFFu << 16;  /* all low: the analyzer's initial state */
    TIM_PSC(TIM2_BASE) = 0u;
    TIM_ARR(TIM2_BASE) = 0xFFFFFFFFu;
    TIM_EGR(TIM2_BASE) = 1u;
    TIM_CR1(TIM2_BASE) = 1u;
    USART_BRR(USART1_BASE) = 0x30Du;
    USART_CR1(USART1_BASE) = USART_CR1_UE | USART_CR1_TE;
    ADC_SQR3(ADC1_BASE) = 0u;
    ADC_CR2(ADC1_BASE) = ADC_CR2_ADON;
}

uint16_t ct_adc_read(void)
{
    ADC_CR2(ADC1_BASE) = ADC_CR2_ADON | ADC_CR2_SWSTART;
    return (uint16_t)(ADC_DR(ADC1_BASE) & 0xFFFu); /* no EOC poll: the model never sets it */
}

static int trace_fd = -1;

int ct_board_trace_open(const char *name)
{
    trace_fd = ct_sh_open(name);
    return trace_fd < 0 ? -1 : 0;
}

int ct_board_trace_write(const void *buf, size_t len)
{
    if (trace_fd < 0) return -1;
    return ct_sh_write(trace_fd, buf, len) == 0 ? 0 : -1;
}

void ct_board_trace_close(void)
{
    if (trace_fd >= 0) ct_sh_close(trace_fd);
    trace_fd = -1;
}

void ct_board_done(int ok)
{
    ct_pin_write(ok ? CT_PIN_DONE : CT_PIN_FAIL, 1u);
    ct_board_trace_close();
    ct_sh_exit(ok);
}
