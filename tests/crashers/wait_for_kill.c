/* Waits to be killed by another process (the test sends SIGSEGV with kill()). */
#include <stdio.h>
#include <unistd.h>

__attribute__((noinline)) void wait_forever(void) {
    for (;;) pause();
}

int main(void) {
    printf("ready\n");
    fflush(stdout);
    wait_forever();
    return 0;
}
