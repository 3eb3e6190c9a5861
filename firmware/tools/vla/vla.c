/* crosstrace virtual logic analyzer: a QEMU 7.2 TCG plugin that logs every store to two MMIO windows
 * (GPIO port, USART) with its exact virtual time, instruction count, address, value and size, as a
 * binary edge log (format in firmware/tools/vla/README.md). Pin levels and the UART waveform are
 * rebuilt on the host (firmware/tools/vla/edgelog.py). SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the subset of QEMU 7.2's plugin API v1 used here, declared from the documented ABI ---------- */
#define CT_EXPORT __attribute__((visibility("default")))
typedef uint64_t qemu_plugin_id_t;
typedef uint32_t qemu_plugin_meminfo_t;
typedef struct qemu_info_t qemu_info_t; /* used only through a pointer */
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS = 0, QEMU_PLUGIN_CB_R_REGS = 1, QEMU_PLUGIN_CB_RW_REGS = 2 };
enum qemu_plugin_mem_rw { QEMU_PLUGIN_MEM_R = 1, QEMU_PLUGIN_MEM_W = 2, QEMU_PLUGIN_MEM_RW = 3 };
typedef void (*ct_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*ct_mem_cb_t)(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata);
typedef void (*ct_udata_cb_t)(qemu_plugin_id_t id, void *udata);

extern void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, ct_tb_trans_cb_t cb);
extern void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn, ct_mem_cb_t cb,
                                             enum qemu_plugin_cb_flags flags, enum qemu_plugin_mem_rw rw,
                                             void *udata);
extern void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, ct_udata_cb_t cb, void *udata);
extern size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
extern struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
extern const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
extern size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
extern unsigned int qemu_plugin_mem_size_shift(qemu_plugin_meminfo_t info);
extern void qemu_plugin_outs(const char *string);

/* Not plugin API: internal QEMU functions that Debian's 7.2 binary exports (qemu-lab.md section 4.2).
 * QEMU 9.x has official register-read and store-value APIs; port to them when upgrading. */
typedef struct CPUState CPUState;
typedef struct {
    uint8_t *data;
    unsigned int len;
} GByteArray; /* glib ABI */
extern int64_t qemu_clock_get_ns(int type); /* QEMU_CLOCK_VIRTUAL = 1 */
extern int64_t icount_get_raw(void);
extern CPUState *qemu_get_cpu(int index);
extern int arm_cpu_gdb_read_register(CPUState *cs, GByteArray *buf, int n);
extern GByteArray *g_byte_array_new(void);
extern GByteArray *g_byte_array_set_size(GByteArray *array, unsigned int length);

CT_EXPORT int qemu_plugin_version = 1;

/* ---- edge log ----------------------------------------------------------------------------------- */
#define LOG_MAGIC "CTVLA\x01\r\n" /* 8 bytes; then u32 version, record size, gpio base/size, uart base/size */
#define LOG_VERSION 1u
typedef struct {
    uint64_t vt_ns;  /* QEMU_CLOCK_VIRTUAL at the store */
    uint64_t icount; /* guest instructions executed (icount_get_raw) */
    uint32_t addr;   /* guest address written */
    uint32_t value;  /* stored value, masked to the access size */
    uint8_t size;    /* access size in bytes */
    uint8_t window;  /* 0 = GPIO window, 1 = UART window */
    uint8_t flags;   /* bit 0: the value could not be read */
    uint8_t pad[5];
} ct_rec; /* 32 bytes, little-endian host */

#define BUF_RECS 2048
static ct_rec buf[BUF_RECS];
static size_t nbuf;
static uint64_t nrec;
static FILE *out;
static GByteArray *regbuf;
static uint32_t win_base[2] = {0x40021800u, 0x40011000u}; /* GPIOG, USART1 */
static uint32_t win_size[2] = {0x400u, 0x400u};
static bool want_icount = true;

static void flush_buf(void)
{
    if (nbuf && fwrite(buf, sizeof(ct_rec), nbuf, out) != nbuf) {
        qemu_plugin_outs("vla: write to the edge log failed\n");
        exit(70);
    }
    nbuf = 0;
}

static void on_store(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata)
{
    /* Cortex-M without MPU remapping: virtual == physical address. */
    int w;
    if (vaddr - win_base[0] < win_size[0]) {
        w = 0;
    } else if (vaddr - win_base[1] < win_size[1]) {
        w = 1;
    } else {
        return;
    }
    unsigned int size = 1u << qemu_plugin_mem_size_shift(info);
    int rt = (int)(uintptr_t)udata;
    ct_rec *r = &buf[nbuf];
    memset(r, 0, sizeof *r);
    r->vt_ns = (uint64_t)qemu_clock_get_ns(1);
    r->icount = want_icount ? (uint64_t)icount_get_raw() : 0;
    r->addr = (uint32_t)vaddr;
    r->size = (uint8_t)size;
    r->window = (uint8_t)w;
    g_byte_array_set_size(regbuf, 0);
    if (arm_cpu_gdb_read_register(qemu_get_cpu((int)vcpu), regbuf, rt) == 4 && regbuf->len >= 4) {
        uint32_t v;
        memcpy(&v, regbuf->data, 4);
        r->value = size >= 4 ? v : v & ((1u << (8 * size)) - 1u);
    } else {
        r->flags = 1;
    }
    nrec++;
    if (++nbuf == BUF_RECS) {
        flush_buf();
    }
}

