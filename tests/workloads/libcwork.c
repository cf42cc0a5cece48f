/* libcwork: a process that spends its time inside libc, built WITHOUT frame
 * pointers and recorded with `perf record --call-graph dwarf` (issue 25).
 *
 * Usage: libcwork [SCALE]   (SCALE in percent of the default amount of work, default 100)
 *
 * Most samples are in glibc's own code (built without frame pointers, unwound with
 * its .eh_frame), several libc frames deep: printf-family formatting of doubles
 * (vfprintf -> __printf_fp -> __mpn_*), strtod, malloc/free churn of many sizes,
 * qsort with strcmp, string functions (IFUNC-selected AVX versions reached through
 * the PLT), getenv, and stdio to /dev/null (fwrite -> _IO_* -> write).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

static volatile uint64_t sink;

NOINLINE static uint64_t format_stage(int rounds, FILE *out)
{
    char buf[256];
    uint64_t acc = 0;
    for (int r = 0; r < rounds; r++) {
        int n = snprintf(buf, sizeof buf, "%.17g %e %08x %s %ld", r * 3.14159265358979, r / 7.0,
                         (unsigned)r, r % 2 ? "odd" : "even", (long)r * 1000003L);
        acc += (uint64_t)strtod(buf, NULL);
        fwrite(buf, 1, (size_t)n, out);
    }
    return acc;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

NOINLINE static uint64_t alloc_stage(int rounds)
{
    enum { N = 512 };
    char *v[N];
    uint64_t acc = 0;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < N; i++) {
            size_t len = 8 + (size_t)((i * 37 + r) % 200);
            v[i] = malloc(len + 1);
            memset(v[i], 'a' + (i + r) % 26, len);
            v[i][len] = 0;
            v[i][(i * 13) % len] = (char)('A' + i % 26);
        }
        qsort(v, N, sizeof v[0], cmp_str);
        for (int i = 0; i < N; i++) {
            acc += strlen(v[i]) + (strchr(v[i], 'Q') != NULL);
            free(v[i]);
        }
    }
    return acc;
}

NOINLINE static uint64_t env_stage(int rounds)
{
    uint64_t acc = 0;
    for (int r = 0; r < rounds; r++) {
        const char *p = getenv(r % 2 ? "PATH" : "LIBCWORK_UNSET");
        acc += p ? strlen(p) : 1;
    }
    return acc;
}

int main(int argc, char **argv)
{
    int scale = argc > 1 ? atoi(argv[1]) : 100;
    FILE *out = fopen("/dev/null", "w");
    if (!out)
        return 1;
    sink += format_stage(40000 * scale / 100, out);
    sink += alloc_stage(300 * scale / 100);
    sink += env_stage(200000 * scale / 100);
    fclose(out);
    printf("libcwork done %llu\n", (unsigned long long)(sink & 0xff));
    return 0;
}
