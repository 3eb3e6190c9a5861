/* semihost.h — ARM semihosting calls used by the QEMU board (qemu-lab.md §5): files for trace buffers and
 * the exit status. Only valid when a debugger/QEMU services BKPT 0xAB (QEMU: -semihosting-config). */
#ifndef CT_SEMIHOST_H
#define CT_SEMIHOST_H

#include <stddef.h>

int ct_sh_open(const char *name);                 /* "wb"; returns handle or -1 */
int ct_sh_write(int fd, const void *buf, size_t len); /* returns bytes NOT written (0 = all) */
void ct_sh_close(int fd);
void ct_sh_exit(int ok) __attribute__((noreturn)); /* ApplicationExit (rc 0) or RunTimeErrorUnknown (rc 1) */

#endif