/* Rt of a Thumb store that writes one register to a non-stack address, or -1 (qemu-lab.md section 4.2
 * encoding table, minus the SP-based forms, which cannot address a peripheral). */
static int store_rt(const uint8_t *p, size_t n)
{
    if (n < 2) {
        return -1;
    }
    uint16_t h = (uint16_t)(p[0] | (p[1] << 8));
    if (n == 2) {
        uint16_t top5 = h & 0xF800;
        if (top5 == 0x6000 || top5 == 0x7000 || top5 == 0x8000) {
            return h & 7; /* STR/STRB/STRH imm5 */
        }
        /* 0x9000 STR SP-relative: always the stack, never a peripheral: not instrumented */
        uint16_t op = h & 0xFE00;
        if (op == 0x5000 || op == 0x5200 || op == 0x5400) {
            return h & 7; /* STR/STRH/STRB register */
        }
        return -1;
    }
    if (n == 4 && (h & 0xFF00) == 0xF800 && (h & 0x0010) == 0 && (h & 0xF) != 13) {
        uint16_t h2 = (uint16_t)(p[2] | (p[3] << 8)); /* (Rn = SP: stack, skipped) */
        return (h2 >> 12) & 0xF; /* STR{,B,H}{.W} imm/reg */
    }
    return -1;
}

static void on_tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        int rt = store_rt(qemu_plugin_insn_data(insn), qemu_plugin_insn_size(insn));
        if (rt >= 0) {
            qemu_plugin_register_vcpu_mem_cb(insn, on_store, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_MEM_W,
                                             (void *)(uintptr_t)rt);
        }
    }
}

static void vla_atexit(qemu_plugin_id_t id, void *udata)
{
    (void)id;
    (void)udata;
    flush_buf();
    fclose(out);
    char msg[96];
    snprintf(msg, sizeof msg, "vla: %llu stores logged\n", (unsigned long long)nrec);
    qemu_plugin_outs(msg);
}

static bool parse_u32(const char *s, uint32_t *v)
{
    char *end;
    unsigned long long x = strtoull(s, &end, 0);
    if (*s == '\0' || *end != '\0' || x > 0xFFFFFFFFull) {
        return false;
    }
    *v = (uint32_t)x;
    return true;
}

CT_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
    (void)info;
    const char *path = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *eq = strchr(a, '=');
        bool ok = eq != NULL;
        if (ok && strncmp(a, "out=", 4) == 0) {
            path = eq + 1;
        } else if (ok && strncmp(a, "gpio=", 5) == 0) {
            ok = parse_u32(eq + 1, &win_base[0]);
        } else if (ok && strncmp(a, "gpio_size=", 10) == 0) {
            ok = parse_u32(eq + 1, &win_size[0]);
        } else if (ok && strncmp(a, "uart=", 5) == 0) {
            ok = parse_u32(eq + 1, &win_base[1]);
        } else if (ok && strncmp(a, "uart_size=", 10) == 0) {
            ok = parse_u32(eq + 1, &win_size[1]);
        } else if (ok && strncmp(a, "icount=", 7) == 0) {
            want_icount = strcmp(eq + 1, "0") != 0;
        } else {
            ok = false;
        }
        if (!ok) {
            fprintf(stderr, "vla: bad argument '%s' (expected out=, gpio=, gpio_size=, uart=, uart_size=, "
                            "icount=)\n", a);
            return -1;
        }
    }
    if (path == NULL) {
        fprintf(stderr, "vla: missing out=<edge log path>\n");
        return -1;
    }
    out = fopen(path, "wb");
    if (out == NULL) {
        fprintf(stderr, "vla: cannot open '%s' for writing\n", path);
        return -1;
    }
    uint32_t hdr[6] = {LOG_VERSION, (uint32_t)sizeof(ct_rec), win_base[0], win_size[0], win_base[1], win_size[1]};
    fwrite(LOG_MAGIC, 1, 8, out);
    fwrite(hdr, sizeof hdr, 1, out);
    regbuf = g_byte_array_new();
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb_trans);
    qemu_plugin_register_atexit_cb(id, vla_atexit, NULL);
    return 0;
}
