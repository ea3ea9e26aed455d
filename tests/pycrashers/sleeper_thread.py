"""A Python thread sleeps while the main thread faults in native code."""
import ctypes
import sys
import threading
import time

started = threading.Event()


def wait_for_data(seconds):
    started.set()
    time.sleep(seconds)  # SLEEP-LINE


def worker_loop():
    wait_for_data(600)  # CALL-WAIT


def crash_now():
    started.wait()
    time.sleep(0.2)  # let the worker settle into its sleep
    return ctypes.string_at(0x10, 8)  # CRASH-LINE


def main():
    worker = threading.Thread(target=worker_loop, name="data-feeder", daemon=True)
    worker.start()
    crash_now()  # CALL-CRASH


if __name__ == "__main__":
    sys.exit(main())  # CALL-MAIN
