/* cwork: small multi-threaded C workload for the pstitch test fixtures.
 *
 * Usage: cwork [SCALE]   (SCALE in percent of the default amount of work, default 100)
 *
 * Shape of the work (so that callchains are a few levels deep):
 *   main -> run_stages -> {sort_stage, hash_stage, copy_stage, syscall_stage}
 *   worker threads "cw-sort" (renamed with pthread_setname_np) and an unnamed one
 *   ("cwork") run the same stages with different weights.
 *   - sort_stage: libc qsort() with a comparator callback (libc -> our code frames)
 *   - hash_stage: always-inlined helpers (mix64, rotl) -> DWARF inlined subroutines
 *   - copy_stage: memcpy / strlen / memset in libc
 *   - syscall_stage: write(2) to /dev/null and getpid(2) -> kernel frames
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static int scale = 100;
static volatile uint64_t sink;

static inline __attribute__((always_inline)) uint64_t rotl(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

static inline __attribute__((always_inline)) uint64_t mix64(uint64_t h, uint64_t v)
{
    h ^= v * 0x9e3779b97f4a7c15ULL;
    h = rotl(h, 27) * 0xff51afd7ed558ccdULL;
    return h ^ (h >> 31);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

NOINLINE static void fill_random(uint32_t *v, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = mix64(seed, i);
        v[i] = (uint32_t)seed;
    }
}

NOINLINE static uint64_t sort_stage(int rounds)
{
    const size_t n = 4096;
    uint32_t *v = malloc(n * sizeof *v);
    uint64_t acc = 0;
    for (int r = 0; r < rounds; r++) {
        fill_random(v, n, (uint64_t)r + 1);
        qsort(v, n, sizeof *v, cmp_u32);
        acc += v[n / 2];
    }
    free(v);
    return acc;
}

NOINLINE static uint64_t hash_buffer(const unsigned char *p, size_t n)
{
    uint64_t h = 0x12345678;
    for (size_t i = 0; i < n; i++)
        h = mix64(h, p[i]);
    return h;
}

NOINLINE static uint64_t hash_stage(int rounds)
{
    unsigned char buf[8192];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)(i * 7);
    uint64_t acc = 0;
    for (int r = 0; r < rounds; r++) {
        buf[r % sizeof buf] ^= (unsigned char)r;
        acc += hash_buffer(buf, sizeof buf);
    }
    return acc;
}

NOINLINE static uint64_t copy_stage(int rounds)
{
    const size_t n = 1 << 16;
    char *a = malloc(n), *b = malloc(n);
    uint64_t acc = 0;
    memset(a, 'x', n - 1);
    a[n - 1] = 0;
    for (int r = 0; r < rounds; r++) {
        memcpy(b, a, n);
        b[r % (n - 1)] = 0;
        acc += strlen(b);
        memset(a, 'a' + r % 26, n - 1);
    }
    free(a);
    free(b);
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
        acc += (uint64_t)syscall(SYS_getpid);
    }
    close(fd);
    return acc;
}

struct weights {
    int sort, hash, copy, sys;
    const char *name; /* thread name to set, or NULL to keep the inherited "cwork" */
};

NOINLINE static uint64_t run_stages(const struct weights *w)
{
    uint64_t acc = 0;
    acc += sort_stage(w->sort * scale / 100);
    acc += hash_stage(w->hash * scale / 100);
    acc += copy_stage(w->copy * scale / 100);
    acc += syscall_stage(w->sys * scale / 100);
    return acc;
}

static void *worker(void *arg)
{
    const struct weights *w = arg;
    if (w->name)
        pthread_setname_np(pthread_self(), w->name);
    sink += run_stages(w);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        scale = atoi(argv[1]);
    static const struct weights wsort = {300, 300, 1000, 80000, "cw-sort"};
    static const struct weights whash = {40, 2000, 1000, 80000, NULL};
    static const struct weights wmain = {100, 500, 4000, 150000, NULL};
    pthread_t t1, t2;
    pthread_create(&t1, NULL, worker, (void *)&wsort);
    pthread_create(&t2, NULL, worker, (void *)&whash);
    sink += run_stages(&wmain);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    printf("cwork done %llu\n", (unsigned long long)(sink & 0xff));
    return 0;
}
