/* A failed assert(): glibc prints and stores the message, then abort(). */
#include <assert.h>

__attribute__((noinline)) void check_invariant(int items) { assert(items >= 0 && "queue length went negative"); }

int main(int argc, char **argv) {
    (void)argv;
    check_invariant(-argc);
    return 0;
}
