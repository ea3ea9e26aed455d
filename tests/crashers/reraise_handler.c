/* A crash reporter in miniature: a SIGSEGV handler (SA_SIGINFO, on an alternate stack) writes a
 * line, puts the default action back and raises the signal again, the way absl's failure signal
 * handler and most crash reporters end. The core's siginfo is then the re-raise (SI_TKILL from
 * the process itself); the signal the handler took is in the signal frame under it.
 *
 *   reraise_handler           a write through a wild pointer (0xdead0000), re-raised
 *   reraise_handler wait      prints "ready" and waits for a SIGSEGV or SIGABRT sent with kill()
 *                             (a person, a watchdog), re-raised
 *   reraise_handler smash     the handler overwrites its signal frame with garbage, then re-raises
 *   reraise_handler inside    a SIGUSR1 handler that itself writes through a null pointer: a
 *                             crash inside a handler, not a re-raise
 *   reraise_handler chain     a second handler installed over the first (as faulthandler chains to
 *                             the handler it replaced) puts the first back and raises the signal
 *                             again; the first one then re-raises it once more
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

static int smash_frame;

__attribute__((noinline)) void report_crash_and_reraise(int sig, siginfo_t *info, void *context) {
    static const char line[] = "crash reporter: fatal signal, re-raising\n";
    if (write(2, line, sizeof line - 1) < 0) {
        _exit(3);
    }
    if (smash_frame) {
        /* A damaged frame: what a stack overflow inside a handler would leave. */
        ucontext_t *uc = context;
        memset(&uc->uc_mcontext, 0x41, sizeof uc->uc_mcontext);
        memset(info, 0x41, sizeof *info);
    }
    signal(sig, SIG_DFL);
    raise(sig);
    /* Not reached when the default action dumps core; keeps the call above from being a tail call. */
    _exit(4);
}

static struct sigaction replaced;

__attribute__((noinline)) void chain_to_replaced_handler(int sig, siginfo_t *info, void *context) {
    (void)info;
    (void)context;
    sigaction(sig, &replaced, NULL);
    raise(sig);
    _exit(5);
}

__attribute__((noinline)) void store_value(volatile int *where, int value) {
    *where = value;
}

__attribute__((noinline)) void faulty_usr1_handler(int sig) {
    store_value((volatile int *)(long)(sig - 10), sig); /* SIGUSR1 is 10: a write to address 0 */
}

__attribute__((noinline)) void wait_for_signal(void) {
    for (;;) pause();
}

int main(int argc, char **argv) {
    static char alternate[1 << 16];
    stack_t stack = {.ss_sp = alternate, .ss_size = sizeof alternate, .ss_flags = 0};
    struct sigaction action;
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "inside") == 0) {
        signal(SIGUSR1, faulty_usr1_handler);
        raise(SIGUSR1);
        return 0;
    }
    smash_frame = strcmp(mode, "smash") == 0;
    sigaltstack(&stack, NULL);
    memset(&action, 0, sizeof action);
    action.sa_sigaction = report_crash_and_reraise;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigaction(SIGSEGV, &action, NULL);
    if (strcmp(mode, "chain") == 0) {
        action.sa_sigaction = chain_to_replaced_handler;
        sigaction(SIGSEGV, &action, &replaced);
    }
    if (strcmp(mode, "wait") == 0) {
        sigaction(SIGABRT, &action, NULL);
        printf("ready\n");
        fflush(stdout);
        wait_for_signal();
    }
    store_value((volatile int *)0xdead0000, 7);
    return 0;
}
