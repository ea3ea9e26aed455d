/* Faults in a constructor, before main: the crash comes right after exec, while the new image
   is still being set up. */
#include <stddef.h>

__attribute__((noinline)) void init_tables(volatile int *table) { table[1] = 1; }

__attribute__((constructor)) static void crash_at_load(void) { init_tables(NULL); }

int main(void) { return 0; }
