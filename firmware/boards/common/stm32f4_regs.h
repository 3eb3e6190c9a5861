/* stm32f4_regs.h — the few STM32F4 / Cortex-M4 registers the boards use, written in-tree (addresses from
 * RM0090 and the ARMv7-M ARM). Shared by stm32f429i_disco and qemu_netduinoplus2 (same peripheral map). */
#ifndef CT_STM32F4_REGS_H
#define CT_STM32F4_REGS_H

#include <stdint.h>

#define CT_REG(addr) (*(volatile uint32_t *)(uintptr_t)(addr))

/* RCC */
#define RCC_BASE      0x40023800u
#define RCC_CR        CT_REG(RCC_BASE + 0x00u)
#define RCC_PLLCFGR   CT_REG(RCC_BASE + 0x04u)
#define RCC_CFGR      CT_REG(RCC_BASE + 0x08u)
#define RCC_AHB1ENR   CT_REG(RCC_BASE + 0x30u)
#define RCC_APB1ENR   CT_REG(RCC_BASE + 0x40u)
#define RCC_APB2ENR   CT_REG(RCC_BASE + 0x44u)
#define FLASH_ACR     CT_REG(0x40023C00u)
#define PWR_CR        CT_REG(0x40007000u)
#define PWR_CSR       CT_REG(0x40007004u)

/* GPIO */
#define GPIOA_BASE    0x40020000u
#define GPIOG_BASE    0x40021800u
#define GPIO_MODER(b)   CT_REG((b) + 0x00u)
#define GPIO_OSPEEDR(b) CT_REG((b) + 0x08u)
#define GPIO_BSRR(b)    CT_REG((b) + 0x18u)
#define GPIO_AFRH(b)    CT_REG((b) + 0x24u)

/* General-purpose 32-bit timers */
#define TIM2_BASE     0x40000000u
#define TIM5_BASE     0x40000C00u
#define TIM_CR1(b)    CT_REG((b) + 0x00u)
#define TIM_DIER(b)   CT_REG((b) + 0x0Cu)
#define TIM_SR(b)     CT_REG((b) + 0x10u)
#define TIM_EGR(b)    CT_REG((b) + 0x14u)
#define TIM_CNT(b)    CT_REG((b) + 0x24u)
#define TIM_PSC(b)    CT_REG((b) + 0x28u)
#define TIM_ARR(b)    CT_REG((b) + 0x2Cu)
#define TIM5_IRQn     50u

/* USART1 */
#define USART1_BASE   0x40011000u
#define USART_SR(b)   CT_REG((b) + 0x00u)
#define USART_DR(b)   CT_REG((b) + 0x04u)
#define USART_BRR(b)  CT_REG((b) + 0x08u)
#define USART_CR1(b)  CT_REG((b) + 0x0Cu)
#define USART_SR_TXE  (1u << 7)
#define USART_CR1_UE  (1u << 13)
#define USART_CR1_TE  (1u << 3)

/* ADC1 */
#define ADC1_BASE     0x40012000u
#define ADC_SR(b)     CT_REG((b) + 0x00u)
#define ADC_CR2(b)    CT_REG((b) + 0x08u)
#define ADC_SMPR2(b)  CT_REG((b) + 0x10u)
#define ADC_SQR3(b)   CT_REG((b) + 0x34u)
#define ADC_DR(b)     CT_REG((b) + 0x4Cu)
#define ADC_CCR       CT_REG(0x40012304u) /* common control: ADCPRE */
#define ADC_SR_EOC    (1u << 1)
#define ADC_CR2_ADON  (1u << 0)
#define ADC_CR2_SWSTART (1u << 30)

/* Cortex-M4 system */
#define NVIC_ISER(n)  CT_REG(0xE000E100u + 4u * (n))
#define NVIC_ICER(n)  CT_REG(0xE000E180u + 4u * (n))
#define NVIC_IPR_BYTE(n) (*(volatile uint8_t *)(uintptr_t)(0xE000E400u + (n)))
#define SCB_ICSR      CT_REG(0xE000ED04u)
#define SCB_VTOR      CT_REG(0xE000ED08u)
#define SCB_CPACR     CT_REG(0xE000ED88u)
#define DEMCR         CT_REG(0xE000EDFCu)
#define DWT_CTRL      CT_REG(0xE0001000u)
#define DWT_CYCCNT    CT_REG(0xE0001004u)
#define DWT_LAR       CT_REG(0xE0001FB0u)

/* Interrupt priority of the benchmark timer: numerically >= configMAX_SYSCALL_INTERRUPT_PRIORITY (0x50)
 * so FreeRTOS FromISR calls are legal, and above SysTick/PendSV (0xF0). */
#define CT_BENCH_IRQ_PRIO 0x60u

#endif
