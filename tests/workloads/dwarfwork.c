/* dwarfwork: C workload built WITHOUT frame pointers, recorded with
 * `perf record --call-graph dwarf` (DWARF unwinding, issue 25).
 *
 * Usage: dwarfwork [SCALE]   (SCALE in percent of the default amount of work, default 100)
 *
 * Every stage is a different situation for a CFI unwinder (libdw in perf 7.2):
 *   - descend: recursion 48 deep with a 160-byte frame each, so that a stack copy of
 *     8192 bytes (dwarf default) is sometimes too short and one of 1024 bytes always is;
 *   - sort_stage: libc qsort() calling back into our code (libc's CFI, then ours);
 *   - math_stage: libm sin/exp/log through the PLT (libm's CFI);
 *   - plt_stage: strlen() of a 2-byte string in a tight loop, so that samples land in
 *     the PLT stub (whose CFI is a DW_CFA_def_cfa_expression) and in libc's strlen;
 *   - vla_stage: a variable-length array, so gcc keeps a frame pointer in %rbp for
 *     that function only (CFA = rbp + 16);
 *   - signal handler: ITIMER_PROF delivers SIGPROF every 2 ms of CPU time; the handler
 *     computes a little, so some samples unwind through __restore_rt (an 'S' signal
 *     frame) back into the interrupted code;
 *   - clock_stage: clock_gettime() runs in the [vdso];
 *   - syscall_stage: write(2) -> kernel frames in front of the user frames;
 *   - df_stage (dwarfwork-df.c, built with -fno-asynchronous-unwind-tables): code with
 *     .debug_frame CFI only, no .eh_frame;
 *   - a second thread ("dw-worker") runs descend and sort_stage.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static int scale = 100;
static volatile uint64_t sink;
static volatile int in_handler;

uint64_t df_stage(int rounds); /* dwarfwork-df.c */

NOINLINE static uint64_t leaf_mix(uint64_t h, int n)
{
    for (int i = 0; i < n; i++)
        h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ULL + (uint64_t)i;
    return h;
}

/* 160 bytes of locals per level; the volatile buffer keeps gcc from folding it. */
NOINLINE static uint64_t descend(int depth, uint64_t h)
{
    volatile unsigned char pad[160];
    for (size_t i = 0; i < sizeof pad; i++)
        pad[i] = (unsigned char)(h + i);
    if (depth == 0)
        return leaf_mix(h, 20000);
    uint64_t r = descend(depth - 1, h * 31 + pad[depth % sizeof pad]);
    return r + pad[(depth * 7) % sizeof pad];
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

NOINLINE static uint64_t sort_stage(int rounds)
{
    const size_t n = 2048;
    uint64_t *v = malloc(n * sizeof *v);
    uint64_t acc = 0;
    for (int r = 0; r < rounds; r++) {
        uint64_t s = (uint64_t)r * 0x9e3779b97f4a7c15ULL + 1;
        for (size_t i = 0; i < n; i++) {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            v[i] = s;
        }
        qsort(v, n, sizeof *v, cmp_u64);
        acc += v[n / 2];
    }
    free(v);
    return acc;
}

NOINLINE static double math_stage(int rounds)
{
    double acc = 0;
    for (int r = 0; r < rounds; r++)
        acc += sin(acc + r) + exp(-(double)(r % 50)) + log(1.0 + r);
    return acc;
}

static const char *volatile short_string = "ab";

NOINLINE static uint64_t plt_stage(int rounds)
{
    uint64_t acc = 0;
    for (int r = 0; r < rounds; r++)
        acc += strlen(short_string);
    return acc;
}

NOINLINE static uint64_t vla_stage(int rounds, int n)
{
    uint64_t acc = 0;
    for (int r = 0; r < rounds; r++) {
        uint64_t v[n + r % 7];
        for (int i = 0; i < n + r % 7; i++)
            v[i] = (uint64_t)i * r;
        acc += leaf_mix(v[r % n], 50);
    }
    return acc;
}

NOINLINE static uint64_t clock_stage(int rounds)
{
    uint64_t acc = 0;
    struct timespec ts;
    for (int r = 0; r < rounds; r++) {
        clock_gettime(CLOCK_MONOTONIC, &ts);
        acc += (uint64_t)ts.tv_nsec;
    }
    return acc;
}

NOINLINE static uint64_t syscall_stage(int rounds)
{
    int fd = open("/dev/null", O_WRONLY);
    char line[64];
    uint64_t acc = 0;
    for (int r = 0; r < rounds; r++) {
        int len = snprintf(line, sizeof line, "round %d\n", r);
        if (write(fd, line, (size_t)len) == len)
            acc++;
    }
    close(fd);
    return acc;
}

NOINLINE static void on_prof(int sig)
{
    (void)sig;
    in_handler = 1;
    sink += leaf_mix((uint64_t)sig, 30000);
    in_handler = 0;
}

static void *worker(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "dw-worker");
    for (int i = 0; i < 4 * scale / 100 + 1; i++) {
        sink += descend(48, (uint64_t)i);
        sink += sort_stage(30);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        scale = atoi(argv[1]);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_prof;
    sigaction(SIGPROF, &sa, NULL);
    struct itimerval it = {{0, 2000}, {0, 2000}};
    setitimer(ITIMER_PROF, &it, NULL);

    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    for (int i = 0; i < 4 * scale / 100 + 1; i++) {
        sink += descend(48, (uint64_t)i + 100);
        sink += sort_stage(20);
        sink += (uint64_t)math_stage(150000);
        sink += plt_stage(2000000);
        sink += vla_stage(20000, 40);
        sink += clock_stage(200000);
        sink += syscall_stage(20000);
        sink += df_stage(3000);
    }
    pthread_join(t, NULL);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &off, NULL);
    printf("dwarfwork done %llu\n", (unsigned long long)(sink & 0xff));
    return 0;
}
