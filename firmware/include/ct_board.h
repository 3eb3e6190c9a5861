/* ct_board.h — the board API (qemu-lab.md §8). Each board directory provides board.h (inline timestamp and
 * pin access, constants) and board.c (the functions below). Apps and ports use only this header.
 * Boards: stm32f429i_disco (real hardware), qemu_netduinoplus2 (QEMU). */
#ifndef CT_BOARD_H
#define CT_BOARD_H

#include <stddef.h>
#include <stdint.h>

/* board.h defines: CT_BOARD_NAME, CT_BOARD_CPU_HZ (core clock, SysTick source), CT_TS_HZ (timestamp
 * counter frequency), CT_BENCH_TIMER_HZ (TIM5 input clock), and the inline functions
 *   uint32_t ct_ts(void)                       free-running 32-bit timestamp counter
 *   void ct_pin_write(unsigned pin, unsigned level)  one store to GPIOG BSRR (pin 0..15 of port G)   */
#include "board.h"

void ct_board_init(void);          /* clocks, timestamp counter, GPIOG outputs, USART1 at 115200 8N1, ADC1 */
void ct_putc(char c);              /* blocking UART1 transmit */
void ct_puts(const char *s);       /* ct_putc over a NUL-terminated string */
uint16_t ct_adc_read(void);        /* one ADC1 conversion (12 bit); QEMU: no EOC poll (never set) */

/* Benchmark interrupt (TIM5): calls handler from the TIM5 ISR every period_us microseconds, with the
 * interrupt flag already acknowledged and ct_port_isr_enter()/ct_port_isr_exit() around it. */
void ct_bench_irq_start(uint32_t period_us, void (*handler)(void));
void ct_bench_irq_stop(void);

/* Trace sink: where the port's recorder writes its bytes. QEMU: a host file through semihosting (name as
 * given, relative to QEMU's working directory). Real board: returns -1 (SystemView reads RTT over the
 * debug probe; TraceX buffers are dumped with the debugger). */
int ct_board_trace_open(const char *name);
int ct_board_trace_write(const void *buf, size_t len);
void ct_board_trace_close(void);

/* End of run: drives the status pin (CT_PIN_DONE or CT_PIN_FAIL) and then QEMU: exits through
 * semihosting with status 0/1; real board: spins forever with interrupts masked. */
void ct_board_done(int ok) __attribute__((noreturn));

/* Critical section for board/port glue (PRIMASK). */
uint32_t ct_irq_save(void);
void ct_irq_restore(uint32_t state);

#endif
