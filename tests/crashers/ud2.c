/* An undefined instruction (ud2): SIGILL with ILL_ILLOPN. */
__attribute__((noinline)) void unreachable_path(void) { __builtin_trap(); }

int main(void) {
    unreachable_path();
    return 0;
}
