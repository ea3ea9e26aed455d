/* A rank that learns who it is at run time, as scripts that set their launcher's variables
 * themselves do, then faults: RANK and WORLD_SIZE are set with setenv (as Python's
 * `os.environ[...] = ...` does), PYTEST_CURRENT_TEST with putenv, MASTER_ADDR is changed from
 * the value it started with, and DROPPED is removed. None of it is in the environment the
 * process started with. It does not name `environ` itself: libc's own copy is the live one. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static void fault(volatile int *p) { *p = 1; }

int main(void) {
    static char current_test[] = "PYTEST_CURRENT_TEST=tests/test_model.py::test_forward (call)";
    setenv("RANK", "1", 1);
    setenv("WORLD_SIZE", "4", 1);
    setenv("MASTER_ADDR", "10.0.0.7", 1);
    putenv(current_test);
    unsetenv("DROPPED");
    fault(NULL);
    puts("unreachable");
    return 0;
}
