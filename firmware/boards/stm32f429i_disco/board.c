/* board.c — stm32f429i_disco: HSE 8 MHz -> PLL (M=8, N=360, P=2) = 180 MHz with over-drive and 5 flash
 * wait states, APB1 45 MHz, APB2 90 MHz; DWT CYCCNT timestamps; PG0..PG15 outputs (sites, PG13/PG14 = LEDs =
 * status); USART1 on PA9/PA10 (ST-LINK virtual COM port) at 115200; ADC1 channel 5 (PA5) with EOC poll.
 * Trace data leaves through RTT (SystemView over J-Link) or a debugger dump, so the trace sink is absent. */
#include "ct_board.h"
#include "ct_sites.h"

#define APB2_HZ 90000000u
/* GPIOG pins driven as outputs: every site pin of ct_sites.h (PG2..PG12, and the Thread-Metric sites PG15
 * tm.count, PG0 tm.isr, PG1 tm.report) and the status LEDs PG13/PG14, i.e. all sixteen */
#define CT_GPIOG_OUTPUTS 0xFFFFu
#define RCC_CR_HSEON   (1u << 16)
#define RCC_CR_HSERDY  (1u << 17)
#define RCC_CR_PLLON   (1u << 24)
#define RCC_CR_PLLRDY  (1u << 25)
#define PWR_CR_VOS     (3u << 14)
#define PWR_CR_ODEN    (1u << 16)
#define PWR_CR_ODSWEN  (1u << 17)
#define PWR_CSR_ODRDY  (1u << 16)
#define PWR_CSR_ODSWRDY (1u << 17)

static void clock_180mhz(void)
{
    RCC_CR |= RCC_CR_HSEON;
    while ((RCC_CR & RCC_CR_HSERDY) == 0u) {
    }
    RCC_APB1ENR |= (1u << 28); /* PWREN */
    PWR_CR |= PWR_CR_VOS;      /* voltage scale 1 */
    RCC_PLLCFGR = 8u | (360u << 6) | (0u << 16) | (1u << 22) | (7u << 24) | (1u << 29); /* M8 N360 P2 HSE Q7 */
    RCC_CR |= RCC_CR_PLLON;
    PWR_CR |= PWR_CR_ODEN;
    while ((PWR_CSR & PWR_CSR_ODRDY) == 0u) {
    }
    PWR_CR |= PWR_CR_ODSWEN;
    while ((PWR_CSR & PWR_CSR_ODSWRDY) == 0u) {
    }
    while ((RCC_CR & RCC_CR_PLLRDY) == 0u) {
    }
    FLASH_ACR = 5u | (1u << 8) | (1u << 9) | (1u << 10); /* 5 WS, prefetch, I-cache, D-cache */
    RCC_CFGR = (RCC_CFGR & ~0xFCF0u) | (5u << 10) | (4u << 13); /* AHB /1, APB1 /4, APB2 /2 */
    RCC_CFGR = (RCC_CFGR & ~3u) | 2u;                            /* SYSCLK = PLL */
    while (((RCC_CFGR >> 2) & 3u) != 2u) {
    }
}

void ct_board_init(void)
{
    clock_180mhz();
    DEMCR |= (1u << 24); /* TRCENA */
    DWT_LAR = 0xC5ACCE55u;
    DWT_CYCCNT = 0u;
    DWT_CTRL |= 1u;      /* CYCCNTENA */

    RCC_AHB1ENR |= (1u << 6) | 1u;        /* GPIOG, GPIOA */
    RCC_APB2ENR |= (1u << 4) | (1u << 8); /* USART1, ADC1 */
    (void)RCC_APB2ENR;
    /* the site and status pins: outputs, high speed, all low */
    GPIO_BSRR(GPIOG_BASE) = CT_GPIOG_OUTPUTS << 16;
    for (unsigned p = 0; p < 16u; ++p) {
        if (((CT_GPIOG_OUTPUTS >> p) & 1u) == 0u) continue;
        GPIO_MODER(GPIOG_BASE) = (GPIO_MODER(GPIOG_BASE) & ~(3u << (2u * p))) | (1u << (2u * p));
        GPIO_OSPEEDR(GPIOG_BASE) |= (3u << (2u * p));
    }
    /* USART1: PA9 TX, PA10 RX, AF7 */
    GPIO_MODER(GPIOA_BASE) = (GPIO_MODER(GPIOA_BASE) & ~(0xFu << 18)) | (0xAu << 18);
    GPIO_AFRH(GPIOA_BASE) = (GPIO_AFRH(GPIOA_BASE) & ~0xFF0u) | (7u << 4) | (7u << 8);
    USART_BRR(USART1_BASE) = (APB2_HZ + 115200u / 2u) / 115200u;
    USART_CR1(USART1_BASE) = USART_CR1_UE | USART_CR1_TE;
    /* ADC1 channel 5 on PA5 (analog mode), ADCCLK = APB2/4 = 22.5 MHz (max 36), 84-cycle sampling */
    GPIO_MODER(GPIOA_BASE) |= (3u << 10);
    ADC_CCR = (ADC_CCR & ~(3u << 16)) | (1u << 16);
    ADC_SMPR2(ADC1_BASE) = (4u << 15);
    ADC_SQR3(ADC1_BASE) = 5u;
    ADC_CR2(ADC1_BASE) = ADC_CR2_ADON;
}

uint16_t ct_adc_read(void)
{
    ADC_CR2(ADC1_BASE) = ADC_CR2_ADON | ADC_CR2_SWSTART;
    while ((ADC_SR(ADC1_BASE) & ADC_SR_EOC) == 0u) {
    }
    return (uint16_t)(ADC_DR(ADC1_BASE) & 0xFFFu);
}

/* No file sink on hardware: SystemView reads the RTT buffer over SWD; TraceX buffers are dumped by GDB. */
int ct_board_trace_open(const char *name)
{
    (void)name;
    return -1;
}

int ct_board_trace_write(const void *buf, size_t len)
{
    (void)buf;
    (void)len;
    return -1;
}

void ct_board_trace_close(void) {}

void ct_board_done(int ok)
{
    ct_pin_write(ok ? CT_PIN_DONE : CT_PIN_FAIL, 1u);
    for (;;) {
        /* keep the debugger (RTT reader) attached; interrupts stay enabled so RTT keeps draining */
    }
}
