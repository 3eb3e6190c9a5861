/* semihost.c — BKPT 0xAB semihosting (SYS_OPEN 0x01, SYS_CLOSE 0x02, SYS_WRITE 0x05, SYS_EXIT 0x18). */
#include <stdint.h>
#include <string.h>

#include "semihost.h"

static int sh_call(int op, void *arg)
{
    register int r0 __asm__("r0") = op;
    register void *r1 __asm__("r1") = arg;
    __asm volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

int ct_sh_open(const char *name)
{
    unsigned args[3] = {(unsigned)(uintptr_t)name, 5u /* "wb" */, (unsigned)strlen(name)};
    return sh_call(0x01, args);
}

int ct_sh_write(int fd, const void *buf, size_t len)
{
    unsigned args[3] = {(unsigned)fd, (unsigned)(uintptr_t)buf, (unsigned)len};
    return sh_call(0x05, args);
}

void ct_sh_close(int fd)
{
    unsigned args[1] = {(unsigned)fd};
    (void)sh_call(0x02, args);
}

void ct_sh_exit(int ok)
{
    (void)sh_call(0x18, (void *)(uintptr_t)(ok ? 0x20026u : 0x20023u));
    for (;;) {
    }
}
