/* A native worker pool in miniature: run_batch() hands work to a thread it starts and waits
 * for it, the way a framework's op execution waits for its pool threads. The worker faults. */
#include <pthread.h>
#include <stddef.h>
#include <unistd.h>

static void *worker(void *arg) {
    volatile int *output = (volatile int *)arg; /* NULL: the bug */
    usleep(300 * 1000);                           /* the caller is waiting by now */
    *output = 42;
    return NULL;
}

int run_batch(void) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, worker, NULL) != 0)
        return -1;
    pthread_join(thread, NULL);
    return 0;
}
