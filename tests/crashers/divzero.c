/* Integer division by zero: SIGFPE with FPE_INTDIV. */
#include <stdio.h>

__attribute__((noinline)) int average(int total, int count) { return total / count; }

int main(int argc, char **argv) {
    (void)argv;
    printf("%d\n", average(100, argc - 1));
    return 0;
}
