/* Busy, not stuck: two threads compute forever. A snapshot must show them running and
   invent no deadlock. */
#include <pthread.h>
#include <stdio.h>

static volatile unsigned long sink;

__attribute__((noinline)) void crunch_numbers(void) {
    unsigned long x = 1;
    for (;;) {
        x = x * 6364136223846793005UL + 1442695040888963407UL;
        sink = x;
    }
}

static void *worker(void *arg) { (void)arg; crunch_numbers(); return NULL; }

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    printf("ready\n");
    fflush(stdout);
    crunch_numbers();
    return 0;
}
