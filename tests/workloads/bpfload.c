/* bpfload: loads a tiny BPF program, works, unloads it, works again.
 *
 * For the side-band golden case: loading a JIT-compiled BPF program makes the
 * kernel emit PERF_RECORD_KSYMBOL and PERF_RECORD_BPF_EVENT records into a
 * recording of this task (perf record --show-bpf-events prints them). The
 * sleeps in between give context switches (--switch-events).
 *
 * Usage: bpfload            (needs root: BPF_PROG_LOAD)
 */
#define _GNU_SOURCE
#include <linux/bpf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile uint64_t sink;

NOINLINE static uint64_t spin(uint64_t n, uint64_t seed)
{
    uint64_t x = seed | 1;
    for (uint64_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    return x;
}

/* "r0 = 0; exit" as a socket filter. */
NOINLINE static int load_program(void)
{
    struct bpf_insn insns[2];
    memset(insns, 0, sizeof(insns));
    insns[0].code = BPF_ALU64 | BPF_MOV | BPF_K;
    insns[1].code = BPF_JMP | BPF_EXIT;
    union bpf_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
    attr.insns = (uint64_t)(uintptr_t)insns;
    attr.insn_cnt = 2;
    attr.license = (uint64_t)(uintptr_t)"GPL";
    strncpy(attr.prog_name, "pstitch_probe", sizeof(attr.prog_name) - 1);
    return (int)syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
}

int main(void)
{
    sink += spin(20000000, 1);
    int fd = load_program();
    if (fd < 0) {
        perror("bpfload: BPF_PROG_LOAD");
        return 1;
    }
    usleep(3000);
    sink += spin(20000000, 2);
    close(fd);
    usleep(20000);
    sink += spin(20000000, 3);
    return 0;
}
