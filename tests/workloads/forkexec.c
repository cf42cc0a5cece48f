/* forkexec: fork + exec workload for the pstitch test fixtures.
 *
 * Usage: forkexec [PROGRAM [ARGS...]]
 *   default: /tmp/pstitch-fixtures/bin/cwork 25
 *
 * The parent forks twice:
 *   - child 1 does some work of its own (a FORK without exec; its comm stays
 *     "forkexec") and exits;
 *   - child 2 renames itself ("fe-child", PR_SET_NAME -> COMM record), works a
 *     little, then execs PROGRAM (COMM record with the exec flag, new MMAPs);
 * while the parent works and then waits for both (EXIT records).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
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

NOINLINE static void parent_work(void)
{
    sink += spin(60000000, 1);
}

NOINLINE static void child_work(void)
{
    sink += spin(30000000, 2);
}

NOINLINE static void before_exec(void)
{
    sink += spin(10000000, 3);
}

int main(int argc, char **argv)
{
    char *def[] = {"/tmp/pstitch-fixtures/bin/cwork", "25", NULL};
    char **prog = argc > 1 ? argv + 1 : def;

    pid_t c1 = fork();
    if (c1 == 0) {
        child_work();
        _exit(0);
    }
    pid_t c2 = fork();
    if (c2 == 0) {
        prctl(PR_SET_NAME, "fe-child", 0, 0, 0);
        before_exec();
        execv(prog[0], prog);
        perror("execv");
        _exit(127);
    }
    parent_work();
    int st1 = 0, st2 = 0;
    waitpid(c1, &st1, 0);
    waitpid(c2, &st2, 0);
    printf("forkexec done %d %d\n", WEXITSTATUS(st1), WEXITSTATUS(st2));
    return 0;
}
