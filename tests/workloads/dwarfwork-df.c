/* dwarfwork-df: the part of dwarfwork built with -fno-asynchronous-unwind-tables
 * (see build.sh): its functions have CFI in .debug_frame only, none in .eh_frame,
 * so an unwinder has to fall back from .eh_frame to .debug_frame for them (libdw:
 * dwfl_module_eh_cfi finds no FDE, then dwfl_module_dwarf_cfi).
 */
#include <stdint.h>

#define NOINLINE __attribute__((noinline))

NOINLINE static uint64_t df_leaf(uint64_t h, int n)
{
    volatile uint64_t keep[8];
    for (int i = 0; i < n; i++) {
        h = (h ^ (h >> 31)) * 0x94d049bb133111ebULL + (uint64_t)i;
        keep[i & 7] = h;
    }
    return h + keep[3];
}

NOINLINE static uint64_t df_middle(uint64_t h, int n)
{
    return df_leaf(h * 3 + 1, n) ^ df_leaf(h, n / 2);
}

uint64_t df_stage(int rounds)
{
    uint64_t acc = 0;
    for (int r = 0; r < rounds; r++)
        acc += df_middle((uint64_t)r, 400);
    return acc;
}
