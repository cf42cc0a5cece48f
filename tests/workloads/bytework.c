/* bytework: comms and a program path that are not UTF-8 (issue 27).
 *
 * Usage: bytework [SCALE]   (SCALE in percent of the default amount of work)
 *
 * build.sh copies it to /tmp/pstitch-fixtures/bin/byte\xffwork\xe9 (a file name
 * that is not UTF-8, so its MMAP2 path and its comm at exec are not either).
 * The main thread renames itself to "main\xfe\xff" with prctl(PR_SET_NAME); a
 * second thread is "w\xe9-\xc3\xa9" (a lone Latin-1 byte next to a valid UTF-8
 * e-acute). Both spin in functions of the program and in libc (qsort).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#define NOINLINE __attribute__((noinline))

static int scale = 100;
static volatile uint64_t sink;

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

NOINLINE static void spin(uint64_t rounds)
{
    uint64_t h = 1469598103934665603ULL;
    for (uint64_t i = 0; i < rounds; i++)
        h = (h ^ i) * 1099511628211ULL;
    sink = h;
}

NOINLINE static void sort_some(unsigned n)
{
    uint32_t *v = malloc(n * sizeof *v);
    uint64_t s = 88172645463325252ULL;
    for (unsigned i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        v[i] = (uint32_t)s;
    }
    qsort(v, n, sizeof *v, cmp_u32);
    sink = v[n / 2];
    free(v);
}

NOINLINE static void work(void)
{
    for (int r = 0; r < 3 * scale / 10 + 1; r++) {
        spin(2000000);
        sort_some(20000);
    }
}

static void *worker(void *arg)
{
    (void)arg;
    prctl(PR_SET_NAME, "w\xe9-\xc3\xa9", 0, 0, 0);
    work();
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        scale = atoi(argv[1]);
    prctl(PR_SET_NAME, "main\xfe\xff", 0, 0, 0);
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    work();
    pthread_join(t, NULL);
    return 0;
}
