/* A double free: glibc's allocator detects it and aborts with a message. */
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) void release(char *p) { free(p); }

int main(void) {
    char *buf = malloc(64);
    strcpy(buf, "payload");
    release(buf);
    release(buf);
    return 0;
}
