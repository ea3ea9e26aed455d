/* A write through a wild (non-null, unmapped) pointer. */
#include <stdint.h>

__attribute__((noinline)) void write_wild(volatile uint64_t *p) { *p = 0x1234; }

int main(void) {
    write_wild((volatile uint64_t *)(uintptr_t)0x1ead0000bee8ULL);
    return 0;
}
