/* A small shared library whose code faults, for the symbol tests: built at test time, then
 * stripped with its debug info moved to a separate file, or rebuilt as another variant.
 *
 * symlib_store is static: only .symtab and DWARF name it, so once the library is stripped
 * nothing but its debug file can. The markers below let the tests find the real lines. */
#include <stddef.h>

#ifndef SYMLIB_VARIANT
#define SYMLIB_VARIANT 1
#endif

struct record {
    int id;
    int values[4];
};

#if SYMLIB_VARIANT != 1
/* Another build: code placed before the faulting function moves every address after it. */
int symlib_checksum(const int *p, int n) {
    int sum = 0;
    for (int i = 0; i < n; i++)
        sum += p[i] * (i + SYMLIB_VARIANT);
    return sum;
}
#endif

static __attribute__((noinline)) int symlib_store(struct record *r, int v) {
    r->values[v & 3] = v * SYMLIB_VARIANT; /* SYMLIB_FAULT_LINE */
    return r->id;
}

int symlib_entry(struct record *r, int v) {
    int id = symlib_store(r, v + 1); /* SYMLIB_CALL_LINE */
    return id + 1;
}
