/* Two threads take two mutexes in opposite orders and deadlock (lock-order inversion).
   Prints "ready" once both threads are stuck, then the main thread joins them forever. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

pthread_mutex_t accounts_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t journal_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t both_hold_one;

__attribute__((noinline)) void post_transfer(void) {
    pthread_mutex_lock(&accounts_lock);
    pthread_barrier_wait(&both_hold_one);
    pthread_mutex_lock(&journal_lock); /* held by write_journal: waits forever */
}

__attribute__((noinline)) void write_journal(void) {
    pthread_mutex_lock(&journal_lock);
    pthread_barrier_wait(&both_hold_one);
    pthread_mutex_lock(&accounts_lock); /* held by post_transfer: waits forever */
}

static void *transfer_thread(void *arg) { (void)arg; post_transfer(); return NULL; }
static void *journal_thread(void *arg) { (void)arg; write_journal(); return NULL; }

int main(void) {
    pthread_t a, b;
    pthread_barrier_init(&both_hold_one, NULL, 2);
    pthread_create(&a, NULL, transfer_thread, NULL);
    pthread_create(&b, NULL, journal_thread, NULL);
    /* Both threads block in their second lock right after the barrier; "ready" only says
       they got that far, the test waits until both sleep in the kernel. */
    printf("ready\n");
    fflush(stdout);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    return 0;
}
