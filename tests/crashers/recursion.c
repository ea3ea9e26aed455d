/* Unbounded recursion: the stack runs into its guard page. */
#include <stdio.h>

__attribute__((noinline)) int recurse(int depth) {
    volatile char pad[256];
    pad[0] = (char)depth;
    return recurse(depth + 1) + pad[0];
}

int main(void) {
    printf("%d\n", recurse(0));
    return 0;
}
