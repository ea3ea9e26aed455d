/* Two threads take two mutexes in opposite orders and deadlock (lock-order inversion).
   Prints "ready" once both threads sleep in their second lock, then the main thread joins
   them forever. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

pthread_mutex_t accounts_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t journal_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t both_hold_one;
static volatile pid_t worker_tids[2];

/* The thread sleeps in the kernel (state S in /proc/self/task/TID/stat). */
static int sleeping(pid_t tid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *end = strrchr(buf, ')');
    return end && end[1] == ' ' && end[2] == 'S';
}

__attribute__((noinline)) void post_transfer(void) {
    worker_tids[0] = (pid_t)syscall(SYS_gettid);
    pthread_mutex_lock(&accounts_lock);
    pthread_barrier_wait(&both_hold_one);
    pthread_mutex_lock(&journal_lock); /* held by write_journal: waits forever */
}

__attribute__((noinline)) void write_journal(void) {
    worker_tids[1] = (pid_t)syscall(SYS_gettid);
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
    /* A lock word of 2 means "locked, with a waiter": both threads passed the barrier and
       asked for their second lock; once both sleep, they are in it for good. */
    while (!(accounts_lock.__data.__lock == 2 && journal_lock.__data.__lock == 2 && sleeping(worker_tids[0]) &&
             sleeping(worker_tids[1])))
        usleep(1000);
    printf("ready\n");
    fflush(stdout);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    return 0;
}
