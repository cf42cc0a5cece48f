/* jitwork: a tiny "JIT" for the pstitch test fixtures (issue 27).
 *
 * Usage: jitwork [SCALE]   (SCALE in percent of the default amount of work)
 *
 * It copies a few hand-assembled x86-64 functions into an anonymous
 * mapping, makes it executable (mprotect: the kernel reports the mapping as
 * //anon, which perf names /tmp/perf-PID.map) and writes
 * /tmp/perf-<pid>.map describing them, as JITs do (`START SIZE name`, hex):
 *
 *   +0x00 jit_inner   loops N times (push rbp / mov rbp,rsp: fp callchains)
 *   +0x20 jit_outer   calls jit_inner N times
 *   +0x40 (no entry)  loops N times: a JIT frame without a symbol
 *   +0x60 _ZN3jit4leafEv  loops N times (a mangled name in the map)
 *
 * main calls jit_outer, the unnamed loop and the leaf in turn from C, so
 * callchains run JIT -> JIT -> C -> libc.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static const uint8_t code_inner[] = {
    0x55,                         /* push rbp */
    0x48, 0x89, 0xe5,             /* mov rbp, rsp */
    0x31, 0xc0,                   /* xor eax, eax */
    0x48, 0x01, 0xf8,             /* 1: add rax, rdi */
    0x48, 0x6b, 0xc0, 0x03,       /* imul rax, rax, 3 */
    0x48, 0xff, 0xcf,             /* dec rdi */
    0x75, 0xf4,                   /* jnz 1b */
    0x5d,                         /* pop rbp */
    0xc3,                         /* ret */
};

/* At +0x20: calls +0x00. */
static const uint8_t code_outer[] = {
    0x55,                         /* push rbp */
    0x48, 0x89, 0xe5,             /* mov rbp, rsp */
    0x49, 0x89, 0xf8,             /* mov r8, rdi */
    0xbf, 0x10, 0x27, 0x00, 0x00, /* 1: mov edi, 10000 */
    0xe8, 0xcf, 0xff, 0xff, 0xff, /* call -0x31 (jit_inner at +0x00) */
    0x49, 0xff, 0xc8,             /* dec r8 */
    0x75, 0xf1,                   /* jnz 1b */
    0x5d,                         /* pop rbp */
    0xc3,                         /* ret */
};

typedef uint64_t (*jit_fn)(uint64_t);

NOINLINE static uint64_t run_outer(jit_fn f, uint64_t n) { return f(n); }
NOINLINE static uint64_t run_anon(jit_fn f, uint64_t n) { return f(n); }
NOINLINE static uint64_t run_leaf(jit_fn f, uint64_t n) { return f(n); }

int main(int argc, char **argv)
{
    int scale = argc > 1 ? atoi(argv[1]) : 100;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uint8_t *buf = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    memset(buf, 0xcc, page); /* int3 between the functions */
    memcpy(buf + 0x00, code_inner, sizeof code_inner);
    memcpy(buf + 0x20, code_outer, sizeof code_outer);
    memcpy(buf + 0x40, code_inner, sizeof code_inner);
    memcpy(buf + 0x60, code_inner, sizeof code_inner);
    if (mprotect(buf, page, PROT_READ | PROT_EXEC) != 0) {
        perror("mprotect");
        return 1;
    }

    char path[64];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
    FILE *map = fopen(path, "w");
    if (!map) {
        perror(path);
        return 1;
    }
    uintptr_t base = (uintptr_t)buf;
    fprintf(map, "%lx %zx jit_inner\n", (unsigned long)base, sizeof code_inner);
    fprintf(map, "%lx %zx LazyCompile:*jit_outer jit.js:7\n", (unsigned long)(base + 0x20), sizeof code_outer);
    fprintf(map, "%lx %zx _ZN3jit4leafEv\n", (unsigned long)(base + 0x60), sizeof code_inner);
    fclose(map);

    uint64_t sum = 0;
    uint64_t rounds = 12000ULL * (uint64_t)scale / 100;
    sum += run_outer((jit_fn)(void *)(buf + 0x20), rounds);
    sum += run_anon((jit_fn)(void *)(buf + 0x40), rounds * 5000);
    sum += run_leaf((jit_fn)(void *)(buf + 0x60), rounds * 5000);
    printf("%llu\n", (unsigned long long)(sum & 1));
    return 0;
}
