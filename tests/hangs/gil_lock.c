/* A native library for gil_cycle.py, built by the test: it holds a pthread mutex while it
   waits for the GIL, and takes that mutex while its caller holds the GIL. No Python headers:
   the two GIL calls are declared here and resolved in the interpreter that loads the library. */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

extern int PyGILState_Ensure(void);
extern void PyGILState_Release(int);

pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int cache_locked;
static atomic_int reader_waiting;

/* Called through ctypes.CDLL (the GIL released): takes cache_lock, then wants the GIL back
   to call into Python while still holding it. */
__attribute__((noinline)) void refresh_cache_with_callback(void) {
    pthread_mutex_lock(&cache_lock);
    atomic_store(&cache_locked, 1);
    /* Want the GIL only once the reader holds it and is about to block on cache_lock: the
       deadlock then does not depend on who the interpreter lets run first. */
    while (!atomic_load(&reader_waiting))
        usleep(1000);
    int state = PyGILState_Ensure(); /* the GIL is held by the thread blocked in read_cache */
    PyGILState_Release(state);
    pthread_mutex_unlock(&cache_lock);
}

int cache_is_locked(void) { return atomic_load(&cache_locked); }

/* Called through ctypes.PyDLL (the GIL kept): waits for cache_lock while holding the GIL. */
__attribute__((noinline)) void read_cache(void) {
    atomic_store(&reader_waiting, 1);
    pthread_mutex_lock(&cache_lock);
    pthread_mutex_unlock(&cache_lock);
}
