/* A call through a null function pointer: the thread jumps to address 0, where there is no code. */
#include <stdio.h>

struct handler { void (*on_event)(int); };

__attribute__((noinline)) void dispatch(struct handler *h, int event) {
    h->on_event(event);
    printf("handled %d\n", event);
}

int main(void) {
    struct handler h = { NULL };
    dispatch(&h, 7);
    return 0;
}
