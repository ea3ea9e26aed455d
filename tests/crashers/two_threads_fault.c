/* Two threads fault at the same moment: both wait at a barrier, then both write through null. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stddef.h>

static pthread_barrier_t start;
static int *volatile nowhere;  /* null, and the compiler cannot know it */

__attribute__((noinline)) void write_through(void) { *nowhere = 7; }

static void *faulter(void *arg) {
    (void)arg;
    pthread_barrier_wait(&start);
    write_through();
    return NULL;
}

int main(void) {
    pthread_t a, b;
    pthread_barrier_init(&start, NULL, 2);
    pthread_create(&a, NULL, faulter, NULL);
    pthread_create(&b, NULL, faulter, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    return 0;
}
