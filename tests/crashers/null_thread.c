/* A null pointer dereference in a worker thread; the main thread waits in join. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stddef.h>

struct job { int *target; };

__attribute__((noinline)) void store_result(struct job *j, int value) { *j->target = value; }

static void *worker(void *arg) {
    struct job j = { NULL };
    (void)arg;
    store_result(&j, 42);
    return NULL;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_setname_np(t, "worker-1");
    pthread_join(t, NULL);
    return 0;
}
