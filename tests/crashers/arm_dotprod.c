/* An Armv8.2 dot-product instruction (sdot) on a CPU without it (a Cortex-A53): SIGILL. */
__attribute__((noinline)) void int8_dot(void) {
    __asm__ volatile(".arch armv8.2-a+dotprod\n\tsdot v0.4s, v1.16b, v2.16b" ::: "v0");
}

int main(void) {
    int8_dot();
    return 0;
}
