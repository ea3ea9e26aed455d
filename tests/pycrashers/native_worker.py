"""Python waits in a native call while a native worker thread it launched faults.

The library comes from native_worker.c (its path in NATIVE_WORKER_LIB); a Python thread
sleeps meanwhile, so the waiting caller has to be told apart from an idle Python thread. The
native call is made by the standard library (sched), the way a framework's own Python code
makes it: the call site to name is this script's line, not sched's.
"""
import ctypes
import os
import sched
import threading
import time


def idle_loop():
    time.sleep(600)  # IDLE-LINE


def run_step(lib):
    batches = sched.scheduler()
    batches.enter(0, 1, lib.run_batch)
    return batches.run()  # WAIT-LINE


def train(lib):
    return run_step(lib)  # CALL-STEP


if __name__ == "__main__":
    threading.Thread(target=idle_loop, name="idle", daemon=True).start()
    library = ctypes.CDLL(os.environ["NATIVE_WORKER_LIB"])
    train(library)  # CALL-TRAIN
