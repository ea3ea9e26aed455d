/* A crash reporter in miniature: a SIGSEGV handler on an alternate stack writes a line, puts
 * the default action back and raises the signal again, the way Python's faulthandler, absl's
 * failure signal handler and most crash reporters end. The core's siginfo is then the re-raise
 * (SI_TKILL from the process itself); the fault is a write through a wild pointer. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) void report_crash_and_reraise(int sig, siginfo_t *info, void *context) {
    static const char line[] = "crash reporter: fatal signal, re-raising\n";
    (void)info;
    (void)context;
    if (write(2, line, sizeof line - 1) < 0) {
        _exit(3);
    }
    signal(sig, SIG_DFL);
    raise(sig);
    /* Not reached when the default action dumps core; keeps the call above from being a tail call. */
    _exit(4);
}

__attribute__((noinline)) void store_value(volatile int *where, int value) {
    *where = value;
}

int main(void) {
    static char alternate[1 << 16];
    stack_t stack = {.ss_sp = alternate, .ss_size = sizeof alternate, .ss_flags = 0};
    struct sigaction action;
    sigaltstack(&stack, NULL);
    memset(&action, 0, sizeof action);
    action.sa_sigaction = report_crash_and_reraise;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigaction(SIGSEGV, &action, NULL);
    store_value((volatile int *)0xdead0000, 7);
    return 0;
}
