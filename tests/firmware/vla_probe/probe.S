@ Virtual-logic-analyzer probe for netduinoplus2 (tests/firmware/test_vla.py): eight GPIOG BSRR edges
@ on PG2 with fixed spin loops, an ODR write, a halfword BSRR reset, a CT_DONE line on USART1, then the
@ semihosting exit. Built with arm-none-eabi-gcc -nostdlib; no third-party code.
    .syntax unified
    .cpu cortex-m4
    .thumb

    .text                       @ linked at 0x08000000: the vector table comes first
    .word 0x20010000            @ initial SP
    .word reset                 @ reset vector (thumb bit set by .thumb_func)

    .thumb_func
    .global reset
reset:
    ldr   r4, =0x40021818       @ GPIOG BSRR
    ldr   r1, =0x00000004       @ set PG2
    ldr   r2, =0x00040000       @ reset PG2
    movs  r6, #4                @ 4 pulses = 8 edges
pulse:
    str   r1, [r4]              @ PG2 -> 1
    movs  r3, #SPIN
1:  subs  r3, #1
    bne   1b
    str   r2, [r4]              @ PG2 -> 0
    movs  r3, #SPIN
2:  subs  r3, #1
    bne   2b
    subs  r6, #1
    bne   pulse

    ldr   r5, =0x40021814       @ GPIOG ODR: PG3 and PG4 high in one store
    movs  r0, #0x18
    str   r0, [r5]
    movs  r0, #0x08             @ BSRR upper halfword (offset 0x1A): reset PG3
    strh  r0, [r4, #2]

    ldr   r5, =0x40011000       @ USART1
    ldr   r0, =0x200C           @ CR1 = UE | TE | RE
    str   r0, [r5, #0x0C]
    adr   r1, msg               @ "CT_DONE ok=1 fail=0\n", one DR store per byte
4:  ldrb  r0, [r1], #1
    cbz   r0, 5f
    strb  r0, [r5, #4]
    b     4b
5:

    movs  r0, #0x18             @ SYS_EXIT
    ldr   r1, =0x20026          @ ADP_Stopped_ApplicationExit
    bkpt  0xab
3:  b     3b
    .ltorg
    .align 2
msg:
    .asciz "CT_DONE ok=1 fail=0\n"
