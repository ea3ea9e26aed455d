"""A GIL deadlock: a native library holds a mutex while it waits for the GIL, and the thread
holding the GIL waits for that mutex. argv[1]: the library built from gil_lock.c."""

import ctypes
import sys
import threading
import time

released = ctypes.CDLL(sys.argv[1])  # calls release the GIL
holding = ctypes.PyDLL(sys.argv[1])  # calls keep the GIL


def refresher() -> None:
    released.refresh_cache_with_callback()


def main() -> None:
    threading.Thread(target=refresher, name="cache-refresher", daemon=True).start()
    while not released.cache_is_locked():
        time.sleep(0.01)
    print("ready", flush=True)
    holding.read_cache()  # blocks forever holding the GIL


main()
