/* Calls into libsymlib_x.so with a NULL record: the library faults (see symlib_lib.c). */
#include <stdio.h>

struct record;
int symlib_entry(struct record *r, int v);

int main(void) {
    printf("%d\n", symlib_entry(NULL, 2));
    return 0;
}
