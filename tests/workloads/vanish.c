/* vanish: a workload whose binary is deliberately NOT put into the fixtures'
 * symfs (and is deleted after recording, see tests/golden/missing-dso/recipe.sh),
 * so its own frames stay unresolved ("[unknown]") while libc and kernel frames
 * still resolve. Frame pointers keep the callchain walkable through it.
 *
 * Usage: vanish [SCALE]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile uint64_t sink;

NOINLINE static uint64_t churn(uint64_t n)
{
    uint64_t x = 88172645463325252ULL;
    for (uint64_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    return x;
}

NOINLINE static uint64_t libc_part(int rounds)
{
    char *a = malloc(1 << 16), *b = malloc(1 << 16);
    uint64_t acc = 0;
    memset(a, 'v', (1 << 16) - 1);
    a[(1 << 16) - 1] = 0;
    for (int r = 0; r < rounds; r++) {
        memcpy(b, a, 1 << 16);
        acc += strlen(b);
        acc += (uint64_t)getppid();
    }
    free(a);
    free(b);
    return acc;
}

NOINLINE static void level2(int scale)
{
    sink += churn(80000000ULL * scale / 100);
    sink += libc_part(15000 * scale / 100);
}

NOINLINE static void level1(int scale)
{
    level2(scale);
}

int main(int argc, char **argv)
{
    int scale = argc > 1 ? atoi(argv[1]) : 100;
    level1(scale);
    printf("vanish done %d\n", (int)(sink & 0xff));
    return 0;
}
