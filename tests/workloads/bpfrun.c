/* bpfrun: loads a small looping BPF program and runs it in the kernel many
 * times (BPF_PROG_TEST_RUN), so that cpu-clock samples land inside the
 * JIT-compiled program. Its address is known only from the KSYMBOL record
 * the kernel writes when the program is loaded: perf names the frame after
 * that record (bpf_prog_<tag>_<name>).
 *
 * Usage: bpfrun            (needs root: BPF_PROG_LOAD)
 */
#define _GNU_SOURCE
#include <linux/bpf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static struct bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
    struct bpf_insn i;
    memset(&i, 0, sizeof(i));
    i.code = code;
    i.dst_reg = dst;
    i.src_reg = src;
    i.off = off;
    i.imm = imm;
    return i;
}

/* r0 = 0; r2 = 0; do { r0 += r2; r2 += 1; } while (r2 < 2000); return r0 & 1
 * as a socket filter (a bounded loop the verifier accepts). */
NOINLINE static int load_program(void)
{
    struct bpf_insn insns[7] = {
        insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0),
        insn(BPF_ALU64 | BPF_MOV | BPF_K, 2, 0, 0, 0),
        insn(BPF_ALU64 | BPF_ADD | BPF_X, 0, 2, 0, 0),
        insn(BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, 1),
        insn(BPF_JMP | BPF_JLT | BPF_K, 2, 0, -3, 2000),
        insn(BPF_ALU64 | BPF_AND | BPF_K, 0, 0, 0, 1),
        insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
    };
    union bpf_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
    attr.insns = (uint64_t)(uintptr_t)insns;
    attr.insn_cnt = 7;
    attr.license = (uint64_t)(uintptr_t)"GPL";
    strncpy(attr.prog_name, "pstitch_loop", sizeof(attr.prog_name) - 1);
    return (int)syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
}

NOINLINE static int run_program(int fd, uint32_t repeat)
{
    unsigned char packet[64];
    memset(packet, 0xab, sizeof(packet));
    union bpf_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.test.prog_fd = (uint32_t)fd;
    attr.test.data_in = (uint64_t)(uintptr_t)packet;
    attr.test.data_size_in = sizeof(packet);
    attr.test.repeat = repeat;
    return (int)syscall(SYS_bpf, BPF_PROG_TEST_RUN, &attr, sizeof(attr));
}

int main(void)
{
    int fd = load_program();
    if (fd < 0) {
        perror("bpfrun: BPF_PROG_LOAD");
        return 1;
    }
    for (int i = 0; i < 20; i++) {
        if (run_program(fd, 5000) < 0) {
            perror("bpfrun: BPF_PROG_TEST_RUN");
            return 1;
        }
    }
    close(fd);
    return 0;
}
